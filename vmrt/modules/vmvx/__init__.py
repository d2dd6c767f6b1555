"""The ``vmvx`` module as a static module for ``vmrt run`` / :func:`vmrt.load`
(IREE's tooling creates it when a module depends on ``vmvx``, e.g. a vmvx
executable's own ``.vmfb`` run directly).

The implementation lives in :mod:`vmrt.hal.local.vmvx`: the vmvx executable
loader in ``hal/local`` links every executable against it, and ``hal/local``
may not import ``modules`` (imports flow ``modules`` -> ``hal/local``).
This package only registers it, importing the implementation (and numpy)
only when a run needs the module."""
from __future__ import annotations

from ...vm.instance import Instance

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)

if TYPE_CHECKING:
    from typing import Any

    from ...hal.local.vmvx import VmvxModule


class VmvxProvider:
    """Static-module provider of ``vmvx`` (no types to register)."""

    name = "vmvx"

    def register_types(self, instance: Instance) -> None:
        pass

    def create(self, instance: Instance, options: Any = None) -> VmvxModule:
        from ...hal.local.vmvx import VmvxModule
        return VmvxModule(instance)


def __getattr__(name: str) -> Any:
    """``VERSION`` and ``VmvxModule``, imported on first use."""
    if name in ("VERSION", "VmvxModule"):
        from ...hal.local import vmvx
        return getattr(vmvx, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


PROVIDER = VmvxProvider()

__all__ = ["PROVIDER", "VERSION", "VmvxModule", "VmvxProvider"]
