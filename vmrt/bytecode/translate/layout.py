"""Block layout and branches of a translated function (used by codegen.py).

A translated function is a ``while True`` loop selecting the block whose pc
is ``b``.  These keep a hot loop out of that selection, and short:

* **superblocks**: a block ending in an unconditional ``br`` to a small
  block that ends in some other branch gets a copy of that block appended
  (the loop header of a ``for`` loop is copied to the end of its body);
* **self loops**: a block (with its appended copy) that can branch back to
  itself becomes an inner loop: the back edge is a ``continue``, other
  exits set ``b`` and ``break`` to the selection; when the body only
  computes registers, the loop runs the iterations the budget has left
  before its next check and charges them in bulk (:meth:`counted_loop`);
  when its counter ``a`` only goes up by one to ``b`` (an ``scf.for``), the
  loop is ``for a in range(a, hi)`` without the add and the compare
  (:meth:`range_loop`); there, registers that only feed modular ops
  (regfacts.py) are masked instead of sign-checked, and made signed again
  each time the ``for`` stops (:meth:`modular`);
* **copy folding**: a back-edge copy ``y = x`` is made by the op computing
  ``x`` when ``x`` is not read after it (:meth:`coalesced`);
* **compare and branch**: a ``cmp.*`` whose result is the condition of the
  ``cond_br`` right after it becomes the ``if`` itself (the register still
  gets its 0 or 1 in each arm);
* **fall-through**: a block whose only predecessor is the branch (``br``,
  one side of a ``cond_br``, the resume point of a yieldable call) ending a
  block that is emitted once, at the top of an arm or after another
  fall-through, follows that branch in place instead of being an arm of the
  selection (a chain of dispatches, each a yieldable ``fence.await`` and a
  ``cond_br`` to its failure, runs straight through); its budget charge stays
  at its own top (:meth:`plan_falls`).

The instruction budget is charged at the top of each (super)block, as
before: a copied block is charged with its host when everything before it
cannot raise, so nothing observable happens before the charge.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ..decoder import MOVE_BIT, REF_BIT, Block, Instr
from .checks import InstrChecks
from .regfacts import MODULAR_OPS, modular_registers, reads, writes
from .regkinds import coercion_registers, successors
from .templates import PURE_PREFIXES, SIMPLE_OPS, WRAPPED_OPS

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


__all__ = ["ControlFlow", "INLINE_MAX", "drop_unread"]

#: largest block (in instructions) copied to the end of a predecessor
INLINE_MAX = 8
#: most blocks searched for a read of a register (copy folding)
SEARCH_MAX = 32


def cannot_raise(ins: Instr) -> bool:
    """Whether ``ins`` only computes registers (no effect, no exception)."""
    m = ins.mnemonic
    return m.startswith(PURE_PREFIXES) and not m.startswith(
        ("select.ref", "const.ref", "br", "cond_br", "return", "yield", "break", "cond_break"))


def _condition(mnemonic: str) -> str | None:
    """The boolean expression of a ``cmp.*`` template ``1 if X else 0``."""
    tmpl = SIMPLE_OPS.get(mnemonic)
    if tmpl is None or not mnemonic.startswith("cmp.") or not (
            tmpl.startswith("1 if ") and tmpl.endswith(" else 0")):
        return None
    return tmpl[len("1 if "):-len(" else 0")]


class ControlFlow(InstrChecks):
    """Blocks, superblocks and branches; mixed into the translator."""

    # provided by the translator (codegen.FunctionTranslator); the op emitters
    # (emitters.py) see the translator through this interface
    blocks: list[Block]
    trace: Any
    coerce: dict[int, list[Any]]
    split: dict[int, list[int]]
    emit: Callable[[Instr, str], list[str]]
    prelude: Callable[[Instr, str], list[str]]
    operands: Callable[[Instr], tuple[str | None, list[str]]]
    reg: Callable[[int], str]
    int_reg: Callable[[int], str]
    ref_reg: Callable[[int], str]
    const: Callable[[Any], str]
    konst: Any
    in_range: frozenset[int]

    #: pc of the block being emitted as an inner loop (None: not in one)
    loop_pc: int | None = None
    #: back edges emitted for ``loop_pc``
    self_jumps = 0
    #: whether blocks charge the budget themselves (not in a counted loop)
    charges = True
    #: the ``br`` whose target is appended in place (falls through)
    inline_br: Instr | None = None
    #: ops writing the destination of a copy of ``inline_br`` directly (pc -> register)
    renamed: Mapping[int, str] = MappingProxyType({})
    #: the copies of ``inline_br`` those ops made
    folded: frozenset[Any] = frozenset()
    #: wrapping ops of a ``range`` loop that mask their result (pc -> width)
    masked: Mapping[int, int] = MappingProxyType({})
    #: whether one of them masked (emit sets it)
    masked_any = False
    #: the blocks emitted after their only predecessor's branch (see plan_falls)
    falls: frozenset[int] = frozenset()
    #: those emitted so far
    fallen: set[int]
    #: indentation of the run of blocks being emitted (a branch there may fall through)
    run_ind: str | None = None
    #: the block the branch just emitted falls through to (jump sets it)
    fall_to: int | None = None

    # -- fall-through -------------------------------------------------------------
    def plan_falls(self) -> frozenset[int]:
        """The blocks that can follow their only predecessor in place: its
        branch is a ``br``, ``cond_br`` (one side: the false one when both
        could) or yieldable call; the predecessor neither appends a block
        (superblocks), is appended, nor branches to itself; the block is not
        appended to another, nor the entry (it is selected first)."""
        if self.trace is not None:
            return frozenset()
        preds: dict[int, int] = {}
        for blk in self.blocks:
            for t, _pairs in successors(blk.instrs[-1]):
                preds[t] = preds.get(t, 0) + 1
        hosts: set[int] = set()         # blocks with a block appended
        copied: set[int] = set()        # blocks appended to another (emitted twice)
        for blk in self.blocks:
            nxt = self.appended(blk)
            if nxt is not None:
                hosts.add(blk.pc)
                copied.add(nxt.pc)
        falls: set[int] = set()
        for blk in self.blocks:
            last = blk.instrs[-1]
            if last.mnemonic not in _FALL_FROM or blk.pc in hosts or blk.pc in copied:
                continue
            targets = [t for t, _pairs in successors(last)]
            if blk.pc in targets:
                continue
            for t in reversed(targets):
                if t != 0 and preds.get(t) == 1 and t not in copied:
                    falls.add(t)
                    break
        return frozenset(falls)

    def falls_here(self, target: int, ind: str) -> bool:
        """Whether a branch to ``target`` emitted at ``ind`` falls through."""
        return target in self.falls and ind == self.run_ind and self.loop_pc is None

    def run(self, blk: Block, ind: str) -> list[str]:
        """``blk`` and the blocks falling through after it."""
        by_pc = {b.pc: b for b in self.blocks}
        out: list[str] = []
        while True:
            self.run_ind, self.fall_to = ind, None
            out += self.superblock(blk, ind)
            nxt = self.fall_to
            self.run_ind = self.fall_to = None
            if nxt is None:
                return out
            self.fallen.add(nxt)
            blk = by_pc[nxt]

    # -- layout ------------------------------------------------------------------
    def dispatch(self, blocks: list[Block], ind: str) -> list[str]:
        """Select the block whose pc is ``b``: a linear chain for a few blocks,
        otherwise a binary tree of ``b < pivot`` tests (log2(n) compares)."""
        out: list[str] = []
        if len(blocks) > 6:
            mid = len(blocks) // 2
            out.append(f"{ind}if b < {blocks[mid].pc}:")
            out += self.dispatch(blocks[:mid], ind + "    ")
            out.append(f"{ind}else:")
            out += self.dispatch(blocks[mid:], ind + "    ")
            return out
        inner = ind + "    "
        for k, blk in enumerate(blocks):
            out.append(f"{ind}{'if' if k == 0 else 'elif'} b == {blk.pc}:")
            out += self.arm(blk, inner)
        out.append(f"{ind}else:")
        out.append(f"{inner}raise _VmError('invalid block', _StatusCode.INTERNAL)")
        return out

    def arm(self, blk: Block, ind: str) -> list[str]:
        """The code of one block: an inner loop when it branches to itself."""
        self.loop_pc, self.self_jumps = blk.pc, 0
        self.charges = not self.counted(blk)
        ranged = None if self.charges else self.range_loop(blk, ind)
        if ranged is not None:
            self.loop_pc, self.charges = None, True
            return ranged
        body = self.superblock(blk, ind + ("    " if self.charges else "        "))
        looped = self.self_jumps > 0
        self.loop_pc = None
        if looped and self.charges:
            return [f"{ind}while True:"] + body
        if looped:
            return self.counted_loop(blk, body, ind)
        self.charges = True
        return self.run(blk, ind)

    def counted(self, blk: Block) -> bool:
        """Whether a self loop of ``blk`` can charge its budget in bulk: its
        body only computes registers, so nothing in it reads or raises."""
        nxt = self.appended(blk)
        run = blk.instrs if nxt is None else blk.instrs + nxt.instrs
        return self.trace is None and run[-1].mnemonic in ("cond_br", "br_table") and all(
            cannot_raise(i) or i.mnemonic == "br" and i is blk.instrs[-1] for i in run[:-1])

    def counted_loop(self, blk: Block, body: list[str], ind: str) -> list[str]:
        """A self loop whose budget is charged once per run of iterations:
        ``REPEAT`` yields the iterations the budget has left before its next
        check (``L.tick`` then refills it, or raises, at the same iteration
        as a per-iteration charge would); leaving charges what ran (``repeat``
        makes no int per iteration; what it has left says how many ran)."""
        nxt = self.appended(blk)
        cost = len(blk.instrs) + (len(nxt.instrs) if nxt is not None else 0)
        i1, i2 = ind + "    ", ind + "        "
        return ([f"{ind}while True:", f"{i1}ln = L.left // {cost}",
                 f"{i1}li = REPEAT(None, ln)", f"{i1}for _ in li:"] + body +
                [f"{i1}else:", f"{i2}L.left -= ln * {cost} + {cost}",
                 f"{i2}if L.left < 0: L.tick()", f"{i2}L.left += {cost}", f"{i2}continue",
                 f"{i1}L.left -= (ln - LEN_HINT(li)) * {cost}", f"{i1}break"])

    def counter(self, blk: Block) -> tuple[Instr, str, str, tuple[Any, ...]] | None:
        """A counted loop of ``blk`` that a Python ``range`` can run: the
        appended block is ``cmp.lt.i64.s a, b`` and a ``cond_br`` on it back
        to ``blk`` (no copies; the compare's result not needed there);
        ``a`` is written only by an ``add.i64 a, 1`` that cannot overflow
        and read before it only; ``b`` is not written; nothing is
        reinterpreted.  (add, a, b, the exit's cond_br fields)."""
        nxt = self.appended(blk)
        if nxt is None or len(nxt.instrs) != 2 or nxt.instrs[0].mnemonic != "cmp.lt.i64.s":
            return None
        cmp, br = nxt.instrs
        ra, rb, rc = cmp.fields
        c, t, tr, e, er = br.fields
        a, b, flag = self.int_reg(ra), self.int_reg(rb), self.int_reg(rc)
        body = blk.instrs[:-1]
        adds = [i for i in body if a in writes(i)]
        if c != rc or t != blk.pc or tr or e == blk.pc or len({a, b, flag}) != 3 \
                or any(i.pc in self.split for i in blk.instrs) \
                or len(adds) != 1 or adds[0].pc not in self.in_range \
                or self.flag(flag, 1, tr, t, "") and self.read_first(flag, [t]) or any(
                    i.pc in self.coerce for i in blk.instrs + nxt.instrs):
            return None
        add = adds[0]
        if add.mnemonic != "add.i64" or self.int_reg(add.fields[2]) != a or any(
                b in writes(i) for i in blk.instrs) or any(
                a in self.touched(i) for i in body[body.index(add) + 1:] + (blk.instrs[-1],)):
            return None
        return add, a, self.konst.literal(b, -1) or b, (flag, e, er)

    def range_loop(self, blk: Block, ind: str) -> list[str] | None:
        """A counted loop run by ``for a in range(a, hi)`` (see
        :meth:`counter`): the body runs at least once per entry, as the
        bytecode's does, and ``hi`` stops where the budget needs its next
        check (charged up front: the body cannot raise)."""
        found = self.counter(blk)
        if found is None:
            return None
        add, a, b, (flag, e, er) = found
        nxt = self.appended(blk)
        assert nxt is not None
        cost = len(blk.instrs) + len(nxt.instrs)
        i1, i2 = ind + "    ", ind + "        "
        self.renamed, self.folded = self.coalesced(blk.instrs, nxt.instrs)
        ops = tuple(i for i in blk.instrs[:-1] if i is not add)
        br = blk.instrs[-1]
        copies = tuple(p for p in br.fields[1] if p not in self.folded)
        regs = self.modular(ops, copies, (a, b))
        body = self.straight(ops, i2)
        body += self.remap(copies, i2)
        if not self.masked_any:         # every value stayed signed
            regs = {}
        self.renamed, self.folded, self.masked, self.masked_any = {}, frozenset(), {}, False
        return ([f"{ind}while True:", f"{i1}ln = L.left // {cost}",
                 f"{i1}ex = {b} if {b} > {a} + 1 else {a} + 1",
                 f"{i1}hi = ex if ex < {a} + ln else {a} + ln",
                 f"{i1}L.left -= (hi - {a}) * {cost}",
                 f"{i1}for {a} in range({a}, hi):"] + (body or [f"{i2}pass"]) +
                [f"{i1}{r} = (({r} + {1 << w - 1}) & {(1 << w) - 1}) - {1 << w - 1}"
                 for r, w in sorted(regs.items())] +
                [f"{i1}{a} = hi", f"{i1}if hi == ex:"] +
                self.flag(flag, 0, er, e, i2) + self.remap(er, i2) + self.jump(e, i2) +
                [f"{i1}L.left -= {cost}", f"{i1}if L.left < 0: L.tick()",
                 f"{i1}L.left += {cost}"])

    def modular(self, ops: tuple[Instr, ...], copies: tuple[Any, ...], pinned: tuple[str, str]
                ) -> dict[str, int]:
        """The registers of a ``range`` loop's body holding values only
        congruent to their true ones (regfacts.py), with their widths; sets
        :attr:`masked` to the wrapping ops writing them.  The loop makes
        them signed again when its ``for`` stops."""
        facts: list[tuple[str | None, str | None, list[str]]] = []
        for ins in ops:
            dst = self.renamed.get(ins.pc) or next(iter(writes(ins, copies=False)), None)
            facts.append((ins.mnemonic, dst, reads(ins)))
        for src, dst in copies:
            if not (src | dst) & REF_BIT:
                facts.append((None, self.int_reg(dst & ~MOVE_BIT),
                              [self.int_reg(src & ~MOVE_BIT)]))
        regs = modular_registers(facts, pinned)
        self.masked = {ins.pc: MODULAR_OPS[m] for ins, (m, dst, _r) in zip(ops, facts)
                       if dst in regs and m in WRAPPED_OPS and m in MODULAR_OPS}
        return regs

    def appended(self, blk: Block) -> Block | None:
        """The block copied to the end of ``blk``, if any."""
        if not blk.instrs or blk.instrs[-1].mnemonic != "br":
            return None
        target = blk.instrs[-1].fields[0]
        nxt = next((b for b in self.blocks if b.pc == target), None)
        if nxt is None or nxt is blk or not nxt.instrs or len(nxt.instrs) > INLINE_MAX \
                or nxt.instrs[-1].mnemonic == "br":
            return None
        return nxt

    def superblock(self, blk: Block, ind: str) -> list[str]:
        nxt = self.appended(blk)
        tick = _tick if self.charges else _no_tick
        if nxt is None:
            return tick(len(blk.instrs), ind) + self.straight(blk.instrs, ind)
        early = all(cannot_raise(i) for i in blk.instrs[:-1])
        out = tick(len(blk.instrs) + (len(nxt.instrs) if early else 0), ind)
        if self.loop_pc == blk.pc and any(t == blk.pc for t, _p in successors(nxt.instrs[-1])):
            self.renamed, self.folded = self.coalesced(blk.instrs, nxt.instrs)  # a loop's back edge
        out += self.straight(blk.instrs[:-1], ind)
        self.inline_br = blk.instrs[-1]
        out += self.emit(blk.instrs[-1], ind)          # its copies, then fall through
        self.inline_br, self.renamed, self.folded = None, {}, frozenset()
        if not early:
            out += tick(len(nxt.instrs), ind)
        return out + self.straight(nxt.instrs, ind)

    def coalesced(self, instrs: tuple[Instr, ...], after: tuple[Instr, ...]
                  ) -> tuple[dict[int, str], frozenset[Any]]:
        """Copies ``y = x`` of the ``br`` ending ``instrs`` that the last op
        writing ``x`` can make itself (``y = x ^ i2`` instead of ``x = x ^ i2;
        ...; y = x``): nothing between reads ``x`` or touches ``y``, no other
        copy of the ``br`` does either, and ``x`` is written again in
        ``after`` (the appended block) before anything reads it."""
        if self.trace is not None:
            return {}, frozenset()
        body, pairs = instrs[:-1], instrs[-1].fields[1]
        names = [(self.reg(s & ~MOVE_BIT), self.reg(d & ~MOVE_BIT)) for s, d in pairs]
        renamed: dict[int, str] = {}
        folded = set()
        for (x, y), pair in zip(names, pairs):
            if x[0] != "i" or y[0] != "i" or x == y or \
                    sum(x in p or y in p for p in names) != 1:
                continue
            w = next((k for k in range(len(body) - 1, -1, -1) if x in writes(body[k])), None)
            if w is None or body[w].pc in renamed or body[w].pc in self.split or not (
                    body[w].mnemonic in SIMPLE_OPS or body[w].mnemonic in WRAPPED_OPS):
                continue
            if all(not {x, y} & (self.touched(i) | set(writes(i))) for i in body[w + 1:]) \
                    and self.dead(x, after):
                renamed[body[w].pc] = y
                folded.add(pair)
        return renamed, frozenset(folded)

    def touched(self, ins: Instr) -> set[str]:
        """The integer registers ``ins`` reads, reinterpretations included
        (a register pair rebuilt reads both halves)."""
        return set(reads(ins)) | {f"i{r}" for c in self.coerce.get(ins.pc, ())
                                  for r in coercion_registers(c)}

    def dead(self, x: str, instrs: tuple[Instr, ...]) -> bool:
        """Whether ``x`` is not read after it: ``instrs`` (ending their block)
        write it before reading it, or no path from the blocks they go to
        reads it before writing it."""
        for ins in instrs:
            if x in self.touched(ins):
                return False
            if x in writes(ins, copies=False):
                return True
        return not self.read_first(x, [t for t, _pairs in successors(instrs[-1])])

    def read_first(self, x: str, todo: list[int]) -> bool:
        """Whether some path from the blocks ``todo`` reads ``x`` before
        writing it (a branch's copies are not taken as writes); past
        ``SEARCH_MAX`` blocks, assumed so."""
        by_pc = {b.pc: b for b in self.blocks}
        seen: set[int] = set()
        while todo:
            pc = todo.pop()
            if pc in seen:
                continue
            seen.add(pc)
            blk = by_pc.get(pc)
            if blk is None or len(seen) > SEARCH_MAX:
                return True
            for ins in blk.instrs:
                if x in self.touched(ins):
                    return True
                if x in writes(ins, copies=False):
                    break
                todo += [t for t, _pairs in successors(ins)]
        return False

    def straight(self, instrs: tuple[Instr, ...], ind: str) -> list[str]:
        """A run of instructions, compares fused with the branch after them."""
        out: list[str] = []
        i = 0
        while i < len(instrs):
            if i + 1 < len(instrs):
                fused = self.fused(instrs[i], instrs[i + 1], ind)
                if fused is not None:
                    out += fused
                    i += 2
                    continue
            out += self.emit(instrs[i], ind)
            i += 1
        return out

    def fused(self, cmp: Instr, br: Instr, ind: str) -> list[str] | None:
        cond = _condition(cmp.mnemonic)
        if cond is None or br.mnemonic != "cond_br" or self.trace is not None \
                or br.pc in self.coerce:
            return None
        dst, reads = self.operands(cmp)
        _c, t, tr, e, er = br.fields
        if dst is None or dst != self.int_reg(_c):
            return None
        inner = ind + "    "
        test = cond.format(**dict(zip('abc', reads)))
        if self.falls_here(t, ind):     # the other side leaves, then the true one follows
            return (self.prelude(cmp, ind) + [f"{ind}if not ({test}):"]
                    + self.flag(dst, 0, er, e, inner) + self.remap(er, inner)
                    + self.jump(e, inner)
                    + self.flag(dst, 1, tr, t, ind) + self.remap(tr, ind) + self.jump(t, ind))
        side = self.side(e, ind)
        return (self.prelude(cmp, ind) + [f"{ind}if {test}:"]
                + self.flag(dst, 1, tr, t, inner) + self.remap(tr, inner) + self.jump(t, inner)
                + ([] if side == ind else [f"{ind}else:"])
                + self.flag(dst, 0, er, e, side) + self.remap(er, side) + self.jump(e, side))

    def side(self, target: int, ind: str) -> str:
        """Where the false side of a ``cond_br`` at ``ind`` goes: after the
        ``if`` when it falls through, else in its ``else``."""
        return ind if self.falls_here(target, ind) else ind + "    "

    def flag(self, dst: str, value: int, pairs: tuple[Any, ...], target: int,
             ind: str) -> list[str]:
        """The compare's result stored on one edge, unless the edge's copies
        do not read it and the target's first instruction overwrites it
        without reading it (a register op)."""
        blk = next((b for b in self.blocks if b.pc == target), None)
        first = blk.instrs[0] if blk is not None and blk.instrs else None
        if first is not None and first.pc not in self.coerce and (
                first.mnemonic in SIMPLE_OPS or first.mnemonic in WRAPPED_OPS) \
                and all(self.reg(src & ~MOVE_BIT) != dst for src, _ in pairs):
            written, read = self.operands(first)
            if written == dst and dst not in read:
                return []
        return [f"{ind}{dst} = {value}"]

    # -- branches ----------------------------------------------------------------
    def jump(self, target: int, ind: str) -> list[str]:
        """Go to block ``target``."""
        if self.loop_pc is None:
            if self.falls_here(target, ind):
                self.fall_to = target
                return []
            return [f"{ind}b = {target}", f"{ind}continue"]
        if target == self.loop_pc:
            self.self_jumps += 1
            return [f"{ind}continue"]
        return [f"{ind}b = {target}", f"{ind}break"]

    def remap(self, pairs: tuple[Any, ...], ind: str) -> list[str]:
        """Block-argument copies, one after another in list order, as IREE's
        VM does them: the compiler relies on it (it swaps registers through a
        scratch register, ``r1->r26, ..., r2->r1, ..., r26->r2``)."""
        # (a branch ends its block, so it runs after the entry block's constants)
        srcs = [self.konst.literal(s, -1) or s for s in (self.reg(src & ~MOVE_BIT)
                                                         for src, _ in pairs)]
        dsts = [self.reg(dst & ~MOVE_BIT) for _, dst in pairs]
        return [f"{ind}{d} = {s}" for d, s in zip(dsts, srcs) if d != s]


#: the branches a block can fall through after (not ``br_table`` or the debug ones)
_FALL_FROM = frozenset({"br", "cond_br", "call.yieldable", "call.variadic.yieldable"})


def _tick(n: int, ind: str) -> list[str]:
    """Charge ``n`` instructions to the budget (L.tick checks it and the deadline)."""
    return [f"{ind}L.left -= {n}", f"{ind}if L.left < 0: L.tick()"]


def _no_tick(n: int, ind: str) -> list[str]:
    return []


_COPY = re.compile(r"\s*(i\d+) = (?:i\d+|-?\d+|-?\d+\.\d+)$")
_NAME = re.compile(r"\bi\d+\b")


def drop_unread(lines: list[str]) -> list[str]:
    """``lines`` without the copies and constants stored into integer
    registers nothing reads (block arguments the compiler passes along to
    registers it never uses again)."""
    written: dict[str, int] = {}
    for line in lines:
        m = _COPY.match(line)
        if m:
            written[m.group(1)] = written.get(m.group(1), 0) + 1
    if not written:
        return lines
    seen: dict[str, int] = {}
    for line in lines:
        for name in _NAME.findall(line):
            seen[name] = seen.get(name, 0) + 1
    unread = {n for n, k in written.items() if seen.get(n, 0) == k}
    return [line for line in lines if not ((m := _COPY.match(line)) and m.group(1) in unread)]
