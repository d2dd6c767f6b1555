"""Decode one function's bytecode into blocks of instructions, checking
every operand against the function's register counts and the module's
tables.  Errors are :class:`VerifyError` naming the function and the pc."""
from __future__ import annotations

import struct

from elfkit.support import DataRecord

from ..errors import VerifyError
from .isa import CORE, OPCODE_SETS

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
_I64 = struct.Struct("<q").unpack_from
_F32 = struct.Struct("<f").unpack_from
_F64 = struct.Struct("<d").unpack_from

TERMINATORS = frozenset({"br", "cond_br", "br_table", "return", "fail", "yield", "break",
                         "cond_break", "call.yieldable", "call.variadic.yieldable"})
REF_BIT = 0x8000
MOVE_BIT = 0x4000


class Instr(DataRecord, frozen=True, slots=True):
    pc: int
    mnemonic: str
    fields: tuple[Any, ...]      # decoded field values, in table order
    defs: tuple[Any, ...]        # the opcode table's field definitions (parallel to fields)

    @property
    def names(self) -> tuple[Any, ...]:
        return tuple(d[0] for d in self.defs)


class Block(DataRecord, frozen=True, slots=True):
    pc: int
    instrs: tuple[Instr, ...]


class _Reader:
    __slots__ = ("code", "pc", "end", "where")

    def __init__(self, code: bytes, where: str):
        self.code = code
        self.pc = 0
        self.end = len(code)
        self.where = where

    def fail(self, msg: str, pc: int | None = None) -> VerifyError:
        return VerifyError(f"{msg}; at {self.where}+{(self.pc if pc is None else pc):08X}")

    def need(self, n: int) -> int:
        pc = self.pc
        if pc + n > self.end:
            raise self.fail(f"instruction truncated (need {n} bytes, {self.end - pc} left)")
        self.pc = pc + n
        return pc

    def u8(self) -> int:
        return self.code[self.need(1)]

    def u16(self) -> int:
        return _U16(self.code, self.need(2))[0]

    def u32(self) -> int:
        return _U32(self.code, self.need(4))[0]

    def align2(self) -> None:
        if self.pc & 1:
            self.need(1)


