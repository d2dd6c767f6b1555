"""``vm.buffer``: a byte buffer, read-only (rodata) or mutable."""
from __future__ import annotations

import struct

from ..errors import InvocationError, StatusCode
from .types import BUFFER_TYPE, RefObject

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_FORMATS = {
    "i8.u": struct.Struct("<B"), "i8.s": struct.Struct("<b"),
    "i16.u": struct.Struct("<H"), "i16.s": struct.Struct("<h"),
    "i8": struct.Struct("<b"), "i16": struct.Struct("<h"),
    "i32": struct.Struct("<i"), "i64": struct.Struct("<q"),
    "f32": struct.Struct("<f"), "f64": struct.Struct("<d"),
}


def _oob(offset: int, length: int, align: int, size: int) -> InvocationError:
    return InvocationError(
        f"out-of-bounds access detected (offset={offset & 0xFFFFFFFFFFFFFFFF}, "
        f"length={length & 0xFFFFFFFFFFFFFFFF}, "
        f"alignment={align}, buffer length={size})", StatusCode.OUT_OF_RANGE)


class Buffer(RefObject):
    """A ``vm.buffer`` over a bytearray (mutable) or bytes/memoryview (read-only)."""

    __slots__ = ("data", "readonly")
    vm_type = BUFFER_TYPE
    #: largest allocation a program may request (bytes); raise it if needed
    MAX_ALLOCATION = 256 << 20

    def __init__(self, data: bytes | bytearray | memoryview = b"", readonly: bool | None = None):
        self.data: bytearray | memoryview
        if isinstance(data, bytearray):
            self.data = data
            self.readonly = bool(readonly)
        else:
            self.data = data if isinstance(data, memoryview) else memoryview(bytes(data))
            self.readonly = True if readonly is None else readonly
            if not self.readonly:
                self.data = bytearray(self.data)

    @classmethod
    def alloc(cls, length: int) -> Buffer:
        if length < 0:
            raise InvocationError(f"invalid buffer length {length}", StatusCode.INVALID_ARGUMENT)
        if length > cls.MAX_ALLOCATION:
            raise InvocationError(f"buffer allocation of {length} bytes exceeds the limit of "
                          f"{cls.MAX_ALLOCATION} bytes (vmrt.Buffer.MAX_ALLOCATION)",
                          StatusCode.RESOURCE_EXHAUSTED)
        return cls(bytearray(length))

    def __len__(self) -> int:
        return len(self.data)

    def __bytes__(self) -> bytes:
        return bytes(self.data)

    def __repr__(self) -> str:
        more = "..." if len(self.data) > 32 else ""
        return f"Buffer({bytes(self.data)[:32]!r}{more}, readonly={self.readonly})"

    # -- checked access ------------------------------------------------------
    def check_range(self, offset: int, length: int, align: int = 1) -> None:
        size = len(self.data)
        if offset < 0 or length < 0 or offset + length > size:
            raise _oob(offset, length, align, size)

    def writable(self) -> bytearray | memoryview:
        if self.readonly:
            raise InvocationError("buffer is read-only and cannot be mapped for mutation",
                          StatusCode.PERMISSION_DENIED)
        return self.data

    def load(self, kind: str, element_offset: int) -> int | float:
        s = _FORMATS[kind]
        off = element_offset * s.size
        self.check_range(off, s.size, s.size)
        return s.unpack_from(self.data, off)[0]

    def store(self, kind: str, element_offset: int, value: Any) -> None:
        s = _FORMATS[kind]
        off = element_offset * s.size
        data = self.writable()
        self.check_range(off, s.size, s.size)
        if kind == "f32" or kind == "f64":
            s.pack_into(data, off, value)
        else:
            bits = s.size * 8
            value &= (1 << bits) - 1
            if value >= 1 << (bits - 1):
                value -= 1 << bits
            struct.pack_into("<" + {1: "b", 2: "h", 4: "i", 8: "q"}[s.size], data, off, value)

    def fill(self, kind: str, element_offset: int, element_count: int,
             value: Any) -> None:
        size = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "f32": 4, "f64": 8}[kind]
        off, length = element_offset * size, element_count * size
        data = self.writable()
        self.check_range(off, length, size)
        if kind in ("f32", "f64"):
            pattern = struct.pack("<f" if size == 4 else "<d", value)
        else:
            pattern = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        data[off:off + length] = pattern * element_count

    def copy_to(self, src_off: int, dst: Buffer, dst_off: int, length: int) -> None:
        self.check_range(src_off, length)
        target = dst.writable()
        dst.check_range(dst_off, length)
        target[dst_off:dst_off + length] = self.data[src_off:src_off + length]

    def compare(self, off: int, other: Buffer, other_off: int, length: int) -> int:
        self.check_range(off, length)
        other.check_range(other_off, length)
        return int(self.data[off:off + length] == other.data[other_off:other_off + length])

    def clone(self, off: int, length: int) -> Buffer:
        self.check_range(off, length)
        return Buffer(bytearray(self.data[off:off + length]))
