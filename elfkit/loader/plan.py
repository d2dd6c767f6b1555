"""Load plans: what loading a plugin needs that depends on its bytes alone.

Loading the same plugin again (load, close, load; or several instances)
should not parse it again.  :func:`plan_for` keeps the parsed file, and
what placing it computes once (layout, page protections, the relocations
when each comes to the load bias plus a constant: ``Relative``), for the
last few files by content (PLAN_CACHE files of at most PLAN_MAX_FILE
bytes, at most PLAN_CACHE_BYTES in all): the key is the file's bytes themselves (a copy;
a ``bytes`` source is used as is), so a hit is always the same content,
and the plan reads its own copy, never a buffer the caller may change.
Only files that parse are remembered; a bad file is parsed (and refused,
with the same error) every time.
"""
from __future__ import annotations

import threading

from ..arch import Arch, Check, Formula
from . import tags as T
from .parse import DEFAULT_LIMITS, ElfFile, Limits, parse
from .relocate import ImageBuffer, relative_name, relr_offsets

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

__all__ = ["LoadPlan", "exported_symbols", "plan_for", "undefined_symbols", "PLAN_CACHE",
           "PLAN_CACHE_BYTES", "PLAN_MAX_FILE", "IMAGE_KEEP_MAX"]

#: how many plans are kept (least recently used first out), and how many
#: bytes of files they may hold in all
PLAN_CACHE = 16
PLAN_CACHE_BYTES = 16 << 20
#: larger files get a plan of their own each load
PLAN_MAX_FILE = 4 << 20
#: larger images are not kept in their plan (LoadPlan.image)
IMAGE_KEEP_MAX = 256 << 10


class LoadPlan:
    """A parsed plugin and what placing it computes once.

    ``layout``, ``protections`` and ``relative`` are filled by the first
    load that gets that far (``loader/image.py``); a step that fails leaves
    them unset, so the next load fails the same way, at the same point."""

    __slots__ = ("elf", "layout", "protections", "relative", "exports", "funcs", "undefined",
                 "image")

    def __init__(self, elf: ElfFile):
        self.elf = elf
        #: (page size, image.Layout) of the last placement
        self.layout: tuple[int, Any] | None = None
        #: (page size, protection runs, RELRO ranges, protect calls without
        #: deferred relocations from a new read/write reservation, the same
        #: from a kept inaccessible one) as image.py computes them
        self.protections: tuple[int, list[tuple[int, int, int]], list[tuple[int, int]],
                                list[tuple[int, int, int]],
                                list[tuple[int, int, int]]] | None = None
        #: the whole relocation work when every relocation comes to the load
        #: bias plus a constant, in a writable segment (``plain_relative``);
        #: False: use the general path; None: not worked out yet
        self.relative: Relative | bool | None = None
        #: (page size, load bias, relocated image, addresses the imports were
        #: bound to, relocation stats, IFUNC relocations left to apply) of
        #: the last placement, when the image is at most IMAGE_KEEP_MAX
        #: bytes: a reload at the same address with the same imports writes
        #: the same bytes (and runs the IFUNC resolvers again); one without
        #: IFUNC relocations may take the closed range back as it is
        self.image: tuple[int, int, bytes, tuple[int, ...], Any, tuple[Any, ...]] | None = None
        #: exported name -> (value, absolute), in Module.exports order; None
        #: when an export is an IFUNC (its resolver must run at each load)
        self.exports, self.funcs = export_table(elf)
        #: the plugin's imports (``undefined_symbols``)
        self.undefined = undefined_symbols(elf)


_plans: dict[tuple[bytes, Limits | None, str | None], Any] = {}
_lock = threading.Lock()
_held = [0]          # bytes of the files the kept plans hold


def _shared_object_plan(data: memoryview, limits: Limits, expect_arch: Arch | None) -> Any:
    return LoadPlan(parse(data, limits=limits, expect_arch=expect_arch))