class _Decoder(_Reader):
    """A :class:`_Reader` that knows the function's register counts: decodes
    opcodes and operand fields, range-checking every register."""
    __slots__ = ("i32_count", "i32_cap", "ref_count", "ext_f64")

    def __init__(self, code: bytes, where: str, i32_count: int, ref_count: int,
                 ext_f64: bool):
        super().__init__(code, where)
        self.i32_count = i32_count
        self.ref_count = ref_count
        self.ext_f64 = ext_f64
        # round the i32 register count up to a power of two, as the reference VM does
        i32_cap = 1
        while i32_cap < i32_count:
            i32_cap <<= 1
        self.i32_cap = 0 if i32_count == 0 else i32_cap

    def reg(self, bank: str | None, raw: int, pc: int) -> int:
        """``raw`` checked as a register of ``bank`` ("any": the ref bit decides)."""
        i32_cap = self.i32_cap
        if bank == "ref":
            if not raw & REF_BIT:
                raise self.fail(f"register {raw:#06x} is not a ref register", pc)
            if (raw & 0x3FFF) >= self.ref_count:
                raise self.fail(f"ref register r{raw & 0x3FFF} out of range "
                                f"(function has {self.ref_count})", pc)
            return raw
        if bank in ("i32", "f32"):
            if raw & REF_BIT or raw >= i32_cap:
                raise self.fail(f"i32 register {raw:#06x} out of range "
                                f"(function has {self.i32_count})", pc)
            return raw
        if bank in ("i64", "f64"):
            if raw & REF_BIT or raw & 1 or raw + 1 >= i32_cap:
                raise self.fail(f"64-bit register {raw:#06x} invalid (must be even and < "
                                f"{i32_cap - 1})", pc)
            return raw
        # "any": bank decided by the ref bit
        if raw & REF_BIT:
            return self.reg("ref", raw, pc)
        if raw >= i32_cap:
            raise self.fail(f"register {raw:#06x} out of range", pc)
        return raw

    def remap(self, pc: int) -> tuple[Any, ...]:
        """A branch's operand list: (src, dst) register pairs, same bank."""
        self.align2()
        n = self.u16()
        out = []
        for _ in range(n):
            src, dst = self.u16(), self.u16()
            if (src & REF_BIT) != (dst & REF_BIT):
                raise self.fail("branch operand remaps between register banks", pc)
            self.reg("any", src, pc)
            self.reg("any", dst & ~MOVE_BIT, pc)
            out.append((src, dst))
        return tuple(out)

    def opcode(self, pc: int) -> tuple[Any, ...]:
        """The opcode table entry ``(mnemonic, fields)`` of the instruction at pc."""
        op = self.u8()
        entry = CORE.get(op)
        if entry is not None and entry[0].startswith("<prefix:"):
            set_name = entry[0][8:-1]
            if set_name == "ext_f64" and not self.ext_f64:
                raise self.fail("f64 extension not enabled", pc)
            op2 = self.u8()
            entry = OPCODE_SETS[set_name].get(op2)
            if entry is None:
                raise self.fail(f"unknown opcode {op:#04x} {op2:#04x}", pc)
        elif entry is None:
            raise self.fail(f"unknown opcode {op:#04x}", pc)
        return entry

    def attribute(self, bank: str | None, pc: int) -> int | float:
        code = self.code
        if bank in ("i32",):
            return _I32(code, self.need(4))[0]
        if bank == "f32":
            return _F32(code, self.need(4))[0]
        if bank == "i64":
            return _I64(code, self.need(8))[0]
        if bank == "f64":
            return _F64(code, self.need(8))[0]
        raise self.fail(f"unsupported attribute type {bank}", pc)

    def variadic(self, name: str, bank: str | None, pc: int) -> tuple[Any, ...]:
        self.align2()
        n = self.u16()
        regs = []
        for _ in range(n):
            raw = self.u16()
            if bank == "i32" and name == "segment_sizes":
                regs.append(raw)            # counts, not registers
            elif raw & REF_BIT:
                self.reg("ref" if bank in ("ref", "any", None) else bank, raw & ~MOVE_BIT, pc)
                regs.append(raw)
            else:
                regs.append(self.reg(bank if bank in ("i32", "i64", "f32", "f64", "ref")
                                     else "any", raw, pc))
        return tuple(regs)

    def field(self, fdef: tuple[Any, ...], vals: list[Any], pc: int) -> object:
        """Decode one operand field; ``vals`` holds the fields decoded so far."""
        name, kind, bank, _access, move_ok = fdef
        if kind == "register":
            raw = self.u16()
            v = self.reg(bank, raw, pc)
            if bank == "ref" and raw & MOVE_BIT and not move_ok:
                v = raw & ~MOVE_BIT   # tolerated: treated as a plain use
            return v
        if kind == "attribute":
            return self.attribute(bank, pc)
        if kind in ("global_attr", "rodata_attr", "func_attr", "type_of", "branch_target"):
            return self.u32()
        if kind == "string_attr":
            n = self.u16()
            s = self.need(n)
            return bytes(self.code[s:s + n]).decode("utf-8", "replace")
        if kind in ("variadic_operands", "variadic_results"):
            return self.variadic(name, bank, pc)
        if kind == "branch_operands":
            return self.remap(pc)
        if kind == "const_i16":
            return self.u16()
        if kind == "branch_table_cases":
            return tuple((self.u32(), self.remap(pc)) for _ in range(vals[-1]))
        # table and decoder out of sync
        raise self.fail(f"unsupported field kind {kind}", pc)  # pragma: no cover

    def check_targets(self, blocks: list[Block]) -> None:
        """Every branch target must be the start of a block."""
        starts = {b.pc for b in blocks}
        for b in blocks:
            for ins in b.instrs:
                for name, v in zip(ins.names, ins.fields):
                    if name.endswith("dest_pc") and v not in starts:
                        raise self.fail(f"branch target {v:#x} is not the start of a block",
                                        ins.pc)
                    if name == "cases":
                        for t, _ in v:
                            if t not in starts:
                                raise self.fail(f"branch target {t:#x} is not the start of a "
                                                "block", ins.pc)


def decode_function(code: bytes, where: str, i32_count: int, ref_count: int,
                    ext_f64: bool = True) -> list[Block]:
    """Split ``code`` into blocks; register operands are range-checked."""
    rd = _Decoder(code, where, i32_count, ref_count, ext_f64)
    blocks: list[Block] = []
    cur: list[Instr] | None = None
    cur_pc = 0
    while rd.pc < rd.end:
        pc = rd.pc
        mnem, fields = rd.opcode(pc)
        if mnem == "<block>":
            if cur is not None:
                if not cur or cur[-1].mnemonic not in TERMINATORS:
                    raise rd.fail("block does not end in a terminator", cur_pc)
                blocks.append(Block(cur_pc, tuple(cur)))
            cur = []
            cur_pc = pc
            continue
        if cur is None:
            raise rd.fail("function does not start with a block marker", pc)
        vals: list[Any] = []
        for fdef in fields:
            vals.append(rd.field(fdef, vals, pc))
        cur.append(Instr(pc, mnem, tuple(vals), fields))
    if cur is None:
        raise rd.fail("function has no blocks", 0)
    if not cur or cur[-1].mnemonic not in TERMINATORS:
        raise rd.fail("function does not end in a terminator", cur_pc)
    blocks.append(Block(cur_pc, tuple(cur)))
    rd.check_targets(blocks)
    return blocks
