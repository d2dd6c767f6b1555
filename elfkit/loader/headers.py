"""The ELF header and the program headers, bounds-checked.

The first steps of :func:`elfkit.loader.parse`: identification, the ELF
header (class, type, machine, table sizes), the program header table and the
checks on its segments (TLS, PT_INTERP, PT_LOAD ranges, alignment, W+X,
overlap, size limits).  Also the two helpers every later step uses to read
the file safely: :func:`read_struct` and :func:`vaddr_to_offset`.
"""
from __future__ import annotations

import struct

from .. import arch as _arch
from .._support.records import DataRecord
from ..arch import Arch
from ..errors import ArchError, LayoutError, ParseError, UnsupportedError
from . import tags as T

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TLS_MESSAGE", "Limits", "DEFAULT_LIMITS", "Segment", "Header", "read_struct",
           "vaddr_to_offset", "in_file_backed", "read_header", "read_segments",
           "check_segments"]

TLS_MESSAGE = "TLS is not supported in bare-metal plugins"


class Limits(DataRecord, frozen=True, slots=True):
    """Resource bounds applied while parsing and laying out."""

    max_image_size: int = 1 << 30        # bytes of address space one image may span
    max_relocations: int = 10_000_000
    max_symbols: int = 4_000_000


DEFAULT_LIMITS = Limits()


class Segment(DataRecord, frozen=True, slots=True):
    """One program header."""

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


class Header(DataRecord, frozen=True, slots=True):
    """The checked ELF header fields the loader uses."""

    arch: Arch
    elfclass: int        # 1: 32-bit, 2: 64-bit
    e_type: int
    e_flags: int
    osabi: int
    abiversion: int
    phoff: int
    phnum: int

    @property
    def is64(self) -> bool:
        return self.elfclass == 2

    @property
    def word(self) -> int:
        """Bytes in an address: 8 or 4."""
        return 8 if self.elfclass == 2 else 4


def read_struct(fmt: str, data: memoryview, off: int, what: str) -> tuple[Any, ...]:
    """``struct.unpack_from(fmt, data, off)``, or a ParseError naming ``what``
    and the offset when the bytes are not all in the file."""
    size = struct.calcsize(fmt)
    if off < 0 or off + size > len(data):
        raise ParseError(f"{what} at file offset {off:#x} ({size} bytes) is past the end of the "
                         f"file ({len(data)} bytes)")
    return struct.unpack_from(fmt, data, off)


def vaddr_to_offset(segments: list[Segment], flen: int, vaddr: int, size: int, what: str) -> int:
    """The file offset of ``size`` bytes at link-time address ``vaddr``; a
    ParseError naming ``what`` unless they lie in the file-backed part of one
    PT_LOAD segment (and inside the ``flen`` bytes of the file)."""
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


def in_file_backed(segments: list[Segment], vaddr: int) -> bool:
    """True when the 4 bytes at ``vaddr`` are file-backed in a PT_LOAD."""
    return any(s.type == T.PT_LOAD and s.vaddr <= vaddr and vaddr + 4 <= s.vaddr + s.filesz
               for s in segments)


def _identification(data: memoryview) -> tuple[int, int, int]:
    """``(elfclass, osabi, abiversion)`` from e_ident, checked."""
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
    return elfclass, osabi, abiversion


def elf_type(data: memoryview) -> int | None:
    """``e_type`` of an ELF file (None when ``data`` is too short to say or
    not an ELF): lets a load choose between shared objects and objects."""
    if len(data) < 18 or bytes(data[:4]) != b"\x7fELF" or data[5] != 1:
        return None
    return int.from_bytes(data[16:18], "little")


class ObjectHeader(DataRecord, frozen=True, slots=True):
    """The checked ELF header of a relocatable object (ET_REL)."""

    arch: Arch
    elfclass: int
    e_flags: int
    osabi: int
    abiversion: int
    shoff: int
    shnum: int
    shstrndx: int


def _elf_header(data: memoryview) -> tuple[int, int, int, tuple[int, ...]]:
    """``(elfclass, osabi, abiversion, fields)``: the identification and the
    ELF header fields after e_ident (e_type ... e_shstrndx), e_version checked."""
    elfclass, osabi, abiversion = _identification(data)
    ehfmt = "<HHIQQQIHHHHHH" if elfclass == 2 else "<HHIIIIIHHHHHH"
    fields = read_struct(ehfmt, data, 16, "ELF header")
    if fields[2] != 1:
        raise ParseError(f"invalid e_version {fields[2]} at offset 0x14 (expected 1)")
    return elfclass, osabi, abiversion, fields


def _machine_arch(e_machine: int, is64: bool, expect_arch: Arch | None) -> Arch:
    try:
        arch = _arch.from_machine(e_machine, 64 if is64 else 32)
    except ArchError as e:
        raise UnsupportedError(f"e_machine {e_machine} at offset 0x12: {e}") from None
    if expect_arch is not None and expect_arch is not arch:
        raise ArchError(f"file is {arch.name} but {expect_arch.name} was requested")
    return arch


