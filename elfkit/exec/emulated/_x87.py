"""i386 float results live on the x87 register stack: 80-bit extended values
(``f80_to_float`` / ``float_to_f80``) and the push/pop of ``EmulatedMachine``
(a mixin) used by the generated call and callback code."""
from __future__ import annotations

import ctypes
import math
import struct

from . import _uc

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from ._state import MachineState
else:
    MachineState = object

lib = _uc.lib


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


class X87Stack(MachineState):
    """Uses the machine's ``_h``, ``_reg`` and ``_word_buf``/``_word_ref``."""

    def _x87_pop(self) -> float:
        lib.uc_reg_read(self._h, self._reg("FPSW"), self._word_ref)
        top = (self._word_buf.value >> 11) & 7
        buf = ctypes.create_string_buffer(16)
        lib.uc_reg_read(self._h, self._reg(f"FP{top}"), buf)
        mant, exp = struct.unpack_from("<QH", buf)
        return f80_to_float(mant, exp)

    def _x87_push(self, value: float) -> None:
        lib.uc_reg_read(self._h, self._reg("FPSW"), self._word_ref)
        sw = self._word_buf.value & 0xFFFF
        top = (((sw >> 11) & 7) - 1) & 7
        buf = ctypes.create_string_buffer(16)
        struct.pack_into("<QH", buf, 0, *float_to_f80(value))
        lib.uc_reg_write(self._h, self._reg(f"FP{top}"), buf)
        self._word_buf.value = (sw & ~0x3800) | (top << 11)
        lib.uc_reg_write(self._h, self._reg("FPSW"), self._word_ref)
        lib.uc_reg_read(self._h, self._reg("FPTAG"), self._word_ref)
        self._word_buf.value = (self._word_buf.value & 0xFFFF) & ~(3 << (2 * top))
        lib.uc_reg_write(self._h, self._reg("FPTAG"), self._word_ref)
