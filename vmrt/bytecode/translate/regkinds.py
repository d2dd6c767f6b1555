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

**Register pairs.**  An i64 lives in an even register and the odd one after
it; a translated function keeps the whole value in the even register's
local.  Block-argument copies move single registers, one after another, and
iree-compile sometimes orders them as if they ran at once, so a pair read as
an i64 can hold halves of two different values (an i32 and the high half of
an overwritten i64).  Kinds therefore name the write an i64 came from
(``i64#pc``, its high half ``h#pc``): a pair read whose halves do not match
is rebuilt from both registers (``PAIR``), and the i64 writes whose high
half is read apart keep it in the odd register's local too (``HIGH``), found
in a second pass.  Pairs moved and read as written cost nothing.
"""
from __future__ import annotations

from collections.abc import Iterator

from ...errors import VmError
from ...vm.module import cconv_fragments
from ..decoder import MOVE_BIT, REF_BIT, Block, Instr

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PairFacts", "coercion_registers", "register_coercions", "successors"]

#: kinds are banks ("i32", "f32", "f64"), an i64 and the high half of one with
#: the writes they come from ("i64#12,40", "h#12,40"; "a0": a parameter), an
#: integer whose width depends on the path ("ix#" and the high halves it may
#: be), "?" unknown or "X" (depends on the path taken); absent: never written
#: (the local holds int 0)
_BANKS = frozenset({"i32", "i64", "f32", "f64"})
_CODE_KIND = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}

State = dict[int, str]


def _tags(kind: str | None, *heads: str) -> set[str]:
    """The i64 writes named by ``kind`` when it starts with one of ``heads``."""
    for head in heads:
        if kind is not None and kind.startswith(head):
            return {t for t in kind[len(head):].split(",") if t}
    return set()


def _merge(a: str | None, b: str | None) -> str | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if "X" in (a, b):
        return "X"
    if "?" in (a, b):
        return "?"
    for head in ("i64#", "h#"):         # the same pair on both paths: union of the writes
        if a.startswith(head) and b.startswith(head):
            return head + ",".join(sorted(_tags(a, head) | _tags(b, head)))
    if _bank(a)[0] == _bank(b)[0] == "i":
        # an integer of a width that depends on the path; the high halves it may be
        return "ix#" + ",".join(sorted(_tags(a, "h#", "ix#") | _tags(b, "h#", "ix#")))
    return "X"


def _bank(kind: str) -> str:
    """The bank a kind reads as: an i64 of known origin is an i64, a high half
    or an integer of unknown width an i32."""
    if kind.startswith("i64#"):
        return "i64"
    if kind.startswith(("h#", "ix#")):
        return "i32"
    return kind


def _codes_kinds(regs: tuple[Any, ...], codes: str | None) -> list[tuple[int, str]]:
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


def successors(ins: Instr) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """(target pc, remap pairs) of each branch of ``ins``."""
    fields = list(zip(ins.names, ins.fields, ins.defs))
    for i, (name, v, _d) in enumerate(fields):
        if name.endswith("dest_pc"):
            nxt = fields[i + 1] if i + 1 < len(fields) else None
            yield v, (nxt[1] if nxt is not None and nxt[2][1] == "branch_operands" else ())
        elif name == "cases":
            yield from v


def _after_remap(state: State, pairs: tuple[Any, ...]) -> State:
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


def coercion_registers(c: Coercion) -> tuple[int, ...]:
    """The registers a coercion reads: a pair rebuilt reads both halves, a
    high half its i64's register, a reinterpretation its own register."""
    reg, bank, _held = c
    if bank == "pair":
        return (reg, reg + 1)
    if bank == "hi":
        return (reg, reg - 1)
    return (reg,)


class PairFacts:
    """Where a function's i64 register pairs are not what the translation
    assumes (the i64 in the even register's local, the odd one its high half):
    ``coerce`` per pc, the reads to rebuild (``(r, "pair", None)``: r's low
    32 bits and r+1 as the high half; ``(r, "hi", None)``: the high half of
    r-1's i64), and ``split`` per pc (-1: the entry), the registers ``r`` of
    the i64 written there whose high half must be kept in ``r+1`` too."""

    def __init__(self) -> None:
        self.coerce: dict[int, list[Coercion]] = {}
        self.split: dict[int, list[int]] = {}


def _pair_read(st: State, reg: int, want: str, lost: set[str],
               rebuilt: bool) -> Coercion | None | bool:
    """The pair coercion of reading ``reg`` as ``want`` (None: none needed;
    False: not a pair case, the kind checks decide); ``rebuilt``: this read
    rebuilds the pair on some path already.  A high half that may be read
    while its i64 is no longer in its register adds that i64's writes to
    ``lost`` (kept in the odd register when written, on the next pass)."""
    lo, hi = st.get(reg), st.get(reg + 1)
    if want == "i64":
        if lo is not None and lo.startswith("i64#") and hi == "h#" + lo[4:]:
            if rebuilt:
                lost.update(_tags(hi, "h#"))
            return (reg, "pair", None) if rebuilt else None      # the pair as written
        if hi is not None and hi.startswith("h#"):
            lost.update(_tags(hi, "h#"))                          # written apart
            return (reg, "pair", None)
        if hi is not None and hi.startswith("ix#"):
            if not rebuilt:
                return False
            lost.update(_tags(hi, "ix#"))
            return (reg, "pair", None)
        if hi in (None, "i32") and lo is not None and (
                lo == "i32" or lo.startswith(("i64#", "ix#"))):
            return (reg, "pair", None)
        return False
    if want == "i32" and reg & 1 and lo is not None and lo.startswith("h#"):
        if st.get(reg - 1) == "i64#" + lo[2:]:
            return (reg, "hi", None)     # the high half of the i64 in reg - 1
        lost.update(_tags(lo, "h#"))
        return None
    return False


def _walk(blocks: list[Block], entry: State, effects: Any, split: set[str],
          lost: set[str]) -> PairFacts:
    facts = PairFacts()
    out = facts.coerce
    by_pc = {b.pc: b for b in blocks}
    states: dict[int, State] = {blocks[0].pc: entry}
    work = [blocks[0].pc]
    while work:
        pc = work.pop()
        st = dict(states[pc])
        for ins in by_pc[pc].instrs:
            reads, writes = effects.of(ins)
            for reg, want in reads:
                rebuilt = (reg, "pair", None) in out.get(ins.pc, ())
                pair = _pair_read(st, reg, want, lost, rebuilt)
                if pair is not False:
                    if isinstance(pair, tuple):
                        todo = out.setdefault(ins.pc, [])
                        if pair not in todo:
                            todo.append(pair)
                        st[reg] = "i64#p" if want == "i64" else "i32"
                    continue
                have = st.get(reg)
                have = _bank(have) if have is not None else None
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
                if kind == "i64":
                    tag = str(ins.pc)
                    st[reg] = "i64#" + tag
                    st[reg + 1] = "i32" if tag in split else "h#" + tag
                    kept = facts.split.setdefault(ins.pc, []) if tag in split else []
                    if tag in split and reg not in kept:
                        kept.append(reg)
                else:
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
    return facts


def register_coercions(blocks: list[Block], arg_codes: str, result_codes: str,
                       mod: Any) -> PairFacts:
    """The instructions that read a register holding a value of the other
    kind (integer vs float), or one whose kind is not known at load time,
    and those reading an i64 pair not written as one (see :class:`PairFacts`):
    IREE's VM reads the two 32-bit registers whatever wrote them."""
    if not blocks:
        return PairFacts()
    entry: State = {}
    slot = 0
    for c in arg_codes:
        if c in "if":
            entry[slot] = _CODE_KIND[c]
            slot += 1
        elif c in "IF":
            slot += slot & 1
            entry[slot] = _CODE_KIND[c]
            if c == "I":
                entry[slot], entry[slot + 1] = f"i64#a{slot}", f"h#a{slot}"
            slot += 2
    effects = _Effects(mod, result_codes)
    split: set[str] = set()
    for _ in range(4):                   # until no more high halves need keeping
        lost: set[str] = set()
        facts = _walk(blocks, entry, effects, split, lost)
        if lost <= split:
            break
        split |= lost
        for tag in lost:
            if tag.startswith("a"):      # a parameter's: kept on entry
                entry[int(tag[1:]) + 1] = "i32"
    args = sorted(int(t[1:]) for t in split if t.startswith("a"))
    if args:
        facts.split[-1] = args
    return facts
