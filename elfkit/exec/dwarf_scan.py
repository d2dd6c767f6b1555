"""Where ``.debug_info`` holds addresses, found by walking its DIEs directly.

The same answer as walking the units with pyelftools
(``dwarf_reloc.info_sites``), without building its objects: one pass over
the abbreviation tables and the DIEs, reading each attribute's form to
step over its value.  ``DW_FORM_addr`` values and ``DW_OP_addr``-only
location expressions are the sites; subprograms with a ``DW_FORM_addr``
low PC and a high PC (an address, or a size in a constant form) give the
function sizes.  Anything it does not understand (an unknown form, a value
past the end) raises ``ScanError`` and the caller falls back to pyelftools.
"""
from __future__ import annotations

import struct

__all__ = ["ScanError", "scan_info", "uleb"]

DW_OP_addr = 0x03
_TAG_SUBPROGRAM = 0x2E
_AT_LOW_PC, _AT_HIGH_PC = 0x11, 0x12
_FORM_ADDR, _FORM_EXPRLOC, _FORM_INDIRECT, _FORM_IMPLICIT_CONST = 0x01, 0x18, 0x16, 0x21
#: constant forms a high PC may take as a size (unsigned, as pyelftools reads them)
_SIZE_FORMS = {0x0B: "<B", 0x05: "<H", 0x06: "<I", 0x07: "<Q"}
_UDATA = 0x0F

#: forms of a fixed size
_FIXED = {0x0B: 1, 0x0C: 1, 0x11: 1, 0x25: 1, 0x29: 1,           # data1 flag ref1 strx1 addrx1
          0x05: 2, 0x12: 2, 0x26: 2, 0x2A: 2,                      # data2 ref2 strx2 addrx2
          0x27: 3, 0x2B: 3,                                        # strx3 addrx3
          0x06: 4, 0x13: 4, 0x1C: 4, 0x28: 4, 0x2C: 4,     # data4 ref4 ref_sup4 strx4 addrx4
          0x07: 8, 0x14: 8, 0x20: 8, 0x24: 8,                      # data8 ref8 ref_sig8 ref_sup8
          0x1E: 16, 0x19: 0, _FORM_IMPLICIT_CONST: 0}              # data16 flag_present
#: forms of one offset (4 or 8 bytes by the unit's format)
_OFFSET = {0x0E, 0x17, 0x1D, 0x1F, 0x1F20, 0x1F21}   # strp sec_offset strp_sup line_strp GNU alt
#: forms of one ULEB128 (or SLEB128: the same bytes to skip)
_LEB = {0x0D, _UDATA, 0x15, 0x1A, 0x1B, 0x22, 0x23, 0x1F01, 0x1F02}
#: block forms: size of the length prefix (0: a ULEB128)
_BLOCK = {0x0A: 1, 0x03: 2, 0x04: 4, 0x09: 0, _FORM_EXPRLOC: 0}


class ScanError(ValueError):
    pass


def uleb(buf: bytes | bytearray, off: int) -> tuple[int, int]:
    """The ULEB128 at ``off`` and the offset after it (an SLEB128 has the same length)."""
    v = shift = 0
    while True:
        b = buf[off]
        off += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, off


def _abbrevs(abbrev: bytes, off: int) -> dict[int, tuple[int, list[tuple[int, int]]]]:
    """code -> (tag, [(attribute, form)]) of the table at ``off``."""
    table: dict[int, tuple[int, list[tuple[int, int]]]] = {}
    while True:
        code, off = uleb(abbrev, off)
        if code == 0:
            return table
        tag, off = uleb(abbrev, off)
        off += 1                                    # has_children: the DIE walk needs no tree
        attrs = []
        while True:
            at, off = uleb(abbrev, off)
            form, off = uleb(abbrev, off)
            if at == 0 and form == 0:
                break
            if form == _FORM_IMPLICIT_CONST:
                _v, off = uleb(abbrev, off)
            attrs.append((at, form))
        table[code] = (tag, attrs)


def scan_info(info: bytes, abbrev: bytes
              ) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
    """(address size of the last unit, [(offset, size)] of every address in
    ``info``, {low_pc: size} of its subprograms)."""
    try:
        return _scan(info, abbrev)
    except (IndexError, KeyError, struct.error) as e:
        raise ScanError(f"DWARF: {type(e).__name__} while walking .debug_info") from None


