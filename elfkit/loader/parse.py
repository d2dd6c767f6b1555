"""Parse a bare-metal ELF shared object from bytes, bounds-checking everything.

Only what loading needs is read: the ELF header, program headers and the
PT_DYNAMIC segment (section headers are never required).  Every offset,
size, count and index taken from the file is checked before use, and every
failure is an ``ElfkitError`` that says what was wrong and where.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from .. import arch as _arch
from ..arch import Arch
from ..errors import ArchError, LayoutError, ParseError, UnsupportedError
from . import _tags as T

TLS_MESSAGE = "TLS is not supported in bare-metal plugins"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource bounds applied while parsing and laying out."""

    max_image_size: int = 1 << 30        # bytes of address space one image may span
    max_relocations: int = 10_000_000
    max_symbols: int = 4_000_000


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Segment:
    index: int
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    align: int

    @property
    def prot_string(self) -> str:
        return ("R" if self.flags & 4 else "-") + ("W" if self.flags & 2 else "-") + \
               ("X" if self.flags & 1 else "-")


@dataclass(frozen=True, slots=True)
class Symbol:
    index: int
    name: str
    value: int
    size: int
    bind: int          # 0 LOCAL, 1 GLOBAL, 2 WEAK, 10 GNU_UNIQUE
    type: int          # 0 NOTYPE, 1 OBJECT, 2 FUNC, 10 GNU_IFUNC, 6 TLS
    visibility: int
    shndx: int
    version: str = ""
    version_hidden: bool = False

    @property
    def defined(self) -> bool:
        return self.shndx != 0

    @property
    def weak(self) -> bool:
        return self.bind == 2


@dataclass(slots=True)
class RelocTable:
    """One relocation table in file order: parallel lists."""

    tag: str                 # "DT_RELA", "DT_REL", "DT_JMPREL", "DT_RELR"
    explicit_addend: bool
    file_offset: int
    # parallel sequences: lists for small tables, numpy arrays for large ones
    offsets: Any = field(default_factory=list)
    types: Any = field(default_factory=list)
    syms: Any = field(default_factory=list)
    addends: Any = None
    relr_raw: bytes = b""    # DT_RELR: the packed words, decoded at relocation time
    count: int = 0


@dataclass(slots=True)
class ElfFile:
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
    sysv_hash: tuple[int, ...] | None  # (nbucket, buckets..., chains...) file offset-based
    gnu_hash: dict | None
    reloc_tables: list[RelocTable]
    flags: int
    flags_1: int
    init: int
    fini: int
    init_array: tuple[int, int]      # vaddr, count
    fini_array: tuple[int, int]
    limits: Limits = DEFAULT_LIMITS
    _by_name: dict[str, int] | None = None
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

    # ---- symbol lookup through the hash table --------------------------
    def lookup(self, name: str) -> Symbol | None:
        """Find a *defined* global/weak symbol through DT_GNU_HASH or DT_HASH."""
        base = name.split("@", 1)[0]
        if self.gnu_hash is not None:
            idx = _gnu_lookup(self, base)
        elif self.sysv_hash is not None:
            idx = _sysv_lookup(self, base)
        else:  # pragma: no cover - parse() requires one of the two
            idx = None
        if idx is None:
            return None
        sym = self.symbols[idx]
        return sym if sym.defined and sym.bind in (1, 2, 10) else None

    def vaddr_to_offset(self, vaddr: int, size: int, what: str) -> int:
        return _vaddr_to_offset(self.segments, len(self.data), vaddr, size, what)


# ---------------------------------------------------------------- helpers

def _u(fmt: str, data: memoryview, off: int, what: str):
    size = struct.calcsize(fmt)
    if off < 0 or off + size > len(data):
        raise ParseError(f"{what} at file offset {off:#x} ({size} bytes) is past the end of the "
                         f"file ({len(data)} bytes)")
    return struct.unpack_from(fmt, data, off)


