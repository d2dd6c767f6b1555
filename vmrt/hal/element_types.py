"""IREE's HAL element types: names (``f32``, ``si8``, ``i1``, ``i4``,
``bf16``, ``f8E4M3FN``, ``cf64`` ...), their ``iree_hal_element_type_t``
values, how many bits they take, the numpy dtypes that hold them
(ml_dtypes' for bf16, the f8 types and the sub-byte integers) and, for the
plain ones, their ``struct`` codes and .npy descriptors (no numpy needed).

Sub-byte integers (``i4``, ``ui2`` ...) are packed in storage as IREE packs
them: the first element in the low bits of the first byte."""
from __future__ import annotations

import re
from functools import cache, lru_cache

from ..errors import HalError, StatusCode

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# iree_hal_element_type_t = numerical_type << 24 | bit_count
_NUMERICAL = {"i": 0x10, "si": 0x11, "ui": 0x12, "b": 0x13, "f": 0x21, "bf": 0x22,
              "cf": 0x23}
#: the 8-bit float types: name -> (numerical type, ml_dtypes name)
FLOAT8 = {"f8E5M2": (0x24, "float8_e5m2"), "f8E4M3FN": (0x25, "float8_e4m3fn"),
          "f8E5M2FNUZ": (0x26, "float8_e5m2fnuz"), "f8E4M3FNUZ": (0x27, "float8_e4m3fnuz")}
ENCODING_DENSE_ROW_MAJOR = 1

_NAME_RE = re.compile(r"^(si|ui|i|bf|cf|f)(\d+)$")
_FLOAT = {16: "float16", 32: "float32", 64: "float64"}
_COMPLEX = {64: "complex64", 128: "complex128"}
_SUB_BYTE = {("i", 4): "int4", ("si", 4): "int4", ("ui", 4): "uint4",
             ("i", 2): "int2", ("si", 2): "int2", ("ui", 2): "uint2"}


def _unhandled(name: str, code: StatusCode = StatusCode.UNIMPLEMENTED) -> HalError:
    """A known prefix with a width vmrt has no dtype for is UNIMPLEMENTED; an
    unknown prefix is INVALID_ARGUMENT (as iree-run-module says)."""
    return HalError(f"unhandled element type prefix in '{name}'", code)


def _split(name: str) -> tuple[str, int]:
    m = _NAME_RE.match(name)
    if m is None:
        raise _unhandled(name, StatusCode.INVALID_ARGUMENT)
    return m.group(1), int(m.group(2))


@cache    # names are few; errors are not cached
def element_type_code(name: str) -> int:
    """IREE's element type value for a name like ``f32``, ``i8``, ``ui16``, ``i1``."""
    if name == "i1":
        return (_NUMERICAL["b"] << 24) | 8
    if name in FLOAT8:
        return (FLOAT8[name][0] << 24) | 8
    m = _NAME_RE.match(name)
    if m is None:
        raise HalError(f"unsupported element type '{name}'", StatusCode.INVALID_ARGUMENT)
    return (_NUMERICAL[m.group(1)] << 24) | int(m.group(2))


@lru_cache(maxsize=256)   # every buffer view a call makes asks (errors are not cached)
def element_type_name(code: int) -> str:
    """The name (``f32``, ``i1``, ``f8E4M3FN`` ...) of an IREE element type value."""
    numerical, bits = code >> 24, code & 0xFFFFFF
    for name, (value, _) in FLOAT8.items():
        if value == numerical and bits == 8:
            return name
    for prefix, value in _NUMERICAL.items():
        if value == numerical:
            return "i1" if prefix == "b" else f"{prefix}{bits}"
    raise HalError(f"unsupported element type {code:#010x}", StatusCode.INVALID_ARGUMENT)


@cache    # names are few; errors are not cached
def element_bits(name: str) -> int:
    """How many bits one element of ``name`` takes in storage (``i1``: 8)."""
    if name == "i1" or name in FLOAT8:
        return 8
    return _split(name)[1]


def is_packed(name: str) -> bool:
    """Sub-byte integers, stored several to a byte."""
    return element_bits(name) < 8


