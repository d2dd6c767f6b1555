"""Dynamic symbols: the hash tables (which also give the symbol count),
symbol versions, the symbol table itself, and lookups by name through
DT_GNU_HASH or DT_HASH.  Bounds-checked like the rest of the parser."""
from __future__ import annotations

import struct

from .._support.records import DataRecord
from ..errors import ParseError, UnsupportedError
from . import tags as T
from .dynamic import cstr
from .headers import TLS_MESSAGE, Limits, Segment, in_file_backed, read_struct, vaddr_to_offset

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Symbol", "SysvHash", "GnuHash", "sysv_hash", "gnu_hash", "read_symbols",
           "sysv_lookup", "gnu_lookup"]

#: DT_HASH as read: (nbucket, buckets, chains)
SysvHash = tuple[int, tuple[int, ...], tuple[int, ...]]
#: DT_GNU_HASH as read: nbuckets, symoffset, bloom, shift, buckets, chain
GnuHash = dict[str, "Any"]


#: st_shndx of an undefined symbol
SHN_UNDEF = 0
#: st_shndx of an absolute symbol: its value is an address, not relative to the load base
SHN_ABS = 0xFFF1


class Symbol(DataRecord, frozen=True, slots=True):
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
        return self.shndx != SHN_UNDEF

    @property
    def absolute(self) -> bool:
        """An absolute symbol (``SHN_ABS``): ``value`` is not relocated by the load base."""
        return self.shndx == SHN_ABS

    @property
    def weak(self) -> bool:
        return self.bind == 2