def read_object_header(data: memoryview, expect_arch: Arch | None = None) -> ObjectHeader:
    """The ELF header of a little-endian ET_REL for an architecture elfkit
    knows, with a section header table inside the file."""
    elfclass, osabi, abiversion, fields = _elf_header(data)
    (e_type, e_machine, _version, _entry, _phoff, shoff, e_flags, e_ehsize, _phentsize,
     _phnum, shentsize, shnum, shstrndx) = fields
    is64 = elfclass == 2
    if e_type != T.ET_REL:
        raise ParseError(f"e_type is {e_type}, not ET_REL (1)")
    arch = _machine_arch(e_machine, is64, expect_arch)
    want_eh, want_sh = (64, 64) if is64 else (52, 40)
    if e_ehsize != want_eh:
        raise ParseError(f"e_ehsize is {e_ehsize}, expected {want_eh}")
    if shoff == 0 or shnum == 0:
        raise ParseError("an object file without section headers (e_shoff/e_shnum are 0)")
    if shentsize != want_sh:
        raise ParseError(f"e_shentsize is {shentsize}, expected {want_sh}")
    if shoff + shnum * want_sh > len(data):
        raise ParseError(f"section header table at offset {shoff:#x} ({shnum} x {want_sh} "
                         f"bytes) runs past the end of the file ({len(data)} bytes)")
    if shstrndx >= shnum:
        raise ParseError(f"e_shstrndx {shstrndx} is not a section (there are {shnum})")
    return ObjectHeader(arch, elfclass, e_flags, osabi, abiversion, shoff, shnum, shstrndx)


def read_header(data: memoryview, expect_arch: Arch | None = None) -> Header:
    """The ELF header: a little-endian ET_DYN for an architecture elfkit
    knows (``expect_arch`` if given), with a program header table inside
    the file."""
    elfclass, osabi, abiversion, fields = _elf_header(data)
    n = len(data)
    is64 = elfclass == 2
    (e_type, e_machine, _version, _entry, e_phoff, _shoff, e_flags, e_ehsize, e_phentsize,
     e_phnum, _shentsize, _shnum, _shstrndx) = fields
    if e_type != T.ET_DYN:
        kind = {1: "ET_REL (an object file)", 2: "ET_EXEC (a fixed-address executable)",
                4: "ET_CORE (a core dump)"}.get(e_type, f"type {e_type}")
        raise UnsupportedError(f"e_type is {kind}; only ET_DYN shared objects and ET_REL "
                               f"objects can be loaded (link with -shared, or compile with -c)")
    arch = _machine_arch(e_machine, is64, expect_arch)
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
    return Header(arch, elfclass, e_type, e_flags, osabi, abiversion, e_phoff, e_phnum)


def read_segments(data: memoryview, header: Header) -> list[Segment]:
    """The program headers (the table is known to be inside the file)."""
    segments: list[Segment] = []
    size = 56 if header.is64 else 32
    phtab = data[header.phoff:header.phoff + header.phnum * size]
    if header.is64:
        for i, (p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz, p_memsz, p_align) in \
                enumerate(struct.iter_unpack("<IIQQQQQQ", phtab)):
            segments.append(Segment(i, p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz,
                                    p_align))
    else:
        for i, (p_type, p_offset, p_vaddr, _pa, p_filesz, p_memsz, p_flags, p_align) in \
                enumerate(struct.iter_unpack("<IIIIIIII", phtab)):
            segments.append(Segment(i, p_type, p_flags, p_offset, p_vaddr, p_filesz, p_memsz,
                                    p_align))
    return segments


def check_segments(segments: list[Segment], n: int, limits: Limits, w: int) -> None:
    """Refuse PT_TLS and PT_INTERP; check every PT_LOAD against the ``n``
    bytes of the file, ``limits`` and the ``w``-byte address space; refuse
    W+X, overlapping loads and an image that spans too much."""
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
        _check_load(s, n, limits, top)
        loads.append(s)
    if not loads:
        raise ParseError("no PT_LOAD segments: nothing to load")
    ordered = sorted(loads, key=lambda s: s.vaddr)
    for a, b in zip(ordered, ordered[1:]):
        if b.vaddr < a.vaddr + a.memsz:
            raise LayoutError(f"PT_LOAD segments overlap: program header {a.index} "
                              f"[{a.vaddr:#x}, {a.vaddr + a.memsz:#x}) and program header "
                              f"{b.index} [{b.vaddr:#x}, {b.vaddr + b.memsz:#x})")
    span = ordered[-1].vaddr + ordered[-1].memsz - ordered[0].vaddr
    if span > limits.max_image_size:
        raise LayoutError(f"PT_LOAD segments span {span:#x} bytes, more than the image size limit "
                          f"({limits.max_image_size:#x} bytes)")


def _check_load(s: Segment, n: int, limits: Limits, top: int) -> None:
    """Raise the error of one suspicious PT_LOAD (returns if it is fine after all)."""
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
