"""Instruction and data fields that object relocations write.

Each field has a size in bytes, an encoder that puts a (shifted) value into
the field of the little-endian unit already there, and, for REL objects
(addends stored in place), a decoder that reads the addend back.  The
per-architecture tables (``Arch.obj_relocs``) name these fields."""
from __future__ import annotations

from collections.abc import Callable

from .._support.records import DataRecord

__all__ = ["Field", "FIELDS", "FieldError", "sext", "uleb128_write"]


class FieldError(Exception):
    """A value does not fit its field (the relocation loop names the relocation)."""


def sext(v: int, bits: int) -> int:
    """The low ``bits`` of ``v`` as a signed integer."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


class Field(DataRecord, frozen=True, slots=True):
    size: int                                   # bytes the field's unit occupies
    encode: Callable[[int, int], int]           # (unit, value) -> unit
    decode: Callable[[int], int] | None = None  # unit -> addend (REL objects)


def _word(bits: int) -> Field:
    mask = (1 << bits) - 1
    return Field(bits // 8, lambda _u, v: v & mask, lambda u: sext(u, bits))


# -- aarch64 -----------------------------------------------------------------

def _a64_adr(u: int, v: int) -> int:
    return (u & ~0x60FFFFE0) | ((v & 3) << 29) | (((v >> 2) & 0x7FFFF) << 5)


def _bits(lo: int, n: int) -> Callable[[int, int], int]:
    mask = ((1 << n) - 1) << lo
    return lambda u, v: (u & ~mask) | ((v << lo) & mask)


# -- RISC-V ------------------------------------------------------------------

def _hi20(v: int) -> int:
    hi = (v + 0x800) >> 12
    if not -(1 << 19) <= hi < (1 << 19):
        raise FieldError("does not fit the 32-bit reach of a HI20/LO12 pair")
    return hi & 0xFFFFF


def _rv_i(u: int, v: int) -> int:
    return (u & 0xFFFFF) | ((v & 0xFFF) << 20)


def _rv_s(u: int, v: int) -> int:
    return (u & 0x1FFF07F) | (((v >> 5) & 0x7F) << 25) | ((v & 0x1F) << 7)


def _rv_b(u: int, v: int) -> int:
    return ((u & 0x1FFF07F) | (((v >> 12) & 1) << 31) | (((v >> 5) & 0x3F) << 25)
            | (((v >> 1) & 0xF) << 8) | (((v >> 11) & 1) << 7))


def _rv_j(u: int, v: int) -> int:
    return ((u & 0xFFF) | (((v >> 20) & 1) << 31) | (((v >> 1) & 0x3FF) << 21)
            | (((v >> 11) & 1) << 20) | (((v >> 12) & 0xFF) << 12))


def _rv_call(u: int, v: int) -> int:
    """AUIPC (low word) + JALR (high word) as one 64-bit unit."""
    hi = _hi20(v)
    lo = v - sext(hi << 12, 32)
    auipc = (u & 0xFFF) | (hi << 12)
    jalr = _rv_i(u >> 32, lo)
    return auipc | (jalr << 32)


def _rv_cb(u: int, v: int) -> int:
    return ((u & 0xE383) | (((v >> 8) & 1) << 12) | (((v >> 3) & 3) << 10)
            | (((v >> 6) & 3) << 5) | (((v >> 1) & 3) << 3) | (((v >> 5) & 1) << 2))


def _rv_cj(u: int, v: int) -> int:
    return ((u & 0xE003) | (((v >> 11) & 1) << 12) | (((v >> 4) & 1) << 11)
            | (((v >> 8) & 3) << 9) | (((v >> 10) & 1) << 8) | (((v >> 6) & 1) << 7)
            | (((v >> 7) & 1) << 6) | (((v >> 1) & 7) << 3) | (((v >> 5) & 1) << 2))


# -- arm (A32 and Thumb-2) -----------------------------------------------------
# Branch values are byte offsets whose bit 0 is the target's Thumb bit: a BL
# to code of the other instruction set becomes a BLX (interworking).

def _arm_imm16(u: int, v: int) -> int:
    return (u & 0xFFF0F000) | (((v >> 12) & 0xF) << 16) | (v & 0xFFF)


def _arm_call(u: int, v: int) -> int:
    if v & 1:       # BL to Thumb code: BLX, bit 1 of the offset in H
        return 0xFA000000 | (((v >> 1) & 1) << 24) | ((v >> 2) & 0xFFFFFF)
    if v & 3:
        raise FieldError("is not a multiple of 4 (an A32 branch)")
    return (u & 0xFF000000) | ((v >> 2) & 0xFFFFFF)


def _arm_b(u: int, v: int) -> int:
    if v & 3:
        raise FieldError("is not an A32 branch target (a B to Thumb code needs BX)")
    return (u & 0xFF000000) | ((v >> 2) & 0xFFFFFF)


def _thm_branch(u: int, v: int) -> int:
    """The offset of a Thumb-2 BL/BLX/B.W (hw1 in the low half of ``u``)."""
    s = (v >> 24) & 1
    j1 = (~((v >> 23) & 1) ^ s) & 1
    j2 = (~((v >> 22) & 1) ^ s) & 1
    hw1 = (u & 0xF800) | (s << 10) | ((v >> 12) & 0x3FF)
    hw2 = ((u >> 16) & 0xD000) | (j1 << 13) | (j2 << 11) | ((v >> 1) & 0x7FF)
    return hw1 | (hw2 << 16)


def _thm_call(u: int, v: int) -> int:
    """BL to Thumb code (odd ``v``), else BLX (the loader aligned P down to 4)."""
    if v & 1:
        return _thm_branch(u | (0x1000 << 16), v - 1)
    if v & 3:
        raise FieldError("is not a multiple of 4 (a BLX to A32 code)")
    return _thm_branch(u & ~(0x1000 << 16), v)


def _thm_b(u: int, v: int) -> int:
    if not v & 1:
        raise FieldError("is not Thumb code (a B.W to A32 code needs a veneer)")
    return _thm_branch(u, v - 1)


def _thm_branch_addend(u: int) -> int:
    hw1, hw2 = u & 0xFFFF, u >> 16
    s = (hw1 >> 10) & 1
    i1 = ~((hw2 >> 13) ^ s) & 1
    i2 = ~((hw2 >> 11) ^ s) & 1
    return sext((s << 24) | (i1 << 23) | (i2 << 22) | ((hw1 & 0x3FF) << 12)
                | ((hw2 & 0x7FF) << 1), 25)


def _thm_imm16(u: int, v: int) -> int:
    hw1 = (u & 0xFBF0) | (((v >> 11) & 1) << 10) | ((v >> 12) & 0xF)
    hw2 = ((u >> 16) & 0x8F00) | (((v >> 8) & 7) << 12) | (v & 0xFF)
    return hw1 | (hw2 << 16)


def _thm_imm16_addend(u: int) -> int:
    hw1, hw2 = u & 0xFFFF, u >> 16
    return sext(((hw1 & 0xF) << 12) | (((hw1 >> 10) & 1) << 11) | (((hw2 >> 12) & 7) << 8)
                | (hw2 & 0xFF), 16)


FIELDS: dict[str, Field] = {
    "w8": _word(8), "w16": _word(16), "w32": _word(32), "w64": _word(64),
    "low6": Field(1, lambda u, v: (u & 0xC0) | (v & 0x3F)),
    "a64_adr": Field(4, _a64_adr),
    "a64_imm12": Field(4, _bits(10, 12)),
    "a64_imm14": Field(4, _bits(5, 14)),
    "a64_imm16": Field(4, _bits(5, 16)),
    "a64_imm19": Field(4, _bits(5, 19)),
    "a64_imm26": Field(4, _bits(0, 26)),
    "rv_hi20": Field(4, lambda u, v: (u & 0xFFF) | (_hi20(v) << 12)),
    "rv_i": Field(4, _rv_i),
    "rv_s": Field(4, _rv_s),
    "rv_b": Field(4, _rv_b),
    "rv_j": Field(4, _rv_j),
    "rv_call": Field(8, _rv_call),
    "rv_cb": Field(2, _rv_cb),
    "rv_cj": Field(2, _rv_cj),
    "arm_call": Field(4, _arm_call, lambda u: sext(u, 24) << 2),
    "arm_b24": Field(4, _arm_b, lambda u: sext(u, 24) << 2),
    "thm_call": Field(4, _thm_call, _thm_branch_addend),
    "thm_b24": Field(4, _thm_b, _thm_branch_addend),
    "thm_imm16": Field(4, _thm_imm16, _thm_imm16_addend),
    "arm_imm16": Field(4, _arm_imm16, lambda u: sext(((u >> 4) & 0xF000) | (u & 0xFFF), 16)),
    "arm_prel31": Field(4, _bits(0, 31), lambda u: sext(u, 31)),
}


def uleb128_write(buf: bytearray | memoryview, pos: int, end: int, v: int) -> str:
    """Overwrite the ULEB128 number at ``buf[pos:]`` (its length kept) with
    ``v``; '' or what is wrong."""
    n = 0
    while pos + n < end and buf[pos + n] & 0x80:
        n += 1
    n += 1
    if pos + n > end:
        return "the ULEB128 number runs past the end of its section"
    if v < 0 or v >> (7 * n):
        return f"does not fit the {n}-byte ULEB128 number there"
    for i in range(n):
        buf[pos + i] = (v & 0x7F) | (0x80 if i < n - 1 else 0)
        v >>= 7
    return ""
