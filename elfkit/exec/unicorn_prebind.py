"""A copy of libunicorn whose references to its own symbols are bound
already (see :func:`elfkit.exec.unicorn_lib.prebound_path`).

libunicorn exports all of its ~30,000 functions and variables and refers
to them through ~30,000 symbol relocations of its ``.rela.dyn``
(``R_X86_64_64`` and ``R_X86_64_GLOB_DAT``): opening it, the dynamic
linker looks each symbol up (~17,000 lookups, ~2.5 ms of the ~4 ms the
open costs).  Opened with ``RTLD_DEEPBIND`` each lookup finds the
library's own definition, whose address is the load bias plus the
symbol's value: what an ``R_X86_64_RELATIVE`` relocation with that value
as addend computes, without a lookup.  :func:`prebind` rewrites those
relocations so; everything else (the PLT's lazily bound slots, references
to undefined symbols, TLS and IFUNC symbols, absolute symbols) is left as
it was, and the file keeps its size and layout.
"""
from __future__ import annotations

import struct

__all__ = ["prebind"]

EM_X86_64 = 62
SHT_RELA, SHT_DYNSYM = 4, 11
R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_RELATIVE = 1, 6, 8
STT_TLS, STT_GNU_IFUNC = 6, 10
SHN_LORESERVE = 0xFF00
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")


def prebind(data: bytes) -> tuple[bytes, int] | None:
    """``data`` (an x86_64 ELF64 shared library) with every relocation of a
    defined symbol that ``RTLD_DEEPBIND`` would bind to the library itself
    made relative, and how many were; None when ``data`` is not such a
    library or its tables do not fit in it (the caller opens the original)."""
    try:
        return _prebind(bytearray(data))
    except (struct.error, IndexError, ValueError):
        return None


def _prebind(out: bytearray) -> tuple[bytes, int] | None:
    if out[:4] != b"\x7fELF" or out[4] != 2 or out[5] != 1:
        return None
    e_type, e_machine = struct.unpack_from("<HH", out, 16)
    if e_type != 3 or e_machine != EM_X86_64:          # ET_DYN
        return None
    (shoff,) = struct.unpack_from("<Q", out, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", out, 0x3A)
    if shentsize != _SECTION.size or shoff + shnum * shentsize > len(out):
        return None
    sections = [_SECTION.unpack_from(out, shoff + i * shentsize) for i in range(shnum)]
    dynsym = [i for i, s in enumerate(sections) if s[1] == SHT_DYNSYM]
    if len(dynsym) != 1:
        return None
    symtab = sections[dynsym[0]]
    sym_off, sym_size = symtab[4], symtab[5]
    if sym_off + sym_size > len(out):
        return None
    own: dict[int, int | None] = {}      # symbol index -> its value if bound to itself
    count = 0
    for s in sections:
        if s[1] != SHT_RELA or s[6] != dynsym[0]:
            continue
        off, size = s[4], s[5]
        if off + size > len(out) or size % _RELA.size:
            return None
        for at in range(off, off + size, _RELA.size):
            r_offset, r_info, addend = _RELA.unpack_from(out, at)
            kind, index = r_info & 0xFFFFFFFF, r_info >> 32
            if kind not in (R_X86_64_64, R_X86_64_GLOB_DAT) or index == 0:
                continue
            value = own.get(index, -1)
            if value == -1:
                value = own[index] = _own_value(out, sym_off, sym_size, index)
            if value is None:
                continue
            # S + A (R_X86_64_64), S (GLOB_DAT): base + value (+ addend)
            new = value + addend if kind == R_X86_64_64 else value
            _RELA.pack_into(out, at, r_offset, R_X86_64_RELATIVE, new)
            count += 1
    return bytes(out), count


def _own_value(data: bytearray, sym_off: int, sym_size: int, index: int) -> int | None:
    """The value of dynamic symbol ``index`` when the library defines it
    (not TLS, IFUNC or absolute), else None."""
    at = sym_off + index * _SYMBOL.size
    if at + _SYMBOL.size > sym_off + sym_size:
        raise ValueError(f"symbol {index} out of the table")
    _name, info, _other, shndx, value, _size = _SYMBOL.unpack_from(data, at)
    if shndx == 0 or shndx >= SHN_LORESERVE or info & 0xF in (STT_TLS, STT_GNU_IFUNC):
        return None
    return value
