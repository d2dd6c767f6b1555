"""The built-in ``hal`` module provider of ``vmrt run`` and :func:`vmrt.load`:
the device module (:mod:`vmrt.modules.hal.module`) when the run names a
device or executable plugins or a program imports device functions, the
host-only module (:mod:`vmrt.modules.hal.inline`) otherwise.  The device
module (and with it the executable loader and numpy) is imported only when a
run needs it, so host-only runs start fast."""
from __future__ import annotations

from collections.abc import Sequence

from ...hal.objects import ALL_TYPES
from ...vm.instance import Instance
from .inline import HalModule

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def needs_device(modules: Sequence[Any]) -> bool:
    """Whether any of ``modules`` imports a ``hal`` function the host-only
    module does not have."""
    host = {e.name for e in HalModule().exports}
    for m in modules:
        for imp in getattr(m, "imports", ()):
            mod, _, fn = imp.full_name.partition(".")
            if mod == "hal" and fn not in host:
                return True
    return False


class HalProvider:
    """The built-in ``hal`` provider: the device module when the run names a
    device or plugins or a program imports device functions, else the
    host-only module."""

    name = "hal"

    def register_types(self, instance: Instance) -> None:
        for t in ALL_TYPES:
            instance.register_type(t)

    def create(self, instance: Instance, options: Any = None) -> HalModule[Any]:
        devices = list(getattr(options, "devices", None) or [])
        plugins = list(getattr(options, "executable_plugins", None) or [])
        static = list(getattr(options, "static_libraries", None) or [])
        extra = getattr(options, "extra", None) or {}
        dependents = extra.get("modules", ())
        # where hal.buffer_view.trace goes (vmrt.tools.dispatch_trace)
        sink = extra.get("debug_sink")
        if devices or plugins or static or needs_device(dependents):
            from ...hal.local.loader import executable_arches
            from .module import HalDeviceModule
            arches = executable_arches(
                seg for m in dependents for seg in getattr(m, "rodata_segments", ()))
            return HalDeviceModule(instance, devices, plugins, program_arches=arches,
                                   module_mode=getattr(options, "module_mode", "preload"),
                                   backend=getattr(options, "backend", "auto"),
                                   debug_sink=sink, task=extra.get("task"),
                                   static_libraries=static,
                                   static_arches=_static_arches(dependents) if static else ())
        return HalModule(instance, sink)


def _static_arches(dependents: Any) -> set[str]:
    """The CPUs the programs' ``static`` executables were compiled for."""
    from ...hal.local.static_library import static_target_arches
    return static_target_arches(getattr(getattr(m, "definition", None), "bytecode", b"")
                                for m in dependents)


PROVIDER = HalProvider()

__all__ = ["PROVIDER", "HalProvider", "needs_device"]
