"""``hal.buffer_view`` values for the host side: a typed, shaped numpy array,
parsed from and printed in iree-run-module's text format
(``2x2xf32=[1 2][3 4]``)."""
from __future__ import annotations

import math
import re

from ..errors import StatusCode, UsageError
from ..vm.types import RefObject, RefType
from .element_types import (
    FLOAT8,
    dtype_of,
    element_bits,
    element_type_of,
    is_binary_hex,
    is_packed,
    storage_size,
    to_float8,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

BUFFER_VIEW_TYPE = RefType("hal.buffer_view")

class BufferView(RefObject):
    """A shaped, typed view over host memory.

    ``array`` is the elements as a numpy array (ml_dtypes' dtypes for bf16,
    the f8 types and sub-byte integers).  For every type but the packed
    sub-byte integers it *is* the memory (zero-copy, writes land in it);
    for those, the memory is ``storage`` (packed bytes, as IREE lays them
    out) and ``array`` unpacks a copy."""

    __slots__ = ("_array", "_packed", "_storage", "element_type", "shape", "address")
    vm_type = BUFFER_VIEW_TYPE

    def __init__(self, array: Any, element_type: str | None = None):
        import numpy as np
        arr = np.asarray(array, order="C")   # keeps rank 0 (ascontiguousarray would not)
        self.element_type = element_type or element_type_of(arr.dtype)
        self.shape: tuple[int, ...] = tuple(arr.shape)
        self._storage: Any = None
        #: the host address of the storage when it is known (else None)
        self.address: int | None = None
        if is_packed(self.element_type):
            self._array = None
            self._packed = pack(arr, self.element_type)
        else:
            self._array = arr
            self._packed = None

    @classmethod
    def over(cls, storage: Any, element_type: str, shape: tuple[int, ...],
             address: int | None = None) -> BufferView:
        """A view of ``storage`` (a uint8 numpy array holding exactly the
        elements, packed for sub-byte types; at host ``address`` when the
        caller knows it) without copying it."""
        view = cls.__new__(cls)
        view.element_type = element_type
        view.shape = tuple(shape)
        view.address = address
        if is_packed(element_type):
            view._array, view._packed, view._storage = None, storage, None
        else:
            view._array = storage.view(dtype_of(element_type)).reshape(view.shape)
            view._packed, view._storage = None, storage
        return view

    @property
    def array(self) -> Any:
        if self._array is not None:
            return self._array
        return unpack(self._packed, self.element_type, self.shape)

    @property
    def storage(self) -> Any:
        """The elements' memory as a flat uint8 numpy array (zero-copy)."""
        if self._packed is not None:
            return self._packed
        if self._storage is None:
            import numpy as np
            assert self._array is not None
            self._storage = self._array.reshape(-1).view(np.uint8)
        return self._storage

    def __repr__(self) -> str:
        return f"BufferView({format_buffer_view(self, 16)})"


def pack(array: Any, element_type: str) -> Any:
    """Sub-byte integers packed as IREE packs them (first element in the low bits)."""
    import numpy as np
    bits = element_bits(element_type)
    per = 8 // bits
    vals = np.asarray(array).astype(np.int64).reshape(-1) & ((1 << bits) - 1)
    out = np.zeros(storage_size(element_type, vals.size), np.uint8)
    for k in range(per):
        part = vals[k::per]
        out[:part.size] |= (part << (k * bits)).astype(np.uint8)
    return out


def unpack(storage: Any, element_type: str, shape: tuple[int, ...]) -> Any:
    """The elements of packed ``storage`` as an array of ``shape``."""
    import numpy as np
    bits = element_bits(element_type)
    per = 8 // bits
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.asarray(storage, np.uint8)
    vals = np.empty(raw.size * per, np.int64)
    for k in range(per):
        vals[k::per] = (raw >> (k * bits)) & ((1 << bits) - 1)
    vals = vals[:count]
    if not element_type.startswith("ui"):     # i4 / si4: two's complement
        vals = np.where(vals >= 1 << (bits - 1), vals - (1 << bits), vals)
    return vals.astype(dtype_of(element_type)).reshape(shape)


#: longer integer literals are refused before conversion (Python's int()
#: refuses more than 4300 digits; no element type needs more than this)
_MAX_INT_LITERAL = 72


def _parse_int(tok: str, elem: str, signed: bool, bits: int) -> int:
    if len(tok) > _MAX_INT_LITERAL:
        raise UsageError(f"element '{tok[:24]}...' ({len(tok)} characters) out of range for "
                         f"{elem}", StatusCode.OUT_OF_RANGE)
    try:
        v = int(tok, 0)
    except ValueError:
        try:
            v = int(float(tok))
        except (ValueError, OverflowError):
            raise UsageError(f"failed to parse element '{tok}' as {elem}",
                          StatusCode.INVALID_ARGUMENT) from None
    lo = -(1 << (bits - 1)) if (signed or elem.startswith("i")) else 0
    # 64-bit signed elements stop at INT64_MAX, as IREE's strtoll does; narrower
    # ones also take their unsigned range (i8=255 is -1), as IREE does
    hi = (1 << bits) - 1 if bits < 64 or not signed else (1 << 63) - 1
    if not lo <= v <= hi:
        raise UsageError(f"element '{tok}' out of range for {elem}", StatusCode.OUT_OF_RANGE)
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def parse_buffer_view(spec: str) -> BufferView:
    """Parse ``[SHAPEx]TYPE[=DATA]`` (iree-run-module's tensor input grammar)."""
    import numpy as np
    spec = spec.strip().strip('"')
    meta, eq, data = spec.partition("=")
    meta = meta.strip()
    if "x" in meta:
        shape_s, _, elem = meta.rpartition("x")
        try:
            shape = tuple(int(d) for d in shape_s.split("x")) if shape_s else ()
        except ValueError:
            raise UsageError(f"invalid shape in '{meta}'", StatusCode.INVALID_ARGUMENT) from None
    else:
        shape, elem = (), meta
    dtype_of(elem)                      # an unknown element type fails here
    count = 1
    for d in shape:
        count *= d
    from ..vm.buffer import Buffer
    if any(d < 0 for d in shape) or storage_size(elem, count) > Buffer.MAX_ALLOCATION:
        raise UsageError(f"invalid or too large tensor shape '{meta}'",
                         StatusCode.RESOURCE_EXHAUSTED)
    tokens = [t for t in re.split(r"[\s,\[\]]+", data) if t] if eq else []
    if is_binary_hex(elem):
        return _parse_binary_hex(tokens, elem, shape, count)
    if not tokens:
        return BufferView(np.zeros(shape, dtype_of(elem)), elem)
    _check_count(len(tokens), count)
    if is_float_type(elem):
        try:
            vals = np.array([float(t) for t in tokens], np.float64)
        except ValueError as e:
            raise UsageError(f"failed to parse element as {elem}: {e}",
                             StatusCode.INVALID_ARGUMENT) from None
        arr = _to_float_type(vals, elem)
    else:
        dt = dtype_of(elem)
        arr = np.array([_parse_int(t, elem, dt.kind == "i", dt.itemsize * 8) for t in tokens],
                       dt)
    return BufferView(np.full(shape, arr[0], arr.dtype) if arr.size == 1
                      else arr.reshape(shape), elem)


def is_float_type(elem: str) -> bool:
    """f16/f32/f64, bf16 and the f8 types: parsed and printed as numbers."""
    return elem in FLOAT8 or elem in ("f16", "f32", "f64", "bf16")


def _to_float_type(vals: Any, elem: str) -> Any:
    import numpy as np
    if elem in FLOAT8:
        return to_float8(vals.astype(np.float32), elem)
    if elem == "bf16":      # as IREE does: parsed as f32, then rounded to bf16
        return vals.astype(np.float32).astype(dtype_of(elem))
    return vals.astype(dtype_of(elem))


def _check_count(given: int, count: int) -> None:
    """One value fills the tensor; otherwise exactly ``count`` are needed."""
    if given == 1 or given == count:
        return
    if given < count:
        raise UsageError(f"input data string underflow: dst_i={given} < "
                         f"element_capacity={count}", StatusCode.OUT_OF_RANGE)
    if given == count + 1:       # IREE notices one element too many in another place
        raise UsageError(f"output data overflow: element_capacity={count} < dst_i={count}",
                         StatusCode.OUT_OF_RANGE)
    raise UsageError(f"output data buffer overflow: element_capacity={count} < "
                     f"dst_i={count}+", StatusCode.OUT_OF_RANGE)


def _parse_binary_hex(tokens: list[str], elem: str, shape: tuple[int, ...],
                      count: int) -> BufferView:
    """IREE's "binary hex" input: raw bytes, one token per element (i1:
    1 byte, cf64: 8 bytes ...) or, for packed sub-byte types, per storage byte."""
    import numpy as np
    nbytes = storage_size(elem, count)
    width = 1 if is_packed(elem) else element_bits(elem) // 8
    units = nbytes // width
    if not tokens:
        return BufferView.over(np.zeros(nbytes, np.uint8), elem, shape)
    blobs = [_parse_hex(t, width) for t in tokens]
    _check_count(len(blobs), units)
    raw = b"".join(blobs * units if len(blobs) == 1 else blobs)
    return BufferView.over(np.frombuffer(raw, np.uint8).copy(), elem, shape)


def _parse_hex(tok: str, width: int) -> bytes:
    """Exactly ``2 * width`` hex digits, the bytes in memory order."""
    if len(tok) != 2 * width:
        raise UsageError(f"binary hex element count mismatch: buffer length={len(tok)} < "
                         f"expected={2 * width}", StatusCode.INVALID_ARGUMENT)
    try:
        return bytes.fromhex(tok)
    except ValueError:
        raise UsageError(f"failed to parse binary hex element '{tok}'",
                         StatusCode.INVALID_ARGUMENT) from None


def _fmt_elem(v: Any, kind: str) -> str:
    if kind in ("f", "f8"):
        v = float(v)
        if v != v:          # IREE prints an f8 NaN unsigned (FNUZ's only NaN is 0x80)
            return "-NAN" if kind == "f" and math.copysign(1.0, v) < 0 else "NAN"
        return f"{v:G}"
    if kind == "x":          # binary hex: raw bytes in memory order, as iree-run-module prints
        return bytes(v).hex().upper()
    return str(int(v))


def _elements(bv: BufferView) -> tuple[Any, str, tuple[int, ...]]:
    """What to print for ``bv``: a flat sequence, its kind, and the shape
    that nests it (packed sub-byte types print their storage bytes, flat)."""
    import numpy as np
    elem = bv.element_type
    if is_packed(elem):
        raw = bv.storage
        return [raw[i:i + 1].tobytes() for i in range(raw.size)], "x", (int(raw.size),)
    arr = bv.array
    if is_binary_hex(elem):
        width = max(1, element_bits(elem) // 8)
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return [raw[i * width:(i + 1) * width].tobytes() for i in range(arr.size)], "x", \
            bv.shape
    kind = "f8" if elem in FLOAT8 else "f" if is_float_type(elem) else "i"
    return arr.reshape(-1), kind, bv.shape


def format_buffer_view(bv: BufferView, max_elements: int = 1024) -> str:
    """``2x3xi32=[1 2 3][4 5 6]`` with iree-run-module's elision rules."""
    prefix = "x".join([str(d) for d in bv.shape] + [bv.element_type])
    flat, kind, shape = _elements(bv)
    budget = [max_elements]
    pos = [0]

    def rec(dims: tuple) -> str:
        if len(dims) == 1:
            n = dims[0]
            out: list[str] = []
            for _ in range(n):
                if budget[0] <= 0:
                    pos[0] += n - len(out)
                    return " ".join(out) + "..."
                out.append(_fmt_elem(flat[pos[0]], kind))
                pos[0] += 1
                budget[0] -= 1
            return " ".join(out)
        # outer dimensions always expand; elision happens in the leaf rows
        parts = ["[" + rec(dims[1:]) + "]" for _ in range(dims[0])]
        return "".join(parts)

    if not shape:
        body = _fmt_elem(flat[0], kind) if len(flat) else ""
    elif 0 in shape:
        body = ""
    else:
        body = rec(shape)
    return f"{prefix}={body}"
