"""Lay a relocatable object out as an image: its SHF_ALLOC sections by
kind (code, read-only data and ``.data.rel.ro``, writable data), each kind starting on a page of
its own so that it gets its own protection, COMMON symbols after the data,
and the GOT slots and branch veneers the object's relocations need.

What a load does with the layout (reserve, relocate, protect, run the
initialisers) is ``objimage.py``; the layout and the symbol table it gives
depend on the file alone, so they are worked out once per file
(:class:`ObjectPlan`)."""
from __future__ import annotations

import struct

from .._support.records import DataRecord
from ..arch import ObjFormula
from ..errors import LayoutError
from ..exec.base import PROT_EXEC, PROT_READ, PROT_WRITE
from . import tags as T
from .fields import FIELDS
from .objparse import (
    SHF_ALLOC,
    SHF_EXECINSTR,
    SHF_WRITE,
    SHN_ABS,
    SHN_COMMON,
    SHT_NOBITS,
    SHT_SYMTAB,
    ObjectFile,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ObjLayout", "ObjectPlan", "GOT_SYMBOL", "object_layout", "implicit_addend",
           "INIT_TYPES", "placed_copy", "per_table"]

#: the undefined symbol i386 (and other) PIC code names for the GOT's address
GOT_SYMBOL = "_GLOBAL_OFFSET_TABLE_"
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY = 14, 15, 16
#: initialiser / finaliser array section types, by kind
INIT_TYPES = {SHT_PREINIT_ARRAY: "preinit", SHT_INIT_ARRAY: "init", SHT_FINI_ARRAY: "fini"}
_GOT_FORMULAS = (ObjFormula.GOT, ObjFormula.GOT_PCREL, ObjFormula.GDAT, ObjFormula.GDAT_PAGE,
                 ObjFormula.GOT_GOTREL, ObjFormula.GOT_X86)
#: symbol types named by symbolize() (Module.funcs)
_LABEL_TYPES = (T.STT_NOTYPE, T.STT_OBJECT, T.STT_FUNC, T.STT_COMMON)


class ObjLayout(DataRecord, frozen=True, slots=True):
    size: int                             # bytes to reserve (page multiple)
    align: int                            # alignment of the base
    sections: dict[int, int]              # allocated section index -> image offset
    common: dict[int, int]                # COMMON symbol index -> image offset
    got: int                              # image offset of the GOT
    got_slots: dict[tuple[int, int], int]  # (symbol, addend in the slot) -> image offset
    # (symbol, addend of the target, from Thumb code) -> image offset
    veneers: dict[tuple[int, int, bool], int]
    prots: tuple[tuple[int, int, int], ...]   # (image offset, size, prot) per kind
    arrays: tuple[tuple[str, int, int], ...]  # (kind, image offset, entries), in run order
    # per symbol: its image offset (its value when absolute), None when it
    # has none (undefined, or in a section that is not loaded)
    symoff: list[int | None]


def _up(v: int, a: int) -> int:
    return (v + a - 1) & ~(a - 1)


def implicit_addend(elf: ObjectFile, rs: Any, i: int, field: str) -> int | None:
    """The addend of REL relocation ``i`` of ``rs``, read from its field
    (None when the field has no place for one or lies outside the section)."""
    f = FIELDS.get(field)
    if f is None or f.decode is None:
        return None
    sec = elf.sections[rs.target]
    off = rs.offsets[i]
    if sec.type == SHT_NOBITS or off + f.size > sec.size:
        return None
    unit = int.from_bytes(elf.data[sec.offset + off:sec.offset + off + f.size], "little")
    return f.decode(unit)


def _array_order(name: str) -> tuple[int, int]:
    """Linkers put ``.init_array.N`` (by priority N) before ``.init_array``."""
    head, _, tail = name.rpartition(".")
    if head.endswith(("init_array", "fini_array")) and tail.isdigit():
        return 0, int(tail)
    return 1, 0