def plan_for(data: memoryview, limits: Limits = DEFAULT_LIMITS,
             expect_arch: Arch | None = None,
             build: Callable[[memoryview, Limits, Arch | None], Any] = _shared_object_plan
             ) -> Any:
    """The plan of the file ``data`` (made now by ``build``, a ``LoadPlan``
    of a shared object by default, or remembered from an earlier load of
    the same bytes with the same limits and architecture)."""
    if data.nbytes > PLAN_MAX_FILE:
        return build(data, limits, expect_arch)
    obj = data.obj
    raw = obj if (type(obj) is bytes and len(obj) == data.nbytes and data.c_contiguous) \
        else bytes(data)
    key = (raw, None if limits is DEFAULT_LIMITS else limits,
           expect_arch.name if expect_arch is not None else None)
    with _lock:
        plan = _plans.pop(key, None)
        if plan is not None:
            _plans[key] = plan          # most recently used last
            return plan
    plan = build(memoryview(raw), limits, expect_arch)
    with _lock:
        old = _plans.pop(key, None)          # another thread's plan of the same file
        _held[0] += len(raw) - (len(old.elf.data) if old is not None else 0)
        _plans[key] = plan
        while len(_plans) > PLAN_CACHE or _held[0] > PLAN_CACHE_BYTES:
            _held[0] -= len(_plans.pop(next(iter(_plans))).elf.data)
    return plan


def undefined_symbols(elf: ElfFile) -> list[Any]:
    """The imports of a plugin: its undefined global and weak symbols."""
    return [s for s in elf.symbols[1:] if not s.defined and s.name and s.bind != T.STB_LOCAL]


def exported_symbols(elf: ElfFile) -> Iterator[Any]:
    """The dynamic symbols a load exports: defined, named, global, weak or
    unique, default or protected visibility, not a section or file symbol."""
    for s in elf.symbols[1:]:
        if not s.defined or s.bind not in (T.STB_GLOBAL, T.STB_WEAK, 10) or not s.name:
            continue
        if s.visibility not in (T.STV_DEFAULT, T.STV_PROTECTED):
            continue
        if s.type in (T.STT_SECTION, T.STT_FILE):
            continue
        yield s


def export_table(elf: ElfFile) -> tuple[dict[str, tuple[int, bool]] | None,
                                        list[tuple[int, int, str]]]:
    """What ``Module.exports`` and its function list are at load bias 0:
    ``{name: (value, absolute)}`` (None when an export is an IFUNC, whose
    address its resolver gives at each load) and the sorted
    ``(link-time address, size, name)`` of the functions and data."""
    exports: dict[str, tuple[int, bool]] | None = {}
    for s in exported_symbols(elf):
        if s.type == T.STT_GNU_IFUNC:
            exports = None
            break
        assert exports is not None
        entry = (s.value, s.absolute)
        if s.name not in exports or s.bind == T.STB_GLOBAL:
            exports[s.name] = entry
        if s.version and not s.version_hidden:
            exports.setdefault(f"{s.name}@{s.version}", entry)
    mode_bit = elf.arch.func_mode_bit     # arm: bit 0 marks Thumb code, not an address
    funcs = []
    for s in elf.symbols[1:]:
        if s.defined and s.name and s.type in (T.STT_FUNC, T.STT_GNU_IFUNC, T.STT_NOTYPE,
                                               T.STT_OBJECT):
            v = s.value & ~1 if mode_bit and s.type == T.STT_FUNC else s.value
            funcs.append((v, max(s.size, 1), s.name))
    funcs.sort()
    return exports, funcs


class Relative:
    """The whole relocation work of a plugin whose relocations all come to
    the load bias plus a constant (``plain_relative``): image offsets and
    those constants as lists, or for large tables (``RelocTable.bulk``) as numpy
    arrays of word indices and constants, with the runs of consecutive
    words they form."""

    __slots__ = ("counts", "total", "positions", "addends", "words", "values", "runs")

    def __init__(self, counts: dict[str, int], positions: list[int], addends: list[int]):
        #: relocations by type name, and in all
        self.counts = counts
        self.total = len(positions)
        #: small tables: image offsets and constants (else None)
        self.positions: list[int] | None = positions
        self.addends: list[int] | None = addends
        #: large tables: word index of each place, its constant (image word
        #: type) and ``(first word, count, first value)`` runs when few
        self.words: Any = None
        self.values: Any = None
        self.runs: list[tuple[int, int, int]] | None = None


