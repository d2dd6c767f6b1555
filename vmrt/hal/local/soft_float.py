"""The compiler-rt soft-float helpers a static library may import.

A static library (``--iree-llvmcpu-link-static``) is linked by the host's
linker, which brings compiler-rt's builtins; an embedded ELF carries its own.
Code for a CPU without a double-precision FPU (riscv32 ``+m,+f`` with the
``ilp32`` ABI, say) calls ``__adddf3``, ``__muldf3``, ``__extendsfdf2``,
``__truncdfsf2``... for f64 arithmetic.  :func:`soft_float_imports` provides
them as host functions with compiler-rt's results: IEEE-754 binary64
arithmetic rounded to nearest even, denormals kept, and the quiet NaN
0x7FF8000000000000 for an invalid operation (NaN operands propagate,
quietened).  Doubles travel as 64-bit integers (the soft-float ABI passes
them in integer register pairs), floats as 32-bit integers."""
from __future__ import annotations

import struct

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_QNAN64 = 0x7FF8_0000_0000_0000
_EXP64, _FRAC64 = 0x7FF0_0000_0000_0000, 0x000F_FFFF_FFFF_FFFF


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & (1 << 64) - 1))[0]


def _bits64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _is_nan(bits: int) -> bool:
    return bits & _EXP64 == _EXP64 and bits & _FRAC64 != 0


def _binary(op: Callable[[Any, Any], Any]) -> Callable[[int, int], int]:
    def helper(a: int, b: int) -> int:
        import numpy as np
        a &= (1 << 64) - 1
        b &= (1 << 64) - 1
        # compiler-rt: a NaN operand comes back quietened, a first
        for x in (a, b):
            if _is_nan(x):
                return x | 0x0008_0000_0000_0000
        with np.errstate(all="ignore"):
            r = float(op(np.float64(_f64(a)), np.float64(_f64(b))))
        return _QNAN64 if r != r else _bits64(r)
    return helper


def _extendsfdf2(a: int) -> int:
    import numpy as np
    a &= 0xFFFF_FFFF
    if a & 0x7F80_0000 == 0x7F80_0000 and a & 0x7F_FFFF:     # NaN: sign and payload kept
        return (a >> 31) << 63 | _EXP64 | (a & 0x7F_FFFF | 0x40_0000) << 29
    return _bits64(float(np.uint32(a).view(np.float32)))


def _truncdfsf2(a: int) -> int:
    import numpy as np
    a &= (1 << 64) - 1
    if _is_nan(a):
        return (a >> 63) << 31 | 0x7F80_0000 | ((a & _FRAC64) >> 29 | 0x40_0000) & 0x7F_FFFF
    with np.errstate(all="ignore"):
        return int(np.float64(_f64(a)).astype(np.float32).view(np.uint32))


def _compare(unordered: int) -> Callable[[int, int], int]:
    """compiler-rt's ``__ledf2`` family: -1, 0, 1 for less, equal, greater
    and ``unordered`` when either operand is a NaN."""
    def helper(a: int, b: int) -> int:
        x, y = _f64(a), _f64(b)
        if x != x or y != y:
            return unordered
        return -1 if x < y else (1 if x > y else 0)
    return helper


def _unorddf2(a: int, b: int) -> int:
    return int(_is_nan(a & (1 << 64) - 1) or _is_nan(b & (1 << 64) - 1))


def passes_doubles_in_integer_registers(arch: str, e_flags: int) -> bool:
    """Whether compiler-rt's f64 helpers take and return doubles in integer
    registers for code of ``arch`` with ELF header flags ``e_flags``: on
    RISC-V under the soft-float and single-float ABIs (EF_RISCV_FLOAT_ABI
    0 or 1), on 32-bit ARM always (the helpers use the base AAPCS).  Not
    elsewhere (x86 and hard-float ABIs pass them in FP registers), where
    :func:`soft_float_imports` must not be offered."""
    if arch in ("riscv32", "riscv64"):
        return e_flags & 0x6 in (0, 2)
    return arch == "arm"


def _e_flags(data: bytes, arch: str) -> int | None:
    """``e_flags`` of the ``arch`` ELF in ``data`` (a FatELF's slice), or
    None when it cannot be read (elfkit.load then says what is wrong)."""
    from elfkit import ElfkitError, fatelf
    try:
        _rec, view = fatelf.select(data, arch, fallback=True)
    except ElfkitError:
        return None
    head = bytes(view[:64])
    at = 48 if len(head) > 4 and head[4] == 2 else 36
    return int.from_bytes(head[at:at + 4], "little") if len(head) >= at + 4 else None


def soft_float_for(data: bytes, arch: str) -> dict[str, tuple[Callable[..., int], str]] | None:
    """:func:`soft_float_imports` when the ``arch`` code in ``data`` takes
    doubles in integer registers, else None."""
    flags = _e_flags(data, arch)
    if flags is None or not passes_doubles_in_integer_registers(arch, flags):
        return None
    return soft_float_imports()


def soft_float_imports() -> dict[str, tuple[Callable[..., int], str]]:
    """name -> (host function, signature): an ``elfkit.Imports`` provider."""
    import operator
    table: dict[str, tuple[Callable[..., int], str]] = {
        "__extendsfdf2": (_extendsfdf2, "u64(u32)"),
        "__truncdfsf2": (_truncdfsf2, "u32(u64)"),
        "__unorddf2": (_unorddf2, "i32(u64,u64)"),
    }
    for name, op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("div", operator.truediv)):
        table[f"__{name}df3"] = (_binary(op), "u64(u64,u64)")
    for names, unordered in ((("le", "lt", "eq", "ne"), 1), (("ge", "gt"), -1)):
        for n in names:
            table[f"__{n}df2"] = (_compare(unordered), "i32(u64,u64)")
    return table


__all__ = ["passes_doubles_in_integer_registers", "soft_float_for", "soft_float_imports"]
