"""Integer registers that hold one constant for the whole function (used by
codegen.py to write the constant itself where such a register is read).

The compiler materialises constants (``vm.const.i64 7``) once in the entry
block and reads the register in the loops after it.  When that ``const`` is
the register's only write anywhere in the function (no other op, call
result, block-argument copy, parameter or reinterpretation writes it), every
read after it sees the same value: every other block runs after the entry
block has run to its end (the entry block either ends in a branch or leaves
the function).  Reads in the entry block up to the ``const`` itself keep the
register (they may see its initial zero).
"""
from __future__ import annotations

from collections.abc import Iterable

from .decoder import MOVE_BIT, REF_BIT, Block

__all__ = ["ConstantRegs", "constant_registers"]

_CONSTS = {"const.i32": True, "const.i64": True, "const.i32.zero": False,
           "const.i64.zero": False}


class ConstantRegs:
    """Per integer register name (``i7``), the constant it holds after the
    entry block's ``const``; :meth:`literal` answers for one reading
    instruction."""

    def __init__(self, values: dict[str, int], early: frozenset[int]):
        self.values = values
        #: pcs of the entry block's instructions up to the last ``const`` used
        self.early = early

    def literal(self, name: str, pc: int) -> str | None:
        """The Python literal to read instead of register ``name`` at ``pc``."""
        v = self.values.get(name)
        if v is None or pc in self.early:
            return None
        return str(v) if v >= 0 else f"({v})"


def _written(blocks: list[Block]) -> Iterable[tuple[str, int]]:
    """(integer register name, pc) of every write an instruction makes."""
    for blk in blocks:
        for ins in blk.instrs:
            for val, d in zip(ins.fields, ins.defs):
                kind = d[1]
                if kind == "register" and d[3] == "write":
                    regs: Iterable[int] = (val,)
                elif kind == "variadic_results":
                    regs = val
                elif kind == "branch_operands":
                    regs = (dst for _src, dst in val)
                elif kind == "branch_table_cases":
                    regs = (dst for _t, pairs in val for _src, dst in pairs)
                else:
                    continue
                for r in regs:
                    if not r & REF_BIT:
                        yield f"i{r & ~MOVE_BIT}", ins.pc


def constant_registers(blocks: list[Block], params: Iterable[str],
                       rewritten: Iterable[int]) -> ConstantRegs:
    """The registers of ``blocks`` written once, by a ``const`` of the entry
    block; ``params`` are the parameter names, ``rewritten`` the registers
    reinterpreted in place (regkinds.py), neither of which qualifies."""
    if not blocks or blocks[0].pc != 0:
        return ConstantRegs({}, frozenset())
    count: dict[str, int] = {}
    for name, _pc in _written(blocks):
        count[name] = count.get(name, 0) + 1
    excluded = set(params) | {f"i{r}" for r in rewritten}
    values: dict[str, int] = {}
    last = -1
    for k, ins in enumerate(blocks[0].instrs):
        has_value = _CONSTS.get(ins.mnemonic)
        if has_value is None:
            continue
        name = f"i{ins.fields[-1]}"
        if count.get(name) != 1 or name in excluded:
            continue
        values[name] = int(ins.fields[0]) if has_value else 0
        last = k
    early = frozenset(i.pc for i in blocks[0].instrs[:last + 1])
    return ConstantRegs(values, early)
