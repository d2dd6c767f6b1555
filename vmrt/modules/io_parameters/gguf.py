"""GGUF files (ggml's format, versions 2 and 3), as IREE reads them.

Layout (little-endian): magic ``GGUF``, version u32, tensor count u64,
metadata count u64; the metadata key/value pairs (a string is a u64 length
and its bytes; a value is a u32 type then the value; arrays are a u32
element type, a u64 count and the elements); the tensor infos (name, u32
rank, u64 dimensions, u32 ggml type, u64 offset into the tensor data); then
the tensor data, starting at the next multiple of the alignment
(``general.alignment``, a u32, or 32).  A tensor's size is not stored: it
follows from its type's block size and bytes per block."""
from __future__ import annotations

import struct

from ...errors import StatusCode
from .entries import ParameterEntry, Reader

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
#: ggml type number -> (elements per block, bytes per block), as IREE's parser has them
GGML_TYPES: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2),                                   # F32, F16
    2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),     # Q4_0, Q4_1, Q5_0, Q5_1
    8: (32, 34), 9: (32, 40),                               # Q8_0, Q8_1
    10: (256, 84), 11: (256, 110), 12: (256, 144),          # Q2_K, Q3_K, Q4_K
    13: (256, 176), 14: (256, 210), 15: (256, 292),         # Q5_K, Q6_K, Q8_K
    16: (1, 1), 17: (1, 2), 18: (1, 4),                     # I8, I16, I32
}
#: metadata value type -> fixed size (8 string and 9 array have none)
_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY, _U32 = 8, 9, 4
_HEAD = struct.Struct("<4sIQQ")
_U32S = struct.Struct("<I")
_U64S = struct.Struct("<Q")


def _string(r: Reader, what: str) -> bytes:
    (n,) = r.take(_U64S, f"{what} length")
    return r.take_bytes(n, what)


def _skip_value(r: Reader, vtype: int, what: str) -> Any:
    """Read (scalars, strings) or skip (arrays) one metadata value."""
    if vtype in _SCALARS:
        r.need(_SCALARS[vtype], what)
        at = r.pos
        r.pos += _SCALARS[vtype]
        return int.from_bytes(r.data[at:r.pos], "little") if vtype == _U32 else None
    if vtype == _STRING:
        _string(r, what)
        return None
    if vtype == _ARRAY:
        (etype,) = r.take(_U32S, f"{what} element type")
        (count,) = r.take(_U64S, f"{what} element count")
        if etype in _SCALARS:
            r.need(count * _SCALARS[etype], what)
            r.pos += count * _SCALARS[etype]
        elif etype == _STRING:
            for _ in range(count):
                _string(r, what)
        else:
            raise r.fail(f"{what}: arrays of type {etype} are not supported")
        return None
    raise r.fail(f"{what}: unsupported metadata value type {vtype}")


def parse(data: Any, source: str) -> list[ParameterEntry]:
    r = Reader(data, source)
    magic, version, tensor_count, kv_count = r.take(_HEAD, "the GGUF header")
    if magic != MAGIC:
        raise r.fail(f"GGUF file magic missing or invalid {int.from_bytes(magic, 'little'):08X}; "
                     f"expected {int.from_bytes(MAGIC, 'little'):08X} ('GGUF')")
    if version not in VERSIONS:
        raise r.fail(f"GGUF format version {version} is unsupported; expected version "
                     f"{VERSIONS[0]}-{VERSIONS[-1]}", StatusCode.UNIMPLEMENTED)
    alignment = DEFAULT_ALIGNMENT
    for i in range(kv_count):
        key = _string(r, f"metadata key {i}")
        (vtype,) = r.take(_U32S, f"metadata value type {i}")
        value = _skip_value(r, vtype, f"metadata value {i}")
        if key == b"general.alignment":
            if vtype != _U32 or not value:
                raise r.fail("general.alignment metadata value must be a non-zero uint32")
            alignment = value
    infos = []
    for i in range(tensor_count):
        name = r.text(_string(r, f"tensor {i} name"), f"tensor {i} name")
        (rank,) = r.take(_U32S, f"tensor {i} rank")
        dims = struct.unpack_from(f"<{rank}Q", data, r.need(8 * rank, f"tensor {i} dimensions"))
        r.pos += 8 * rank
        gtype, offset = r.take(struct.Struct("<IQ"), f"tensor {i} type and offset")
        if gtype not in GGML_TYPES:
            raise r.fail(f"tensor `{name}` has GGML type {gtype}, which vmrt does not support",
                         StatusCode.UNIMPLEMENTED)
        block, size = GGML_TYPES[gtype]
        count = 1
        for d in dims:
            count *= d
        infos.append((name, offset, count * size // block))
    base = -(-r.pos // alignment) * alignment
    available = max(len(data) - base, 0)
    out = []
    for name, offset, length in infos:
        if offset + length > available:
            raise r.fail(f"tensor `{name}` data (offset {offset}, length {length}) is outside "
                         f"the {available} bytes of tensor data")
        at = base + offset
        out.append(ParameterEntry(name, length, data=data[at:at + length], source=source,
                                  offset=at, address=r.address_at(at)))
    return out


__all__ = ["GGML_TYPES", "MAGIC", "parse"]
