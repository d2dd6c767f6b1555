"""safetensors files (Hugging Face's format).

Layout: a little-endian u64 header length N, N bytes of UTF-8 JSON (an
object: tensor name -> ``{"dtype", "shape", "data_offsets": [BEGIN, END]}``,
plus an optional ``"__metadata__"`` object), then the tensor data; the
offsets are relative to the end of the header.  vmrt checks the offsets
against the data and, for the dtypes it knows, the size against the shape."""
from __future__ import annotations

import json
import struct

from ...errors import StatusCode
from .entries import ParameterEntry, Reader

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: largest JSON header read (the reference implementation's limit)
MAX_HEADER = 100 << 20
#: dtype -> bytes per element (F8_* are one byte; unknown dtypes are not size-checked)
DTYPE_SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
_LEN = struct.Struct("<Q")


def parse(data: Any, source: str) -> list[ParameterEntry]:
    r = Reader(data, source)
    (size,) = r.take(_LEN, "the safetensors header length")
    if size > MAX_HEADER:
        raise r.fail(f"safetensors header length {size} exceeds {MAX_HEADER} bytes",
                     StatusCode.OUT_OF_RANGE)
    text = r.text(r.take_bytes(size, "the safetensors JSON header"), "the safetensors header")
    try:
        header = json.loads(text)
    except ValueError as e:
        raise r.fail(f"safetensors header is not valid JSON ({e})") from None
    except RecursionError:
        raise r.fail("safetensors header nests too deeply") from None
    if not isinstance(header, dict):
        raise r.fail("safetensors header is not a JSON object")
    base = r.pos
    available = len(data) - base
    out = []
    for key, info in header.items():
        if key == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and
                all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in offsets)):
            raise r.fail(f"tensor `{key}` has no valid data_offsets [BEGIN, END]")
        begin, end = offsets
        if begin > end or end > available:
            raise r.fail(f"tensor `{key}` data_offsets [{begin}, {end}] are outside the "
                         f"{available} bytes of tensor data")
        _check_shape(r, key, info, end - begin)
        out.append(ParameterEntry(key, end - begin, data=data[base + begin:base + end],
                                  source=source, offset=base + begin,
                                  address=r.address_at(base + begin)))
    return out


def _check_shape(r: Reader, key: str, info: dict[str, Any], length: int) -> None:
    dtype = info.get("dtype")
    itemsize = DTYPE_SIZES.get(dtype) if isinstance(dtype, str) else None
    shape = info.get("shape")
    if itemsize is None or not isinstance(shape, list):
        return
    count = 1
    for d in shape:
        if not isinstance(d, int) or d < 0:
            raise r.fail(f"tensor `{key}` has an invalid shape {shape}")
        count *= d
    if count * itemsize != length:
        raise r.fail(f"tensor `{key}` is {info['dtype']} of shape {shape} ({count * itemsize} "
                     f"bytes) but its data_offsets span {length} bytes")


__all__ = ["DTYPE_SIZES", "parse"]
