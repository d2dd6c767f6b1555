"""The ``vmvx`` module as a static module for ``vmrt run`` / :func:`vmrt.load`
(IREE's tooling creates it when a module depends on ``vmvx``, e.g. a vmvx
executable's own ``.vmfb`` run directly).

The implementation lives in :mod:`vmrt.hal.local.vmvx`: the vmvx executable
loader in ``hal/local`` links every executable against it, and ``hal/local``
may not import ``modules`` (imports flow ``modules`` -> ``hal/local``).
This package only registers it."""
from __future__ import annotations

from typing import Any

from ...hal.local.vmvx import VERSION, VmvxModule
from ...vm.instance import Instance


class VmvxProvider:
    """Static-module provider of ``vmvx`` (no types to register)."""

    name = "vmvx"

    def register_types(self, instance: Instance) -> None:
        pass

    def create(self, instance: Instance, options: Any = None) -> VmvxModule:
        return VmvxModule(instance)


PROVIDER = VmvxProvider()

__all__ = ["PROVIDER", "VERSION", "VmvxModule", "VmvxProvider"]
