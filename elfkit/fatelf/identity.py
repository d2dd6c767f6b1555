"""What a file is, from its first bytes: a plain ELF or a FatELF, and for
which machines.  The one place that sniffs magic numbers and ``e_machine``,
so that callers (vmrt's format inference, plugin checks) do not.
"""
from __future__ import annotations

import os
import struct

from .._support.records import DataRecord
from ..errors import FatElfFormatError, InvalidArgumentError
from .elfheader import ELF_MAGIC
from .files import open_regular
from .format import (
    HEADER_SIZE,
    MAGIC_BYTES,
    MAX_RECORDS,
    RECORD_SIZE,
    Record,
    arch_name,
    hex_prefix,
    parse_header,
)
from .reader import FatElf, is_path

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Identity", "identify"]

#: bytes of a plain ELF that identify() reads: e_ident (16), e_type, e_machine
_ELF_PREFIX = 20
#: the longest FatELF header and record table
_FATELF_PREFIX = HEADER_SIZE + RECORD_SIZE * MAX_RECORDS


class Identity(DataRecord, frozen=True, slots=True):
    """What :func:`identify` found.  One entry per slice in each tuple (one
    for a plain ELF; none for a FatELF with no records).

    ``kind``: ``"elf"`` or ``"fatelf"``.
    ``arches``: elfkit architecture names (``x86_64``, ``aarch64``,
    ``riscv64``, ``arm``, ``i386``, ``riscv32``), None where elfkit has no
    such architecture (another machine, or big-endian).
    ``machines``: the ``e_machine`` numbers.
    ``word_sizes``: 32 or 64 (bits).
    """

    kind: str
    arches: tuple[str | None, ...]
    machines: tuple[int, ...]
    word_sizes: tuple[int, ...]


def _from_records(records: list[Record], where: str) -> Identity:
    sizes = []
    for r in records:
        if r.bits is None:
            raise FatElfFormatError(f"{where}FatELF record {r.index}: invalid word size "
                                    f"{r.word_size} (1 = 32-bit, 2 = 64-bit)")
        sizes.append(r.bits)
    return Identity("fatelf", tuple(r.arch for r in records), tuple(r.machine for r in records),
                    tuple(sizes))


def _from_elf(head: bytes, where: str) -> Identity:
    n = len(head)
    if n < _ELF_PREFIX:
        raise FatElfFormatError(f"{where}ELF header truncated ({n} bytes, need at least "
                                f"{_ELF_PREFIX} to read e_machine)")
    cls, data = head[4], head[5]
    if cls not in (1, 2):
        raise FatElfFormatError(f"{where}invalid ELF class {cls} (EI_CLASS must be 1 or 2)")
    if data not in (1, 2):
        raise FatElfFormatError(f"{where}invalid ELF data encoding {data} "
                                f"(EI_DATA must be 1 or 2)")
    machine = struct.unpack_from("<H" if data == 1 else ">H", head, 18)[0]
    arch = arch_name(machine, cls) if data == 1 else None
    return Identity("elf", (arch,), (machine,), (32 * cls,))


def identify(data: Any) -> Identity:
    """Whether ``data`` is a plain ELF or a FatELF, and for which machines.

    ``data``: bytes, bytearray, memoryview, a path, or a FatElf.  Only the
    headers are read (at most the FatELF record table, ~6 KiB, of a file);
    the slices are not checked (:func:`verify` does that).  Raises
    FatElfFormatError (a FatElfError) saying "not an ELF or FatELF file" for
    anything else, and for a truncated header, an invalid ELF class or data
    encoding, an unsupported FatELF version or an invalid record word size.
    """
    if isinstance(data, FatElf):
        return _from_records(data.records, data.where)
    if is_path(data):
        where = f"{os.fspath(data)}: "
        fd, _size = open_regular(data)   # a FIFO or device is refused, never waited on
        try:
            head = memoryview(os.pread(fd, _FATELF_PREFIX, 0))
        finally:
            os.close(fd)
    else:
        where = ""
        try:
            head = memoryview(data)
        except TypeError:
            raise InvalidArgumentError(f"identify() takes bytes, a memoryview, a path or a FatElf, "
                             f"not {type(data).__name__}") from None
        if head.ndim != 1 or head.format != "B":
            head = head.cast("B")
    magic = bytes(head[:4])
    if magic == MAGIC_BYTES:
        try:
            _version, _reserved, records = parse_header(head)
        except FatElfFormatError as e:
            raise FatElfFormatError(f"{where}{e}") from None
        return _from_records(records, where)
    if magic == ELF_MAGIC:
        return _from_elf(bytes(head[:_ELF_PREFIX]), where)
    raise FatElfFormatError(f"{where}not an ELF or FatELF file ({len(head)} bytes"
                            + (f", starts with {hex_prefix(magic)})" if len(head) else ")"))
