"""``hal.buffer_view`` values for the host side: a typed, shaped numpy array,
parsed from and printed in iree-run-module's text format
(``2x2xf32=[1 2][3 4]``)."""
from __future__ import annotations

import math
import re
from typing import Any

from ..errors import StatusCode, UsageError
from ..vm.types import RefObject, RefType
from .element_types import dtype_of, element_type_of

BUFFER_VIEW_TYPE = RefType("hal.buffer_view")

class BufferView(RefObject):
    """A shaped, typed view over host memory (a numpy array)."""

    __slots__ = ("array", "element_type")
    vm_type = BUFFER_VIEW_TYPE

    def __init__(self, array: Any, element_type: str | None = None):
        import numpy as np
        self.array = np.asarray(array, order="C")   # keeps rank 0 (ascontiguousarray would not)
        self.element_type = element_type or element_type_of(self.array.dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def __repr__(self) -> str:
        return f"BufferView({format_buffer_view(self, 16)})"


def _parse_int(tok: str, elem: str, signed: bool, bits: int) -> int:
    try:
        v = int(tok, 0)
    except ValueError:
        try:
            v = int(float(tok))
        except ValueError:
            raise UsageError(f"failed to parse element '{tok}' as {elem}",
                          StatusCode.INVALID_ARGUMENT) from None
    lo = -(1 << (bits - 1)) if (signed or elem.startswith("i")) else 0
    hi = (1 << bits) - 1
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
    dt = dtype_of(elem)
    count = 1
    for d in shape:
        count *= d
    from ..vm.buffer import Buffer
    if count * dt.itemsize > Buffer.MAX_ALLOCATION or any(d < 0 for d in shape):
        raise UsageError(f"invalid or too large tensor shape '{meta}'",
                      StatusCode.RESOURCE_EXHAUSTED)
    tokens = [t for t in re.split(r"[\s,\[\]]+", data) if t] if eq else []
    if not tokens:
        arr = np.zeros(shape, dt)
    else:
        if dt.kind == "f":
            try:
                vals = [float(t) for t in tokens]
            except ValueError as e:
                raise UsageError(f"failed to parse element as {elem}: {e}",
                              StatusCode.INVALID_ARGUMENT) from None
        elif elem == "i1":
            vals = [_parse_hex_byte(t) for t in tokens]
        else:
            vals = [_parse_int(t, elem, dt.kind == "i", dt.itemsize * 8) for t in tokens]
        if len(vals) == 1:
            arr = np.full(shape, vals[0], dt)
        elif len(vals) < count:
            raise UsageError(f"input data string underflow: dst_i={len(vals)} < "
                          f"element_capacity={count}", StatusCode.OUT_OF_RANGE)
        elif len(vals) > count:
            raise UsageError(f"output data buffer overflow: element_capacity={count} < "
                          f"dst_i={count}+", StatusCode.OUT_OF_RANGE)
        else:
            arr = np.array(vals, dt).reshape(shape)
    return BufferView(arr, elem)


def _parse_hex_byte(tok: str) -> int:
    """IREE parses i1 elements as "binary hex": exactly two hex digits each."""
    if len(tok) != 2:
        raise UsageError(f"binary hex element count mismatch: buffer length={len(tok)} < "
                         "expected=2",
                      StatusCode.INVALID_ARGUMENT)
    try:
        return int(tok, 16)
    except ValueError:
        raise UsageError(f"failed to parse binary hex element '{tok}'",
                      StatusCode.INVALID_ARGUMENT) from None


def _fmt_elem(v: Any, kind: str) -> str:
    if kind == "f":
        v = float(v)
        if v != v:
            return "-NAN" if math.copysign(1.0, v) < 0 else "NAN"
        return f"{v:G}"
    if kind == "x":          # i1: raw bytes in hex, as iree-run-module prints them
        return "%02X" % (int(v) & 0xFF)
    return str(int(v))


def format_buffer_view(bv: BufferView, max_elements: int = 1024) -> str:
    """``2x3xi32=[1 2 3][4 5 6]`` with iree-run-module's elision rules."""
    arr = bv.array
    shape = arr.shape
    prefix = "x".join([str(d) for d in shape] + [bv.element_type])
    kind = "x" if bv.element_type == "i1" else arr.dtype.kind
    flat = arr.reshape(-1)
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
        body = _fmt_elem(flat[0], kind) if flat.size else ""
    elif 0 in shape:
        body = ""
    else:
        body = rec(shape)
    return f"{prefix}={body}"
