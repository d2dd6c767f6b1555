"""Parameter entries and the bounds-checked reader the file formats share.

An entry is one named parameter: a byte range of a file (or of host memory)
or a splat (a repeating pattern with no storage).  Every format parser
(:mod:`.irpa`, :mod:`.gguf`, :mod:`.safetensors`) reads its file through a
:class:`Reader`, so every length and offset is checked before use and a bad
file ends in a :class:`vmrt.errors.ParameterError` naming the file and the
offset."""
from __future__ import annotations

import struct

from elfkit.support import DataRecord

from ...errors import ParameterError, StatusCode
from ...hal.buffer import address_of

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class ParameterEntry(DataRecord, frozen=True, slots=True):
    """One parameter: ``length`` bytes, stored in ``data`` (a byte
    memoryview of exactly ``length`` bytes: a slice of the mapped file or of
    an array) or, for a splat, the repeating little-endian ``pattern``."""

    key: str
    length: int
    data: Any = None
    pattern: bytes | None = None
    #: where it comes from (a file path or ``<memory>``), for messages
    source: str = "<memory>"
    #: the file offset of ``data`` (-1: in memory, or a splat)
    offset: int = -1
    #: the host address of ``data``'s first byte when the parser knew it
    #: (-1: unknown; found from ``data`` when needed)
    address: int = -1

    @property
    def is_splat(self) -> bool:
        return self.pattern is not None

    def check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.length:
            raise ParameterError(
                f"parameter `{self.key}` range out of bounds (offset={offset}, length={length}, "
                f"size={self.length}) in '{self.source}'", StatusCode.OUT_OF_RANGE)

    def read(self, offset: int, length: int) -> Any:
        """``length`` bytes from ``offset`` (a memoryview slice, or bytes for a splat)."""
        self.check_range(offset, length)
        if self.pattern is None:
            return self.data[offset:offset + length]
        return splat_bytes(self.pattern, offset, length)

    def write(self, offset: int, data: Any) -> None:
        """Store ``data`` at ``offset`` (scatter): only memory the caller gave
        as writable can be changed; files are opened read-only, as IREE's
        tools open them."""
        self.check_range(offset, len(data))
        if self.pattern is not None:
            raise ParameterError(f"parameter `{self.key}` is a splat and cannot be written",
                                 StatusCode.PERMISSION_DENIED)
        if self.data.readonly:
            why = "read-only memory" if self.offset < 0 else \
                "read-only (parameter files are opened for reading)"
            raise ParameterError(f"parameter `{self.key}` in '{self.source}' is {why}",
                                 StatusCode.PERMISSION_DENIED)
        self.data[offset:offset + len(data)] = data


def splat_bytes(pattern: bytes, offset: int, length: int) -> bytes:
    """``length`` bytes of ``pattern`` repeated, starting ``offset`` bytes in."""
    n = len(pattern)
    if length <= 0:
        return b""
    start = offset % n
    reps = (start + length + n - 1) // n
    return (pattern * reps)[start:start + length]


class Reader:
    """Little-endian fields of a file's bytes, each read checked against the
    end of the file: a short read is an ``OUT_OF_RANGE`` error naming
    ``source``, the ``what`` being read and its offset."""

    __slots__ = ("data", "source", "pos", "base")

    def __init__(self, data: Any, source: str, pos: int = 0):
        self.data = data
        self.source = source
        self.pos = pos
        #: the host address of ``data`` (found when first asked)
        self.base: int | None = None

    def address_at(self, offset: int) -> int:
        """The host address of byte ``offset`` of the file (-1 when the
        file's memory has no address Python can find): a parameter imported
        as a buffer then needs no lookup of its own (one per file instead)."""
        if self.base is None:
            try:
                self.base = address_of(self.data) if isinstance(self.data, memoryview) else -1
            except (TypeError, ValueError):
                self.base = -1
        return self.base + offset if self.base >= 0 else -1

    def fail(self, message: str, code: StatusCode = StatusCode.INVALID_ARGUMENT) -> ParameterError:
        return ParameterError(message, code)   # the caller names the file (index.load)

    def need(self, size: int, what: str, at: int | None = None) -> int:
        """Check that ``size`` bytes from ``at`` (default: the position) exist."""
        at = self.pos if at is None else at
        if size < 0 or at < 0 or at + size > len(self.data):
            raise self.fail(f"file truncated: {what} needs {size} bytes at offset {at} but the "
                            f"file has {len(self.data)}", StatusCode.OUT_OF_RANGE)
        return at

    def unpack(self, fmt: struct.Struct, what: str, at: int | None = None) -> tuple[Any, ...]:
        at = self.need(fmt.size, what, at)
        return fmt.unpack_from(self.data, at)

    def take(self, fmt: struct.Struct, what: str) -> tuple[Any, ...]:
        values = self.unpack(fmt, what)
        self.pos += fmt.size
        return values

    def take_bytes(self, size: int, what: str) -> bytes:
        at = self.need(size, what)
        self.pos += size
        return bytes(self.data[at:at + size])

    def text(self, raw: bytes, what: str) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8 text") from None

    def slice(self, offset: int, length: int, what: str) -> Any:
        """The checked range as a memoryview of the file (no copy)."""
        at = self.need(length, what, offset)
        return self.data[at:at + length]


__all__ = ["ParameterEntry", "Reader", "splat_bytes"]
