"""What debuggers and profilers see of a natively loaded plugin.

A loaded plugin lives in memory ``mmap`` gave us, which no tool knows
about.  ``plugin_symbols`` lists its functions and data at their loaded
addresses (from ``.symtab`` when the file has section headers, else from
the dynamic symbols the loader read), and ``build_symfile`` writes a small
ELF object carrying them, and the plugin's DWARF sections when present,
at those addresses: the in-memory "symfile" GDB's JIT interface reads
(jit_debug.py).  Section headers of the plugin are read here, bounds
checked; a file whose section headers are damaged simply falls back to
its dynamic symbols (the loader never needs sections).
"""
from __future__ import annotations

import bisect
import struct
import threading
import weakref

from .._support import codecache
from .._support.records import DataRecord

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_GNU_IFUNC = 0, 1, 2, 3, 4, 10
STB_LOCAL, STB_GLOBAL = 0, 1
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
#: sh_flags bit of a compressed section (its bytes start with an Elf_Chdr)
SHF_COMPRESSED = 0x800
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
PF_X = 0x1
#: a larger .symtab is not read (the dynamic symbols are shown instead)
MAX_SYMTAB_SIZE = 64 << 20


class PluginSymbol(DataRecord, frozen=True, slots=True):
    """A symbol of a loaded plugin: ``address`` is where it is in memory."""

    name: str
    address: int
    size: int
    type: int          # STT_*
    bind: int          # STB_*


class Section:
    """A section header as read_sections reads it (a plain class: a file's
    sections are read at every symfile built, and a frozen record costs
    several times more to make)."""

    __slots__ = ("name", "type", "flags", "addr", "offset", "size", "link", "entsize")

    def __init__(self, name: str, type: int, flags: int, addr: int, offset: int, size: int,
                 link: int, entsize: int):
        self.name, self.type, self.flags, self.addr = name, type, flags, addr
        self.offset, self.size, self.link, self.entsize = offset, size, link, entsize


def read_sections(data: memoryview) -> list[Section]:
    """The section headers of an ELF file (raises ValueError when damaged)."""
    is64 = data[4] == 2
    if is64:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        fmt, want = "<IIQQQQIIQQ", 64
    else:
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
        fmt, want = "<IIIIIIIIII", 40
    if shoff == 0 or shnum == 0:
        return []
    if shentsize != want or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise ValueError("section header table out of bounds")
    raw = list(struct.iter_unpack(fmt, data[shoff:shoff + shnum * shentsize]))
    _n, _t, _f, _a, str_off, str_size = raw[shstrndx][:6]
    names = bytes(_bounded(data, str_off, str_size))
    out = []
    n = len(data)
    for name, typ, flags, addr, off, size, link, _info, _align, entsize in raw:
        if typ != SHT_NOBITS and off + size > n:
            _bounded(data, off, size)       # says what is wrong
        out.append(Section(_cstr(names, name), typ, flags, addr, off, size, link, entsize))
    return out


def _bounded(data: memoryview, off: int, size: int) -> memoryview:
    if off + size > len(data):
        raise ValueError(f"section at {off:#x}+{size:#x} is past the end of the file")
    return data[off:off + size]


def _cstr(table: bytes, off: int) -> str:
    if off >= len(table):
        raise ValueError("string offset out of bounds")
    end = table.find(b"\0", off)
    return table[off:end if end >= 0 else len(table)].decode("utf-8", "replace")


#: name prefixes of symbols not shown: mapping symbols ($x, $d...), local labels
_NOT_SHOWN = (b"$", b".L")
#: a symbol as build_symfile uses it: (name, address, size, type, bind)
_Row = tuple[str, int, int, int, int]


