"""i386 float results live on the x87 register stack: 80-bit extended values
(``f80_to_float`` / ``float_to_f80``), and ``X87Stack``, the push/pop the
generated call and callback code of an i386 machine use, plus the scan of
new code that switches unicorn's instruction counter on (``X87_RUN_LIMIT``).
"""
from __future__ import annotations

import ctypes
import math
import struct

from . import _uc

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from ._uc import Engine

lib = _uc.lib

#: unicorn 2.1.4 (QEMU 5 TCG) leaks TCG temps translating x87 instructions
#: and segfaults inside uc_emu_start on one i386 block of ~250 of them (a
#: fully unrolled f32 matmul).  With a code hook installed -- unicorn's
#: instruction counter is one, in C -- the same blocks translate and run
#: correctly (checked up to 5,000 x87 instructions in one block), at about
#: a tenth of the speed.  So an i386 machine scans code as it becomes
#: executable and, once it has seen a straight run of this many x87
#: instructions, runs every call with the counter on.
X87_RUN_LIMIT = 64


def f80_to_float(mant: int, exp: int) -> float:
    """An x87 80-bit extended value (64-bit mantissa, sign+exponent) as a float."""
    sign = -1.0 if exp & 0x8000 else 1.0
    e = exp & 0x7FFF
    if e == 0x7FFF:
        return math.copysign(math.inf if (mant & ((1 << 63) - 1)) == 0 else math.nan, sign)
    if mant == 0:
        return math.copysign(0.0, sign)
    try:
        return sign * math.ldexp(float(mant), e - 16383 - 63)
    except OverflowError:
        return math.copysign(math.inf, sign)


def float_to_f80(x: float) -> tuple[int, int]:
    """A float as an x87 80-bit extended value: (mantissa, sign+exponent)."""
    x = float(x)
    if x != x:
        return 0xC000000000000000, 0x7FFF
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if x == 0.0:
        return 0, sign
    if math.isinf(x):
        return 1 << 63, sign | 0x7FFF
    mant, exp = math.frexp(abs(x))
    return int(mant * (1 << 64)), sign | (exp - 1 + 16383)


class X87Stack:
    """The x87 register stack of ``engine`` (an i386 CPU): ``pop`` the float
    result of a call, ``push`` the float result of a host callback; and
    ``scan`` of code becoming executable (``counted``: every later call
    runs with the instruction counter on, see ``X87_RUN_LIMIT``)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.counted = False

    def pop(self) -> float:
        e = self._engine
        top = (e.read_word(e.reg_id("FPSW")) >> 11) & 7
        buf = ctypes.create_string_buffer(16)
        lib.uc_reg_read(e.handle, e.reg_id(f"FP{top}"), buf)
        mant, exp = struct.unpack_from("<QH", buf)
        return f80_to_float(mant, exp)

    def push(self, value: float) -> None:
        e = self._engine
        sw = e.read_word(e.reg_id("FPSW")) & 0xFFFF
        top = (((sw >> 11) & 7) - 1) & 7
        buf = ctypes.create_string_buffer(16)
        struct.pack_into("<QH", buf, 0, *float_to_f80(value))
        lib.uc_reg_write(e.handle, e.reg_id(f"FP{top}"), buf)
        e.write_word(e.reg_id("FPSW"), (sw & ~0x3800) | (top << 11))
        tag = e.read_word(e.reg_id("FPTAG")) & 0xFFFF
        e.write_word(e.reg_id("FPTAG"), tag & ~(3 << (2 * top)))

    def scan(self, addr: int, size: int) -> bool:
        """``[addr, addr+size)`` became executable: on i386, whether it holds
        a straight run of ``X87_RUN_LIMIT`` x87 instructions, the first time
        one is seen (``counted`` is set then)."""
        if self._engine.arch.name != "i386" or self.counted or size <= 0:
            return False
        buf = ctypes.create_string_buffer(size)
        if lib.uc_mem_read(self._engine.handle, addr, buf, size):
            return False
        from ..disasm import longest_x87_run  # i386 only: imported on use
        if longest_x87_run(buf.raw, addr) >= X87_RUN_LIMIT:
            self.counted = True
            return True
        return False