def sysv_hash(name: bytes) -> int:
    """The DT_HASH (SysV) hash of a symbol name."""
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def gnu_hash(name: bytes) -> int:
    """The DT_GNU_HASH (djb2) hash of a symbol name."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


# ---------------------------------------------------------------- reading

def _read_sysv_hash(data: memoryview, segments: list[Segment], addr: int,
                    limits: Limits) -> SysvHash:
    n = len(data)
    hoff = vaddr_to_offset(segments, n, addr, 8, "DT_HASH")
    nbucket, nchain = struct.unpack_from("<II", data, hoff)
    if nbucket > limits.max_symbols or nchain > limits.max_symbols:
        raise ParseError(f"DT_HASH at {addr:#x} claims {nbucket} buckets and {nchain} "
                         f"chains (limit {limits.max_symbols})")
    hoff = vaddr_to_offset(segments, n, addr, 8 + 4 * (nbucket + nchain), "DT_HASH")
    words = struct.unpack_from(f"<{nbucket + nchain}I", data, hoff + 8)
    return (nbucket, words[:nbucket], words[nbucket:])


def _read_gnu_hash(data: memoryview, segments: list[Segment], addr: int, w: int,
                   limits: Limits) -> tuple[GnuHash, int]:
    """The table and the symbol count (walking the last chain to its end)."""
    n = len(data)
    off = vaddr_to_offset(segments, n, addr, 16, "DT_GNU_HASH")
    nbuckets, symoffset, bloom_size, shift = struct.unpack_from("<IIII", data, off)
    if nbuckets > limits.max_symbols or bloom_size > limits.max_symbols:
        raise ParseError(f"DT_GNU_HASH at {addr:#x} claims {nbuckets} buckets and {bloom_size} "
                         "bloom "
                         f"words (limit {limits.max_symbols})")
    if shift >= 8 * w:
        raise ParseError(f"DT_GNU_HASH at {addr:#x}: bloom shift {shift} is not below {8 * w}")
    head = 16 + bloom_size * w + nbuckets * 4
    off = vaddr_to_offset(segments, n, addr, head, "DT_GNU_HASH")
    bloom = struct.unpack_from(f"<{bloom_size}{'Q' if w == 8 else 'I'}", data, off + 16)
    buckets = struct.unpack_from(f"<{nbuckets}I", data, off + 16 + bloom_size * w)
    maxidx = max(buckets) if buckets else 0
    if maxidx == 0:
        return ({"nbuckets": nbuckets, "symoffset": symoffset, "bloom": bloom, "shift": shift,
                 "buckets": buckets, "chain": ()}, symoffset)
    if maxidx < symoffset:
        raise ParseError(f"DT_GNU_HASH at {addr:#x}: bucket value {maxidx} is below symoffset "
                         f"{symoffset}")
    chain_off = off + head
    i = maxidx
    while True:
        if i - symoffset > limits.max_symbols:
            raise ParseError(f"DT_GNU_HASH at {addr:#x}: chain does not terminate within "
                             f"{limits.max_symbols} symbols")
        o = chain_off + 4 * (i - symoffset)
        if o + 4 > n or not in_file_backed(segments, addr + head + 4 * (i - symoffset)):
            raise ParseError(f"DT_GNU_HASH at {addr:#x}: chain runs past the end of its segment")
        (c,) = struct.unpack_from("<I", data, o)
        if c & 1:
            break
        i += 1
    count = i + 1
    chain = struct.unpack_from(f"<{count - symoffset}I", data, chain_off)
    return ({"nbuckets": nbuckets, "symoffset": symoffset, "bloom": bloom, "shift": shift,
             "buckets": buckets, "chain": chain}, count)


def _read_versions(data: memoryview, dyn: dict[int, int], segments: list[Segment],
                   strtab: tuple[int, int]) -> dict[int, str]:
    """Version index -> name, from DT_VERDEF and DT_VERNEED."""
    n = len(data)
    names: dict[int, str] = {}
    if T.DT_VERDEF in dyn:
        off = vaddr_to_offset(segments, n, dyn[T.DT_VERDEF], 20, "DT_VERDEF")
        for _ in range(min(dyn.get(T.DT_VERDEFNUM, 0), 4096)):
            _vd_version, _vd_flags, vd_ndx, vd_cnt, _vd_hash, vd_aux, vd_next = \
                read_struct("<HHHHIII", data, off, "DT_VERDEF entry")
            if vd_cnt:
                (vda_name, _n) = read_struct("<II", data, off + vd_aux, "DT_VERDEF aux")
                names[vd_ndx] = cstr(data, strtab, vda_name, "version definition")
            if not vd_next:
                break
            off += vd_next
    if T.DT_VERNEED in dyn:
        off = vaddr_to_offset(segments, n, dyn[T.DT_VERNEED], 16, "DT_VERNEED")
        for _ in range(min(dyn.get(T.DT_VERNEEDNUM, 0), 4096)):
            _vn_version, vn_cnt, _vn_file, vn_aux, vn_next = \
                read_struct("<HHIII", data, off, "DT_VERNEED")
            aoff = off + vn_aux
            for _j in range(min(vn_cnt, 4096)):
                _vna_hash, _vna_flags, vna_other, vna_name, vna_next = \
                    read_struct("<IHHII", data, aoff, "DT_VERNEED aux")
                names[vna_other] = cstr(data, strtab, vna_name, "version requirement")
                if not vna_next:
                    break
                aoff += vna_next
            if not vn_next:
                break
            off += vn_next
    return names


def _hash_tables(data: memoryview, segments: list[Segment], dyn: dict[int, int], w: int,
                 limits: Limits) -> tuple[SysvHash | None, GnuHash | None, int]:
    """``(DT_HASH, DT_GNU_HASH, symbol count)``.  With both tables present,
    DT_HASH gives the count and serves lookups."""
    sysv = gnu = None
    nsyms = None
    if T.DT_HASH in dyn:
        sysv = _read_sysv_hash(data, segments, dyn[T.DT_HASH], limits)
        nsyms = len(sysv[2])
    if T.DT_GNU_HASH in dyn and nsyms is None:
        gnu, nsyms = _read_gnu_hash(data, segments, dyn[T.DT_GNU_HASH], w, limits)
    if nsyms is None:
        raise ParseError("PT_DYNAMIC has neither DT_HASH nor DT_GNU_HASH: the number of dynamic "
                         "symbols cannot be known")
    return sysv, gnu, nsyms


def read_symbols(data: memoryview, segments: list[Segment], dyn: dict[int, int],
                 strtab: tuple[int, int], is64: bool,
                 limits: Limits) -> tuple[list[Symbol], SysvHash | None, GnuHash | None]:
    """``(symbols, DT_HASH, DT_GNU_HASH)``: every dynamic symbol with its
    name and version; STT_TLS symbols are refused."""
    if T.DT_SYMTAB not in dyn:
        raise ParseError("PT_DYNAMIC has no DT_SYMTAB")
    syment = dyn.get(T.DT_SYMENT, 24 if is64 else 16)
    if syment != (24 if is64 else 16):
        raise ParseError(f"DT_SYMENT is {syment}, expected {24 if is64 else 16}")
    n = len(data)
    sysv, gnu, nsyms = _hash_tables(data, segments, dyn, 8 if is64 else 4, limits)
    symoff = vaddr_to_offset(segments, n, dyn[T.DT_SYMTAB], nsyms * syment, "DT_SYMTAB")
    versym = None
    if T.DT_VERSYM in dyn and nsyms:
        voff = vaddr_to_offset(segments, n, dyn[T.DT_VERSYM], 2 * nsyms, "DT_VERSYM")
        versym = struct.unpack_from(f"<{nsyms}H", data, voff)
    vernames = _read_versions(data, dyn, segments, strtab) if versym else {}

    symbols: list[Symbol] = []
    sfmt = "<IBBHQQ" if is64 else "<IIIBBH"
    stroff, strsz = strtab
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
                                    f"{strsz})" if end == -2 else "not NUL-terminated within "
                                                                  "DT_STRSZ"))
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
    return symbols, sysv, gnu


# ---------------------------------------------------------------- lookups

def sysv_lookup(table: SysvHash, symbols: list[Symbol], name: str) -> int | None:
    """The index of ``name`` through DT_HASH, or None."""
    nbucket, buckets, chains = table
    if nbucket == 0:
        return None
    i = buckets[sysv_hash(name.encode()) % nbucket]
    seen = 0
    nsyms = len(symbols)
    while i != 0:
        if i >= nsyms or seen > nsyms:
            raise ParseError(f"DT_HASH chain for {name!r} is corrupt (index {i}, {nsyms} symbols)")
        if symbols[i].name == name:
            return i
        i = chains[i]
        seen += 1
    return None


def gnu_lookup(table: GnuHash, symbols: list[Symbol], word: int, name: str) -> int | None:
    """The index of ``name`` through DT_GNU_HASH (``word``: 4 or 8 bytes), or None."""
    g = table
    h = gnu_hash(name.encode())
    nb = g["nbuckets"]
    if nb == 0:
        return None
    bits = word * 8
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
    nsyms = len(symbols)
    while True:
        if i >= nsyms or i - symoff >= len(chain) or i < symoff:
            raise ParseError(f"DT_GNU_HASH chain for {name!r} is corrupt (index {i})")
        c = chain[i - symoff]
        if (c | 1) == (h | 1) and symbols[i].name == name:
            return i
        if c & 1:
            return None
        i += 1
