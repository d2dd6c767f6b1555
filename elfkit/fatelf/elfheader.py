"""The little of an ELF header that FatELF needs: ident, machine and the
largest ``PT_LOAD`` alignment, read through a ``readat(offset, count)``
callable so that the same code reads memory and file descriptors.

(The loader's full, bounds-checked parser is ``elfkit.loader``; this one only
describes a slice for its FatELF record and for the checks.)
"""
from __future__ import annotations

import os

from .._support.records import DataRecord
from ..errors import FatElfFormatError
from .format import hex_prefix

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    #: ``readat(offset, count)`` -> at most ``count`` bytes from ``offset``
    ReadAt = Callable[[int, int], Any]

__all__ = ["ELF_MAGIC", "ElfHeader", "read_elf_header", "view_reader", "fd_reader"]

ELF_MAGIC = b"\x7fELF"
_PT_LOAD = 1


class ElfHeader(DataRecord, frozen=True, slots=True):
    """What FatELF needs of one ELF header.  ``word_size`` and ``byte_order``
    use the FatELF numbers (1/2; 1 = little, 0 = big), so they compare
    directly with a :class:`~elfkit.fatelf.Record`."""

    machine: int
    osabi: int
    osabi_version: int
    word_size: int
    byte_order: int
    #: largest PT_LOAD p_align (0: no PT_LOAD)
    max_load_align: int
    #: why the program headers could not be read (None: they could)
    phdr_error: str | None


def view_reader(view: memoryview) -> ReadAt:
    """A ``readat`` over a memoryview (zero-copy)."""
    return lambda off, n: view[off:off + n]


def fd_reader(fd: int, base: int = 0) -> ReadAt:
    """A ``readat`` over a file descriptor, offsets counted from ``base``."""
    return lambda off, n: os.pread(fd, n, base + off)


def read_elf_header(readat: ReadAt, size: int) -> ElfHeader:
    """Parse the ELF header of ``size`` bytes read with ``readat``.

    Raises FatElfFormatError with the reason when it is not a usable ELF
    (bad magic, truncated, invalid class or data encoding).  Program headers
    that lie outside the ELF are not an error here: ``phdr_error`` says so.
    """
    ident = bytes(readat(0, min(size, 16)))
    if len(ident) < 4 or ident[:4] != ELF_MAGIC:
        raise FatElfFormatError(f"not an ELF file (starts with {hex_prefix(ident)})")
    if len(ident) < 16:
        raise FatElfFormatError(f"ELF identification truncated ({size} bytes, need 16)")
    cls, data = ident[4], ident[5]
    if cls not in (1, 2):
        raise FatElfFormatError(f"invalid ELF class {cls} (EI_CLASS must be 1 or 2)")
    if data not in (1, 2):
        raise FatElfFormatError(f"invalid ELF data encoding {data} (EI_DATA must be 1 or 2)")
    ehsize = 52 if cls == 1 else 64
    if size < ehsize:
        raise FatElfFormatError(f"ELF header truncated ({size} bytes, a {32 * cls}-bit header "
                                f"needs {ehsize})")
    order: Literal["little", "big"] = "little" if data == 1 else "big"
    hdr = bytes(readat(16, ehsize - 16))
    # e_machine, e_phoff, e_phentsize, e_phnum (offsets from byte 16); int.from_bytes
    # rather than struct, so that reading a FatELF does not load the _struct extension
    machine = int.from_bytes(hdr[2:4], order)
    if cls == 1:
        phoff, phentsize, phnum = (int.from_bytes(hdr[12:16], order),
                                   int.from_bytes(hdr[26:28], order),
                                   int.from_bytes(hdr[28:30], order))
        min_ent, align_size, align_at = 32, 4, 28
    else:
        phoff, phentsize, phnum = (int.from_bytes(hdr[16:24], order),
                                   int.from_bytes(hdr[38:40], order),
                                   int.from_bytes(hdr[40:42], order))
        min_ent, align_size, align_at = 56, 8, 48
    max_align = 0
    phdr_error = None
    if phnum:
        if phentsize < min_ent:
            phdr_error = f"e_phentsize {phentsize} is smaller than a program header ({min_ent})"
        elif phoff + phnum * phentsize > size:
            phdr_error = (f"program headers {phoff}..{phoff + phnum * phentsize - 1} "
                          f"({phnum} x {phentsize} bytes) extend past the end of the ELF ({size} "
                          "bytes)")
        else:
            table = bytes(readat(phoff, phnum * phentsize))
            for i in range(phnum):
                base = i * phentsize
                p_type = int.from_bytes(table[base:base + 4], order)
                if p_type == _PT_LOAD:
                    a = int.from_bytes(table[base + align_at:base + align_at + align_size], order)
                    if a > max_align:
                        max_align = a
    return ElfHeader(machine, ident[7], ident[8], cls, 1 if data == 1 else 0, max_align,
                     phdr_error)