class _Kinds:
    """Which relocation types of a plugin come to bias + constant: plain
    word-sized RELATIVE ones without a symbol (constant A), and word-sized
    S+A or S ones against a symbol the plugin defines itself, not absolute
    and not an IFUNC (S is bias + its value: constant value+A or value)."""

    def __init__(self, elf: ElfFile, w: int):
        arch = elf.arch
        wide = [(n, rt) for n, rt in arch.relocs.items() if rt.width == 8 * w
                and (rt.width == 64 or rt.check is Check.WRAP)]
        self.relative = {n for n, rt in wide if rt.formula is Formula.RELATIVE}
        #: type -> True for S+A, False for S
        self.symbolic = {n: rt.formula is Formula.ABS for n, rt in wide
                         if rt.formula in (Formula.ABS, Formula.SYM)}
        self.elf = elf
        self._values: list[int | None] | None = None

    @property
    def values(self) -> list[int | None]:
        """The link-time value of each symbol a relocation may fold (else
        None); made at first use (most plugins relocate without symbols)."""
        if self._values is None:
            self._values = [s.value if i and s.defined and not s.absolute
                            and s.type != T.STT_GNU_IFUNC else None
                            for i, s in enumerate(self.elf.symbols)]
        return self._values


def plain_relative(elf: ElfFile, lo: int, image: ImageBuffer) -> Relative | None:
    """The ``Relative`` plan when every relocation of ``elf`` comes to the
    load bias plus a constant (see ``_Kinds``) and its place is inside a
    writable segment (what the general path would apply, with nothing to
    check per load); else None.  Implicit addends are read from ``image``
    (the unrelocated image at link-time addresses starting at ``lo``)."""
    arch = elf.arch
    w = elf.word
    kinds = _Kinds(elf, w)
    writable = [(s.vaddr, s.vaddr + s.memsz) for s in elf.loads if s.flags & T.PF_W]
    positions: list[int] = []
    addends: list[int] = []
    counts: dict[str, int] = {}
    big = []
    for t in elf.reloc_tables:
        if t.tag == "DT_RELR" or t.bulk:
            got = (_relr_relative(t, writable, lo, image, w) if t.tag == "DT_RELR"
                   else _bulk_relative(t, kinds, writable, lo, image, w))
            if got is None:
                return None
            big.append(got)
            for n, c in got[2].items():
                name = relative_name(arch, w) if n is None else arch.relocs[n].name
                counts[name] = counts.get(name, 0) + c
            continue
        if not t.count:
            continue
        adds = t.addends if t.explicit_addend else None
        # one writable segment holding every place: no check per entry
        first, last = min(t.offsets), max(t.offsets)
        whole = any(a <= first and last + w <= b for a, b in writable)
        types = set(t.types)
        if whole and adds is not None and types <= kinds.relative and not any(t.syms):
            # the common table: RELATIVE entries with their addends, all in place
            positions += [off - lo for off in t.offsets]
            addends += adds
            for rtype in types:
                name = arch.relocs[rtype].name
                counts[name] = counts.get(name, 0) + t.types.count(rtype)
            continue
        for i, (off, rtype, sym) in enumerate(zip(t.offsets, t.types, t.syms)):
            if not whole and not any(a <= off and off + w <= b for a, b in writable):
                return None
            pos = off - lo
            a = adds[i] if adds is not None else int.from_bytes(image[pos:pos + w], "little")
            if sym:
                s_abs = kinds.symbolic.get(rtype)
                v = kinds.values[sym] if sym < len(kinds.values) else None
                if s_abs is None or v is None:
                    return None
                a = v + a if s_abs else v
            elif rtype not in kinds.relative:
                return None
            positions.append(pos)
            addends.append(a)
            name = arch.relocs[rtype].name
            counts[name] = counts.get(name, 0) + 1
        if not t.explicit_addend and len(set(positions)) != len(positions):
            return None    # a place relocated twice: the second reads what the first wrote
    rel = Relative(counts, positions, addends)
    return rel if not big or _bulk_plan(rel, big, w) else None


