"""A small, bounds-checked FlatBuffer reader (read-only, little-endian).

Only what the VM module schema needs: tables with vtables, scalars, strings,
vectors of scalars/bytes/tables/structs.  Every offset is checked against the
buffer before use; a bad offset raises :class:`vmrt.errors.LoadError` naming
the byte position, never ``IndexError`` or ``struct.error``.
"""
from __future__ import annotations

import struct

from ..errors import LoadError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

_SCALARS = {"u8": _U8, "u16": _U16, "i32": _I32, "u32": _U32, "u64": _U64}


class FlatBuffer:
    """A FlatBuffer held in ``data`` (bytes or memoryview)."""

    __slots__ = ("data", "size", "what")

    def __init__(self, data: bytes | memoryview, what: str = "FlatBuffer"):
        self.data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.size = len(data)
        self.what = what

    def _fail(self, msg: str, pos: int) -> LoadError:
        return LoadError(f"malformed {self.what}: {msg} at byte offset {pos}")

    def _read(self, s: struct.Struct, pos: int) -> int:
        if pos < 0 or pos + s.size > self.size:
            raise self._fail(f"read of {s.size} bytes out of bounds (size {self.size})", pos)
        return s.unpack_from(self.data, pos)[0]

    def u8(self, pos: int) -> int:
        return self._read(_U8, pos)

    def u16(self, pos: int) -> int:
        return self._read(_U16, pos)

    def i32(self, pos: int) -> int:
        return self._read(_I32, pos)

    def u32(self, pos: int) -> int:
        return self._read(_U32, pos)

    def u64(self, pos: int) -> int:
        return self._read(_U64, pos)

    def root(self) -> Table:
        return Table(self, self.u32(0))

    def identifier(self) -> bytes:
        if self.size < 8:
            raise self._fail("too small for a file identifier", 0)
        return bytes(self.data[4:8])

    def deref(self, pos: int) -> int:
        """Follow the u32 relative offset stored at ``pos``."""
        target = pos + self.u32(pos)
        if target >= self.size:
            raise self._fail("offset points past the end", pos)
        return target

    def bytes_at(self, pos: int, length: int) -> bytes | memoryview:
        if length < 0 or pos < 0 or pos + length > self.size:
            raise self._fail(f"{length} bytes out of bounds", pos)
        return self.data[pos:pos + length]


class Table:
    """One FlatBuffer table: fields addressed by vtable slot number."""

    __slots__ = ("fb", "pos", "_vt", "_vt_size", "_tbl_size")

    def __init__(self, fb: FlatBuffer, pos: int):
        self.fb = fb
        self.pos = pos
        vt = pos - fb.i32(pos)
        self._vt = vt
        self._vt_size = fb.u16(vt)
        self._tbl_size = fb.u16(vt + 2)
        if self._vt_size < 4 or self._vt_size & 1:
            raise fb._fail(f"bad vtable size {self._vt_size}", vt)
        fb.bytes_at(vt, self._vt_size)
        fb.bytes_at(pos, self._tbl_size)

    def _field(self, slot: int) -> int:
        """Absolute position of field ``slot`` or 0 if absent."""
        off = 4 + 2 * slot
        if off + 2 > self._vt_size:
            return 0
        rel = self.fb.u16(self._vt + off)
        if rel == 0:
            return 0
        if rel >= self._tbl_size:
            raise self.fb._fail(f"field {slot} lies outside its table", self.pos)
        return self.pos + rel

    def has(self, slot: int) -> bool:
        return self._field(slot) != 0

    def scalar(self, slot: int, kind: str = "u32", default: int = 0) -> int:
        p = self._field(slot)
        return default if p == 0 else self.fb._read(_SCALARS[kind], p)

    def string(self, slot: int) -> str | None:
        p = self._field(slot)
        if p == 0:
            return None
        return read_string(self.fb, self.fb.deref(p))

    def table(self, slot: int) -> Table | None:
        p = self._field(slot)
        return None if p == 0 else Table(self.fb, self.fb.deref(p))

    def _vector(self, slot: int, elem_size: int) -> tuple[int, int]:
        p = self._field(slot)
        if p == 0:
            return 0, 0
        v = self.fb.deref(p)
        n = self.fb.u32(v)
        self.fb.bytes_at(v + 4, n * elem_size)
        return v + 4, n

    def vector_bytes(self, slot: int) -> tuple[int, int] | None:
        """(absolute start, length) of a [ubyte] vector, or None if absent."""
        if not self.has(slot):
            return None
        return self._vector(slot, 1)

    def vector_tables(self, slot: int) -> list[Table]:
        start, n = self._vector(slot, 4)
        fb = self.fb
        return [Table(fb, fb.deref(start + 4 * i)) for i in range(n)]

    def vector_strings(self, slot: int) -> list[str]:
        start, n = self._vector(slot, 4)
        fb = self.fb
        return [read_string(fb, fb.deref(start + 4 * i)) for i in range(n)]

    def vector_structs(self, slot: int, fmt: struct.Struct) -> list[tuple[Any, ...]]:
        start, n = self._vector(slot, fmt.size)
        return [fmt.unpack_from(self.fb.data, start + fmt.size * i) for i in range(n)]

    def vector_scalars(self, slot: int, kind: str) -> list[int]:
        s = _SCALARS[kind]
        start, n = self._vector(slot, s.size)
        return [s.unpack_from(self.fb.data, start + s.size * i)[0] for i in range(n)]


def read_string(fb: FlatBuffer, pos: int) -> str:
    n = fb.u32(pos)
    raw = fb.bytes_at(pos + 4, n)
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fb._fail(f"string is not UTF-8 ({exc.reason})", pos) from None
