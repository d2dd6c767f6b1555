"""Apply relocations to an image held in a host buffer.

The per-architecture tables (elfkit/arch/<arch>.py) say what each type
number means (name, formula, width, range check); this module only
evaluates them.  RELATIVE relocations and DT_RELR bitmaps, which dominate
large objects, are applied with numpy in bulk (imported only then: a small
plugin loads without it); everything else goes through one small loop.
Every problem is collected and reported at once: unknown types, symbols out
of range, places outside writable segments, values that do not fit their
field.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable

from .._support.records import DataRecord
from ..arch import Check, Formula
from ..errors import RelocationError, UnsupportedError
from . import tags as T
from .headers import TLS_MESSAGE
from .parse import ElfFile
from .reloc_tables import RelocTable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    import numpy as np

#: an image being relocated: a buffer of its own, or a view of the machine's memory
ImageBuffer = bytearray | memoryview

_FMT = {(8, False): "<B", (16, False): "<H", (32, False): "<I", (64, False): "<Q"}


class Deferred(DataRecord, frozen=True, slots=True):
    """A relocation that needs code to run first (IRELATIVE, or against an IFUNC)."""

    index: str          # e.g. "DT_RELA[3]"
    place: int          # image offset
    width: int
    resolver: int       # absolute address of the resolver
    formula: Formula    # what to do with the resolver's result R (R, R+A, R+A-P)
    addend: int
    p: int              # absolute address of the place


class Stats(DataRecord, slots=True):
    by_type: dict[str, int]
    total: int


# apply() is longer than 80 lines on purpose: its inner loop runs once per
# relocation (100k and more in large plugins, see bench reloc scaling), and
# keeping the whole per-relocation body inline, on fast locals, avoids a Python
# call per relocation.  The per-table bulk work is in _bulk_rows().
def apply(elf: ElfFile, image: ImageBuffer, lo: int, bias: int,
          symbol_address: Callable[[int], int]) -> tuple[list[Deferred], Stats]:
    """Relocate ``image`` (the bytes of [lo, lo+len) at link-time addresses)
    for load bias ``bias``.  ``symbol_address(i)`` gives S for dynamic symbol
    ``i`` (imports already bound; IFUNC symbols return -1 - resolver)."""
    arch = elf.arch
    w = elf.word
    mask = (1 << (8 * w)) - 1
    writable = [(s.vaddr, s.vaddr + s.memsz) for s in elf.loads if s.flags & T.PF_W]
    nsyms = len(elf.symbols)
    problems: list[str] = []
    tls: list[str] = []
    deferred: list[Deferred] = []
    counts: dict[str, int] = {}
    total = 0
    rel_types = relative_types(arch, w)

    for t in elf.reloc_tables:
        rows, nbulk = _bulk_rows(elf, t, image, lo, bias, writable, problems, counts,
                                 rel_types)
        total += nbulk
        for i, off, rtype, sym, add in rows:
            rt = arch.relocs.get(rtype)
            if rt is None:
                problems.append(f"{_desc(elf, t, i, None)}: not a {arch.name} relocation type "
                                f"this loader knows")
                continue
            total += 1
            counts[rt.name] = counts.get(rt.name, 0) + 1
            f = rt.formula
            if f is Formula.NONE:
                continue
            if f is Formula.TLS:
                tls.append(_desc(elf, t, i, rt))
                continue
            if f is Formula.COPY:
                problems.append(f"{_desc(elf, t, i, rt)}: COPY relocations belong in executables, "
                                "not plugins")
                continue
            nbytes = rt.width // 8
            if not _inside(writable, off, off + nbytes):
                problems.append(f"{_desc(elf, t, i, rt)}: the place is not inside a writable "
                                "segment")
                continue
            if sym >= nsyms:
                problems.append(f"{_desc(elf, t, i, rt)}: symbol index {sym} is out of range "
                                f"({nsyms} symbols)")
                continue
            pos = off - lo
            fmt = _FMT[(rt.width, False)]
            if t.explicit_addend:
                a = add
            else:
                (a,) = struct.unpack_from(fmt, image, pos)
                if rt.width == 8 * w and w == 4:
                    a = a - (1 << 32) if a >> 31 else a
            p = bias + off
            s = symbol_address(sym) if sym else 0
            if f is Formula.IRELATIVE:
                deferred.append(Deferred(f"{t.tag}[{i}]", pos, rt.width, (bias + a) & mask,
                                         Formula.SYM, 0, p))
                continue
            if s < 0:  # against an IFUNC symbol: S is what its resolver returns
                deferred.append(Deferred(f"{t.tag}[{i}]", pos, rt.width, -1 - s, f,
                                         a if f is not Formula.SYM else 0, p))
                continue
            if f is Formula.ABS:
                v = s + a
            elif f is Formula.SYM:
                v = s
            elif f is Formula.PCREL:
                v = s + a - p
            else:  # RELATIVE of another width (e.g. R_X86_64_RELATIVE64 in ELF32)
                v = bias + a
            err = store(image, pos, rt.width, rt.check, v, w)
            if err:
                problems.append(f"{_desc(elf, t, i, rt)}: value {v:#x} {err}")
    if tls:
        raise UnsupportedError(f"{TLS_MESSAGE}; the object has {len(tls)} TLS relocation(s): "
                               + "; ".join(tls[:10]) + (" ..." if len(tls) > 10 else ""))
    if problems:
        raise RelocationError(f"{len(problems)} relocation(s) cannot be applied", problems)
    return deferred, Stats(counts, total)


def _bulk_rows(elf: ElfFile, t: RelocTable, image: ImageBuffer, lo: int, bias: int,
               writable: list[tuple[int, int]], problems: list[str], counts: dict[str, int],
               relative_types: frozenset[int]) -> tuple[Iterable[tuple[Any, ...]], int]:
    """Apply what of table ``t`` can be done in bulk (all of DT_RELR; the
    RELATIVE entries of a large table, with numpy), counting them by type.
    Returns the rows ``(index, offset, type, symbol, addend)`` left for the
    per-relocation loop and how many relocations were applied here."""
    arch = elf.arch
    w = elf.word
    if t.tag == "DT_RELR":
        n = _apply_relr(t, image, lo, bias, w, writable, problems)
        if n:
            rname = relative_name(arch, w)
            counts[rname] = counts.get(rname, 0) + n
        return (), n
    if not t.count:
        return (), 0
    nrel = 0
    if t.bulk and relative_types:    # a large table: its RELATIVE entries in bulk
        import numpy as np  # large tables only
        types = np.asarray(t.types, dtype=np.int64)
        rel_mask = np.isin(types, list(relative_types))
        nrel = int(rel_mask.sum())
    if not nrel:
        return zip(range(t.count), _list(t.offsets), _list(t.types), _list(t.syms),
                   _list(t.addends) if t.explicit_addend else [0] * t.count), 0
    idx = np.nonzero(rel_mask)[0]
    offsets = np.asarray(t.offsets)
    _apply_relative_bulk(t, idx, offsets[idx], image, lo, bias, w, writable, problems)
    for ty, n in zip(*(u.tolist() for u in np.unique(types[idx], return_counts=True))):
        rname = arch.relocs[ty].name
        counts[rname] = counts.get(rname, 0) + n
    ridx = np.nonzero(~rel_mask)[0]
    rows = zip(ridx.tolist(), np.asarray(t.offsets)[ridx].tolist(), types[ridx].tolist(),
               np.asarray(t.syms)[ridx].tolist(),
               np.asarray(t.addends)[ridx].tolist() if t.explicit_addend
               else [0] * len(ridx))
    return rows, nrel


def _inside(ranges: list[tuple[int, int]], lo: int, hi: int) -> bool:
    # a plain loop: called once per relocation, any() over a generator is slower
    for a, b in ranges:  # noqa: SIM110
        if a <= lo and hi <= b:
            return True
    return False


_RELATIVE: dict[tuple[str, int], frozenset[int]] = {}


def relative_types(arch: Any, w: int) -> frozenset[int]:
    """Word-sized RELATIVE type numbers of an architecture (cached)."""
    key = (arch.name, w)
    r = _RELATIVE.get(key)
    if r is None:
        r = _RELATIVE[key] = frozenset(n for n, t in arch.relocs.items()
                                       if t.formula is Formula.RELATIVE and t.width == 8 * w)
    return r


def relative_name(arch: Any, w: int) -> str:
    """Name DT_RELR entries are counted under: the arch's word-sized RELATIVE."""
    return arch.relocs[min(relative_types(arch, w))].name


