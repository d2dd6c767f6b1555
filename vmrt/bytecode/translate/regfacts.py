"""What the translator knows about integer registers before running
anything (used by codegen.py to write less code per instruction).

* **Constants**: the compiler materialises constants (``vm.const.i64 7``)
  once in the entry block and reads the register in the loops after it.
  When that ``const`` is the register's only write anywhere in the function
  (no other op, call result, block-argument copy, parameter or
  reinterpretation writes it), every read after it sees the same value:
  every other block runs after the entry block has run to its end (a block
  ends in a terminator: a branch, a return or a failure).  Reads in the
  entry block up to the ``const`` itself keep the register (they may see its
  initial zero).  :class:`ConstantRegs` gives the literal to read instead.
* **Loop counters**: a block entered only through the true edge of
  ``cmp.lt.i64.s a, b`` (an ``scf.for`` body: ``a < b`` holds, so
  ``a < INT64_MAX``) can add 1 to ``a`` without overflowing, as long as
  nothing in the block wrote ``a`` before.  :func:`no_overflow` lists such
  adds.
* **Modular registers**: in a counted loop, a register only ever read by
  ops whose result modulo 2**bits depends only on their operands modulo
  2**bits (add, sub, mul, fma, shl, and, or, xor, not, copies), each
  writing another such register, may hold any value congruent to its
  true one: its wrapping ops mask (``& M``) instead of checking and fixing
  the sign, and the loop restores the signed value when it stops
  (:func:`modular_registers`).
* **Reads and writes** of each instruction (:func:`reads`, :func:`writes`;
  layout.py folds a copy into the op computing its source when the source is
  not read after it).
"""
from __future__ import annotations

from collections.abc import Iterable

from ..decoder import MOVE_BIT, REF_BIT, Block, Instr
from .regkinds import successors

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MODULAR_OPS", "ConstantRegs", "constant_registers", "modular_registers",
           "no_overflow", "reads", "writes"]

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
        """The Python literal to read instead of register ``name`` at ``pc``
        (-1: a branch's block-argument copies, which end a block)."""
        v = self.values.get(name)
        if v is None or pc in self.early:
            return None
        return str(v) if v >= 0 else f"({v})"


#: per mnemonic: where its integer reads, writes and branch copies are
#: (field index, 0 register / 1 list / 2 copy pairs / 3 table cases)
_PLANS: dict[str, tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]] = {}


def _plan(ins: Instr) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    plan = _PLANS.get(ins.mnemonic)
    if plan is None:
        rd: list[tuple[int, int]] = []
        wr: list[tuple[int, int]] = []
        cp: list[tuple[int, int]] = []
        for k, (name, kind, bank, access, _move) in enumerate(ins.defs):
            if kind == "register" and bank != "ref":
                (rd if access == "read" else wr).append((k, 0))
            elif kind == "variadic_operands" and name != "segment_sizes":
                rd.append((k, 1))
            elif kind == "variadic_results":
                wr.append((k, 1))
            elif kind in ("branch_operands", "branch_table_cases"):
                how = 2 if kind == "branch_operands" else 3
                rd.append((k, how))
                cp.append((k, how))
        plan = _PLANS[ins.mnemonic] = (tuple(rd), tuple(wr), tuple(cp))
    return plan


def _names(fields: tuple[Any, ...], spec: tuple[Any, ...], side: int) -> list[str]:
    out: list[str] = []
    for k, how in spec:
        v = fields[k]
        regs = (v,) if how == 0 else v if how == 1 else [p[side] for p in v] if how == 2 \
            else [p[side] for _t, pairs in v for p in pairs]
        out += [f"i{r & ~MOVE_BIT}" for r in regs if not r & REF_BIT]
    return out


def reads(ins: Instr) -> list[str]:
    """The names of the integer registers ``ins`` reads, branch copies included."""
    return _names(ins.fields, _plan(ins)[0], 0)


def writes(ins: Instr, copies: bool = True) -> list[str]:
    """The names of the integer registers ``ins`` writes, branch copies
    included unless ``copies`` is false (they happen on one edge only)."""
    rd, wr, cp = _plan(ins)
    out = _names(ins.fields, wr, 0)
    return out + _names(ins.fields, cp, 1) if copies and cp else out


def constant_registers(blocks: list[Block], params: Iterable[str],
                       rewritten: Iterable[int]) -> ConstantRegs:
    """The registers of ``blocks`` written once, by a ``const`` of the entry
    block; ``params`` are the parameter names, ``rewritten`` the registers
    reinterpreted in place (regkinds.py), neither of which qualifies."""
    if not blocks or blocks[0].pc != 0 or not any(
            i.mnemonic in _CONSTS for i in blocks[0].instrs):
        return ConstantRegs({}, frozenset())
    count: dict[str, int] = {}
    for blk in blocks:
        for ins in blk.instrs:
            for name in writes(ins):
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


