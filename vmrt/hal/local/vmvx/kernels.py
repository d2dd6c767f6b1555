"""The numeric kernels behind IREE's ``vmvx`` module, in numpy.

Every operand is a ``vm.buffer`` plus an element offset and strides (in
elements), mapped like the C module maps it: the byte range
``[offset * size, (offset + last_index + 1) * size)`` where ``last_index =
(size0 - 1) * stride0 + (size1 - 1) * stride1`` must lie inside the buffer
(``OUT_OF_RANGE`` otherwise; negative sizes/strides/offsets are
``INVALID_ARGUMENT``, the C module's unsigned overflow check), and the
operand is a strided numpy view of that range — no copies, writes land in
the buffer.

The 4-D operands of ``mmt4d``/``pack``/``unpack`` are (outer0, outer1,
tile0, tile1) with dense tiles and free outer strides (``mmt4d`` passes only
the outermost one); the ukernel ``flags`` word carries the element types
(``TYPE`` enum in the low byte) and option bits.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ....errors import InvocationError, StatusCode
from ....vm.buffer import Buffer

# -- ukernel flag words (IREE's builtins/ukernel/exported_bits.h values) ----------
TYPE_MASK = 0xFF
MMT4D_ACCUMULATE = 0x100
MMT4D_SKIP_INTERMEDIATE_ROUNDINGS = 0x400
PACK_TRANSPOSE_INNER = 0x100
PACK_TRANSPOSE_OUTER = 0x200

#: mmt4d type enum -> (lhs, rhs, out) element kinds
MMT4D_TYPES = {
    0x01: ("f32", "f32", "f32"), 0x02: ("i8", "i8", "i32"), 0x03: ("f16", "f16", "f32"),
    0x04: ("f16", "f16", "f16"), 0x05: ("bf16", "bf16", "f32"),
    0x06: ("bf16", "bf16", "bf16"), 0x07: ("i16", "i16", "i32"), 0x09: ("i16", "i8", "i32"),
}
#: pack / unpack type enum -> element size in bytes (the kernels only move bits)
PACK_ELEMENT_SIZES = {0x01: 4, 0x02: 1, 0x03: 4, 0x04: 2, 0x05: 2}
#: generic (no CPU-specific) matmul tile sizes: M0, K0, N0
MATMUL_TILE = (8, 4, 8)

_STORAGE = {"f32": np.float32, "i8": np.int8, "i16": np.int16, "i32": np.int32,
            "f16": np.float16, "bf16": np.uint16}


def _bad(what: str) -> InvocationError:
    return InvocationError(f"buffer overflow for {what}", StatusCode.INVALID_ARGUMENT)


def _memory(buf: Any, what: str, writable: bool) -> np.ndarray:
    if buf is None:
        raise InvocationError(f"{what} buffer is null", StatusCode.INVALID_ARGUMENT)
    if not isinstance(buf, Buffer):
        raise InvocationError(f"{what} is not a vm.buffer", StatusCode.INVALID_ARGUMENT)
    if writable:
        buf.writable()          # PERMISSION_DENIED for read-only buffers
    return np.frombuffer(buf.data, np.uint8)


def view_nd(buf: Any, dtype: Any, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
            what: str, writable: bool = False) -> np.ndarray:
    """A strided view of ``buf`` (offset and strides in elements), bounds-checked."""
    dt = np.dtype(dtype)
    es = dt.itemsize
    if min(offset, *shape, *strides) < 0 or max(*shape, *strides) >= 1 << 32:
        raise _bad(what)
    mem = _memory(buf, what, writable)
    if 0 in shape:
        return np.zeros(shape, dt)
    start = offset * es
    length = (sum((n - 1) * st for n, st in zip(shape, strides)) + 1) * es
    if start + length > mem.size:
        raise InvocationError(
            f"{what}: range [{start}, {start + length}) is out of bounds of a "
            f"{mem.size}-byte buffer", StatusCode.OUT_OF_RANGE)
    base = mem[start:start + length].view(dt)     # numpy handles unaligned views
    return as_strided(base, shape, tuple(st * es for st in strides), writeable=writable)


def view2d(buf: Any, dtype: Any, offset: int, stride0: int, stride1: int, size0: int,
           size1: int, what: str, writable: bool = False) -> np.ndarray:
    """A (size0, size1) strided view of ``buf``."""
    return view_nd(buf, dtype, offset, (size0, size1), (stride0, stride1), what, writable)


def view_tiled(buf: Any, dtype: Any, offset: int, stride0: int, stride1: int,
               shape: tuple[Any, ...], what: str, writable: bool = False) -> np.ndarray:
    """A 4-D (outer0, outer1, tile0, tile1) view: free outer strides, dense tiles."""
    strides = (stride0, stride1, shape[3], 1)
    return view_nd(buf, dtype, offset, shape, strides, what, writable)


def _errstate() -> Any:
    return np.errstate(all="ignore")


# -- elementwise ------------------------------------------------------------------
def _trunc_div(a: np.ndarray, b: np.ndarray, unsigned: bool) -> np.ndarray:
    if np.any(b == 0):
        raise InvocationError("integer division by zero", StatusCode.INVALID_ARGUMENT)
    if unsigned:
        return (a.view(np.uint32) // b.view(np.uint32)).view(np.int32)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.abs(a64) // np.abs(b64)
    q = np.where((a64 < 0) != (b64 < 0), -q, q)
    return q.astype(np.int32)       # INT_MIN / -1 wraps to INT_MIN


BINARY_OPS: dict[str, tuple[str, Any]] = {
    "add.2d.f32": ("f", np.add), "sub.2d.f32": ("f", np.subtract),
    "mul.2d.f32": ("f", np.multiply), "div.2d.f32": ("f", np.divide),
    "add.2d.i32": ("i", np.add), "sub.2d.i32": ("i", np.subtract),
    "mul.2d.i32": ("i", np.multiply), "and.2d.i32": ("i", np.bitwise_and),
    "or.2d.i32": ("i", np.bitwise_or), "xor.2d.i32": ("i", np.bitwise_xor),
    "divs.2d.i32": ("i", lambda a, b: _trunc_div(a, b, False)),
    "divu.2d.i32": ("i", lambda a, b: _trunc_div(a, b, True)),
    "shl.2d.i32": ("i", lambda a, b: a << (b & 31)),
    "shrs.2d.i32": ("i", lambda a, b: a >> (b & 31)),
    "shru.2d.i32": ("i", lambda a, b: (a.view(np.uint32) >> (b & 31).view(np.uint32))
                    .view(np.int32)),
}


def _f64_then_f32(fn: Any) -> Any:
    return lambda x: fn(x.astype(np.float64)).astype(np.float32)


def _ctlz(x: np.ndarray) -> np.ndarray:
    u = x.view(np.uint32).astype(np.uint64)
    n = np.full(u.shape, 32, np.int32)
    nz = u != 0
    n[nz] = 31 - np.floor(np.log2(u[nz].astype(np.float64))).astype(np.int32)
    return n


UNARY_OPS = {
    "abs.2d.f32": ("f", np.abs), "neg.2d.f32": ("f", np.negative),
    "ceil.2d.f32": ("f", np.ceil), "floor.2d.f32": ("f", np.floor),
    "exp.2d.f32": ("f", _f64_then_f32(np.exp)), "log.2d.f32": ("f", _f64_then_f32(np.log)),
    "rsqrt.2d.f32": ("f", lambda x: np.float32(1) / np.sqrt(x)),
    "ctlz.2d.i32": ("i", _ctlz),
}

COPY_SIZES = {"copy.2d.x8": np.uint8, "copy.2d.x16": np.uint16, "copy.2d.x32": np.uint32,
              "copy.2d.x64": np.uint64}


def binary(op: str, args: tuple[Any, ...]) -> None:
    kind, fn = BINARY_OPS[op]
    dt = np.float32 if kind == "f" else np.int32
    (lb, lo, ls0, ls1, rb, ro, rs0, rs1, ob, oo, os0, os1, n0, n1) = args
    lhs = view2d(lb, dt, lo, ls0, ls1, n0, n1, "lhs")
    rhs = view2d(rb, dt, ro, rs0, rs1, n0, n1, "rhs")
    out = view2d(ob, dt, oo, os0, os1, n0, n1, "out", writable=True)
    with _errstate():
        out[...] = fn(lhs.copy(), rhs.copy())


def unary(op: str, args: tuple[Any, ...]) -> None:
    (ib, io, is0, is1, ob, oo, os0, os1, n0, n1) = args
    dt: Any
    fn: Any
    if op in COPY_SIZES:
        dt, fn = COPY_SIZES[op], None
    else:
        kind, fn = UNARY_OPS[op]
        dt = np.float32 if kind == "f" else np.int32
    src = view2d(ib, dt, io, is0, is1, n0, n1, "in")
    out = view2d(ob, dt, oo, os0, os1, n0, n1, "out", writable=True)
    with _errstate():
        out[...] = src.copy() if fn is None else fn(src.copy())


def fill_x32(value: int, buf: Any, offset: int, row_stride: int, n0: int, n1: int) -> None:
    out = view2d(buf, np.uint32, offset, row_stride, 1, n0, n1, "out", writable=True)
    out[...] = value & 0xFFFFFFFF


# -- data-tiled matmul --------------------------------------------------------------
def _to_f32(a: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def _from_f32(a: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":                    # round to nearest even
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return r.astype(np.uint16)
    return a.astype(_STORAGE[kind])


def mmt4d(args: tuple[Any, ...]) -> None:
    (lb, lo, ls, rb, ro, rs, ob, oo, os_, m, n, k, m0, n0, k0, flags) = args
    flags &= 0xFFFFFFFF
    types = MMT4D_TYPES.get(flags & TYPE_MASK)
    if types is None:
        raise InvocationError(f"unsupported mmt4d type in flags 0x{flags:x}",
                              StatusCode.INVALID_ARGUMENT)
    lk, rk, ok = types
    lhs = view_tiled(lb, _STORAGE[lk], lo, ls, m0 * k0, (m, k, m0, k0), "lhs")
    rhs = view_tiled(rb, _STORAGE[rk], ro, rs, n0 * k0, (n, k, n0, k0), "rhs")
    shape = (m, n, m0, n0)
    out = view_tiled(ob, _STORAGE[ok], oo, os_, m0 * n0, shape, "out", writable=True)
    accumulate = bool(flags & MMT4D_ACCUMULATE)
    if ok == "i32":
        acc = np.einsum("akxz,bkyz->abxy", lhs.astype(np.int64), rhs.astype(np.int64))
        if accumulate:
            acc += out.astype(np.int64)
        out[...] = acc.astype(np.int32)
        return
    # floats: accumulate in f32 one k, k0 step at a time, as the reference loop does
    round_each = ok != "f32" and not flags & MMT4D_SKIP_INTERMEDIATE_ROUNDINGS
    a, b = _to_f32(lhs, lk), _to_f32(rhs, rk)
    acc = (_to_f32(out, ok) if accumulate
           else np.zeros(shape, np.float32))
    with _errstate():
        for kk in range(k):
            for z in range(k0):
                acc = acc + a[:, None, kk, :, None, z] * b[None, :, kk, None, :, z]
                if round_each:
                    acc = _to_f32(_from_f32(acc, ok), ok)
    out[...] = _from_f32(acc, ok)


def _pack_dtype(flags: int, what: str) -> Any:
    size = PACK_ELEMENT_SIZES.get(flags & TYPE_MASK)
    if size is None:
        raise InvocationError(f"unsupported {what} type in flags 0x{flags:x}",
                              StatusCode.INVALID_ARGUMENT)
    return np.dtype(f"<u{size}")


def _tiling(flags: int, o0: int, o1: int, t0: int, t1: int) -> tuple[Any, ...]:
    """Outer counts and tile sizes in the order of the unpacked dimensions."""
    outer = (o1, o0) if flags & PACK_TRANSPOSE_OUTER else (o0, o1)
    tile = (t1, t0) if flags & PACK_TRANSPOSE_INNER else (t0, t1)
    return outer, tile


def _tiled_axes(flags: int) -> tuple[Any, ...]:
    """numpy axes taking (outer0, tile0, outer1, tile1) to the packed layout."""
    o = (2, 0) if flags & PACK_TRANSPOSE_OUTER else (0, 2)
    t = (3, 1) if flags & PACK_TRANSPOSE_INNER else (1, 3)
    return o + t


def pack(args: tuple[Any, ...]) -> None:
    (ib, io, is0, is1, ob, oo, os0, os1, n0, n1, o0, o1, t0, t1, padding, flags) = args
    flags &= 0xFFFFFFFF
    dt = _pack_dtype(flags, "pack")
    src = view2d(ib, dt, io, is0, is1, n0, n1, "in")
    out = view_tiled(ob, dt, oo, os0, os1, (o0, o1, t0, t1), "out", writable=True)
    (u0, u1), (s0, s1) = _tiling(flags, o0, o1, t0, t1)
    pad = padding & ((1 << (8 * dt.itemsize)) - 1)
    full = np.full((u0 * s0, u1 * s1), pad, dt)
    r0, r1 = min(n0, u0 * s0), min(n1, u1 * s1)
    full[:r0, :r1] = src[:r0, :r1]
    out[...] = full.reshape(u0, s0, u1, s1).transpose(_tiled_axes(flags))


def unpack(args: tuple[Any, ...]) -> None:
    (ib, io, is0, is1, ob, oo, os0, os1, i0, i1, t0, t1, n0, n1, flags) = args
    flags &= 0xFFFFFFFF
    dt = _pack_dtype(flags, "unpack")
    src = view_tiled(ib, dt, io, is0, is1, (i0, i1, t0, t1), "in")
    out = view2d(ob, dt, oo, os0, os1, n0, n1, "out", writable=True)
    (u0, u1), (s0, s1) = _tiling(flags, i0, i1, t0, t1)
    full = src.transpose(np.argsort(_tiled_axes(flags))).reshape(u0 * s0, u1 * s1)
    r0, r1 = min(n0, u0 * s0), min(n1, u1 * s1)
    out[:r0, :r1] = full[:r0, :r1]


def query_tile_sizes_2d(size0: int, size1: int, flags: int) -> tuple[int, int]:
    """The generic ukernel answer for a matmul operand role (low byte of flags:
    1 = LHS (M0, K0), 2 = RHS (N0, K0), 3 = RESULT (M0, N0))."""
    m0, k0, n0 = MATMUL_TILE
    role = flags & 0xFF
    if role == 1:
        return m0, k0
    if role == 2:
        return n0, k0
    if role == 3:
        return m0, n0
    raise InvocationError(f"query_tile_sizes.2d: unsupported operand role in flags "
                          f"0x{flags & 0xFFFFFFFF:x}", StatusCode.INVALID_ARGUMENT)