def _list(seq: Any) -> list[Any]:
    return seq if isinstance(seq, list) else seq.tolist()    # a numpy array: large tables


def _desc(elf: ElfFile, t: RelocTable, i: int, rt: object) -> str:
    """``DT_RELA[3] at offset 0x2010: R_X86_64_64 against symbol 2 'foo'``."""
    sym = int(t.syms[i])
    name = getattr(rt, "name", None) or f"unknown type {int(t.types[i])}"
    s = f"{t.tag}[{i}] at offset {int(t.offsets[i]):#x}: {name}"
    if sym:
        symname = elf.symbols[sym].name if sym < len(elf.symbols) else "?"
        s += f" against symbol {sym} {symname!r}"
    return s


def store(image: ImageBuffer, pos: int, width: int, check: Check, v: int, word: int) -> str:
    """Range-check ``v`` for a ``width``-bit field and store it; returns an error or ''."""
    if width == 64:
        struct.pack_into("<Q", image, pos, v & 0xFFFFFFFFFFFFFFFF)
        return ""
    lim = 1 << width
    if check is Check.UNSIGNED and not 0 <= v < lim:
        return f"does not fit an unsigned {width}-bit field"
    if check is Check.SIGNED and not -(lim >> 1) <= v < (lim >> 1):
        return f"does not fit a signed {width}-bit field"
    if check is Check.EITHER and not -(lim >> 1) <= v < lim:
        return f"does not fit a {width}-bit field"
    struct.pack_into(_FMT[(width, False)], image, pos, v & (lim - 1))
    return ""


