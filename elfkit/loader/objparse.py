"""Parse a relocatable object (ET_REL, a ``.o``): section headers, the
``.symtab`` and every relocation section, bounds-checked.

Objects have no program headers and no dynamic section: what to load is the
SHF_ALLOC sections, what to export and import is in ``.symtab``, and the
relocations are per section (``.rela.text``, ``.rel.data`` ...).  Laying
them out and relocating them is ``objlayout.py`` and ``objreloc.py``."""
from __future__ import annotations

import struct
import sys
from array import array

from .._support.records import DataRecord
from ..arch import Arch
from ..errors import LayoutError, ParseError, UnsupportedError
from . import tags as T
from .headers import DEFAULT_LIMITS, Limits, ObjectHeader, read_object_header, read_struct

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ObjectFile", "ObjSection", "ObjSymbol", "RelSection", "parse_object",
           "SHT_NAMES", "SHT_SYMTAB", "SHT_NOBITS", "SHN_ABS", "SHN_COMMON", "SHF_WRITE",
           "SHF_EXECINSTR"]

SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL, SHT_SYMTAB_SHNDX = 2, 3, 4, 8, 9, 18
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 1, 2, 4
SHN_UNDEF, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFFF1, 0xFFF2, 0xFFFF
SHT_NAMES = {0: "NULL", 1: "PROGBITS", 2: "SYMTAB", 3: "STRTAB", 4: "RELA", 5: "HASH",
             6: "DYNAMIC", 7: "NOTE", 8: "NOBITS", 9: "REL", 11: "DYNSYM", 14: "INIT_ARRAY",
             15: "FINI_ARRAY", 16: "PREINIT_ARRAY", 17: "GROUP", 18: "SYMTAB_SHNDX",
             0x6FFFFFF5: "GNU_ATTRIBUTES", 0x6FFF4C03: "LLVM_ADDRSIG",
             0x70000001: "PROC_1 (X86_64_UNWIND / ARM_EXIDX)", 0x70000003: "ARM/RISCV_ATTRIBUTES"}


#: the host reads words big-endian: arrays of the file's little-endian words are swapped
_SWAP = sys.byteorder == "big"
_EXPORT_TYPES = (T.STT_NOTYPE, T.STT_OBJECT, T.STT_FUNC, T.STT_COMMON)


class ObjSection(DataRecord, frozen=True, slots=True):
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int

    @property
    def alloc(self) -> bool:
        return bool(self.flags & SHF_ALLOC)


class ObjSymbol(DataRecord, frozen=True, slots=True):
    index: int
    name: str
    value: int
    size: int
    bind: int
    type: int
    visibility: int
    shndx: int

    @property
    def defined(self) -> bool:
        return self.shndx != SHN_UNDEF

    @property
    def weak(self) -> bool:
        return self.bind == T.STB_WEAK

    @property
    def absolute(self) -> bool:
        return self.shndx == SHN_ABS

    @property
    def common(self) -> bool:
        return self.shndx == SHN_COMMON

    @property
    def version(self) -> str:
        return ""

    @property
    def exported(self) -> bool:
        """Whether a load exports it: defined, named, global or weak, default
        visibility, a function, object or untyped label (COMMON included)."""
        return (self.shndx != SHN_UNDEF and bool(self.name)
                and self.bind in (T.STB_GLOBAL, T.STB_WEAK)
                and self.visibility == T.STV_DEFAULT and self.type in _EXPORT_TYPES)


class RelSection(DataRecord, slots=True):
    """One SHT_RELA / SHT_REL section: parallel lists in file order."""

    index: int
    name: str
    target: int            # the section it relocates (sh_info)
    rela: bool
    offsets: list[int]
    types: list[int]
    syms: list[int]
    addends: list[int]     # 0s for REL (the addends are in place)

    @property
    def count(self) -> int:
        return len(self.offsets)


class ObjectFile(DataRecord, slots=True):
    """A parsed relocatable object.  ``segments``, ``loads``, ``soname``,
    ``init`` and ``fini`` are those of a shared object (empty here) so that
    code describing either kind of file reads both."""

    data: memoryview
    arch: Arch
    elfclass: int
    e_flags: int
    osabi: int
    abiversion: int
    sections: list[ObjSection]
    symbols: list[ObjSymbol]
    relsections: list[RelSection]
    limits: Limits = DEFAULT_LIMITS
    e_type: int = T.ET_REL
    soname: str = ""
    init: int = 0
    fini: int = 0

    @property
    def word(self) -> int:
        return 8 if self.elfclass == 2 else 4

    @property
    def segments(self) -> list[Any]:
        return []

    @property
    def loads(self) -> list[Any]:
        return []

    def lookup(self, name: str) -> ObjSymbol | None:
        """The exported symbol ``name`` (a global one before a weak one)."""
        found = None
        for s in self.symbols[1:]:
            if s.name == name and s.exported:
                if s.bind == T.STB_GLOBAL:
                    return s
                found = found or s
        return found