def _symtab_rows(data: memoryview, sections: list[Section], bias: int) -> list[_Row]:
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is None or symtab.link >= len(sections) or symtab.size > MAX_SYMTAB_SIZE:
        return []
    strs = bytes(_bounded(data, sections[symtab.link].offset, sections[symtab.link].size))
    is64 = data[4] == 2
    size = 24 if is64 else 16
    first = symtab.offset + size
    count = max(0, (symtab.offset + symtab.size - first) // size)
    raw_rows = _bounded(data, first, count * size)
    rows = struct.iter_unpack("<IBBHQQ", raw_rows) if is64 else \
        ((n, i, o, x, v, z) for n, v, z, i, o, x in struct.iter_unpack("<IIIBBH", raw_rows))
    out = []
    nstr = len(strs)
    find = strs.find
    for name, info, _other, shndx, value, sz in rows:
        typ = info & 0xF
        if shndx == 0 or typ in (STT_SECTION, STT_FILE) or not name:
            continue
        if name >= nstr:
            raise ValueError("string offset out of bounds")
        end = find(b"\0", name)
        raw = strs[name:end if end >= 0 else nstr]
        if raw.startswith(_NOT_SHOWN):      # mapping symbols, local labels
            continue
        out.append((raw.decode("utf-8", "replace"), value if shndx == 0xFFF1 else bias + value,
                    sz, typ, info >> 4))
    return out


def _symtab_symbols(data: memoryview, sections: list[Section], bias: int) -> list[PluginSymbol]:
    return [PluginSymbol(*r) for r in _symtab_rows(data, sections, bias)]


def _rows(module: Any, sections: list[Section] | None) -> list[_Row]:
    """``plugin_symbols`` as tuples, not sorted."""
    elf = module.elf
    bias = module.base
    try:
        rows = _symtab_rows(elf.data, read_sections(elf.data) if sections is None
                            else sections, bias)
    except (ValueError, struct.error):
        rows = []
    if not rows:
        rows = [(s.name, s.value if s.absolute else bias + s.value, s.size, s.type, s.bind)
                for s in elf.symbols[1:]
                if s.defined and s.name and s.type not in (STT_SECTION, STT_FILE)]
    added = getattr(module, "added_symbols", ())
    if added:
        have = {(r[1], r[0]) for r in rows}
        rows += [(s.name, s.address, s.size, s.type, s.bind) for s in added
                 if (s.address, s.name) not in have]
    return rows


def plugin_symbols(module: Any, sections: list[Section] | None = None) -> list[PluginSymbol]:
    """The symbols of a loaded ``elfkit.Module`` at their loaded addresses,
    sorted by address: ``.symtab`` (static functions too) when present, else
    the dynamic symbols.  ``sections``: the file's section headers when the
    caller has read them already."""
    rows = _rows(module, sections)
    rows.sort(key=lambda r: (r[1], r[0]))
    return [PluginSymbol(*r) for r in rows]


def sized_functions(module: Any, entries: list[tuple[int, int, str]]) -> list[PluginSymbol]:
    """Functions named from outside the file (``(address, size, name)`` at
    loaded addresses) as global ``STT_FUNC`` symbols.  A size of 0 is found:
    the ``.symtab`` function at that address, else the DWARF subprogram
    starting there, else up to the next known function (of the file or of
    ``entries``) or the end of the executable segment holding the address;
    it stays 0 for an address in no executable segment.  Entries the module
    already names (same name, same address) are left out."""
    known = plugin_symbols(module)
    have = {(s.address, s.name) for s in known}
    entries = [e for e in entries if (e[0], e[2]) not in have]
    sizes = {s.address: s.size for s in known if s.type in (STT_FUNC, STT_GNU_IFUNC) and s.size}
    starts = sorted({s.address for s in known if s.type in (STT_FUNC, STT_GNU_IFUNC)}
                    | {a for a, _s, _n in entries})
    dwarf: dict[int, int] | None = None
    out = []
    for address, size, name in entries:
        if not size:
            size = sizes.get(address, 0)
        if not size:
            if dwarf is None:
                dwarf = dwarf_function_sizes(module)
            size = dwarf.get(address, 0)
        if not size:
            size = _gap(module, starts, address)
        out.append(PluginSymbol(name, address, size, STT_FUNC, STB_GLOBAL))
    return out


def _gap(module: Any, starts: list[int], address: int) -> int:
    """From ``address`` to the next function start or the end of its
    executable segment (0 outside executable segments)."""
    bias = module.base
    seg = next((s for s in module.elf.loads if s.flags & PF_X
                and bias + s.vaddr <= address < bias + s.vaddr + s.memsz), None)
    if seg is None:
        return 0
    end = bias + seg.vaddr + seg.memsz
    i = bisect.bisect_right(starts, address)
    if i < len(starts) and starts[i] < end:
        end = starts[i]
    return end - address


def dwarf_function_sizes(module: Any) -> dict[int, int]:
    """Loaded address -> size of the plugin's DWARF subprograms ({} without
    DWARF, or when it cannot be read)."""
    try:
        sections = read_sections(module.elf.data)
    except (ValueError, struct.error):
        return {}
    linked = _dwarf(module, sections)[1]
    return {module.base + lo: size for lo, size in linked.items()}


def function_symbols(module: Any) -> list[PluginSymbol]:
    """The functions (with a size) of a loaded module, by address, one per address."""
    out: list[PluginSymbol] = []
    seen: set[int] = set()
    for s in plugin_symbols(module):
        if s.type in (STT_FUNC, STT_GNU_IFUNC) and s.size and s.address not in seen:
            seen.add(s.address)
            out.append(s)
    return out


class _Strings:
    def __init__(self) -> None:
        self.data = bytearray(b"\0")
        self.index: dict[str, int] = {}

    def add(self, s: str) -> int:
        off = self.index.get(s)
        if off is None:
            off = self.index[s] = len(self.data)
            self.data += s.encode() + b"\0"
        return off


_Sec = tuple[str, int, int, int, int, bytes, int, int, int]


def build_symfile(module: Any) -> bytes:
    """An ELF object (``ET_EXEC``, the plugin's class and machine) whose
    sections mirror the plugin's allocated ones at their loaded addresses
    (no bits, except ``.eh_frame``, whose pc-relative contents stay true
    when moved whole), whose ``.symtab`` holds its symbols at their loaded
    addresses, and which carries the plugin's ``.debug_*`` sections moved
    to the load base.  Without section headers one ``.text`` covers the
    image."""
    elf = module.elf
    is64 = elf.elfclass == 2
    start, end = module.address_range
    bias = module.base
    try:
        plugin_secs = read_sections(elf.data)
    except (ValueError, struct.error):
        plugin_secs = []
    # (name, type, flags, addr, size, data, link, info, entsize); index = position + 1
    secs: list[_Sec] = []
    for ps in plugin_secs:
        if ps.flags & SHF_ALLOC and ps.size and start <= bias + ps.addr < end:
            body = bytes(elf.data[ps.offset:ps.offset + ps.size]) \
                if ps.name == ".eh_frame" and ps.type == SHT_PROGBITS else b""
            secs.append((ps.name, SHT_PROGBITS if body else SHT_NOBITS, ps.flags,
                         bias + ps.addr, ps.size, body, 0, 0, 0))
    if not secs:
        secs.append((".text", SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, start, end - start, b"",
                     0, 0, 0))
    ranges = sorted((sec[3], sec[3] + sec[4], i + 1) for i, sec in enumerate(secs))
    syms = [r for r in _rows(module, plugin_secs or None) if start <= r[1] < end]
    # locals first, as ELF requires; then by address and name
    syms.sort(key=lambda r: (r[4] != STB_LOCAL, r[1], r[0]))
    nlocal = 1 + sum(1 for r in syms if r[4] == STB_LOCAL)
    strs = _Strings()
    pack = struct.Struct("<IBBHQQ" if is64 else "<IIIBBH").pack
    los = [lo for lo, _hi, _i in ranges]
    apart = all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))
    parts = [bytes(24 if is64 else 16)]
    add, find = strs.add, bisect.bisect_right
    for name, address, size, typ, bind in syms:
        info = (bind << 4) | typ
        if apart:       # no two sections overlap: the one starting last at or below
            k = find(los, address) - 1
            shndx = ranges[k][2] if k >= 0 and address < ranges[k][1] else 0xFFF1
        else:
            shndx = next((i for lo, hi, i in ranges if lo <= address < hi), 0xFFF1)  # else ABS
        at = add(name)
        if is64:
            parts.append(pack(at, info, 0, shndx, address, size))
        else:
            parts.append(pack(at, address, size, info, 0, shndx))
    table = b"".join(parts)
    symtab = len(secs) + 1
    secs.append((".symtab", SHT_SYMTAB, 0, 0, len(table), table, symtab + 1, nlocal,
                 24 if is64 else 16))
    secs.append((".strtab", SHT_STRTAB, 0, 0, len(strs.data), bytes(strs.data), 0, 0, 0))
    for name, body in debug_sections(module, plugin_secs).items():
        secs.append((name, SHT_PROGBITS, 0, 0, len(body), body, 0, 0, 0))
    return _write_elf(elf, secs)


