"""Move a linked plugin's DWARF to its load address.

A plugin's DWARF names addresses as linked (the image at 0); GDB reads a
JIT symfile as is, with no offset, so every address the DWARF spells out
is moved by the load bias here: ``DW_FORM_addr`` attributes and
``DW_OP_addr`` location expressions of ``.debug_info``, the entries of
``.debug_addr``, ``DW_LNE_set_address`` in ``.debug_line``, the tuples of
``.debug_aranges``, base-address and absolute entries of ``.debug_ranges``,
``.debug_rnglists``, ``.debug_loc`` and ``.debug_loclists``, and the
initial locations of ``.debug_frame`` FDEs.  Offsets relative to a base
need nothing; the subprograms' address ranges are noted on the way (the
sizes of functions a stripped ``.symtab`` lacks).  ``dwarf_scan`` (or,
for DWARF it does not understand, pyelftools) finds the DIEs and where each
attribute value sits; damaged DWARF raises and the caller keeps the symbols
only.  Where the addresses sit depends on the sections' bytes alone: the
sites are found once per plugin and kept in elfkit's cache, and a later
load at another address only adds its bias at them.
"""
from __future__ import annotations

import io
import struct
import sys
import zlib
from collections.abc import Callable

from .._support import codecache
from .dwarf_scan import ScanError, scan_info
from .dwarf_scan import uleb as _uleb

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

DW_OP_addr = 0x03


def relocate_dwarf(elf_bytes: bytes | memoryview, sections: dict[str, bytes], bias: int,
                   functions: dict[int, int] | None = None,
                   cache: str | Callable[[], str | None] | None = None,
                   raw: bool = False) -> dict[str, bytes]:
    """``sections`` (name -> raw bytes of the plugin's ``.debug_*``) with
    every absolute address moved by ``bias``.  ``functions``, when given,
    receives the subprograms: linked ``DW_AT_low_pc`` -> size (from
    ``DW_AT_high_pc``).  ``cache`` and ``raw`` (the sections are stored
    uncompressed: walked directly): see :func:`address_sites`."""
    word, sites, funcs = address_sites(elf_bytes, sections, cache, raw)
    if functions is not None:
        functions.update(funcs)
    out = dict(sections)
    for name, where in sites.items():
        if where:
            out[name] = _moved(sections[name], where, bias)
    return out


#: sites of one section moved with numpy (when it is imported) from this many on
#: (below, the plain loop, ~0.5 us a site, beats numpy's fixed cost in a fresh process)
BULK = 512


def _moved(body: bytes, where: list[tuple[int, int]], bias: int) -> bytes:
    """``body`` with ``bias`` added to the address at each site (0 and all
    ones, which mark "no address", stay)."""
    buf = bytearray(body)
    n = len(buf)
    rest = where
    if len(where) >= BULK and "numpy" in sys.modules:   # numpy's import is not worth it
        rest = [s for s in where if s[1] not in (4, 8)]
        for size in (4, 8):
            _moved_bulk(buf, [off for off, sz in where if sz == size], size, bias)
    get = int.from_bytes
    for off, size in rest:
        end = off + size
        if end > n or off < 0:
            raise ValueError(f"DWARF address at {off:#x} is past the end of its section")
        v = get(buf[off:end], "little")
        top = (1 << (8 * size)) - 1
        if v != 0 and v != top:
            buf[off:end] = ((v + bias) & top).to_bytes(size, "little")
    return bytes(buf)


def _moved_bulk(buf: bytearray, offsets: list[int], size: int, bias: int) -> None:
    """:func:`_moved` for the ``size``-byte sites at ``offsets``, with numpy."""
    if not offsets:
        return
    import numpy as np
    at = np.asarray(offsets, np.int64)
    if int(at.min()) < 0 or int(at.max()) + size > len(buf):
        bad = next(off for off in offsets if off < 0 or off + size > len(buf))
        raise ValueError(f"DWARF address at {bad:#x} is past the end of its section")
    raw = np.frombuffer(buf, np.uint8)
    idx = at[:, None] + np.arange(size)
    kind = np.dtype(f"<u{size}")
    vals = raw[idx].view(kind).ravel()
    keep = (vals != 0) & (vals != np.iinfo(kind).max)
    moved = (vals[keep] + kind.type(bias & np.iinfo(kind).max)).astype(kind)
    raw[idx[keep]] = moved.view(np.uint8).reshape(-1, size)