def _cstr(table: bytes, sec: ObjSection, off: int, kind: str, i: int) -> str:
    """The name at ``off`` in string table ``sec`` (``table``: its bytes,
    ``_table``), for ``kind`` ``i`` (named in an error)."""
    if off >= sec.size:
        raise ParseError(f"{kind} {i}: name offset {off:#x} is outside its string table "
                         f"(section {sec.index}, {sec.size} bytes)")
    end = table.find(b"\0", off)
    if end < 0:
        raise ParseError(f"{kind} {i}: name at offset {off:#x} of section {sec.index} is not "
                         "NUL-terminated")
    return table[off:end].decode("utf-8", "surrogateescape")


def _table(data: memoryview, sec: ObjSection) -> bytes:
    return bytes(data[sec.offset:sec.offset + sec.size])


def _sections(data: memoryview, h: ObjectHeader, limits: Limits) -> list[ObjSection]:
    is64 = h.elfclass == 2
    fmt = "<IIQQQQIIQQ" if is64 else "<IIIIIIIIII"
    size = struct.calcsize(fmt)
    shoff, shnum, shstrndx = h.shoff, h.shnum, h.shstrndx
    raw = []
    n = len(data)
    # the table is inside the file (read_object_header checked it)
    table = data[shoff:shoff + shnum * size]
    for i, (name, typ, flags, addr, off, sz, link, info, align, entsize) in \
            enumerate(struct.iter_unpack(fmt, table)):
        if typ != SHT_NOBITS and i and (off > n or sz > n - off):
            raise ParseError(f"section {i}: contents at offset {off:#x} ({sz:#x} bytes) run "
                             f"past the end of the file ({n} bytes)")
        if align > 1 and align & (align - 1):
            raise ParseError(f"section {i}: sh_addralign {align:#x} is not a power of two")
        if align > limits.max_image_size or (flags & SHF_ALLOC and sz > limits.max_image_size):
            raise LayoutError(f"section {i}: size {sz:#x} / alignment {align:#x} exceed the "
                              f"image size limit ({limits.max_image_size:#x} bytes)")
        if flags & SHF_ALLOC and addr:
            raise UnsupportedError(f"ET_REL file whose section {i} has the address {addr:#x}: "
                                   "objects have unplaced sections (is this a linked file?)")
        raw.append((name, typ, flags, addr, off, sz, link, info, max(align, 1), entsize))
    strsec = raw[shstrndx]
    if strsec[1] != SHT_STRTAB:
        raise ParseError(f"e_shstrndx {shstrndx} is not a string table")
    names_sec = ObjSection(shstrndx, "", *strsec[1:])
    names = _table(data, names_sec)
    return [ObjSection(i, _cstr(names, names_sec, r[0], "section", i) if i else "", *r[1:])
            for i, r in enumerate(raw)]


def _symbols(data: memoryview, secs: list[ObjSection], is64: bool,
             limits: Limits) -> list[ObjSymbol]:
    tabs = [s for s in secs if s.type == SHT_SYMTAB]
    if not tabs:
        return [ObjSymbol(0, "", 0, 0, 0, 0, 0, 0)]
    if len(tabs) > 1:
        raise ParseError(f"{len(tabs)} SHT_SYMTAB sections; an object has one")
    tab = tabs[0]
    ent = 24 if is64 else 16
    if tab.entsize != ent or tab.size % ent:
        raise ParseError(f"section {tab.index} ({tab.name}): symbol entry size {tab.entsize} / "
                         f"size {tab.size} do not match {ent}-byte symbols")
    if tab.size // ent > limits.max_symbols:
        raise LayoutError(f"{tab.size // ent} symbols, more than the limit ({limits.max_symbols})")
    if not 0 < tab.link < len(secs) or secs[tab.link].type != SHT_STRTAB:
        raise ParseError(f"section {tab.index} ({tab.name}): sh_link {tab.link} is not a string "
                         "table")
    strs = secs[tab.link]
    names = _table(data, strs)
    xindex = next((s for s in secs if s.type == SHT_SYMTAB_SHNDX and s.link == tab.index), None)
    out = []
    nsecs = len(secs)
    strsize = strs.size
    find = names.find
    raw = data[tab.offset:tab.offset + tab.size]
    rows = struct.iter_unpack("<IBBHQQ", raw) if is64 else \
        ((n, i, o, x, v, z) for n, v, z, i, o, x in struct.iter_unpack("<IIIBBH", raw))
    for i, (name, info, other, shndx, value, size) in enumerate(rows):
        if shndx >= 0xFF00:
            if shndx == SHN_XINDEX:
                if xindex is None or (i + 1) * 4 > xindex.size:
                    raise ParseError(f"symbol {i}: SHN_XINDEX without a SHT_SYMTAB_SHNDX entry")
                (shndx,) = struct.unpack_from("<I", data, xindex.offset + i * 4)
            if shndx not in (SHN_UNDEF, SHN_ABS, SHN_COMMON) and shndx >= nsecs:
                raise ParseError(f"symbol {i}: section index {shndx} is out of range "
                                 f"({nsecs} sections)")
        elif shndx >= nsecs:
            raise ParseError(f"symbol {i}: section index {shndx} is out of range "
                             f"({nsecs} sections)")
        if name:
            end = find(b"\0", name) if name < strsize else -2
            label = names[name:end].decode("utf-8", "surrogateescape") if end >= 0 else \
                _cstr(names, strs, name, "symbol", i)         # says what is wrong
        else:
            label = ""
        out.append(ObjSymbol(i, label, value, size, info >> 4, info & 0xF, other & 3, shndx))
    if not out:
        out.append(ObjSymbol(0, "", 0, 0, 0, 0, 0, 0))
    return out


