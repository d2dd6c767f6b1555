"""IREE parameter archives (``.irpa``, written by ``iree-create-parameters``
and ``iree-convert-parameters``).

Layout (little-endian, packed), after IREE's ``parameter_archive.h``: a
header prefix (magic ``IRPA``, version major/minor u16, header size u64,
offset of a linked next header u64 or 0, flags u64); the version-0 header
adds the entry count and three (offset, length) ranges relative to the
header: the entry table, the metadata segment (names) and the storage
segment (data).  Entries are 16-byte aligned: a 60-byte common header
(entry size u64, type u32, flags u64, name and metadata ranges into the
metadata segment, minimum alignment u64) then, for a splat (type 1), its
length u64, a 16-byte pattern and the pattern length u8, for data (type 2)
its range in the storage segment.  Type 0 entries are skipped."""
from __future__ import annotations

import struct

from ...errors import StatusCode
from .entries import ParameterEntry, Reader

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"IRPA"
_PREFIX = struct.Struct("<4sHHQQQ")           # 32 bytes
_V0 = struct.Struct("<QQQQQQQ")               # entry count + 3 ranges: 56 bytes
HEADER_V0_SIZE = _PREFIX.size + _V0.size      # 88
_ENTRY = struct.Struct("<QIQQQQQQ")           # 60 bytes
_SPLAT = struct.Struct("<Q16sB")              # 25 bytes after the common header
_DATA = struct.Struct("<QQ")                  # 16 bytes after the common header
ENTRY_ALIGNMENT = 16
TYPE_SKIP, TYPE_SPLAT, TYPE_DATA, TYPE_EXTERNAL = 0, 1, 2, 3
#: an entry table or metadata segment up to this size is copied before it is read
COPY_MAX = 1 << 20
#: linked headers followed at most (a cycle in a corrupt file must not hang)
MAX_HEADERS = 1024


def parse(data: Any, source: str) -> list[ParameterEntry]:
    """The entries of every archive header in ``data`` (a byte memoryview)."""
    r = Reader(data, source)
    out: list[ParameterEntry] = []
    base = 0
    for _ in range(MAX_HEADERS):
        magic, major, minor, header_size, next_offset, _flags = r.unpack(
            _PREFIX, "the IRPA header", base)
        if magic != MAGIC:
            raise r.fail(f"IRPA file magic missing or invalid {_u32(magic):08X} at offset "
                         f"{base}; expected {_u32(MAGIC):08X} ('IRPA')")
        if major != 0 or minor != 0:
            raise r.fail(f"IRPA version {major}.{minor} not supported (vmrt reads 0.0)",
                         StatusCode.UNIMPLEMENTED)
        if header_size != HEADER_V0_SIZE:
            raise r.fail(f"IRPA v0 header expected to be exactly {HEADER_V0_SIZE} bytes but was "
                         f"reported as {header_size}")
        _parse_v0(r, base, out)
        if next_offset == 0:
            return out
        if next_offset % ENTRY_ALIGNMENT or base + next_offset >= len(data):
            raise r.fail(f"linked IRPA header offset {base + next_offset} is misaligned or past "
                         f"the end of the file ({len(data)} bytes)", StatusCode.OUT_OF_RANGE)
        base += next_offset
    raise r.fail(f"more than {MAX_HEADERS} linked IRPA headers (a loop?)")


def _u32(raw: bytes) -> int:
    """Four magic bytes as the little-endian u32 IREE prints."""
    return int.from_bytes(raw, "little")


def _segment(r: Reader, base: int, offset: int, length: int, what: str) -> tuple[int, int]:
    if length:
        r.need(length, what, base + offset)
    return base + offset, length


def _parse_v0(r: Reader, base: int, out: list[ParameterEntry]) -> None:
    (count, e_off, e_len, m_off, m_len, s_off, s_len) = r.unpack(
        _V0, "the IRPA v0 header", base + _PREFIX.size)
    e_off, e_len = _segment(r, base, e_off, e_len, "the entry table")
    m_off, m_len = _segment(r, base, m_off, m_len, "the metadata segment")
    s_off, s_len = _segment(r, base, s_off, s_len, "the storage segment")
    if count > e_len // _ENTRY.size:
        raise r.fail(f"entry table of {e_len} bytes cannot hold {count} entries",
                     StatusCode.OUT_OF_RANGE)
    # The three segments are inside the file (checked above), and each read
    # below is checked against its segment: no read needs the file's end again.
    # The entry table and the names are read from one copy each (a few KB: an
    # unpack or a slice of the mapping costs more than of bytes), unless large.
    data, source = r.data, r.source
    table = bytes(data[e_off:e_off + e_len]) if e_len <= COPY_MAX else data[e_off:e_off + e_len]
    names = bytes(data[m_off:m_off + m_len]) if m_len <= COPY_MAX else data[m_off:m_off + m_len]
    entry_at, data_at, splat_at = _ENTRY.unpack_from, _DATA.unpack_from, _SPLAT.unpack_from
    base = r.address_at(0)
    add = out.append
    head = _ENTRY.size
    pos, end = 0, e_len
    for i in range(count):
        if end - pos < head:
            raise r.fail(f"entry table truncated at entry {i} (offset {e_off + pos})",
                         StatusCode.OUT_OF_RANGE)
        size, kind, _flags, n_off, n_len, _md_off, _md_len, _align = entry_at(table, pos)
        if size < head or size > end - pos:
            raise r.fail(f"entry {i} at offset {e_off + pos} has size {size}, outside the "
                         "entry table", StatusCode.OUT_OF_RANGE)
        if n_off + n_len > m_len:
            raise r.fail(f"entry {i} name (offset {n_off}, length {n_len}) is outside the "
                         f"{m_len}-byte metadata segment", StatusCode.OUT_OF_RANGE)
        try:
            key = str(names[n_off:n_off + n_len], "utf-8")
        except UnicodeDecodeError:
            raise r.fail(f"entry {i} name is not UTF-8 text") from None
        if kind == TYPE_DATA:
            if size < head + _DATA.size:
                raise r.fail(f"data entry {i} (`{key}`) is {size} bytes, less than "
                             f"{head + _DATA.size}", StatusCode.OUT_OF_RANGE)
            offset, length = data_at(table, pos + head)
            if offset + length > s_len:
                raise r.fail(f"parameter `{key}` data (offset {offset}, length {length}) is "
                             f"outside the {s_len}-byte storage segment", StatusCode.OUT_OF_RANGE)
            at = s_off + offset
            add(ParameterEntry(key, length, data[at:at + length], None, source, at,
                               base + at if base >= 0 else -1))
        elif kind == TYPE_SPLAT:
            if size < head + _SPLAT.size:
                raise r.fail(f"splat entry {i} (`{key}`) is {size} bytes, less than "
                             f"{head + _SPLAT.size}", StatusCode.OUT_OF_RANGE)
            length, pattern, plen = splat_at(table, pos + head)
            if plen not in (1, 2, 4, 8, 16):
                raise r.fail(f"splat entry {i} (`{key}`) pattern length {plen} is not 1, 2, 4, "
                             "8 or 16")
            add(ParameterEntry(key, length, pattern=bytes(pattern[:plen]), source=source))
        elif kind != TYPE_SKIP:
            raise r.fail(f"entry {i} (`{key}`) has type {kind}, which vmrt does not support "
                         "(0 skip, 1 splat, 2 data)", StatusCode.UNIMPLEMENTED)
        pos += -(-size // ENTRY_ALIGNMENT) * ENTRY_ALIGNMENT


__all__ = ["MAGIC", "parse"]
