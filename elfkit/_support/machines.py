"""ELF ``e_machine`` numbers and names of elfkit's architectures, standard library only.

Code that only needs a name for a machine (``elfkit fatelf list``,
``identify``) uses these tables instead of importing :mod:`elfkit.arch`,
whose full descriptions (relocations, calling conventions, registers) cost
milliseconds to build.  ``elfkit.arch`` checks at import that every
architecture it describes is listed here with the same machine and size.
"""
from __future__ import annotations

import os
import sys

__all__ = ["ARCH_MACHINES", "MACHINE_NAMES", "arch_for", "host_arch_name"]

#: elfkit architecture name -> (e_machine, bits), in elfkit.arch's order
ARCH_MACHINES: dict[str, tuple[int, int]] = {
    "x86_64": (62, 64), "aarch64": (183, 64), "riscv64": (243, 64),
    "arm": (40, 32), "i386": (3, 32), "riscv32": (243, 32),
}

#: display name of each e_machine elfkit runs (243 covers both RISC-V sizes)
MACHINE_NAMES: dict[int, str] = {62: "x86_64", 183: "aarch64", 243: "riscv", 40: "arm",
                                 3: "i386"}

_BY_MACHINE = {target: name for name, target in ARCH_MACHINES.items()}


def arch_for(machine: int, bits: int) -> str | None:
    """The elfkit architecture name of ``e_machine`` and size (32 or 64 bits), or None."""
    return _BY_MACHINE.get((machine, bits))


#: ``uname -m`` (lower case) -> elfkit architecture name
_UNAME_ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64",
                 "riscv64": "riscv64", "i386": "i386", "i686": "i386", "armv7l": "arm",
                 "riscv32": "riscv32"}


def host_arch_name() -> str | None:
    """The elfkit architecture name of the running Python process (a 32-bit Python
    on x86_64 is i386), or None when elfkit has none for it."""
    uname = getattr(os, "uname", None)    # POSIX: what platform.machine() reads (no import)
    if uname is not None:
        m = uname().machine.lower()
    else:                                  # pragma: no cover - Windows
        import platform
        m = platform.machine().lower()
    name = _UNAME_ARCHES.get(m)
    if name == "x86_64" and sys.maxsize <= 2**32:
        name = "i386"
    return name
