"""The built-in ``hal_loader`` provider of ``vmrt run``, ``vmrt test`` and
:func:`vmrt.load`: programs compiled with ``--iree-execution-model=inline-dynamic``
depend on the module.  It is registered on every run, so it lives apart
from the module it makes (module.py, imported when a program needs it, with
the executable loader)."""
from __future__ import annotations

from ...hal.objects import EXECUTABLE_TYPE
from ...vm.instance import Instance

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .module import HalLoaderModule


class HalLoaderProvider:
    """Static-module provider of ``hal_loader``: ``--executable_plugin``
    (``options.executable_plugins``) resolves the executables' imports, and
    ``options.backend`` says how they run ("auto": natively for this CPU,
    else emulated; "emulated")."""

    name = "hal_loader"

    def register_types(self, instance: Instance) -> None:
        instance.register_type(EXECUTABLE_TYPE)

    def create(self, instance: Instance, options: Any = None) -> HalLoaderModule:
        from ...hal.local.loader import executable_arches
        from .module import HalLoaderModule
        extra = getattr(options, "extra", None) or {}
        dependents = extra.get("modules", ())
        arches = executable_arches(
            seg for m in dependents for seg in getattr(m, "rodata_segments", ()))
        static = list(getattr(options, "static_libraries", None) or [])
        static_arches: set[str] = set()
        if static:
            from ...hal.local.static_library import static_target_arches
            static_arches = static_target_arches(
                getattr(getattr(m, "definition", None), "bytecode", b"") for m in dependents)
        return HalLoaderModule(instance, list(getattr(options, "executable_plugins", None) or []),
                               backend=getattr(options, "backend", "auto"),
                               program_arches=arches, static_libraries=static,
                               static_arches=static_arches)


PROVIDER = HalLoaderProvider()

__all__ = ["PROVIDER", "HalLoaderProvider"]