def address_sites(elf_bytes: bytes | memoryview, sections: dict[str, bytes],
                  cache: str | Callable[[], str | None] | None = None, raw: bool = False
                  ) -> tuple[int, dict[str, list[tuple[int, int]]], dict[int, int]]:
    """(address size, {section: [(offset, address size)] of each address
    it holds}, {low_pc: size} of the subprograms) of the ``.debug_*``
    ``sections`` of ``elf_bytes``: where :func:`relocate_dwarf` adds the
    bias.  They depend on the sections' bytes alone, so for ``raw``
    (uncompressed) sections they are kept in ``cache`` (a directory, or a
    function giving it) under the sections' contents (a later load of the
    same plugin at any address reads them back: walking ``.debug_info`` and
    the line programs costs ~1-3 ms for a plugin of a few hundred functions)."""
    entry = None
    where = cache() if callable(cache) else cache
    if raw and where is not None:
        entry = moves_entry(sections)
        kept = codecache.load(where, *entry)
        if _moves_well_formed(kept, sections):
            return kept
    word, info, funcs = info_sites(elf_bytes, where, sections if raw else None)
    sites = {".debug_info": info}
    for name, find in _FINDERS.items():
        if name in sections:
            sites[name] = find(sections[name], word)
    if entry is not None:
        codecache.store(where, *entry, (word, sites, funcs))
    return word, sites, funcs


def moves_entry(sections: dict[str, bytes]) -> tuple[str, bytes]:
    """``(file name, key)`` of the cache entry of the address sites of the
    debug ``sections``: each one's name, length, CRC-32 and Adler-32."""
    parts = [f"{name}:{len(body):x}:{zlib.crc32(body):08x}{zlib.adler32(body):08x}"
             for name, body in sorted(sections.items())]
    key = "\0".join(parts).encode()
    return f"dwarf-moves-{zlib.crc32(key):08x}{len(key):x}.bin", b"dwarf moves\0" + key


def _moves_well_formed(kept: Any, sections: dict[str, bytes]) -> bool:
    if not (type(kept) is tuple and len(kept) == 3):
        return False
    word, sites, funcs = kept
    return (type(word) is int and type(sites) is dict and ".debug_info" in sites
            and all(type(name) is str and name in sections and _sites_ok(where)
                    for name, where in sites.items())
            and _functions_ok(funcs))


def _sites_ok(sites: Any) -> bool:
    """Whether a kept value is a list of (offset, address size) pairs."""
    return type(sites) is list and all(type(s) is tuple and len(s) == 2 and type(s[0]) is int
                                       and type(s[1]) is int for s in sites)


def _functions_ok(funcs: Any) -> bool:
    """Whether a kept value is a {low_pc: size} dict of ints."""
    return type(funcs) is dict and all(type(k) is int and type(v) is int
                                       for k, v in funcs.items())


def info_sites(elf_bytes: bytes | memoryview,
               cache: str | Callable[[], str | None] | None = None,
               sections: dict[str, bytes] | None = None
               ) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
    """(address size of the last unit, [(offset, address size)] of each
    address in the file's ``.debug_info``, {low_pc: size} of its
    subprograms).  ``sections``: the file's uncompressed ``.debug_info``
    and ``.debug_abbrev``, walked directly (``dwarf_scan``: faster than
    reading a cache entry back).  Else, or when that walk does not
    understand them, pyelftools finds them, and ``cache`` (a directory, or
    a function giving it) keeps them per file content: read from there when
    it has this file's, else found and kept there (an
    :mod:`elfkit._support.codecache` entry: private, checked)."""
    if sections is not None and ".debug_info" in sections and ".debug_abbrev" in sections:
        try:
            return scan_info(sections[".debug_info"], sections[".debug_abbrev"])
        except ScanError:
            pass
    if callable(cache):
        cache = cache()
    name, key = sites_entry(elf_bytes)
    kept = codecache.load(cache, name, key)
    if _well_formed(kept):
        return kept
    found = find_sites_pyelftools(elf_bytes)
    codecache.store(cache, name, key, found)
    return found


