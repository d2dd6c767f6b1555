"""IREE's HAL element types: names (``f32``, ``si8``, ``i1``), their
``iree_hal_element_type_t`` values and the numpy dtypes that hold them."""
from __future__ import annotations

import re
from typing import Any

from ..errors import HalError, StatusCode

# iree_hal_element_type_t = numerical_type << 24 | bit_count
_NUMERICAL = {"i": 0x10, "si": 0x11, "ui": 0x12, "b": 0x13, "f": 0x21, "bf": 0x22}
ENCODING_DENSE_ROW_MAJOR = 1


def element_type_code(name: str) -> int:
    """IREE's element type value for a name like ``f32``, ``i8``, ``ui16``, ``i1``."""
    if name == "i1":
        return (_NUMERICAL["b"] << 24) | 8
    for prefix in ("si", "ui", "bf", "i", "f"):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return (_NUMERICAL[prefix] << 24) | int(name[len(prefix):])
    raise HalError(f"unsupported element type '{name}'", StatusCode.INVALID_ARGUMENT)


def element_type_name(code: int) -> str:
    """The name (``f32``, ``i1`` ...) of an IREE element type value."""
    numerical, bits = code >> 24, code & 0xFFFFFF
    for prefix, value in _NUMERICAL.items():
        if value == numerical:
            if prefix == "b":
                return "i1"
            return f"{prefix}{bits}"
    raise HalError(f"unsupported element type {code:#010x}", StatusCode.INVALID_ARGUMENT)


_INT_RE = re.compile(r"^(s|u)?i(\d+)$")
_FLOAT = {"f16": "float16", "f32": "float32", "f64": "float64"}


def dtype_of(elem: str) -> Any:
    """The numpy dtype that holds elements of ``elem`` (``f32``, ``si8``, ``i1`` ...)."""
    import numpy as np
    if elem == "i1":        # one byte per element, printed/parsed as raw hex bytes like IREE
        return np.dtype("uint8")
    m = _INT_RE.match(elem)
    if m:
        bits = int(m.group(2))
        if bits not in (8, 16, 32, 64):
            raise HalError(f"unhandled element type prefix in '{elem}'", StatusCode.UNIMPLEMENTED)
        return np.dtype(("u" if m.group(1) == "u" else "i") + str(bits // 8))
    if elem in _FLOAT:
        return np.dtype(_FLOAT[elem])
    raise HalError(f"unhandled element type prefix in '{elem}'", StatusCode.INVALID_ARGUMENT)


def element_type_of(dtype: Any) -> str:
    """IREE's element type name for a numpy dtype (numpy ints are signed: ``siN``)."""
    import numpy as np
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return "i1"
    if dt.kind == "i":      # numpy ints are signed: IREE names them siN (as for .npy)
        return f"si{dt.itemsize * 8}"
    if dt.kind == "u":
        return f"ui{dt.itemsize * 8}"
    if dt.kind == "f":
        return f"f{dt.itemsize * 8}"
    raise HalError(f"unsupported numpy dtype {dt}", StatusCode.UNIMPLEMENTED)