def _below_max(prev: Instr | None, ins: Instr, target: int, pairs: tuple[Any, ...]) -> str | None:
    """The register known below INT64_MAX on the edge of ``ins`` to ``target``:
    the left operand of the ``cmp.lt.i64.s`` deciding a ``cond_br``'s true
    edge (the edge's copies not writing it)."""
    if ins.mnemonic != "cond_br" or prev is None or prev.mnemonic != "cmp.lt.i64.s":
        return None
    cond, t, _tr, e, _er = ins.fields
    a, _b, result = prev.fields
    if result != cond or t != target or e == target:
        return None
    name = f"i{a}"
    if any(not dst & REF_BIT and f"i{dst & ~MOVE_BIT}" == name for _s, dst in pairs):
        return None
    return name


def no_overflow(blocks: list[Block], konst: ConstantRegs,
                rewritten: dict[int, list[Any]]) -> frozenset[int]:
    """The pcs of the ``add.i64 a, 1`` that cannot overflow: their block is
    entered only where ``a < b`` was just found true, and ``a`` was not
    written since (``rewritten``: the reinterpretations per pc)."""
    if not any(i.mnemonic == "add.i64" and "1" in (konst.literal(f"i{i.fields[0]}", i.pc),
                                                    konst.literal(f"i{i.fields[1]}", i.pc))
               for b in blocks for i in b.instrs):
        return frozenset()
    facts: dict[int, set[str] | None] = {b.pc: None for b in blocks}
    if blocks:
        facts[blocks[0].pc] = set()          # the entry: nothing known
    for blk in blocks:
        prev = None
        for ins in blk.instrs:
            for target, pairs in successors(ins):
                if target not in facts:
                    continue                 # the decoder reports bad targets
                name = _below_max(prev, ins, target, pairs)
                known = facts[target]
                edge = {name} if name else set()
                facts[target] = edge if known is None else known & edge
            prev = ins
    out: set[int] = set()
    for blk in blocks:
        known = set(facts[blk.pc] or ())
        for ins in blk.instrs:
            if not known:
                break
            known -= {f"i{c[0]}" for c in rewritten.get(ins.pc, ())}
            if ins.mnemonic == "add.i64":
                a, b, _dst = ins.fields
                left, right = f"i{a}", f"i{b}"
                if left in known and konst.literal(right, ins.pc) == "1" or \
                        right in known and konst.literal(left, ins.pc) == "1":
                    out.add(ins.pc)
            known -= set(writes(ins))
    return frozenset(out)


#: per mnemonic, the width of the ops whose result modulo 2**width depends only
#: on their operands modulo 2**width (a shift count is masked to the width)
MODULAR_OPS: dict[str, int] = {f"{op}.i{w}": w for w in (32, 64) for op in (
    "add", "sub", "mul", "fma", "shl", "and", "or", "xor", "not")}


def modular_registers(ops: list[tuple[str | None, str | None, list[str]]],
                      pinned: Iterable[str]) -> dict[str, int]:
    """The registers of a loop body that may hold any value congruent to their
    true one (modulo 2**width), with their widths.  ``ops`` are the body's
    instructions in order as (mnemonic, register written, registers read),
    a copy having mnemonic None; ``pinned`` registers (the loop's counter and
    bound) never qualify.  A register qualifies when a modular op (or a copy
    of a qualifying register) writes it, and every op of the body reading it
    is a modular op of the same width, or a copy, writing a qualifying
    register of that width; registers written outside the body hold signed
    values, which are congruent too."""
    width: dict[str, int] = {}
    bad = set(pinned)
    changed = True
    while changed:                      # copies of copies: until nothing is added
        changed = False
        for m, dst, rd in ops:
            w = MODULAR_OPS.get(m) if m is not None else (
                width.get(rd[0]) if len(rd) == 1 else None)
            if dst is None or w is None or dst in bad:
                continue
            have = width.get(dst)
            if have is None:
                width[dst] = w
                changed = True
            elif have != w:
                bad.add(dst)
                changed = True
    ok = {r: w for r, w in width.items() if r not in bad}
    changed = True
    while changed:                      # drop registers read by anything else
        changed = False
        for m, dst, rd in ops:
            w = MODULAR_OPS.get(m) if m is not None else None
            for r in rd:
                if r not in ok:
                    continue
                keeps = dst in ok and ok[dst] == ok[r] and (m is None or w == ok[r])
                if not keeps:
                    del ok[r]
                    changed = True
    return ok
