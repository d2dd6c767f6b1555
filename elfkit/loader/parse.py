"""Parse a bare-metal ELF shared object from bytes, bounds-checking everything.

Only what loading needs is read: the ELF header, program headers and the
PT_DYNAMIC segment (section headers are never required).  Every offset,
size, count and index taken from the file is checked before use, and every
failure is an ``ElfkitError`` that says what was wrong and where.

:func:`parse` runs the steps in order: ``headers.py`` (ELF header, program
headers, segment checks), ``dynamic.py`` (dynamic entries, flags, strings,
init/fini arrays), ``symbols.py`` (hash tables, versions, symbols) and
``reloc_tables.py`` (relocation tables), and returns an :class:`ElfFile`.
"""
from __future__ import annotations

from .._support.records import DataRecord
from ..arch import Arch
from . import tags as T
from .dynamic import check_dynamic_flags, cstr, dynamic_array, read_dynamic, string_table
from .headers import (
    DEFAULT_LIMITS,
    TLS_MESSAGE,
    Limits,
    Segment,
    check_segments,
    read_header,
    read_segments,
    vaddr_to_offset,
)
from .reloc_tables import RelocTable, read_reloc_tables
from .symbols import GnuHash, Symbol, SysvHash, gnu_lookup, read_symbols, sysv_lookup

__all__ = ["ElfFile", "parse", "Limits", "DEFAULT_LIMITS", "Segment", "Symbol", "RelocTable",
           "TLS_MESSAGE"]


class ElfFile(DataRecord, slots=True):
    """A parsed plugin: what the loader needs to lay out, relocate and bind it."""

    data: memoryview
    arch: Arch
    elfclass: int
    e_type: int
    e_flags: int
    osabi: int
    abiversion: int
    segments: list[Segment]
    dynamic: list[tuple[int, int]]
    dyn: dict[int, int]              # last value of each tag (DT_NEEDED is a list below)
    needed: list[str]
    soname: str
    symbols: list[Symbol]
    strtab: tuple[int, int]          # file offset, size
    hash_kind: str                   # "sysv", "gnu", "both"
    sysv_hash: SysvHash | None       # (nbucket, buckets, chains)
    gnu_hash: GnuHash | None
    reloc_tables: list[RelocTable]
    flags: int
    flags_1: int
    init: int
    fini: int
    init_array: tuple[int, int]      # vaddr, count
    fini_array: tuple[int, int]
    limits: Limits = DEFAULT_LIMITS
    _loads: list[Segment] | None = None

    @property
    def word(self) -> int:
        return 8 if self.elfclass == 2 else 4

    @property
    def loads(self) -> list[Segment]:
        loads = self._loads
        if loads is None:
            loads = self._loads = [s for s in self.segments if s.type == T.PT_LOAD]
        return loads

    def lookup(self, name: str) -> Symbol | None:
        """Find a *defined* global/weak symbol through DT_GNU_HASH or DT_HASH."""
        base = name.split("@", 1)[0]
        if self.gnu_hash is not None:
            idx = gnu_lookup(self.gnu_hash, self.symbols, self.word, base)
        elif self.sysv_hash is not None:
            idx = sysv_lookup(self.sysv_hash, self.symbols, base)
        else:  # pragma: no cover - parse() requires one of the two
            idx = None
        if idx is None:
            return None
        sym = self.symbols[idx]
        return sym if sym.defined and sym.bind in (1, 2, 10) else None

    def vaddr_to_offset(self, vaddr: int, size: int, what: str) -> int:
        """The file offset of ``size`` file-backed bytes at ``vaddr``."""
        return vaddr_to_offset(self.segments, len(self.data), vaddr, size, what)


def parse(source: bytes | bytearray | memoryview, *, limits: Limits = DEFAULT_LIMITS,
          expect_arch: Arch | None = None) -> ElfFile:
    """Parse and check a plugin (raises ParseError, UnsupportedError,
    LayoutError or ArchError saying what is wrong and where)."""
    data = memoryview(source).cast("B") if not isinstance(source, memoryview) else source.cast("B")
    header = read_header(data, expect_arch)
    w = header.word
    segments = read_segments(data, header)
    check_segments(segments, len(data), limits, w)
    dynamic, dyn, needed_offs = read_dynamic(data, segments, w)
    flags, flags_1 = check_dynamic_flags(dyn)
    strtab = string_table(data, segments, dyn)
    needed = [cstr(data, strtab, o, "DT_NEEDED") for o in needed_offs]
    soname = cstr(data, strtab, dyn[T.DT_SONAME], "DT_SONAME") if T.DT_SONAME in dyn else ""
    symbols, sysv, gnu = read_symbols(data, segments, dyn, strtab, header.is64, limits)
    tables = read_reloc_tables(data, segments, dyn, header.is64, limits)
    init_array = dynamic_array(dyn, T.DT_INIT_ARRAY, T.DT_INIT_ARRAYSZ, w, "DT_INIT_ARRAY",
                               segments)
    fini_array = dynamic_array(dyn, T.DT_FINI_ARRAY, T.DT_FINI_ARRAYSZ, w, "DT_FINI_ARRAY",
                               segments)
    return ElfFile(
        data=data, arch=header.arch, elfclass=header.elfclass, e_type=header.e_type,
        e_flags=header.e_flags, osabi=header.osabi, abiversion=header.abiversion,
        segments=segments, dynamic=dynamic, dyn=dyn, needed=needed, soname=soname,
        symbols=symbols, strtab=strtab,
        hash_kind=("both" if T.DT_GNU_HASH in dyn and T.DT_HASH in dyn
                   else ("gnu" if T.DT_GNU_HASH in dyn else "sysv")),
        sysv_hash=sysv, gnu_hash=gnu, reloc_tables=tables, flags=flags, flags_1=flags_1,
        init=dyn.get(T.DT_INIT, 0), fini=dyn.get(T.DT_FINI, 0),
        init_array=init_array, fini_array=fini_array, limits=limits)
