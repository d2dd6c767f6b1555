"""Register kinds through a function, and where a translated function must
reinterpret a register's bits (the reinterpretations themselves,
``REINT_I`` / ``REINT_F``, are in namespace.py: translated code calls them).

The VM's 32-bit register bank holds i32 and f32 values (and i64/f64 in
even pairs) as raw bits: IREE's VM reads whatever bits a register holds, so
an instruction may read as an integer what another wrote as a float (real
compiler output does this through block-argument copies, e.g. an f32 zero
copied into an i64 loop counter; a mutated program does it anywhere).  A
translated function keeps each register in a Python local holding an int or
a float, so such a read must reinterpret the bits, as IREE does, instead of
failing deep inside the translated code with a TypeError.

:func:`register_coercions` follows the values through the blocks (block
arguments, calls, returns) and returns, per instruction, the registers to
reinterpret before it runs: statically known kinds convert only where they
differ; where the kind depends on the path taken, a run-time check does.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..errors import VmError
from ..vm.module import cconv_fragments
from .decoder import MOVE_BIT, REF_BIT, Block, Instr

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["register_coercions", "successors"]

#: kinds are banks ("i32", "i64", "f32", "f64"), "?" unknown or "X" (depends
#: on the path taken); absent: never written (the local holds int 0)
_BANKS = frozenset({"i32", "i64", "f32", "f64"})
_CODE_KIND = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}

State = dict[int, str]


def _merge(a: str | None, b: str | None) -> str | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if "X" in (a, b):
        return "X"
    if "?" in (a, b):
        return "?"
    return a if a[0] == b[0] == "i" else "X"     # i32/i64 are both Python ints


def _codes_kinds(regs: tuple, codes: str | None) -> list[tuple[int, str]]:
    """(register, kind) of the non-ref registers of a call or return; kinds
    unknown ("?") when the cconv is unknown or does not fit (the translator
    reports that)."""
    plain = [r & ~MOVE_BIT for r in regs if not r & REF_BIT]
    if codes is None:
        return [(r, "?") for r in plain]
    kinds = [_CODE_KIND[c] for c in codes if c in _CODE_KIND]
    if len(kinds) != len(plain) or len(codes) != len(regs):
        return [(r, "?") for r in plain]
    return list(zip(plain, kinds))


class _Effects:
    """What one instruction reads and writes, in the order it does."""

    def __init__(self, mod: Any, result_codes: str):
        self.mod = mod
        self.result_codes = result_codes

    def callee_codes(self, callee: int) -> tuple[str | None, str | None]:
        try:
            if callee & 0x80000000:
                cconv = self.mod.import_cconv(callee & ~0x80000000)
                if not cconv:
                    return None, None
            else:
                cconv = self.mod.signature(callee)
            a, r = cconv_fragments(cconv)
        except (VmError, IndexError, KeyError, TypeError, ValueError):
            return None, None
        return (None if "C" in a else a), r

    def of(self, ins: Instr) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
        m = ins.mnemonic
        if m.startswith("call"):
            f = dict(zip(ins.names, ins.fields))
            a, r = self.callee_codes(f["callee_ordinal"])
            if "segment_sizes" in f:
                a = None                     # variadic segments: the translator checks them
            return _codes_kinds(f["operands"], a), _codes_kinds(f["results"], r)
        if m == "return":
            return _codes_kinds(ins.fields[0], self.result_codes), []
        reads: list[tuple[int, str]] = []
        writes: list[tuple[int, str]] = []
        for (name, kind, bank, access, _move), v in zip(ins.defs, ins.fields):
            k = bank if bank in _BANKS else None
            if k is None:
                continue
            if kind == "register":
                (writes if access == "write" else reads).append((v, k))
            elif kind == "variadic_operands" and name != "segment_sizes":
                reads += [(r, k) for r in v if not r & REF_BIT]
        return reads, writes


def successors(ins: Instr) -> Iterator[tuple[int, tuple]]:
    """(target pc, remap pairs) of each branch of ``ins``."""
    fields = list(zip(ins.names, ins.fields, ins.defs))
    for i, (name, v, _d) in enumerate(fields):
        if name.endswith("dest_pc"):
            nxt = fields[i + 1] if i + 1 < len(fields) else None
            yield v, (nxt[1] if nxt is not None and nxt[2][1] == "branch_operands" else ())
        elif name == "cases":
            yield from v


def _after_remap(state: State, pairs: tuple) -> State:
    out = dict(state)
    for src, dst in pairs:          # one copy after another, as the VM does them
        if src & REF_BIT:
            continue
        k = out.get(src & ~MOVE_BIT)
        d = dst & ~MOVE_BIT
        if k is None:
            out.pop(d, None)
        else:
            out[d] = k
    return out


Coercion = tuple[int, str, str | None]     # (register, read as bank, held kind)


def register_coercions(blocks: list[Block], arg_codes: str, result_codes: str,
                       mod: Any) -> dict[int, list[Coercion]]:
    """``{pc: [(register, bank read, kind held), ...]}`` for the
    instructions that read a register holding a value of the other kind
    (integer vs float), or one whose kind is not known at load time."""
    out: dict[int, list[Coercion]] = {}
    if not blocks:
        return out
    entry: State = {}
    slot = 0
    for c in arg_codes:
        if c in "if":
            entry[slot] = _CODE_KIND[c]
            slot += 1
        elif c in "IF":
            slot += slot & 1
            entry[slot] = _CODE_KIND[c]
            slot += 2
    by_pc = {b.pc: b for b in blocks}
    states: dict[int, State] = {blocks[0].pc: entry}
    work = [blocks[0].pc]
    effects = _Effects(mod, result_codes)
    while work:
        pc = work.pop()
        st = dict(states[pc])
        for ins in by_pc[pc].instrs:
            reads, writes = effects.of(ins)
            for reg, want in reads:
                have = st.get(reg)
                if want == "?" or have is not None and have[0] == want[0]:
                    continue
                if have is None and want[0] == "i":
                    continue                 # never written: int 0
                todo = out.setdefault(ins.pc, [])
                held = have if have in _BANKS else None
                for i, (r, w, h) in enumerate(todo):
                    if r == reg:             # seen on another pass: agree, or check at run time
                        todo[i] = (r, w, h if h == held else None)
                        break
                else:
                    todo.append((reg, want, held))
                st[reg] = want               # converted in place
            for reg, kind in writes:
                st[reg] = kind
            for target, pairs in successors(ins):
                if target not in by_pc:
                    continue                 # the decoder reports bad targets
                succ = _after_remap(st, pairs)
                old = states.get(target)
                if old is None:
                    states[target] = succ
                    work.append(target)
                    continue
                merged = {r: _merge(old.get(r), succ.get(r)) for r in old.keys() | succ.keys()}
                new = {r: k for r, k in merged.items() if k is not None}
                if new != old:
                    states[target] = new
                    work.append(target)
    return out