def _bulk_relative(t: Any, kinds: _Kinds, writable: list[tuple[int, int]], lo: int,
                   image: ImageBuffer, w: int) -> tuple[Any, Any, dict[int | None, int]] | None:
    """A large table's image offsets, constants and counts by type number,
    when all its entries come to bias + constant at word-aligned places."""
    import numpy as np  # large tables only
    types = np.asarray(t.types, dtype=np.int64)
    offs = np.asarray(t.offsets, dtype=np.int64)
    syms = np.asarray(t.syms, dtype=np.int64)
    has_sym = syms != 0
    if not np.where(has_sym, np.isin(types, list(kinds.symbolic)),
                    np.isin(types, list(kinds.relative))).all():
        return None
    pos = _word_places(offs, writable, lo, w)
    if pos is None:
        return None
    if t.explicit_addend:
        add = np.asarray(t.addends, dtype=np.int64).astype(np.uint64)  # wraps
    else:
        add = np.frombuffer(image, dtype="<u8" if w == 8 else "<u4")[pos // w].astype(np.uint64)
    if has_sym.any():
        if int(syms.max()) >= len(kinds.values):
            return None
        known = np.array([v is not None for v in kinds.values])
        if not known[syms[has_sym]].all():
            return None
        values = np.array([v or 0 for v in kinds.values], dtype=np.uint64)
        plain_s = has_sym & np.isin(types, [n for n, sa in kinds.symbolic.items() if not sa])
        add[plain_s] = 0
        add += np.where(has_sym, values[syms], np.uint64(0))    # wraps modulo 2**64
    kinds_n, n = np.unique(types, return_counts=True)
    return pos, add.astype("<u8" if w == 8 else "<u4"), dict(zip(kinds_n.tolist(), n.tolist()))


def _word_places(offs: Any, writable: list[tuple[int, int]], lo: int, w: int) -> Any:
    """Image offsets of the link-time places ``offs`` (numpy), when each is
    a word-aligned word inside a writable segment; else None."""
    import numpy as np  # large tables only
    inside = np.zeros(len(offs), dtype=bool)
    for a, b in writable:
        inside |= (offs >= a) & (offs + w <= b)
    pos = offs - lo
    return pos if inside.all() and not (pos % w).any() else None


def _relr_relative(t: Any, writable: list[tuple[int, int]], lo: int, image: ImageBuffer,
                   w: int) -> tuple[Any, Any, dict[int | None, int]] | None:
    """A DT_RELR table's image offsets and addends (the words in place),
    counted under None (the arch's word-sized RELATIVE), as ``_bulk_relative``."""
    import numpy as np  # large tables only
    offs = relr_offsets(t.relr_raw, w)
    pos = _word_places(offs, writable, lo, w)
    if pos is None:
        return None
    dt = "<u8" if w == 8 else "<u4"
    counts: dict[int | None, int] = {None: len(pos)} if len(pos) else {}
    return pos, np.frombuffer(image, dtype=dt)[pos // w].copy(), counts


def _bulk_plan(rel: Relative, big: list[tuple[Any, Any, dict[int | None, int]]], w: int
               ) -> bool:
    """Turn ``rel`` into its bulk form (False: a place is relocated twice)."""
    import numpy as np  # large tables only
    dt = "<u8" if w == 8 else "<u4"
    assert rel.positions is not None and rel.addends is not None
    pos = np.concatenate([np.asarray(rel.positions, dtype=np.int64)] + [b[0] for b in big])
    ordered = np.sort(pos)      # (not np.unique: it imports numpy.ma, ~8 ms)
    if (pos % w).any() or (ordered[1:] == ordered[:-1]).any():
        return False
    words = pos // w
    mask = (1 << (8 * w)) - 1
    values = np.concatenate([np.asarray([a & mask for a in rel.addends], dtype=dt)]
                            + [b[1] for b in big])
    breaks = np.nonzero(np.diff(words) != 1)[0] + 1
    if len(breaks) < len(words) // 64:      # long runs: each one a slice, no index
        firsts = [0] + breaks.tolist()
        ends = breaks.tolist() + [len(words)]
        rel.runs = [(int(words[a]), b - a, a) for a, b in zip(firsts, ends)]
    else:
        rel.words = words
    rel.values = values
    rel.total = len(words)
    rel.positions = rel.addends = None
    return True