def object_layout(elf: ObjectFile, page: int) -> ObjLayout:
    """Place the sections, COMMON symbols, GOT and veneers of ``elf``."""
    kinds: dict[int, list[Any]] = {PROT_READ | PROT_EXEC: [], PROT_READ: [],
                                   PROT_READ | PROT_WRITE: []}
    allocated = [s for s in elf.sections if s.flags & SHF_ALLOC]
    for s in allocated:
        # .data.rel.ro is written by relocation only: read-only after it (RELRO)
        relro = s.name == ".data.rel.ro" or s.name.startswith(".data.rel.ro.")
        prot = PROT_READ | (PROT_EXEC if s.flags & SHF_EXECINSTR else 0) \
            | (PROT_WRITE if s.flags & SHF_WRITE and not relro else 0)
        if prot == PROT_READ | PROT_WRITE | PROT_EXEC:
            raise LayoutError(f"section {s.index} ({s.name}) is both writable and "
                              "executable (W+X); refusing to map it")
        kinds[prot].append(s)
    got_keys, veneer_want = _needs(elf)
    w = elf.word
    arch = elf.arch
    code_span = sum(_up(s.size, s.align) for s in allocated)
    offsets: dict[int, int] = {}
    common: dict[int, int] = {}
    got_slots: dict[tuple[int, int], int] = {}
    veneers: dict[tuple[int, int, bool], int] = {}
    prots = []
    pos = 0
    align = page
    got = 0
    for prot, secs in kinds.items():
        start = pos
        for s in secs:
            # nothing at offset 0: in DWARF linked at 0 (link_debug) an address
            # of 0 would read as "no address"
            pos = _up(max(pos, 1), s.align)
            align = max(align, s.align)
            offsets[s.index] = pos
            pos += s.size
        if prot == PROT_READ | PROT_EXEC and arch.veneer:
            vsize = _up(max(len(arch.veneer), len(arch.veneer_thumb)), 8)
            pos = _up(pos, 8)
            for key, reach in veneer_want.items():
                if reach is None or reach <= code_span + len(veneer_want) * vsize:
                    veneers[key] = pos
                    pos += vsize
        if prot == PROT_READ:
            pos = got = _up(pos, w)
            for slot in got_keys:
                got_slots[slot] = pos
                pos += w
        if prot == PROT_READ | PROT_WRITE:
            for sym in elf.symbols:
                if sym.shndx == SHN_COMMON:
                    a = max(sym.value, 1)
                    if a & (a - 1):
                        raise LayoutError(f"COMMON symbol {sym.index} {sym.name!r}: alignment "
                                          f"{a} is not a power of two")
                    pos = _up(pos, a)
                    align = max(align, a)
                    common[sym.index] = pos
                    pos += sym.size
        if pos > start:
            prots.append((start, _up(pos, page) - start, prot))
        pos = _up(pos, page)
    size = max(pos, page)
    if size > elf.limits.max_image_size:
        raise LayoutError(f"image needs {size:#x} bytes of address space, more than the limit "
                          f"({elf.limits.max_image_size:#x})")
    arrays = []
    symoff = _symbol_offsets(elf, offsets, common)
    inits = [s for s in allocated if s.type in INIT_TYPES]
    for kind in ("preinit", "init", "fini") if inits else ():
        secs = sorted((s for s in inits if INIT_TYPES[s.type] == kind),
                      key=lambda s: (_array_order(s.name), s.index))
        arrays += [(kind, offsets[s.index], s.size // w) for s in secs if s.size >= w]
    return ObjLayout(size, align, offsets, common, got, got_slots, veneers, tuple(prots),
                     tuple(arrays), symoff)


def _symbol_offsets(elf: ObjectFile, sections: dict[int, int],
                    common: dict[int, int]) -> list[int | None]:
    """The image offset of every symbol of ``elf`` (its value when absolute),
    None for one without (undefined, or in a section that is not loaded)."""
    get = sections.get
    out: list[int | None] = []
    for s in elf.symbols:
        shndx = s.shndx
        if shndx == SHN_ABS:
            out.append(s.value)
        elif shndx == SHN_COMMON:
            out.append(common.get(s.index))
        else:
            sec = get(shndx)
            out.append(None if sec is None else sec + s.value)
    return out


#: what is worked out once per object relocation table (an architecture's,
#: static): (id of the table, what) -> (the table, the answer); the entry holds
#: the table, so its id is not reused while the entry lives
_DERIVED: dict[tuple[int, Any], tuple[dict[int, Any], Any]] = {}


def per_table(relocs: dict[int, Any], what: Any, make: Any) -> Any:
    """``make(relocs)`` for the object relocation table ``relocs``, worked out
    once per table and ``what`` (the loader's per-type sets and tables)."""
    found = _DERIVED.get((id(relocs), what))
    if found is None or found[0] is not relocs:
        found = _DERIVED[(id(relocs), what)] = (relocs, make(relocs))
    return found[1]


def _needing(relocs: dict[int, Any]) -> frozenset[int]:
    """The types that need a GOT slot or may need a veneer."""
    return per_table(relocs, "needing", lambda table: frozenset(
        t for t, rt in table.items() if rt.formula in _GOT_FORMULAS or rt.branch))


def _needs(elf: ObjectFile) -> tuple[list[tuple[int, int]],
                                     dict[tuple[int, int, bool], int | None]]:
    """The GOT slots (symbol, addend in the slot) and the veneer targets
    (symbol, addend) of ``elf``'s relocations, with the reach of the branches
    to each veneer target (None: an import or absolute symbol, whose
    distance is known only at load time)."""
    relocs = elf.arch.obj_relocs
    wanted = _needing(relocs)
    got: dict[tuple[int, int], None] = {}
    veneers: dict[tuple[int, int, bool], int | None] = {}
    for rs in elf.relsections:
        if not elf.sections[rs.target].alloc or wanted.isdisjoint(rs.types):
            continue
        for i, (rtype, sym) in enumerate(zip(rs.types, rs.syms)):
            if rtype not in wanted or not sym:
                continue
            rt = relocs[rtype]
            if rt.formula in _GOT_FORMULAS:
                a = rs.addends[i] if rt.formula in (ObjFormula.GDAT, ObjFormula.GDAT_PAGE) else 0
                got[(sym, a)] = None
            elif rt.branch:
                add = rs.addends[i] if rs.rela else implicit_addend(elf, rs, i, rt.field)
                if add is None:
                    continue
                s = elf.symbols[sym]
                reach = None if not s.defined or s.absolute else \
                    1 << ((rt.bits or 32) - 1)
                key = (sym, add - rt.bias, rt.thumb)
                old = veneers.get(key, 0)
                veneers[key] = None if reach is None or old is None else \
                    min(reach, old or reach)
    return list(got), veneers


class ObjectPlan:
    """A parsed object and what placing it needs, worked out once:
    ``exports`` and ``funcs`` as :class:`elfkit.loader.plan.LoadPlan` has
    them (image offsets, the load bias being the image's base), the imports
    (``undefined``), the layout for one page size."""

    __slots__ = ("elf", "layout", "exports", "funcs", "undefined", "low", "debug_problems",
                 "image", "symbase", "symfixed")

    def __init__(self, elf: ObjectFile, page: int):
        self.elf = elf
        self.layout = lay = object_layout(elf, page)
        #: (address the image must end at or below, the relocations that need it), or None
        self.low: tuple[int, list[str]] | None = None
        #: relocations of the .debug_* sections that could not be applied
        self.debug_problems: list[str] = []
        #: (base, finished image, addresses the imports were bound to,
        #: relocation stats, the whole range's bytes or None) of the last
        #: placement, when the image is small (plan.IMAGE_KEEP_MAX): a reload
        #: at the same base with the same imports writes the same bytes, or
        #: takes the closed range back as it is (see objimage.place_object)
        self.image: tuple[int, bytes, tuple[int, ...], Any, bytes | None] | None = None
        self.exports: dict[str, tuple[int, bool]] = {}
        self.funcs: list[tuple[int, int, str]] = []
        exports = self.exports
        funcs = self.funcs
        mode_bit = elf.arch.func_mode_bit
        symoff = lay.symoff
        global_, weak, local, func = T.STB_GLOBAL, T.STB_WEAK, T.STB_LOCAL, T.STT_FUNC
        for s in elf.symbols[1:]:
            off = symoff[s.index]
            if off is None:
                continue
            name = s.name
            if not name:
                continue
            absolute = s.shndx == SHN_ABS
            bind = s.bind
            labelled = s.type in _LABEL_TYPES
            # ObjSymbol.exported (this one is defined and named)
            if labelled and bind in (global_, weak) and s.visibility == T.STV_DEFAULT \
                    and (name not in exports or bind == global_):
                exports[name] = (off, absolute)
            if not absolute and labelled and not (bind == local and name.startswith(".L")):
                # (.L labels: the assembler's, kept for RISC-V relaxation: not functions)
                # (a symbol with an offset is defined)
                v = off & ~1 if mode_bit and s.type == func else off
                funcs.append((v, s.size or 1, name))
        self.funcs.sort()
        #: S of each symbol less the base (0 for those symfixed names; the
        #: undefined GOT symbol names the GOT), and (symbol, value, or None:
        #: the import's address or 0) of those not at an image offset
        self.symbase: list[int] = []
        self.symfixed: list[tuple[int, int | None]] = []
        for s, off in zip(elf.symbols, symoff):
            if off is not None and s.shndx != SHN_ABS:
                self.symbase.append(off)
            elif off is None and s.shndx == 0 and s.name == GOT_SYMBOL:
                self.symbase.append(lay.got)
            else:
                self.symbase.append(0)
                self.symfixed.append((s.index, off))
        #: imports: undefined global and weak symbols some relocation uses
        self.undefined = [s for s in elf.symbols[1:] if s.shndx == 0 and s.name
                          and s.bind != T.STB_LOCAL and s.name != GOT_SYMBOL]
        if self.undefined:
            used = {sym for rs in elf.relsections if elf.sections[rs.target].alloc
                    for sym, rtype in zip(rs.syms, rs.types)
                    if (rt := elf.arch.obj_relocs.get(rtype)) is None
                    or rt.formula is not ObjFormula.NONE}
            self.undefined = [s for s in self.undefined if s.index in used]
        elf.data = memoryview(placed_copy(elf, lay))


_Q, _I = struct.Struct("<Q"), struct.Struct("<I")


def placed_copy(elf: ObjectFile, lay: ObjLayout) -> bytes:
    """The object's bytes with each loaded section's ``sh_addr`` and each
    symbol's value set to its image offset, as a linker would: what the
    debugger symfile and ``perf`` read see the symbols where they are."""
    out = bytearray(elf.data)
    is64 = elf.elfclass == 2
    mask = (1 << (64 if is64 else 32)) - 1    # a hostile symbol value wraps, as in the image
    shoff = int.from_bytes(out[0x28:0x30] if is64 else out[0x20:0x24], "little")
    shsize = 64 if is64 else 40
    put = (_Q if is64 else _I).pack_into
    for idx, at in lay.sections.items():
        put(out, shoff + idx * shsize + (16 if is64 else 12), at)
    tab = next((s for s in elf.sections if s.type == SHT_SYMTAB), None)
    if tab is not None:
        ent = 24 if is64 else 16
        value_at = tab.offset + (8 if is64 else 4)
        symoff = lay.symoff
        for sym in elf.symbols[1:]:
            v = symoff[sym.index]
            # a symbol in a loaded section (an absolute or COMMON one keeps its value)
            if v is not None and sym.shndx != SHN_ABS and sym.shndx != SHN_COMMON:
                put(out, value_at + sym.index * ent, v & mask)
    return bytes(out)
