"""Thin access to unicorn's C library (imported only when a machine is made).

The hot paths (register batches, ``uc_emu_start``, memory reads/writes and
the hooks) call the C functions directly through ctypes with preallocated
buffers; the Python ``Uc`` object is kept for rarely used conveniences
(``ctl_*``, contexts, mapping lists).
"""
from __future__ import annotations

import ctypes
from typing import Any

import unicorn
from unicorn import unicorn_const as C

try:                                    # unicorn >= 2.1
    from unicorn.unicorn_py3.unicorn import uclib as lib
except ImportError:                     # pragma: no cover - unicorn 2.0.x
    from unicorn.unicorn import _uc as lib  # type: ignore[attr-defined,no-redef]

from ...arch import Arch
from ...errors import BackendError

Uc = unicorn.Uc
UcError = unicorn.UcError

_CONST_MODULES = {"UC_ARCH_X86": "x86_const", "UC_ARCH_ARM": "arm_const",
                  "UC_ARCH_ARM64": "arm64_const", "UC_ARCH_RISCV": "riscv_const"}
_REG_PREFIX = {"UC_ARCH_X86": "UC_X86_REG_", "UC_ARCH_ARM": "UC_ARM_REG_",
               "UC_ARCH_ARM64": "UC_ARM64_REG_", "UC_ARCH_RISCV": "UC_RISCV_REG_"}

# native callback types (see unicorn.h)
HOOK_CODE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                             ctypes.c_void_p)
HOOK_INTR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)
HOOK_MEM = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_int,
                            ctypes.c_int64, ctypes.c_void_p)
HOOK_MEM_INVALID = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                    ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)

MEM_ACCESS = {C.UC_MEM_READ: "read", C.UC_MEM_WRITE: "write", C.UC_MEM_FETCH: "fetch",
              C.UC_MEM_READ_UNMAPPED: "read", C.UC_MEM_WRITE_UNMAPPED: "write",
              C.UC_MEM_FETCH_UNMAPPED: "fetch", C.UC_MEM_READ_PROT: "read",
              C.UC_MEM_WRITE_PROT: "write", C.UC_MEM_FETCH_PROT: "fetch"}
MEM_PROT_KINDS = (C.UC_MEM_READ_PROT, C.UC_MEM_WRITE_PROT, C.UC_MEM_FETCH_PROT)


def consts(arch: Arch) -> Any:
    import importlib
    return importlib.import_module(f"unicorn.{_CONST_MODULES[arch.uc_arch]}")


def reg(arch: Arch, name: str) -> int:
    """Register id of ``UC_<ARCH>_REG_<name>``."""
    return getattr(consts(arch), _REG_PREFIX[arch.uc_arch] + name)


def open_uc(arch: Arch, cpu: str | int | None = None) -> unicorn.Uc:
    mode = 0
    for m in arch.uc_mode:
        mode |= getattr(C, m)
    uc = Uc(getattr(C, arch.uc_arch), mode)
    cpu = cpu if cpu is not None else (arch.uc_cpu or None)
    if cpu is not None:
        uc.ctl_set_cpu_model(_cpu_model(arch, cpu))
    return uc


def _cpu_model(arch: Arch, cpu: str | int) -> int:
    """The unicorn CPU model number of ``cpu`` (a name, with or without
    ``UC_CPU_``, or a number); BackendError listing the names otherwise."""
    mod = consts(arch)
    family = arch.uc_arch.removeprefix("UC_ARCH_")
    prefix = f"UC_CPU_{family}{arch.bits if family == 'RISCV' else ''}_"
    names = sorted(n.removeprefix(prefix) for n in dir(mod) if n.startswith(prefix)
                   and not n.endswith("_ENDING"))
    numbers = {getattr(mod, prefix + n) for n in names}
    if isinstance(cpu, str):
        value = getattr(mod, cpu if cpu.startswith("UC_CPU_") else f"UC_CPU_{cpu}",
                        getattr(mod, prefix + cpu.upper(), None))
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(cpu, int) and not isinstance(cpu, bool) and cpu in numbers:
        return cpu
    raise BackendError(f"unknown {arch.name} CPU model {cpu!r}; unicorn has: "
                       f"{', '.join(names)}")


def handle(uc: unicorn.Uc) -> Any:
    """The C ``uc_engine *`` behind a ``Uc`` (for the direct ctypes calls)."""
    return uc._uch


def close(uc: unicorn.Uc) -> None:
    """Close the engine now instead of at garbage collection."""
    fin = getattr(uc, "_Uc__finalizer", None)
    if fin is not None:
        fin()


def strerror(err: int) -> str:
    try:
        return lib.uc_strerror(err).decode("ascii", "replace")
    except (AttributeError, TypeError, ctypes.ArgumentError):  # pragma: no cover - no restype
        return f"unicorn error {err}"