#: module -> (its moved DWARF, its subprograms): read once, though a module
#: is registered again after ``add_symbols``
_dwarf_read: weakref.WeakKeyDictionary[Any, tuple[dict[str, bytes], dict[int, int]]] = \
    weakref.WeakKeyDictionary()


#: symfiles of recent loads, by (parsed file, load base, image size,
#: added symbols): a symfile depends on nothing else, and loading a plugin
#: again after closing it (load, close, load) usually lands at the same base
#: with the same parsed file (the loader keeps one per file content).  The
#: key holds the file's id; the entry keeps the file itself, so the id is
#: not reused while the entry lives
_recent: dict[tuple[Any, ...], tuple[Any, bytes]] = {}
_recent_lock = threading.Lock()
RECENT_MAX = 8
#: larger files are not kept alive by the cache
RECENT_MAX_FILE = 1 << 20


def cached_symfile(module: Any) -> bytes:
    """:func:`build_symfile`, remembered for the last few (file, base) pairs."""
    elf = module.elf
    if len(elf.data) > RECENT_MAX_FILE:
        return build_symfile(module)
    # the base and size with the file give the address range
    key = (id(elf), module.base, module.size, tuple(getattr(module, "added_symbols", ())))
    found = _recent.get(key)        # a read needs no lock; changes hold it
    if found is not None and found[0] is elf:
        return found[1]
    symfile = build_symfile(module)
    with _recent_lock:
        _recent.pop(key, None)
        if len(_recent) >= RECENT_MAX:
            del _recent[next(iter(_recent))]
        _recent[key] = (elf, symfile)
    return symfile