def storage_size(name: str, count: int) -> int:
    """Bytes of storage for ``count`` elements of ``name``."""
    return -(-count * element_bits(name) // 8)


def is_binary_hex(name: str) -> bool:
    """Types iree-run-module reads and prints as raw bytes in hex: ``i1``,
    the packed sub-byte integers (a token per storage byte) and the complex
    types (a token per element)."""
    return name == "i1" or is_packed(name) or name.startswith("cf")


@cache    # names are few; errors are not cached
def dtype_name(name: str) -> str:
    """The name of the numpy (or ml_dtypes) dtype of one (unpacked) element of
    ``name``, found without importing numpy; an element type vmrt cannot
    hold fails here."""
    if name == "i1":        # one byte per element, printed/parsed as raw hex bytes like IREE
        return "uint8"
    if name in FLOAT8:
        return FLOAT8[name][1]
    prefix, bits = _split(name)
    if (prefix, bits) in _SUB_BYTE:
        return _SUB_BYTE[prefix, bits]
    if prefix in ("i", "si", "ui") and bits in (8, 16, 32, 64):
        return ("uint" if prefix == "ui" else "int") + str(bits)
    if prefix == "f" and bits in _FLOAT:
        return _FLOAT[bits]
    if prefix == "bf" and bits == 16:
        return "bfloat16"
    if prefix == "cf" and bits in _COMPLEX:
        return _COMPLEX[bits]
    raise _unhandled(name)


#: dtype names (of :func:`dtype_name`) -> their ``struct`` code and .npy descr
_PLAIN = {"int8": ("b", "|i1"), "uint8": ("B", "|u1"), "int16": ("h", "<i2"),
          "uint16": ("H", "<u2"), "int32": ("i", "<i4"), "uint32": ("I", "<u4"),
          "int64": ("q", "<i8"), "uint64": ("Q", "<u8"), "float16": ("e", "<f2"),
          "float32": ("f", "<f4"), "float64": ("d", "<f8")}


def struct_code(name: str) -> str | None:
    """The ``struct`` format character of one element of ``name`` (``f32``:
    ``f``, ``ui16``: ``H``, ``i1``: ``B``), or None when struct has none
    (bf16, the f8 types, sub-byte and complex types)."""
    plain = _PLAIN.get(dtype_name(name))
    return None if plain is None else plain[0]


def npy_descr(name: str) -> str | None:
    """The .npy ``descr`` numpy writes for an array of ``name`` (``<f4``,
    ``|u1`` ...), or None for the types without a plain one."""
    plain = _PLAIN.get(dtype_name(name))
    return None if plain is None else plain[1]


@cache    # names are few; errors are not cached
def dtype_of(name: str) -> Any:
    """The numpy dtype (``vmrt.dtype_of``) that holds one element of the IREE
    element type ``name``: ``f32`` -> float32, ``si8``/``i8`` -> int8,
    ``ui16`` -> uint16, ``bf16``/``f8E4M3FN``/``i4`` -> the ``ml_dtypes``
    type (sub-byte types unpacked, one element a byte), ``i1`` -> uint8 (its
    storage: one byte per element; :func:`vmrt.load` turns i1 results into
    bool).  A type vmrt cannot hold raises :class:`vmrt.HalError`."""
    import numpy as np
    dn = dtype_name(name)
    if dn in _PLAIN or dn in _COMPLEX.values():
        return np.dtype(dn)
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, dn))


def element_type_of(dtype: Any) -> str:
    """IREE's element type name (``vmrt.element_type_of``) for a numpy dtype
    (or anything ``numpy.dtype`` accepts): float32 -> ``f32``, int8 ->
    ``si8`` (numpy integers are signed: ``siN``), uint8 -> ``ui8``, bool ->
    ``i1``, ml_dtypes' bfloat16 -> ``bf16``.  A dtype with no element type
    (strings, objects ...) raises :class:`vmrt.HalError`."""
    try:
        return _dtype_name(dtype)
    except TypeError:       # an unhashable dtype spec
        return _dtype_name.__wrapped__(dtype)


@lru_cache(maxsize=64)
def _dtype_name(dtype: Any) -> str:
    import numpy as np
    dt = np.dtype(dtype)
    named = _ML_DTYPE_NAMES().get(dt.name)
    if named is not None:
        return named
    if dt.kind == "b":
        return "i1"
    if dt.kind == "i":      # numpy ints are signed: IREE names them siN (as for .npy)
        return f"si{dt.itemsize * 8}"
    if dt.kind == "u":
        return f"ui{dt.itemsize * 8}"
    if dt.kind == "f":
        return f"f{dt.itemsize * 8}"
    if dt.kind == "c":
        return f"cf{dt.itemsize * 8}"
    raise HalError(f"unsupported numpy dtype {dt}", StatusCode.UNIMPLEMENTED)


def _ML_DTYPE_NAMES() -> dict[str, str]:
    """ml_dtypes dtype names -> IREE names (``int4`` -> ``si4``)."""
    names = {ml: name for name, (_, ml) in FLOAT8.items()}
    names.update({"bfloat16": "bf16", "int4": "si4", "uint4": "ui4", "int2": "si2",
                  "uint2": "ui2"})
    return names


def to_float8(values: Any, name: str) -> Any:
    """f32 values as ``name`` the way IREE's runtime converts them: like
    ml_dtypes (round to nearest even, no infinity in the FN/FNUZ types),
    except that a magnitude below the smallest subnormal becomes zero."""
    import numpy as np
    dt = dtype_of(name)
    x = np.asarray(values, np.float32)
    import ml_dtypes
    tiny = float(ml_dtypes.finfo(dt).smallest_subnormal)
    x = np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x)
    return x.astype(dt)


_TOKEN = re.compile(r"^(?:i|si|ui|f|bf)\d+$|^f8E\w+$")


def export_element_type(export: str, default: str | None = None) -> str | None:
    """The element type an IREE dispatch export name ends in
    (``..._elementwise_4x8_f32`` -> ``f32``, ``..._f16xf32`` -> ``f32``),
    else ``default``."""
    tail = export.rsplit("_", 1)[-1]
    for token in reversed(tail.split("x")):
        if _TOKEN.match(token):
            try:
                if not is_binary_hex(token):
                    dtype_name(token)
                    return token
            except HalError:
                return default
        break
    return default


__all__ = ["ENCODING_DENSE_ROW_MAJOR", "FLOAT8", "dtype_name", "dtype_of", "element_bits",
           "element_type_code", "element_type_name", "element_type_of", "export_element_type",
           "is_binary_hex", "is_packed", "npy_descr", "storage_size", "struct_code", "to_float8"]
