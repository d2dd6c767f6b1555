"""Architecture descriptions: one file per architecture, collected here.

Adding an architecture means adding a file with an ``ARCH`` and listing it
in ``_MODULES``.
"""
from __future__ import annotations

import sys

from .._support import machines as _machines
from ..errors import ArchError
from ._base import (
    FLAVORS,
    PLUGIN_CFLAGS,
    PLUGIN_LDFLAGS,
    Arch,
    CallingConvention,
    Check,
    Formula,
    GdbReg,
    ObjFormula,
    ObjReloc,
    RelocType,
)

_MODULES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")

#: every architecture by name, in ``_MODULES`` order.  Built on first use (PEP 562
#: ``__getattr__`` below): ``get``, ``from_machine`` and ``host`` import only the one
#: architecture file they need (a native run needs one of six).
ARCHES: dict[str, Arch]
_loaded: dict[str, Arch] = {}
_ALIASES: dict[str, Arch] = {}


def _load(name: str) -> Arch:
    """The architecture ``name`` (a name of ``elfkit._support.machines.ARCH_MACHINES``)."""
    a = _loaded.get(name)
    if a is None:
        module = f"{__name__}.{name}"
        __import__(module)     # importlib.import_module without importing importlib
        a = sys.modules[module].ARCH
        # elfkit._support.machines is the light copy of (name, machine, bits) for code that must
        # start fast; the two must agree.
        if a.name != name or _machines.ARCH_MACHINES.get(name) != (a.machine, a.bits):
            raise ImportError(f"elfkit._support.machines.ARCH_MACHINES does not match {a.name}")
        _loaded[name] = a
    return a


def _all() -> dict[str, Arch]:
    arches = globals().get("ARCHES")
    if arches is None:
        arches = {name: _load(name) for name in _MODULES}
        if set(arches) != set(_machines.ARCH_MACHINES):
            raise ImportError("elfkit._support.machines.ARCH_MACHINES does not match "
                              "elfkit.arch.ARCHES")
        for a in arches.values():
            _ALIASES[a.name] = a
            for al in a.aliases:
                _ALIASES[al] = a
        globals()["ARCHES"] = arches
    return arches


def __getattr__(name: str) -> object:
    if name == "ARCHES":
        return _all()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MACHINE_NAMES = dict(_machines.MACHINE_NAMES)


def get(name: str | Arch) -> Arch:
    """Look an architecture up by name or alias (``x86_64``, ``arm64`` ...)."""
    if isinstance(name, Arch):
        return name
    key = str(name).lower().replace("-", "_")
    if key in _machines.ARCH_MACHINES:
        return _load(key)
    arches = _all()
    a = _ALIASES.get(key) or _ALIASES.get(str(name).lower())
    if a is None:
        raise ArchError(f"unknown architecture {name!r}; known: {', '.join(arches)}")
    return a


def from_machine(machine: int, bits: int) -> Arch:
    """The architecture of an ELF ``e_machine`` and class (32 or 64 bits)."""
    name = _machines.arch_for(machine, bits)
    if name is not None:
        return _load(name)
    raise ArchError(f"unsupported machine {machine} ({bits}-bit); supported: "
                    + ", ".join(f"{a.name} ({a.machine}, {a.bits}-bit)" for a in _all().values()))


def host() -> Arch | None:
    """The architecture of the running Python process, or None if not supported."""
    if _host:
        return _host[0]
    _host.append(_find_host())
    return _host[0]


_host: list[Arch | None] = []


def _find_host() -> Arch | None:
    name = _machines.host_arch_name()
    return _load(name) if name else None


__all__ = ["Arch", "ARCHES", "CallingConvention", "Check", "Formula", "GdbReg", "ObjFormula",
           "ObjReloc", "RelocType",
           "MACHINE_NAMES", "get", "from_machine", "host",
           "FLAVORS", "PLUGIN_CFLAGS", "PLUGIN_LDFLAGS"]