def _place_ok(offs: np.ndarray, w: int, writable: list[tuple[int, int]]) -> np.ndarray:
    import numpy as np  # large tables only
    ok = np.zeros(len(offs), dtype=bool)
    for a, b in writable:
        ok |= (offs >= a) & (offs + w <= b)
    return ok


def _write_words(image: ImageBuffer, pos: np.ndarray, values: np.ndarray, w: int) -> None:
    import numpy as np  # large tables only
    dt = "<u8" if w == 8 else "<u4"
    if len(image) % w == 0 and not (pos % w).any():      # the usual case: aligned words
        np.frombuffer(image, dtype=dt)[pos // w] = values.astype(dt)
        return
    img = np.frombuffer(image, dtype=np.uint8)
    raw = values.astype(dt).view(np.uint8).reshape(-1, w)
    img[pos[:, None] + np.arange(w, dtype=np.int64)] = raw


def add_bias(image: ImageBuffer, words: Any, values: Any, runs: list[tuple[int, int, int]] | None,
             bias: int, w: int) -> None:
    """Store ``values + bias`` (modulo the word size; ``values`` a numpy
    array of image words) at the word indices ``words`` of ``image``, or
    for each ``(first word, count, first value)`` of ``runs`` as a slice
    (no index array, no temporary)."""
    import numpy as np  # large tables only
    dt = "<u8" if w == 8 else "<u4"
    img = np.frombuffer(image, dtype=dt, count=len(image) // w)
    b = np.array(bias & ((1 << (8 * w)) - 1), dtype=dt)
    if runs is None:
        img[words] = values + b
        return
    for first, n, v in runs:
        np.add(values[v:v + n], b, out=img[first:first + n])


def _read_words(image: ImageBuffer, pos: np.ndarray, w: int) -> np.ndarray:
    import numpy as np  # large tables only
    dt = "<u8" if w == 8 else "<u4"
    if len(image) % w == 0 and not (pos % w).any():
        return np.frombuffer(image, dtype=dt)[pos // w]
    img = np.frombuffer(image, dtype=np.uint8)
    raw = np.ascontiguousarray(img[pos[:, None] + np.arange(w, dtype=np.int64)])
    return raw.view(dt).reshape(-1)


def _apply_relative_bulk(t: RelocTable, idx: np.ndarray, offs: np.ndarray, image: ImageBuffer,
                         lo: int, bias: int, w: int, writable: list[tuple[int, int]],
                         problems: list[str]) -> None:
    import numpy as np  # large tables only
    offs = offs.astype(np.int64) if w == 4 else offs
    ok = _place_ok(offs.astype(np.int64), w, writable)
    if not ok.all():
        for j in np.nonzero(~ok)[0][:1000].tolist():
            problems.append(f"{t.tag}[{int(idx[j])}] at offset {int(offs[j]):#x}: RELATIVE: the "
                            "place "
                            f"is not inside a writable segment")
        offs, idx = offs[ok], idx[ok]
    pos = offs.astype(np.int64) - lo
    if w == 8:
        if t.explicit_addend:
            add = np.asarray(t.addends, dtype=np.int64)[idx].astype(np.uint64)
        else:
            add = _read_words(image, pos, 8)
        vals = add + np.uint64(bias & 0xFFFFFFFFFFFFFFFF)   # wraps modulo 2**64
    else:
        if t.explicit_addend:
            add = np.asarray(t.addends, dtype=np.int64)[idx]
        else:
            add = _read_words(image, pos, 4).astype(np.int64)
        vals = (add + bias) & 0xFFFFFFFF
    _write_words(image, pos, vals, w)


def relr_offsets(raw: bytes, w: int) -> np.ndarray:
    """Decode a DT_RELR table into link-time offsets, vectorised.

    An even word is an address to relocate; an odd word is a bitmap whose
    bit ``b`` (from 1) marks ``base + (k*(8w-1) + b-1) * w``, where ``base``
    is the last address + w and ``k`` counts bitmaps since that address.
    """
    import numpy as np  # large tables only
    if not raw:
        return np.zeros(0, dtype=np.int64)
    words = np.frombuffer(raw, dtype="<u8" if w == 8 else "<u4").astype(np.uint64)
    n = len(words)
    is_addr = (words & np.uint64(1)) == 0
    j = np.arange(n)
    last = np.maximum.accumulate(np.where(is_addr, j, -1))
    out = [words[is_addr].astype(np.int64)]
    bm = ~is_addr
    if bm.any():
        nbits = 8 * w - 1
        lastb = last[bm]
        base = np.where(lastb >= 0, words[np.maximum(lastb, 0)].astype(np.int64) + w, 0)
        k = j[bm] - lastb - 1
        start = base + k * nbits * w
        bw = (words[bm] >> np.uint64(1)).astype("<u8")
        bits = np.unpackbits(bw.view(np.uint8).reshape(-1, 8), axis=1,
                             bitorder="little")[:, :nbits].astype(bool)
        r, c = np.nonzero(bits)
        out.append(start[r] + c.astype(np.int64) * w)
    return np.concatenate(out)


def _apply_relr(t: RelocTable, image: ImageBuffer, lo: int, bias: int, w: int,
                writable: list[tuple[int, int]], problems: list[str]) -> int:
    import numpy as np  # large tables only
    offs = relr_offsets(t.relr_raw, w)
    if not len(offs):
        return 0
    ok = _place_ok(offs, w, writable)
    if not ok.all():
        for o in offs[~ok][:1000].tolist():
            problems.append(f"DT_RELR entry for offset {o:#x}: the place is not inside a writable "
                            f"segment")
        offs = offs[ok]
    pos = offs - lo
    cur = _read_words(image, pos, w)
    if w == 8:
        vals = cur + np.uint64(bias & 0xFFFFFFFFFFFFFFFF)
    else:
        vals = (cur.astype(np.int64) + bias) & 0xFFFFFFFF
    _write_words(image, pos, vals, w)
    return len(offs)