def _vaddr_to_offset(segments: list[Segment], flen: int, vaddr: int, size: int, what: str) -> int:
    for s in segments:
        if s.type != T.PT_LOAD:
            continue
        if s.vaddr <= vaddr and vaddr + size <= s.vaddr + s.filesz:
            off = s.offset + (vaddr - s.vaddr)
            if off + size > flen:
                break
            return off
    raise ParseError(f"{what} at address {vaddr:#x} ({size} bytes) is not inside the file-backed "
                     f"part of any PT_LOAD segment")


def _cstr(data: memoryview, strtab: tuple[int, int], off: int, what: str) -> str:
    start, size = strtab
    if off < 0 or off >= size:
        raise ParseError(f"{what}: string offset {off} is outside the dynamic string table "
                         f"(DT_STRSZ {size})")
    end = bytes(data[start + off:start + size]).find(b"\0")
    if end < 0:
        raise ParseError(f"{what}: string at offset {off} is not NUL-terminated within DT_STRSZ")
    return bytes(data[start + off:start + off + end]).decode("utf-8", "replace")


def sysv_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def _sysv_lookup(elf: ElfFile, name: str) -> int | None:
    nbucket, buckets, chains = elf.sysv_hash  # type: ignore[misc]
    if nbucket == 0:
        return None
    bname = name
    i = buckets[sysv_hash(name.encode()) % nbucket]
    seen = 0
    nsyms = len(elf.symbols)
    while i != 0:
        if i >= nsyms or seen > nsyms:
            raise ParseError(f"DT_HASH chain for {name!r} is corrupt (index {i}, {nsyms} symbols)")
        if elf.symbols[i].name == bname:
            return i
        i = chains[i]
        seen += 1
    return None