def sites_entry(elf_bytes: bytes | memoryview) -> tuple[str, bytes]:
    """``(file name, key)`` of the cache entry of ``elf_bytes``'s sites: the
    file's CRC-32, Adler-32 and length."""
    key = f"{zlib.crc32(elf_bytes):08x}{zlib.adler32(elf_bytes):08x}-{len(elf_bytes):x}"
    return f"dwarf-sites-{key}.bin", f"dwarf sites\0{key}".encode()


def _well_formed(kept: Any) -> bool:
    if not (type(kept) is tuple and len(kept) == 3):
        return False
    word, sites, funcs = kept
    return type(word) is int and _sites_ok(sites) and _functions_ok(funcs)


def find_sites_pyelftools(elf_bytes: bytes | memoryview
                          ) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
    from elftools.common.exceptions import ELFError  # only when a plugin carries DWARF
    from elftools.elf.elffile import ELFFile

    sites: list[tuple[int, int]] = []
    funcs: dict[int, int] = {}
    try:
        dwarf = ELFFile(io.BytesIO(elf_bytes)).get_dwarf_info(relocate_dwarf_sections=False)
        word = 8
        for cu in dwarf.iter_CUs():
            word = cu["address_size"]
            for die in cu.iter_DIEs():
                if die.tag == "DW_TAG_subprogram":
                    _note_function(die, funcs)
                for attr in die.attributes.values():
                    if attr.form == "DW_FORM_addr":
                        sites.append((attr.offset, word))
                    elif (attr.form == "DW_FORM_exprloc" and len(attr.value) == 1 + word
                          and attr.value[0] == DW_OP_addr):
                        # the uleb length (one byte here), then DW_OP_addr, then the address
                        sites.append((attr.offset + attr.indirection_length + 2, word))
    except ELFError as e:
        raise ValueError(f"DWARF: {e}") from None
    return word, sites, funcs


_OFFSET_FORMS = ("DW_FORM_data1", "DW_FORM_data2", "DW_FORM_data4", "DW_FORM_data8",
                 "DW_FORM_udata")


def _note_function(die: Any, functions: dict[int, int]) -> None:
    lo, hi = die.attributes.get("DW_AT_low_pc"), die.attributes.get("DW_AT_high_pc")
    if lo is None or hi is None or lo.form != "DW_FORM_addr":   # (addrx: an index)
        return
    if hi.form == "DW_FORM_addr":
        size = hi.value - lo.value
    elif hi.form in _OFFSET_FORMS:
        size = hi.value                                          # an offset from low_pc
    else:
        return
    if size > 0:
        functions[lo.value] = size


def _units(buf: bytes | bytearray) -> list[tuple[int, int, int]]:
    """(start of unit header after the length, end, size of offsets) per unit."""
    units = []
    off = 0
    while off + 4 <= len(buf):
        length, = struct.unpack_from("<I", buf, off)
        size = 4
        off += 4
        if length == 0xFFFFFFFF:
            length, = struct.unpack_from("<Q", buf, off)
            size = 8
            off += 8
        if length == 0 or off + length > len(buf):
            break
        units.append((off, off + length, size))
        off += length
    return units


# Each finder gives the (offset, address size) of every address a section
# holds, from its bytes as linked: a pure function of them (kept per file).
_Sites = list[tuple[int, int]]


def _find_addr(buf: bytes, word: int) -> _Sites:
    out = []
    for start, end, _size in _units(buf):
        w = buf[start + 2]                              # version(2) address_size(1) seg(1)
        out += [(off, w) for off in range(start + 4, end - w + 1, w)]
    return out


def _find_aranges(buf: bytes, word: int) -> _Sites:
    out = []
    for start, end, size in _units(buf):
        w = buf[start + 2 + size]                       # version(2) info offset address_size
        off = start + 2 + size + 2
        header_start = start - (4 if size == 4 else 12)
        rel = off - header_start
        off += (-rel) % (2 * w)                         # tuples are aligned to 2 * address size
        while off + 2 * w <= end:
            out.append((off, w))
            off += 2 * w
    return out


