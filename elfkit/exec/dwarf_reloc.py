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
sizes of functions a stripped ``.symtab`` lacks).  pyelftools finds the
DIEs (and where each attribute value sits); damaged DWARF raises and the
caller keeps the symbols only.
"""
from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable

from .._support import codecache

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

DW_OP_addr = 0x03


def relocate_dwarf(elf_bytes: bytes, sections: dict[str, bytes], bias: int,
                   functions: dict[int, int] | None = None,
                   cache: str | None = None) -> dict[str, bytes]:
    """``sections`` (name -> raw bytes of the plugin's ``.debug_*``) with
    every absolute address moved by ``bias``.  ``functions``, when given,
    receives the subprograms: linked ``DW_AT_low_pc`` -> size (from
    ``DW_AT_high_pc``).  ``cache``: a directory keeping, per file content,
    where ``.debug_info`` holds addresses and the subprograms (finding them
    takes pyelftools; moving them then does not)."""
    out = {name: bytearray(body) for name, body in sections.items()}
    word, sites, funcs = info_sites(elf_bytes, cache)
    if functions is not None:
        functions.update(funcs)
    info = out[".debug_info"]
    for off, size in sites:
        _add(info, off, size, bias)
    for name, fix in _FIXERS.items():
        if name in out:
            fix(out[name], word, bias)
    return {name: bytes(body) for name, body in out.items()}


def info_sites(elf_bytes: bytes, cache: str | None = None
               ) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
    """(address size of the last unit, [(offset, address size)] of each
    address in the file's ``.debug_info``, {low_pc: size} of its
    subprograms), read from ``cache`` when it has this file's, else found
    and kept there (an :mod:`elfkit._support.codecache` entry: private, checked)."""
    name, key = sites_entry(elf_bytes)
    kept = codecache.load(cache, name, key)
    if _well_formed(kept):
        return kept
    found = _find_sites(elf_bytes)
    codecache.store(cache, name, key, found)
    return found


def sites_entry(elf_bytes: bytes) -> tuple[str, bytes]:
    """``(file name, key)`` of the cache entry of ``elf_bytes``'s sites: the
    file's CRC-32, Adler-32 and length."""
    key = f"{zlib.crc32(elf_bytes):08x}{zlib.adler32(elf_bytes):08x}-{len(elf_bytes):x}"
    return f"dwarf-sites-{key}.bin", f"dwarf sites\0{key}".encode()


def _well_formed(kept: Any) -> bool:
    if not (type(kept) is tuple and len(kept) == 3):
        return False
    word, sites, funcs = kept
    return (type(word) is int and type(sites) is list and type(funcs) is dict
            and all(type(s) is tuple and len(s) == 2 and type(s[0]) is int
                    and type(s[1]) is int for s in sites)
            and all(type(k) is int and type(v) is int for k, v in funcs.items()))


def _find_sites(elf_bytes: bytes) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
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


def _add(buf: bytearray, off: int, word: int, bias: int) -> None:
    fmt = "<Q" if word == 8 else "<I"
    if off + word > len(buf):
        raise ValueError(f"DWARF address at {off:#x} is past the end of its section")
    v, = struct.unpack_from(fmt, buf, off)
    if v != 0 and v != (1 << (8 * word)) - 1:          # 0 and -1 mark "no address"
        struct.pack_into(fmt, buf, off, (v + bias) & ((1 << (8 * word)) - 1))


def _uleb(buf: bytearray, off: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = buf[off]
        off += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, off


def _units(buf: bytearray) -> list[tuple[int, int, int]]:
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


def _fix_addr(buf: bytearray, word: int, bias: int) -> None:
    for start, end, _size in _units(buf):
        w = buf[start + 2]                              # version(2) address_size(1) seg(1)
        for off in range(start + 4, end - w + 1, w):
            _add(buf, off, w, bias)


def _fix_aranges(buf: bytearray, word: int, bias: int) -> None:
    for start, end, size in _units(buf):
        w = buf[start + 2 + size]                       # version(2) info offset address_size
        off = start + 2 + size + 2
        header_start = start - (4 if size == 4 else 12)
        rel = off - header_start
        off += (-rel) % (2 * w)                         # tuples are aligned to 2 * address size
        while off + 2 * w <= end:
            _add(buf, off, w, bias)
            off += 2 * w


def _fix_ranges(buf: bytearray, word: int, bias: int) -> None:
    fmt = "<Q" if word == 8 else "<I"
    top = (1 << (8 * word)) - 1
    for off in range(0, len(buf) - 2 * word + 1, 2 * word):
        a, = struct.unpack_from(fmt, buf, off)
        if a == top:                                    # base address selection
            _add(buf, off + word, word, bias)


# the DW_RLE_* / DW_LLE_* codes that differ: base_address, start_end,
# start_length, default_location (1-4 are the same: base_addressx,
# startx_endx, startx_length, offset_pair; 0 ends a list)
_RLE_CODES = (5, 6, 7, -1)
_LLE_CODES = (6, 7, 8, 5)


def _fix_lists(buf: bytearray, bias: int, codes: tuple[int, int, int, int],
               located: bool) -> None:
    """``.debug_rnglists`` or (``located``: each entry carries an
    expression) ``.debug_loclists``."""
    base, start_end, start_length, default = codes
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
                _add(buf, off, w, bias)
                off += w
                continue
            elif kind == start_end:
                _add(buf, off, w, bias)
                _add(buf, off + w, w, bias)
                off += 2 * w
            elif kind == start_length:
                _add(buf, off, w, bias)
                off = _uleb(buf, off + w)[1]
            elif kind != default:
                raise ValueError(f"unknown list entry kind {kind} at {off - 1:#x}")
            if located:
                n, off = _uleb(buf, off)
                off += n


def _fix_loc(buf: bytearray, word: int, bias: int) -> None:
    fmt = "<Q" if word == 8 else "<I"
    top = (1 << (8 * word)) - 1
    off = 0
    while off + 2 * word <= len(buf):
        a, b = struct.unpack_from(fmt[0] + fmt[1] * 2, buf, off)
        off += 2 * word
        if a == top:                                    # base address selection
            _add(buf, off - word, word, bias)
        elif a or b:                                    # a range: u16 length, expression
            off += 2 + struct.unpack_from("<H", buf, off)[0]


def _fix_line(buf: bytearray, word: int, bias: int) -> None:
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
                    _add(buf, off + 1, n - 1, bias)
                off += n
            elif op == 9:                               # DW_LNS_fixed_advance_pc: a uhalf
                off += 2
            else:
                for _ in range(lengths[op - 1]):
                    off = _uleb(buf, off)[1]


def _fix_frame(buf: bytearray, word: int, bias: int) -> None:
    for start, _end, size in _units(buf):
        cie_id = int.from_bytes(buf[start:start + size], "little")
        if cie_id != (1 << (8 * size)) - 1:             # an FDE: CIE pointer, initial location
            _add(buf, start + size, word, bias)


_FIXERS: dict[str, Callable[[bytearray, int, int], None]] = {
    ".debug_addr": _fix_addr, ".debug_aranges": _fix_aranges, ".debug_ranges": _fix_ranges,
    ".debug_rnglists": lambda buf, _w, bias: _fix_lists(buf, bias, _RLE_CODES, False),
    ".debug_loc": _fix_loc,
    ".debug_loclists": lambda buf, _w, bias: _fix_lists(buf, bias, _LLE_CODES, True),
    ".debug_line": _fix_line, ".debug_frame": _fix_frame,
}

