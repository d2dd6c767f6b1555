"""Architecture descriptions: one file per architecture, collected here.

Adding an architecture means adding a file with an ``ARCH`` and listing it
in ``_MODULES``.
"""
from __future__ import annotations

import importlib
import os
import sys

from .. import machines as _machines
from ..errors import ArchError
from ._base import (
    FLAVORS,
    PLUGIN_CFLAGS,
    PLUGIN_LDFLAGS,
    Arch,
    CallingConvention,
    Check,
    Formula,
    RelocType,
)

_MODULES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")

ARCHES: dict[str, Arch] = {}
for _m in _MODULES:
    _a = importlib.import_module(f"{__name__}.{_m}").ARCH
    ARCHES[_a.name] = _a

_ALIASES: dict[str, Arch] = {}
for _a in ARCHES.values():
    _ALIASES[_a.name] = _a
    for _al in _a.aliases:
        _ALIASES[_al] = _a

# elfkit.machines is the light copy of (name, machine, bits) for code that must
# start fast; the two must agree.
if {a.name: (a.machine, a.bits) for a in ARCHES.values()} != _machines.ARCH_MACHINES:
    raise ImportError("elfkit.machines.ARCH_MACHINES does not match elfkit.arch.ARCHES")
MACHINE_NAMES = dict(_machines.MACHINE_NAMES)


def get(name: str | Arch) -> Arch:
    """Look an architecture up by name or alias (``x86_64``, ``arm64`` ...)."""
    if isinstance(name, Arch):
        return name
    a = _ALIASES.get(str(name).lower().replace("-", "_")) or _ALIASES.get(str(name).lower())
    if a is None:
        raise ArchError(f"unknown architecture {name!r}; known: {', '.join(ARCHES)}")
    return a


def from_machine(machine: int, bits: int) -> Arch:
    """The architecture of an ELF ``e_machine`` and class (32 or 64 bits)."""
    for a in ARCHES.values():
        if a.machine == machine and a.bits == bits:
            return a
    raise ArchError(f"unsupported machine {machine} ({bits}-bit); supported: "
                    + ", ".join(f"{a.name} ({a.machine}, {a.bits}-bit)" for a in ARCHES.values()))


def host() -> Arch | None:
    """The architecture of the running Python process, or None if not supported."""
    if _host:
        return _host[0]
    _host.append(_find_host())
    return _host[0]


_host: list[Arch | None] = []


def _find_host() -> Arch | None:
    m = os.uname().machine.lower()      # what platform.machine() answers on POSIX
    bits = 64 if sys.maxsize > 2**32 else 32
    table = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64",
             "riscv64": "riscv64", "i386": "i386", "i686": "i386", "armv7l": "arm",
             "riscv32": "riscv32"}
    name = table.get(m)
    if name == "x86_64" and bits == 32:
        name = "i386"
    return ARCHES.get(name) if name else None


__all__ = ["Arch", "ARCHES", "CallingConvention", "Check", "Formula", "RelocType",
           "MACHINE_NAMES", "get", "from_machine", "host",
           "FLAVORS", "PLUGIN_CFLAGS", "PLUGIN_LDFLAGS"]