def _find_ranges(buf: bytes, word: int) -> _Sites:
    fmt = "<Q" if word == 8 else "<I"
    top = (1 << (8 * word)) - 1
    out = []
    for off in range(0, len(buf) - 2 * word + 1, 2 * word):
        a, = struct.unpack_from(fmt, buf, off)
        if a == top:                                    # base address selection
            out.append((off + word, word))
    return out


# the DW_RLE_* / DW_LLE_* codes that differ: base_address, start_end,
# start_length, default_location (1-4 are the same: base_addressx,
# startx_endx, startx_length, offset_pair; 0 ends a list)
_RLE_CODES = (5, 6, 7, -1)
_LLE_CODES = (6, 7, 8, 5)


def _find_lists(buf: bytes, codes: tuple[int, int, int, int], located: bool) -> _Sites:
    """``.debug_rnglists`` or (``located``: each entry carries an
    expression) ``.debug_loclists``."""
    base, start_end, start_length, default = codes
    out = []
    for start, end, size in _units(buf):
        w = buf[start + 2]
        count, = struct.unpack_from("<I", buf, start + 4)
        off = start + 8 + count * size
        while off < end:
            kind = buf[off]
            off += 1
            if kind == 0:
                continue
            if kind == 1:
                off = _uleb(buf, off)[1]
                continue
            if kind in (2, 3, 4):
                off = _uleb(buf, _uleb(buf, off)[1])[1]
            elif kind == base:
                out.append((off, w))
                off += w
                continue
            elif kind == start_end:
                out += [(off, w), (off + w, w)]
                off += 2 * w
            elif kind == start_length:
                out.append((off, w))
                off = _uleb(buf, off + w)[1]
            elif kind != default:
                raise ValueError(f"unknown list entry kind {kind} at {off - 1:#x}")
            if located:
                n, off = _uleb(buf, off)
                off += n
    return out


def _find_loc(buf: bytes, word: int) -> _Sites:
    fmt = "<Q" if word == 8 else "<I"
    top = (1 << (8 * word)) - 1
    out = []
    off = 0
    while off + 2 * word <= len(buf):
        a, b = struct.unpack_from(fmt[0] + fmt[1] * 2, buf, off)
        off += 2 * word
        if a == top:                                    # base address selection
            out.append((off - word, word))
        elif a or b:                                    # a range: u16 length, expression
            off += 2 + struct.unpack_from("<H", buf, off)[0]
    return out


def _find_line(buf: bytes, word: int) -> _Sites:
    out = []
    for start, end, size in _units(buf):
        version, = struct.unpack_from("<H", buf, start)
        p = start + 2
        if version >= 5:
            p += 2                                      # address_size, seg_selector_size
        header_length = int.from_bytes(buf[p:p + size], "little")
        p += size
        program = p + header_length
        at = p + (5 if version >= 4 else 4)             # min_inst_length, [max_ops], is_stmt,
        opcode_base = buf[at]                           # line_base, line_range, opcode_base
        lengths = buf[at + 1:at + opcode_base]
        off = program
        while off < end:
            op = buf[off]
            off += 1
            if op >= opcode_base:
                continue
            if op == 0:                                 # extended: uleb length, sub-opcode
                n, off = _uleb(buf, off)
                if buf[off] == 2:                       # DW_LNE_set_address
                    out.append((off + 1, n - 1))
                off += n
            elif op == 9:                               # DW_LNS_fixed_advance_pc: a uhalf
                off += 2
            else:
                for _ in range(lengths[op - 1]):
                    off = _uleb(buf, off)[1]
    return out


def _find_frame(buf: bytes, word: int) -> _Sites:
    out = []
    for start, _end, size in _units(buf):
        cie_id = int.from_bytes(buf[start:start + size], "little")
        if cie_id != (1 << (8 * size)) - 1:             # an FDE: CIE pointer, initial location
            out.append((start + size, word))
    return out


_FINDERS: dict[str, Callable[[bytes, int], _Sites]] = {
    ".debug_addr": _find_addr, ".debug_aranges": _find_aranges, ".debug_ranges": _find_ranges,
    ".debug_rnglists": lambda buf, _w: _find_lists(buf, _RLE_CODES, False),
    ".debug_loc": _find_loc,
    ".debug_loclists": lambda buf, _w: _find_lists(buf, _LLE_CODES, True),
    ".debug_line": _find_line, ".debug_frame": _find_frame,
}