def debug_sections(module: Any, sections: list[Section]) -> dict[str, bytes]:
    """The plugin's ``.debug_*`` sections, their addresses moved by the load
    bias ({} when the plugin has none, or they cannot be read)."""
    return _dwarf(module, sections)[0]


def _dwarf(module: Any, sections: list[Section]) -> tuple[dict[str, bytes], dict[int, int]]:
    done = _dwarf_read.get(module)
    if done is not None:
        return done
    data = module.elf.data
    functions: dict[int, int] = {}
    try:
        found = {s.name: bytes(_bounded(data, s.offset, s.size)) for s in sections
                 if s.name.startswith(".debug_") and s.type == SHT_PROGBITS}
        moved = {}
        if ".debug_info" in found:      # most plugins have none: the mover on demand
            from .dwarf_reloc import relocate_dwarf
            raw = not any(s.flags & SHF_COMPRESSED for s in sections
                          if s.name.startswith(".debug_"))
            moved = relocate_dwarf(data, found, module.base, functions, _elfkit_cache, raw)
    except Exception:  # noqa: BLE001 - any DWARF we cannot read or move: symbols only
        moved, functions = {}, {}
    _dwarf_read[module] = done = (moved, functions)
    return done


def _elfkit_cache() -> str | None:
    return codecache.cache_dir("elfkit")


def _write_elf(elf: Any, secs: list[_Sec]) -> bytes:
    is64 = elf.elfclass == 2
    ehsize, shentsize = (64, 64) if is64 else (52, 40)
    shstr = _Strings()
    names = [shstr.add(s[0]) for s in secs]
    shstrndx_name = shstr.add(".shstrtab")
    body = bytearray(ehsize)
    offsets = []
    for s in secs:
        body += bytes(-len(body) % 8)
        offsets.append(len(body))
        body += s[5]
    str_off = len(body)
    body += shstr.data
    body += bytes(-len(body) % 8)
    shoff = len(body)
    shnum = len(secs) + 2
    shfmt = "<IIQQQQIIQQ" if is64 else "<IIIIIIIIII"
    body += b"\0" * shentsize
    for s, name, off in zip(secs, names, offsets):
        _n, typ, flags, addr, size, _d, link, info, entsize = s
        body += struct.pack(shfmt, name, typ, flags, addr, off, size, link, info,
                            16 if typ == SHT_NOBITS else 1, entsize)
    body += struct.pack(shfmt, shstrndx_name, SHT_STRTAB, 0, 0, str_off, len(shstr.data), 0, 0,
                        1, 0)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1, 1, 0]) + b"\0" * 8
    if is64:
        hdr = struct.pack("<16sHHIQQQIHHHHHH", ident, 2, elf.arch.machine, 1, 0, 0, shoff,
                          elf.e_flags, ehsize, 0, 0, shentsize, shnum, shnum - 1)
    else:
        hdr = struct.pack("<16sHHIIIIIHHHHHH", ident, 2, elf.arch.machine, 1, 0, 0, shoff,
                          elf.e_flags, ehsize, 0, 0, shentsize, shnum, shnum - 1)
    body[:ehsize] = hdr
    return bytes(body)