def _scan(info: bytes, abbrev: bytes) -> tuple[int, list[tuple[int, int]], dict[int, int]]:
    sites: list[tuple[int, int]] = []
    funcs: dict[int, int] = {}
    tables: dict[int, dict[int, tuple[int, list[tuple[int, int]]]]] = {}
    word = 8
    off = 0
    n = len(info)
    while off < n:
        length, = struct.unpack_from("<I", info, off)
        off += 4
        osize = 4
        if length == 0xFFFFFFFF:
            length, = struct.unpack_from("<Q", info, off)
            off += 8
            osize = 8
        end = off + length
        if end > n or length < 2:
            raise ScanError("DWARF: a unit runs past the end of .debug_info")
        version, = struct.unpack_from("<H", info, off)
        if version >= 5:
            unit_type, word = info[off + 2], info[off + 3]
            aoff, = struct.unpack_from("<Q" if osize == 8 else "<I", info, off + 4)
            p = off + 4 + osize
            if unit_type in (4, 5):                 # skeleton, split compile: dwo_id
                p += 8
            elif unit_type in (2, 6):               # type units: signature, type offset
                p += 8 + osize
        elif version >= 2:
            aoff, = struct.unpack_from("<Q" if osize == 8 else "<I", info, off + 2)
            word = info[off + 2 + osize]
            p = off + 3 + osize
        else:
            raise ScanError(f"DWARF: unit version {version} at {off - 4:#x}")
        if word not in (4, 8):
            raise ScanError(f"DWARF: address size {word}")
        table = tables.get(aoff)
        if table is None:
            table = tables[aoff] = _abbrevs(abbrev, aoff)
        ref_addr = word if version == 2 else osize
        _dies(info, p, end, table, word, osize, ref_addr, sites, funcs)
        off = end
    return word, sites, funcs


def _block(info: bytes, p: int, form: int, word: int, sites: list[tuple[int, int]]) -> int:
    """Step over a block value at ``p``; an expression that is one
    ``DW_OP_addr`` is a site."""
    k = _BLOCK[form]
    if k == 0:
        ln, q = uleb(info, p)
    elif k == 1:
        ln, q = info[p], p + 1
    else:
        ln, = struct.unpack_from("<H" if k == 2 else "<I", info, p)
        q = p + k
    if form == _FORM_EXPRLOC and ln == 1 + word and q == p + 1 and info[q] == DW_OP_addr:
        sites.append((p + 2, word))
    return q + ln


def _dies(info: bytes, p: int, end: int, table: dict[int, tuple[int, list[tuple[int, int]]]],
          word: int, osize: int, ref_addr: int, sites: list[tuple[int, int]],
          funcs: dict[int, int]) -> None:
    fixed, leb, block = _FIXED, _LEB, _BLOCK
    afmt = "<Q" if word == 8 else "<I"
    while p < end:
        code, p = uleb(info, p)
        if code == 0:
            continue
        tag, attrs = table[code]
        lo = hi = None
        hi_form = 0
        for at, form in attrs:
            while form == _FORM_INDIRECT:
                form, p = uleb(info, p)
            size = fixed.get(form)
            if size is not None:
                if at == _AT_HIGH_PC and form in _SIZE_FORMS:
                    hi, = struct.unpack_from(_SIZE_FORMS[form], info, p)
                    hi_form = form
                p += size
            elif form == _FORM_ADDR:
                sites.append((p, word))
                if at in (_AT_LOW_PC, _AT_HIGH_PC):
                    v, = struct.unpack_from(afmt, info, p)
                    if at == _AT_LOW_PC:
                        lo = v
                    else:
                        hi, hi_form = v, form
                p += word
            elif form in leb:
                v, p = uleb(info, p)
                if at == _AT_HIGH_PC and form == _UDATA:
                    hi, hi_form = v, form
            elif form in _OFFSET:
                p += osize
            elif form in block:
                p = _block(info, p, form, word, sites)
            elif form == 0x08:                      # string: up to its NUL
                p = info.index(b"\0", p) + 1
            elif form == 0x10:                      # ref_addr
                p += ref_addr
            else:
                raise ScanError(f"DWARF: unknown form {form:#x}")
            if p > end:
                raise ScanError("DWARF: an attribute runs past the end of its unit")
        if tag == _TAG_SUBPROGRAM and lo is not None and hi is not None:
            size = hi - lo if hi_form == _FORM_ADDR else hi
            if size > 0:
                funcs[lo] = size