def _words(code: str, raw: memoryview) -> array[int]:
    """``raw`` (little-endian) as an array of ``code`` words."""
    words = array(code)
    words.frombytes(raw)
    if _SWAP:
        words.byteswap()
    return words


def _relsections(data: memoryview, secs: list[ObjSection], nsyms: int, is64: bool,
                 limits: Limits) -> list[RelSection]:
    out = []
    total = 0
    for s in secs:
        if s.type not in (SHT_RELA, SHT_REL):
            continue
        rela = s.type == SHT_RELA
        ent = (24 if rela else 16) if is64 else (12 if rela else 8)
        where = f"section {s.index} ({s.name})"
        if s.size % ent or (s.entsize and s.entsize != ent):
            raise ParseError(f"{where}: size {s.size} / entry size {s.entsize} do not match "
                             f"{ent}-byte relocations")
        if not 0 < s.info < len(secs):
            raise ParseError(f"{where}: sh_info {s.info} is not a section to relocate")
        total += s.size // ent
        if total > limits.max_relocations:
            raise LayoutError(f"more than {limits.max_relocations} relocations (the limit)")
        n = s.size // ent
        words = _words("Q" if is64 else "I", data[s.offset:s.offset + s.size])
        step = 3 if rela else 2
        offsets = words[0::step].tolist()
        if is64:
            types = [r & 0xFFFFFFFF for r in words[1::step]]
            syms = [r >> 32 for r in words[1::step]]
        else:
            types = [r & 0xFF for r in words[1::step]]
            syms = [r >> 8 for r in words[1::step]]
        if n and max(syms) >= nsyms:
            bad = [i for i, y in enumerate(syms) if y >= nsyms]
            raise ParseError(f"{where}: relocation(s) {', '.join(map(str, bad[:10]))} name "
                             f"symbol indices past the {nsyms} symbols of .symtab")
        target = secs[s.info]
        if n and target.alloc and max(offsets) >= target.size:
            i = next(i for i, o in enumerate(offsets) if o >= target.size)
            raise ParseError(f"{where}[{i}]: offset {offsets[i]:#x} is outside the section it "
                             f"relocates ({target.name}, {target.size:#x} bytes)")
        if rela:
            addends = _words("q" if is64 else "i", data[s.offset:s.offset + s.size])[2::3].tolist()
        else:
            addends = [0] * n
        out.append(RelSection(s.index, s.name, s.info, rela, offsets, types, syms, addends))
    return out


def parse_object(source: bytes | bytearray | memoryview, *, limits: Limits = DEFAULT_LIMITS,
                 expect_arch: Arch | None = None) -> ObjectFile:
    """Parse and check a relocatable object (raises ParseError, LayoutError,
    UnsupportedError or ArchError saying what is wrong and where)."""
    data = memoryview(source).cast("B") if not isinstance(source, memoryview) else source.cast("B")
    h = read_object_header(data, expect_arch)
    (phnum,) = read_struct("<H", data, 56 if h.elfclass == 2 else 44, "e_phnum")
    if phnum:
        raise UnsupportedError(f"ET_REL file with {phnum} program header(s): objects have none "
                               "(is this a linked file?)")
    secs = _sections(data, h, limits)
    syms = _symbols(data, secs, h.elfclass == 2, limits)
    rels = _relsections(data, secs, len(syms), h.elfclass == 2, limits)
    return ObjectFile(data, h.arch, h.elfclass, h.e_flags, h.osabi, h.abiversion, secs, syms,
                      rels, limits)