def _gnu_lookup(elf: ElfFile, name: str) -> int | None:
    g = elf.gnu_hash
    assert g is not None
    h = gnu_hash(name.encode())
    nb = g["nbuckets"]
    if nb == 0:
        return None
    bits = elf.word * 8
    words = g["bloom"]
    if words:
        w = words[(h // bits) % len(words)]
        if not ((w >> (h % bits)) & 1 and (w >> ((h >> g["shift"]) % bits)) & 1):
            return None
    i = g["buckets"][h % nb]
    if i == 0:
        return None
    symoff = g["symoffset"]
    chain = g["chain"]
    nsyms = len(elf.symbols)
    while True:
        if i >= nsyms or i - symoff >= len(chain) or i < symoff:
            raise ParseError(f"DT_GNU_HASH chain for {name!r} is corrupt (index {i})")
        c = chain[i - symoff]
        if (c | 1) == (h | 1) and elf.symbols[i].name == name:
            return i
        if c & 1:
            return None
        i += 1


# ---------------------------------------------------------------- parse

def parse(source: bytes | bytearray | memoryview, *, limits: Limits = DEFAULT_LIMITS,
          expect_arch: Arch | None = None) -> ElfFile:
    data = memoryview(source).cast("B") if not isinstance(source, memoryview) else source.cast("B")
    n = len(data)
    if n < 16:
        raise ParseError(f"file is {n} bytes, too short for an ELF identification (16 bytes)")
    if bytes(data[:4]) != b"\x7fELF":
        raise ParseError(f"not an ELF file: magic is {bytes(data[:4]).hex()} at offset 0, "
                         f"expected 7f454c46")
    elfclass, ei_data, ei_version, osabi, abiversion = data[4], data[5], data[6], data[7], data[8]
    if elfclass not in (1, 2):
        raise ParseError(f"invalid ELF class {elfclass} at offset 0x4 (expected 1 or 2)")
    if ei_data == 2:
        raise UnsupportedError("big-endian ELF (EI_DATA=2 at offset 0x5) is not supported: "
                               "plugins must be little-endian")
    if ei_data != 1:
        raise ParseError(f"invalid ELF byte order {ei_data} at offset 0x5")
    if ei_version != 1:
        raise ParseError(f"invalid EI_VERSION {ei_version} at offset 0x6 (expected 1)")
    is64 = elfclass == 2
    w = 8 if is64 else 4
    ehfmt = "<HHIQQQIHHHHHH" if is64 else "<HHIIIIIHHHHHH"
    (e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags, e_ehsize, e_phentsize,
     e_phnum, e_shentsize, e_shnum, e_shstrndx) = _u(ehfmt, data, 16, "ELF header")
    if e_version != 1:
        raise ParseError(f"invalid e_version {e_version} at offset 0x14 (expected 1)")
    if e_type != T.ET_DYN:
        kind = {1: "ET_REL (an object file)", 2: "ET_EXEC (a fixed-address executable)",
                4: "ET_CORE (a core dump)"}.get(e_type, f"type {e_type}")
        raise UnsupportedError(f"e_type is {kind}; only ET_DYN shared objects can be loaded "
                               f"(link with -shared)")
    try:
        arch = _arch.from_machine(e_machine, 64 if is64 else 32)
    except ArchError as e:
        raise UnsupportedError(f"e_machine {e_machine} at offset 0x12: {e}") from None
    if expect_arch is not None and expect_arch is not arch:
        raise ArchError(f"file is {arch.name} but {expect_arch.name} was requested")
    want_eh = 64 if is64 else 52
    want_ph = 56 if is64 else 32
    if e_ehsize != want_eh:
        raise ParseError(f"e_ehsize is {e_ehsize} at offset 0x{(52 if is64 else 40):x}, "
                         f"expected {want_eh}")
    if e_phentsize != want_ph:
        raise ParseError(f"e_phentsize is {e_phentsize}, expected {want_ph}")
    if e_phnum == 0xFFFF:
        raise UnsupportedError("extended program header numbering (PN_XNUM) is not supported")
    if e_phnum == 0 or e_phoff == 0:
        raise ParseError("no program headers (e_phoff/e_phnum are 0)")
    if e_phoff + e_phnum * want_ph > n:
        raise ParseError(f"program header table at offset {e_phoff:#x} ({e_phnum} x {want_ph} "
                         f"bytes) runs past the end of the file ({n} bytes)")

    segments: list[Segment] = []
    phtab = data[e_phoff:e_phoff + e_phnum * want_ph]
    if is64:
        for i, (p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz, p_memsz, p_align) in \
                enumerate(struct.iter_unpack("<IIQQQQQQ", phtab)):
            segments.append(Segment(i, p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz,
                                    p_align))
    else:
        for i, (p_type, p_offset, p_vaddr, _pa, p_filesz, p_memsz, p_flags, p_align) in \
                enumerate(struct.iter_unpack("<IIIIIIII", phtab)):
            segments.append(Segment(i, p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz,
                                    p_align))

    _check_segments(segments, n, limits, w)

    dynseg = [s for s in segments if s.type == T.PT_DYNAMIC]
    if not dynseg:
        raise ParseError("no PT_DYNAMIC segment: not a dynamically linkable shared object")
    ds = dynseg[0]
    if ds.filesz == 0:
        raise ParseError(f"PT_DYNAMIC (program header {ds.index}) is empty")
    dyn_off = _vaddr_to_offset(segments, n, ds.vaddr, ds.filesz, "PT_DYNAMIC")
    entsz = 2 * w
    dynamic: list[tuple[int, int]] = []
    dfmt = "<qQ" if is64 else "<iI"
    nent = ds.filesz // entsz
    for tag, val in struct.iter_unpack(dfmt, data[dyn_off:dyn_off + nent * entsz]):
        if tag == T.DT_NULL:
            break
        dynamic.append((tag, val))
    dyn: dict[int, int] = {}
    needed_offs: list[int] = []
    for tag, val in dynamic:
        if tag == T.DT_NEEDED:
            needed_offs.append(val)
        dyn[tag] = val

    flags = dyn.get(T.DT_FLAGS, 0)
    flags_1 = dyn.get(T.DT_FLAGS_1, 0)
    if T.DT_TEXTREL in dyn or flags & T.DF_TEXTREL:
        raise UnsupportedError("the object has text relocations (DT_TEXTREL): code would have to "
                               "be writable; rebuild with -fPIC")
    if flags & T.DF_STATIC_TLS:
        raise UnsupportedError(TLS_MESSAGE + " (DF_STATIC_TLS is set)")
    if T.DT_PREINIT_ARRAY in dyn:
        raise UnsupportedError("DT_PREINIT_ARRAY is only allowed in executables")

    # -- string table
    if T.DT_STRTAB not in dyn or T.DT_STRSZ not in dyn:
        raise ParseError("PT_DYNAMIC has no DT_STRTAB/DT_STRSZ")
    strsz = dyn[T.DT_STRSZ]
    stroff = _vaddr_to_offset(segments, n, dyn[T.DT_STRTAB], strsz, "DT_STRTAB")
    strtab = (stroff, strsz)
    needed = [_cstr(data, strtab, o, "DT_NEEDED") for o in needed_offs]
    soname = _cstr(data, strtab, dyn[T.DT_SONAME], "DT_SONAME") if T.DT_SONAME in dyn else ""

    # -- symbol count from the hash tables
    if T.DT_SYMTAB not in dyn:
        raise ParseError("PT_DYNAMIC has no DT_SYMTAB")
    syment = dyn.get(T.DT_SYMENT, 24 if is64 else 16)
    if syment != (24 if is64 else 16):
        raise ParseError(f"DT_SYMENT is {syment}, expected {24 if is64 else 16}")
    sysv = None
    gnu = None
    nsyms = None
    if T.DT_HASH in dyn:
        hoff = _vaddr_to_offset(segments, n, dyn[T.DT_HASH], 8, "DT_HASH")
        nbucket, nchain = struct.unpack_from("<II", data, hoff)
        if nbucket > limits.max_symbols or nchain > limits.max_symbols:
            raise ParseError(f"DT_HASH at {dyn[T.DT_HASH]:#x} claims {nbucket} buckets and {nchain} "
                             f"chains (limit {limits.max_symbols})")
        hoff = _vaddr_to_offset(segments, n, dyn[T.DT_HASH], 8 + 4 * (nbucket + nchain), "DT_HASH")
        words = struct.unpack_from(f"<{nbucket + nchain}I", data, hoff + 8)
        sysv = (nbucket, words[:nbucket], words[nbucket:])
        nsyms = nchain
    if T.DT_GNU_HASH in dyn and nsyms is None:
        # With both tables present, DT_HASH gives the count and serves lookups.
        gnu, nsyms = _parse_gnu_hash(data, segments, dyn[T.DT_GNU_HASH], w, limits)
    if nsyms is None:
        raise ParseError("PT_DYNAMIC has neither DT_HASH nor DT_GNU_HASH: the number of dynamic "
                         "symbols cannot be known")
    symoff = _vaddr_to_offset(segments, n, dyn[T.DT_SYMTAB], nsyms * syment, "DT_SYMTAB")

    # -- symbol versions
    versym = None
    if T.DT_VERSYM in dyn and nsyms:
        voff = _vaddr_to_offset(segments, n, dyn[T.DT_VERSYM], 2 * nsyms, "DT_VERSYM")
        versym = struct.unpack_from(f"<{nsyms}H", data, voff)
    vernames = _parse_versions(data, segments, n, dyn, strtab) if versym else {}

    symbols: list[Symbol] = []
    sfmt = "<IBBHQQ" if is64 else "<IIIBBH"
    strbytes = bytes(data[stroff:stroff + strsz])
    find = strbytes.find
    for i, row in enumerate(struct.iter_unpack(sfmt, data[symoff:symoff + nsyms * syment])):
        if is64:
            st_name, st_info, st_other, st_shndx, st_value, st_size = row
        else:
            st_name, st_value, st_size, st_info, st_other, st_shndx = row
        if st_name:
            end = find(b"\0", st_name) if st_name < strsz else -2
            if end < 0:
                raise ParseError(f"dynamic symbol {i}: name offset {st_name} is "
                                 + ("outside the dynamic string table (DT_STRSZ "
                                    f"{strsz})" if end == -2 else "not NUL-terminated within DT_STRSZ"))
            name = strbytes[st_name:end].decode("utf-8", "replace")
        else:
            name = ""
        ver, hidden = "", False
        if versym is not None and i:
            v = versym[i]
            hidden = bool(v & 0x8000)
            ver = vernames.get(v & 0x7FFF, "")
        sym = Symbol(i, name, st_value, st_size, st_info >> 4, st_info & 0xF, st_other & 3,
                     st_shndx, ver, hidden)
        if sym.type == T.STT_TLS and i:
            raise UnsupportedError(f"{TLS_MESSAGE} (dynamic symbol {i} {name!r} is STT_TLS)")
        symbols.append(sym)

    # -- relocation tables
    tables = _parse_relocs(data, segments, n, dyn, is64, nsyms, limits)

    init_array = _array(dyn, T.DT_INIT_ARRAY, T.DT_INIT_ARRAYSZ, w, "DT_INIT_ARRAY", segments)
    fini_array = _array(dyn, T.DT_FINI_ARRAY, T.DT_FINI_ARRAYSZ, w, "DT_FINI_ARRAY", segments)

    return ElfFile(
        data=data, arch=arch, elfclass=elfclass, e_type=e_type, e_flags=e_flags, osabi=osabi,
        abiversion=abiversion, segments=segments, dynamic=dynamic, dyn=dyn, needed=needed,
        soname=soname, symbols=symbols, strtab=strtab,
        hash_kind=("both" if T.DT_GNU_HASH in dyn and T.DT_HASH in dyn
                   else ("gnu" if T.DT_GNU_HASH in dyn else "sysv")),
        sysv_hash=sysv, gnu_hash=gnu, reloc_tables=tables, flags=flags, flags_1=flags_1,
        init=dyn.get(T.DT_INIT, 0), fini=dyn.get(T.DT_FINI, 0),
        init_array=init_array, fini_array=fini_array, limits=limits)


def _check_segments(segments: list[Segment], n: int, limits: Limits, w: int) -> None:
    loads = []
    top = (1 << (8 * w)) - 1
    for s in segments:
        if s.type == T.PT_TLS:
            raise UnsupportedError(f"{TLS_MESSAGE} (program header {s.index} is PT_TLS)")
        if s.type == T.PT_INTERP:
            raise UnsupportedError(f"program header {s.index} is PT_INTERP: this is a dynamically "
                                   f"linked executable, not a bare-metal plugin")
        if s.type != T.PT_LOAD:
            continue
        if not (s.filesz > s.memsz or s.offset + s.filesz > n or s.align & (s.align - 1)
                or s.align > limits.max_image_size or s.memsz > limits.max_image_size
                or s.vaddr + s.memsz > top or (s.flags & 3) == 3):
            loads.append(s)       # the common case: no message to build
            continue
        where = f"PT_LOAD (program header {s.index}, vaddr {s.vaddr:#x})"
        if s.filesz > s.memsz:
            raise ParseError(f"{where}: p_filesz {s.filesz:#x} is larger than p_memsz {s.memsz:#x}")
        if s.offset + s.filesz > n:
            raise ParseError(f"{where}: file range {s.offset:#x}+{s.filesz:#x} is past the end of "
                             f"the file ({n} bytes)")
        if s.align > 1 and s.align & (s.align - 1):
            raise ParseError(f"{where}: p_align {s.align:#x} is not a power of two")
        if s.align > limits.max_image_size:
            raise LayoutError(f"{where}: p_align {s.align:#x} exceeds the image size limit "
                              f"({limits.max_image_size:#x} bytes)")
        if s.memsz > limits.max_image_size or s.vaddr + s.memsz > top:
            raise LayoutError(f"{where}: p_memsz {s.memsz:#x} exceeds the image size limit "
                              f"({limits.max_image_size:#x} bytes)")
        if (s.flags & 3) == 3:
            raise UnsupportedError(f"{where} is both writable and executable (W+X); refusing to "
                                   f"map it")
        loads.append(s)
    if not loads:
        raise ParseError("no PT_LOAD segments: nothing to load")
    ordered = sorted(loads, key=lambda s: s.vaddr)
    for a, b in zip(ordered, ordered[1:]):
        if b.vaddr < a.vaddr + a.memsz:
            raise LayoutError(f"PT_LOAD segments overlap: program header {a.index} "
                              f"[{a.vaddr:#x}, {a.vaddr + a.memsz:#x}) and program header {b.index} "
                              f"[{b.vaddr:#x}, {b.vaddr + b.memsz:#x})")
    span = ordered[-1].vaddr + ordered[-1].memsz - ordered[0].vaddr
    if span > limits.max_image_size:
        raise LayoutError(f"PT_LOAD segments span {span:#x} bytes, more than the image size limit "
                          f"({limits.max_image_size:#x} bytes)")


def _array(dyn: dict[int, int], tag: int, sztag: int, w: int, what: str,
           segments: list[Segment]) -> tuple[int, int]:
    if tag not in dyn:
        return (0, 0)
    size = dyn.get(sztag, 0)
    if size % w:
        raise ParseError(f"{what}SZ {size} is not a multiple of the word size {w}")
    addr = dyn[tag]
    if size and not any(s.type == T.PT_LOAD and s.vaddr <= addr and addr + size <= s.vaddr + s.memsz
                        for s in segments):
        raise ParseError(f"{what} at {addr:#x} ({size} bytes) is outside every PT_LOAD segment")
    return (addr, size // w)


def _parse_gnu_hash(data: memoryview, segments: list[Segment], addr: int, w: int,
                    limits: Limits) -> tuple[dict, int]:
    n = len(data)
    off = _vaddr_to_offset(segments, n, addr, 16, "DT_GNU_HASH")
    nbuckets, symoffset, bloom_size, shift = struct.unpack_from("<IIII", data, off)
    if nbuckets > limits.max_symbols or bloom_size > limits.max_symbols:
        raise ParseError(f"DT_GNU_HASH at {addr:#x} claims {nbuckets} buckets and {bloom_size} bloom "
                         f"words (limit {limits.max_symbols})")
    if shift >= 8 * w:
        raise ParseError(f"DT_GNU_HASH at {addr:#x}: bloom shift {shift} is not below {8 * w}")
    head = 16 + bloom_size * w + nbuckets * 4
    off = _vaddr_to_offset(segments, n, addr, head, "DT_GNU_HASH")
    bloom = struct.unpack_from(f"<{bloom_size}{'Q' if w == 8 else 'I'}", data, off + 16)
    buckets = struct.unpack_from(f"<{nbuckets}I", data, off + 16 + bloom_size * w)
    maxidx = max(buckets) if buckets else 0
    if maxidx == 0:
        return ({"nbuckets": nbuckets, "symoffset": symoffset, "bloom": bloom, "shift": shift,
                 "buckets": buckets, "chain": ()}, symoffset)
    if maxidx < symoffset:
        raise ParseError(f"DT_GNU_HASH at {addr:#x}: bucket value {maxidx} is below symoffset "
                         f"{symoffset}")
    # Walk the last chain to its terminating entry to learn the symbol count.
    chain_off = off + head
    i = maxidx
    while True:
        if i - symoffset > limits.max_symbols:
            raise ParseError(f"DT_GNU_HASH at {addr:#x}: chain does not terminate within "
                             f"{limits.max_symbols} symbols")
        o = chain_off + 4 * (i - symoffset)
        if o + 4 > n or not _in_file_backed(segments, addr + head + 4 * (i - symoffset)):
            raise ParseError(f"DT_GNU_HASH at {addr:#x}: chain runs past the end of its segment")
        (c,) = struct.unpack_from("<I", data, o)
        if c & 1:
            break
        i += 1
    count = i + 1
    chain = struct.unpack_from(f"<{count - symoffset}I", data, chain_off)
    return ({"nbuckets": nbuckets, "symoffset": symoffset, "bloom": bloom, "shift": shift,
             "buckets": buckets, "chain": chain}, count)


def _in_file_backed(segments: list[Segment], vaddr: int) -> bool:
    return any(s.type == T.PT_LOAD and s.vaddr <= vaddr and vaddr + 4 <= s.vaddr + s.filesz
               for s in segments)


def _parse_versions(data: memoryview, segments: list[Segment], n: int, dyn: dict[int, int],
                    strtab: tuple[int, int]) -> dict[int, str]:
    names: dict[int, str] = {}
    if T.DT_VERDEF in dyn:
        off = _vaddr_to_offset(segments, n, dyn[T.DT_VERDEF], 20, "DT_VERDEF")
        for _ in range(min(dyn.get(T.DT_VERDEFNUM, 0), 4096)):
            vd_version, vd_flags, vd_ndx, vd_cnt, vd_hash, vd_aux, vd_next = \
                _u("<HHHHIII", data, off, "DT_VERDEF entry")
            if vd_cnt:
                (vda_name, _n) = _u("<II", data, off + vd_aux, "DT_VERDEF aux")
                names[vd_ndx] = _cstr(data, strtab, vda_name, "version definition")
            if not vd_next:
                break
            off += vd_next
    if T.DT_VERNEED in dyn:
        off = _vaddr_to_offset(segments, n, dyn[T.DT_VERNEED], 16, "DT_VERNEED")
        for _ in range(min(dyn.get(T.DT_VERNEEDNUM, 0), 4096)):
            vn_version, vn_cnt, vn_file, vn_aux, vn_next = _u("<HHIII", data, off, "DT_VERNEED")
            aoff = off + vn_aux
            for _j in range(min(vn_cnt, 4096)):
                vna_hash, vna_flags, vna_other, vna_name, vna_next = \
                    _u("<IHHII", data, aoff, "DT_VERNEED aux")
                names[vna_other] = _cstr(data, strtab, vna_name, "version requirement")
                if not vna_next:
                    break
                aoff += vna_next
            if not vn_next:
                break
            off += vn_next
    return names


def _parse_relocs(data: memoryview, segments: list[Segment], n: int, dyn: dict[int, int],
                  is64: bool, nsyms: int, limits: Limits) -> list[RelocTable]:
    w = 8 if is64 else 4
    relasz_ent = 24 if is64 else 12
    relsz_ent = 16 if is64 else 8
    tables: list[RelocTable] = []

    def table(tag_name: str, addr_tag: int, size_tag: int, ent_tag: int | None, want_ent: int,
              rela: bool) -> None:
        if addr_tag not in dyn:
            if size_tag in dyn and dyn[size_tag]:
                raise ParseError(f"{tag_name}SZ is set but {tag_name} is missing")
            return
        size = dyn.get(size_tag, 0)
        ent = dyn.get(ent_tag, want_ent) if ent_tag is not None else want_ent
        if ent != want_ent:
            raise ParseError(f"{tag_name}ENT is {ent}, expected {want_ent}")
        if size % want_ent:
            raise ParseError(f"{tag_name} size {size} is not a multiple of the entry size {want_ent}")
        count = size // want_ent
        if count > limits.max_relocations:
            raise LayoutError(f"{tag_name} has {count} entries, more than the limit "
                              f"({limits.max_relocations})")
        off = _vaddr_to_offset(segments, n, dyn[addr_tag], size, tag_name)
        t = RelocTable(tag_name, rela, off, count=count)
        _decode_table(t, data, off, count, is64, rela)
        tables.append(t)

    table("DT_RELA", T.DT_RELA, T.DT_RELASZ, T.DT_RELAENT, relasz_ent, True)
    table("DT_REL", T.DT_REL, T.DT_RELSZ, T.DT_RELENT, relsz_ent, False)
    if T.DT_JMPREL in dyn:
        pltrel = dyn.get(T.DT_PLTREL, T.DT_RELA)
        if pltrel not in (T.DT_RELA, T.DT_REL):
            raise ParseError(f"DT_PLTREL is {pltrel}, expected DT_RELA (7) or DT_REL (17)")
        rela = pltrel == T.DT_RELA
        table("DT_JMPREL", T.DT_JMPREL, T.DT_PLTRELSZ, None, relasz_ent if rela else relsz_ent, rela)
    if T.DT_RELR in dyn:
        size = dyn.get(T.DT_RELRSZ, 0)
        ent = dyn.get(T.DT_RELRENT, w)
        if ent != w:
            raise ParseError(f"DT_RELRENT is {ent}, expected {w}")
        if size % w:
            raise ParseError(f"DT_RELRSZ {size} is not a multiple of {w}")
        if size // w > limits.max_relocations:
            raise LayoutError(f"DT_RELR has {size // w} words, more than the limit")
        off = _vaddr_to_offset(segments, n, dyn[T.DT_RELR], size, "DT_RELR")
        t = RelocTable("DT_RELR", False, off, relr_raw=bytes(data[off:off + size]), count=size // w)
        tables.append(t)
    return tables


def _decode_table(t: RelocTable, data: memoryview, off: int, count: int, is64: bool,
                  rela: bool) -> None:
    if count == 0:
        t.addends = [] if rela else None
        return
    if count < 256:  # small tables: plain struct is faster than numpy's set-up cost
        fmt = ("<QQq" if rela else "<QQ") if is64 else ("<IIi" if rela else "<II")
        size = struct.calcsize(fmt)
        rows = list(struct.iter_unpack(fmt, data[off:off + count * size]))
        t.offsets = [r[0] for r in rows]
        if is64:
            t.types = [r[1] & 0xFFFFFFFF for r in rows]
            t.syms = [r[1] >> 32 for r in rows]
        else:
            t.types = [r[1] & 0xFF for r in rows]
            t.syms = [r[1] >> 8 for r in rows]
        t.addends = [r[2] for r in rows] if rela else None
        return
    import numpy as np  # large tables are decoded in bulk

    if is64:
        dt = np.dtype([("off", "<u8"), ("info", "<u8")] + ([("add", "<i8")] if rela else []))
    else:
        dt = np.dtype([("off", "<u4"), ("info", "<u4")] + ([("add", "<i4")] if rela else []))
    arr = np.frombuffer(data, dtype=dt, count=count, offset=off)
    info = arr["info"]
    if is64:
        t.types = (info & 0xFFFFFFFF).astype(np.int64)
        t.syms = (info >> 32).astype(np.int64)
    else:
        t.types = (info & 0xFF).astype(np.int64)
        t.syms = (info >> 8).astype(np.int64)
    # large tables stay numpy arrays; relocate.apply works on them in bulk
    t.offsets = arr["off"].astype(np.int64 if not is64 else np.uint64)
    t.addends = arr["add"].astype(np.int64) if rela else None


def decode_relr(raw: bytes, w: int) -> list[int]:
    """Expand a DT_RELR bitmap encoding into the list of relocated addresses."""
    bits = 8 * w - 1
    fmt = "<%d%s" % (len(raw) // w, "Q" if w == 8 else "I")
    out: list[int] = []
    where = 0
    for word in struct.unpack(fmt, raw):
        if word & 1 == 0:
            out.append(word)
            where = word + w
        else:
            b = word >> 1
            i = 0
            while b:
                if b & 1:
                    out.append(where + i * w)
                b >>= 1
                i += 1
            where += bits * w
    return out
