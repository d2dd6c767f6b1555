"""``hal.buffer_view`` values for the host side: typed, shaped host memory
(a byte memoryview; a numpy array on demand), parsed from and printed in
iree-run-module's text format (``2x2xf32=[1 2][3 4]``).  Parsing and
printing need no numpy for the integer types, i1, f16, f32, f64 and bf16."""
from __future__ import annotations

import math
import re
import struct

from ..errors import StatusCode, UsageError
from ..vm.types import RefObject, RefType
from .buffer import aligned_memory, byte_view
from .element_types import (
    FLOAT8,
    dtype_name,
    dtype_of,
    element_bits,
    element_type_of,
    is_binary_hex,
    is_packed,
    storage_size,
    struct_code,
    to_float8,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

BUFFER_VIEW_TYPE = RefType("hal.buffer_view")

class BufferView(RefObject):
    """A shaped, typed view over host memory.

    ``storage`` is the memory: a flat byte memoryview of the elements
    (packed for the sub-byte integers, as IREE lays them out).  ``array`` is
    the elements as a numpy array (ml_dtypes' dtypes for bf16, the f8 types
    and sub-byte integers), made on first use: for every type but the packed
    sub-byte integers it *is* the memory (zero-copy, writes land in it); for
    those it unpacks a copy."""

    __slots__ = ("_array", "_storage", "element_type", "shape", "address", "backing")
    vm_type = BUFFER_VIEW_TYPE

    def __init__(self, array: Any, element_type: str | None = None):
        import numpy as np
        arr = np.asarray(array, order="C")   # keeps rank 0 (ascontiguousarray would not)
        self.element_type = element_type or element_type_of(arr.dtype)
        self.shape: tuple[int, ...] = tuple(arr.shape)
        #: the host address of the storage when it is known (else None)
        self.address: int | None = None
        #: the buffer ``hal.buffer_view.buffer`` returns when it is not just
        #: the storage (a view made over the first bytes of a longer range)
        self.backing: Any = None
        self._array: Any = None
        self._storage: memoryview | None = None
        if is_packed(self.element_type):
            self._storage = memoryview(pack(arr, self.element_type))
        else:
            self._array = arr

    @classmethod
    def over(cls, storage: Any, element_type: str, shape: tuple[int, ...],
             address: int | None = None) -> BufferView:
        """A view of ``storage`` (bytes-like: a memoryview, a uint8 numpy
        array ..., holding exactly the elements, packed for sub-byte types;
        at host ``address`` when the caller knows it) without copying it."""
        return view_of_bytes(byte_view(storage), element_type, tuple(shape), address, cls)

    @classmethod
    def zeros(cls, element_type: str, shape: tuple[int, ...],
              what: str = "buffer view") -> BufferView:
        """A zeroed view of a new 64-byte aligned allocation (no numpy)."""
        count = 1
        for d in shape:
            count *= d
        mem, addr = aligned_memory(storage_size(element_type, count), what)
        return cls.over(mem, element_type, shape, addr)

    @property
    def array(self) -> Any:
        if self._array is not None:
            return self._array
        assert self._storage is not None
        if is_packed(self.element_type):
            return unpack(self._storage, self.element_type, self.shape)
        import numpy as np
        self._array = np.frombuffer(self._storage, dtype_of(self.element_type)) \
            .reshape(self.shape)
        return self._array

    @property
    def storage(self) -> memoryview:
        """The elements' memory as a flat byte memoryview (zero-copy)."""
        if self._storage is None:
            import numpy as np
            self._storage = memoryview(self._array.reshape(-1).view(np.uint8))
        return self._storage

    def __repr__(self) -> str:
        return f"BufferView({format_buffer_view(self, 16)})"


_new_object = object.__new__


def view_of_bytes(data: memoryview, element_type: str, shape: tuple[int, ...],
                  address: int | None, cls: type[BufferView] | None = None) -> BufferView:
    """``BufferView.over(data, element_type, shape, address)`` for ``data``
    that is a flat byte memoryview already (a buffer's bytes or a slice of
    them, aligned memory) and ``shape`` a tuple: what the hot paths make
    (``hal.buffer_view.create``, a program's array arguments), without the
    checks of :func:`vmrt.hal.buffer.byte_view` and the class call (``cls``:
    a subclass to make instead)."""
    view = _new_object(cls or BufferView)
    view.element_type = element_type
    view.shape = shape
    view.address = address
    view.backing = None
    view._array = None
    view._storage = data
    return view


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
    dtype_name(elem)                    # an unknown element type fails here
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
        return BufferView.zeros(elem, shape, "tensor input")
    _check_count(len(tokens), count)
    if is_float_type(elem):
        try:
            vals = [float(t) for t in tokens]
        except ValueError as e:
            raise UsageError(f"failed to parse element as {elem}: {e}",
                             StatusCode.INVALID_ARGUMENT) from None
        if elem in FLOAT8:
            import numpy as np
            arr = to_float8(np.array(vals, np.float32), elem)
            return BufferView(np.full(shape, arr[0], arr.dtype) if arr.size == 1
                              else arr.reshape(shape), elem)
        raw = _pack_bf16(vals) if elem == "bf16" else _pack_floats(struct_code(elem) or "", vals)
    else:
        code = struct_code(elem) or ""
        signed, bits = code.islower(), element_bits(elem)
        raw = struct.pack(f"<{len(tokens)}{code}",
                          *[_parse_int(t, elem, signed, bits) for t in tokens])
    view = BufferView.zeros(elem, shape, "tensor input")
    view.storage[:] = raw * count if len(tokens) == 1 else raw
    return view


def _pack_floats(code: str, values: list[float]) -> bytes:
    """``values`` as little-endian f16/f32/f64 (``code`` e/f/d), rounded to
    nearest even; a value too large for the type becomes an infinity."""
    try:
        return struct.pack(f"<{len(values)}{code}", *values)
    except OverflowError:
        out = []
        for v in values:
            try:
                out.append(struct.pack(f"<{code}", v))
            except OverflowError:
                out.append(struct.pack(f"<{code}", math.copysign(math.inf, v)))
        return b"".join(out)


def _pack_bf16(values: list[float]) -> bytes:
    """As IREE does: each value rounded to f32, then to bf16 (to nearest even;
    a NaN becomes the quiet NaN of its sign, as ml_dtypes makes it)."""
    words = struct.unpack(f"<{len(values)}I", _pack_floats("f", values))
    out = []
    for u in words:
        if (u & 0x7F800000) == 0x7F800000 and u & 0x7FFFFF:
            out.append(((u >> 16) & 0x8000) | 0x7FC0)
        else:
            out.append(((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)
    return struct.pack(f"<{len(out)}H", *out)


def is_float_type(elem: str) -> bool:
    """f16/f32/f64, bf16 and the f8 types: parsed and printed as numbers."""
    return elem in FLOAT8 or elem in ("f16", "f32", "f64", "bf16")


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
    nbytes = storage_size(elem, count)
    width = 1 if is_packed(elem) else element_bits(elem) // 8
    units = nbytes // width
    view = BufferView.zeros(elem, shape, "tensor input")
    if tokens:
        blobs = [_parse_hex(t, width) for t in tokens]
        _check_count(len(blobs), units)
        view.storage[:] = b"".join(blobs * units if len(blobs) == 1 else blobs)
    return view


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


def _elements(bv: BufferView, limit: int) -> tuple[Any, str, tuple[int, ...]]:
    """What to print for ``bv``: a flat sequence (its first ``limit``
    elements at least, all that can be printed), its kind, and the shape that
    nests it (packed sub-byte types print their storage bytes, flat)."""
    elem = bv.element_type
    raw = bv.storage
    if is_packed(elem):
        return [raw[i:i + 1] for i in range(min(len(raw), limit))], "x", (len(raw),)
    width = max(1, element_bits(elem) // 8)
    n = min(len(raw) // width, limit)
    if is_binary_hex(elem):
        return [raw[i * width:(i + 1) * width] for i in range(n)], "x", bv.shape
    if elem in FLOAT8:
        return bv.array.reshape(-1), "f8", bv.shape
    if elem == "bf16":          # the upper half of an f32
        words = [h << 16 for h in struct.unpack_from(f"<{n}H", raw)]
        return struct.unpack(f"<{n}f", struct.pack(f"<{n}I", *words)), "f", bv.shape
    code = struct_code(elem)
    if code is None:            # (every type vmrt holds is covered above)
        return bv.array.reshape(-1), "f" if is_float_type(elem) else "i", bv.shape
    return struct.unpack_from(f"<{n}{code}", raw), "f" if code in "efd" else "i", bv.shape


def format_buffer_view(bv: Any, max_elements: int = 1024) -> str:
    """A buffer view (``vmrt.BufferView``) or a numpy array printed the way
    iree-run-module prints results: ``2x3xi32=[1 2 3][4 5 6]``, ``f32=1.5``
    for rank 0.  Past ``max_elements`` elements (iree-run-module's
    ``--output_max_element_count``) each row is cut short with ``...``.

        >>> vmrt.format_buffer_view(np.arange(6, dtype=np.int32).reshape(2, 3), 4)
        '2x3xsi32=[0 1 2][3...]'
    """
    if not isinstance(bv, BufferView):
        bv = BufferView(bv)
    prefix = "x".join([str(d) for d in bv.shape] + [bv.element_type])
    flat, kind, shape = _elements(bv, max(max_elements, 1))
    budget = [max_elements]
    pos = [0]

    def rec(dims: tuple[Any, ...]) -> str:
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
