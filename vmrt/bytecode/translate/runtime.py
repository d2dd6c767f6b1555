"""Runtime helpers called from translated bytecode (see codegen.py).

Numeric semantics follow the IREE VM: two's-complement wrapping integers,
shift amounts masked, f32 results rounded to single precision after every
operation, f32->int casts rounding half away from zero (``lroundf``).
Deliberate differences from IREE are listed in docs/semantics.md.
"""
from __future__ import annotations

import math
import struct

from ...errors import InvocationError, StatusCode, VmError
from ...vm.buffer import Buffer
from ...vm.list import VmList
from ...vm.types import OPAQUE_TYPE, RefType, type_of
from ...vm.values import convert_results, wrap_i32, wrap_i64
from ...vm.values import round_f32 as rf32
from .calls import variadic_spans

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF
INF = math.inf
# x86's "default NaN" (what invalid operations produce) has its sign bit set;
# C's printf shows it as -nan, and so does vmrt's formatting.
NAN = -math.nan

_pf = struct.Struct("<f")
_pi = struct.Struct("<i")
_pd = struct.Struct("<d")
_pq = struct.Struct("<q")


def err(code: StatusCode, msg: str) -> VmError:
    return InvocationError(msg, code)


# ------------------------------------------------------------ integers ----
def divs32(a: int, b: int) -> int:
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer division by zero")
    q = abs(a) // abs(b)
    return wrap_i32(q if (a < 0) == (b < 0) else -q)


def rems32(a: int, b: int) -> int:
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer remainder by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def divu32(a: int, b: int) -> int:
    b &= M32
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer division by zero")
    return wrap_i32((a & M32) // b)


def remu32(a: int, b: int) -> int:
    b &= M32
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer remainder by zero")
    return wrap_i32((a & M32) % b)


def divs64(a: int, b: int) -> int:
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer division by zero")
    q = abs(a) // abs(b)
    return wrap_i64(q if (a < 0) == (b < 0) else -q)


def rems64(a: int, b: int) -> int:
    return rems32(a, b)


def divu64(a: int, b: int) -> int:
    b &= M64
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer division by zero")
    return wrap_i64((a & M64) // b)


def remu64(a: int, b: int) -> int:
    b &= M64
    if b == 0:
        raise err(StatusCode.INVALID_ARGUMENT, "integer remainder by zero")
    return wrap_i64((a & M64) % b)


def ctlz32(a: int) -> int:
    return 32 - (a & M32).bit_length()


def ctlz64(a: int) -> int:
    return 64 - (a & M64).bit_length()


# -------------------------------------------------------------- floats ----
def fdiv(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        if a != a:
            return a
        if a == 0.0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)


def frem(a: float, b: float) -> float:
    """IEEE remainder (C remainderf/remainder)."""
    if a != a:
        return a
    if b != b:
        return b
    if math.isinf(a) or b == 0.0:
        return NAN
    if math.isinf(b):
        return a
    return math.remainder(a, b)


def fceil(a: float) -> float:
    return a if (a != a or math.isinf(a)) else math.copysign(float(math.ceil(a)), a)


def ffloor(a: float) -> float:
    return a if (a != a or math.isinf(a)) else math.copysign(float(math.floor(a)), a)


def fround(a: float) -> float:
    """Round half away from zero."""
    if a != a or math.isinf(a):
        return a
    r = math.floor(abs(a) + 0.5)
    if r - abs(a) > 0.5:   # guard against a+0.5 rounding up at large magnitudes
        r -= 1
    return math.copysign(float(r), a)


def froundeven(a: float) -> float:
    if a != a or math.isinf(a):
        return a
    return math.copysign(float(round(a)), a)


def lround(a: float) -> int:
    """C ``lroundf``; NaN/out of range give the x86 'integer indefinite'."""
    if a != a or math.isinf(a):
        return -0x8000000000000000
    r = fround(a)
    v = int(r)
    if not -(1 << 63) <= v < (1 << 63):
        return -0x8000000000000000
    return v


def f2si32(a: float) -> int:
    return wrap_i32(lround(a))


def f2ui32(a: float) -> int:
    return wrap_i32(lround(a))


def f2si64(a: float) -> int:
    return wrap_i64(lround(a))


def f2ui64(a: float) -> int:
    """Round, then C's float->uint64 conversion as x86 compilers emit it:
    [-2^63, 2^64) wraps into i64, anything else is INT64_MIN."""
    if a != a or math.isinf(a):
        return -0x8000000000000000
    v = int(fround(a))
    if -(1 << 63) <= v < (1 << 64):
        return wrap_i64(v)
    return -0x8000000000000000


def d2ui64(a: float) -> int:
    """f64 -> ui64 as the runtime does it (llround: out of i64 range is INT64_MIN)."""
    return lround(a)


def fmin(a: float, b: float) -> float:
    return b if b < a else a


def fmax(a: float, b: float) -> float:
    return b if b > a else a


def bits_i32_f32(a: int) -> float:
    return _pf.unpack(_pi.pack(a))[0]


def bits_f32_i32(a: float) -> int:
    return _pi.unpack(_pf.pack(a))[0]


def bits_i64_f64(a: int) -> float:
    return _pd.unpack(_pq.pack(a))[0]


def bits_f64_i64(a: float) -> int:
    return _pq.unpack(_pd.pack(a))[0]


def _math1(fn: Callable[[float], float]) -> Callable[[float], float]:
    def f(a: float) -> float:
        if a != a:
            return a
        try:
            return fn(a)
        except (ValueError, ZeroDivisionError):
            return NAN
        except OverflowError:
            return INF
    return f


def _exp(a: float) -> float:
    try:
        return math.exp(a)
    except OverflowError:
        return INF


def _log(a: float) -> float:
    if a == 0.0:
        return -INF
    if a != a:
        return a
    if a < 0.0:
        return NAN
    return INF if math.isinf(a) else math.log(a)


def _log2(a: float) -> float:
    r = _log(a)
    return r if (r != r or math.isinf(r)) else math.log2(a)


def _log10(a: float) -> float:
    if a < 0.0:
        return math.nan     # glibc's log10f gives +NaN here (logf/log2f give -NaN)
    r = _log(a)
    return r if (r != r or math.isinf(r)) else math.log10(a)


def _log1p(a: float) -> float:
    if a == -1.0:
        return -INF
    if a != a:
        return a
    if a < -1.0:
        return NAN
    return INF if math.isinf(a) else math.log1p(a)


def _exp2(a: float) -> float:
    try:
        return 2.0 ** a
    except OverflowError:
        return INF


def _expm1(a: float) -> float:
    try:
        return math.expm1(a)
    except OverflowError:
        return INF


def _sqrt(a: float) -> float:
    if a != a or a == 0.0:
        return a
    return NAN if a < 0.0 else math.sqrt(a)


def _rsqrt(a: float) -> float:
    if a == 0.0:
        return math.copysign(INF, a)
    if a != a:
        return a
    return NAN if a < 0.0 else 1.0 / math.sqrt(a)


def _pow(a: float, b: float) -> float:
    if a != a or b != b:
        return math.pow(a, b) if (a == 1.0 or b == 0.0) else (a if a != a else b)
    try:
        r = math.pow(a, b)
    except ValueError:
        return NAN
    except (OverflowError, ZeroDivisionError):
        return INF
    return r


def _atan2(a: float, b: float) -> float:
    return math.atan2(a, b)


FMATH = {
    "atan": _math1(math.atan), "cos": _math1(math.cos), "sin": _math1(math.sin),
    "exp": _exp, "exp2": _exp2, "expm1": _expm1, "log": _log, "log10": _log10,
    "log1p": _log1p, "log2": _log2, "rsqrt": _rsqrt, "sqrt": _sqrt,
    "tanh": _math1(math.tanh), "erf": _math1(math.erf),
}
FMATH2 = {"atan2": _atan2, "pow": _pow}


def rfma32(a: float, b: float, c: float) -> float:
    return rf32(a * b + c)


# --------------------------------------------------------------- globals ----
def gload(rw: bytearray, st: struct.Struct, off: int) -> Any:
    if off < 0 or off + st.size > len(rw):
        raise err(StatusCode.OUT_OF_RANGE, f"global byte_offset out of range: {off} "
                  f"(rwdata={len(rw)})")
    return st.unpack_from(rw, off)[0]


def gstore(rw: bytearray, st: struct.Struct, off: int, v: float) -> None:
    if off < 0 or off + st.size > len(rw):
        raise err(StatusCode.OUT_OF_RANGE, f"global byte_offset out of range: {off} "
                  f"(rwdata={len(rw)})")
    st.pack_into(rw, off, v)


def grefload(refs: list[Any], idx: int) -> Any:
    if idx < 0 or idx >= len(refs):
        raise err(StatusCode.OUT_OF_RANGE, f"global ref ordinal out of range: {idx} "
                  f"(table={len(refs)})")
    return refs[idx]


def grefstore(refs: list[Any], idx: int, v: object, want: object) -> None:
    if idx < 0 or idx >= len(refs):
        raise err(StatusCode.OUT_OF_RANGE, f"global ref ordinal out of range: {idx} "
                  f"(table={len(refs)})")
    refcheck(v, want)
    refs[idx] = v


def refcheck(v: object, want: object) -> None:
    if v is not None and isinstance(want, RefType) and want is not OPAQUE_TYPE \
            and type_of(v) is not want:
        raise err(StatusCode.INVALID_ARGUMENT, "source ref type mismatch")


def cast_ref(v: Any, want: object) -> Any:
    if v is not None and isinstance(want, RefType) and want is not OPAQUE_TYPE \
            and type_of(v) is not want:
        raise err(StatusCode.INVALID_ARGUMENT, "ref type mismatch")
    return v


# --------------------------------------------------------------- buffers ----
def _buf(b: object, what: str = "buffer") -> Buffer:
    if b is None:
        raise err(StatusCode.INVALID_ARGUMENT, f"{what} is null")
    if not isinstance(b, Buffer):
        raise err(StatusCode.INVALID_ARGUMENT, f"{what} is not a vm.buffer")
    return b


def bload(b: object, kind: str, off: int) -> Any:
    return _buf(b, "source_buffer").load(kind, off)


def bstore(b: object, kind: str, off: int, v: float) -> None:
    _buf(b, "target_buffer").store(kind, off, v)


def bfill(b: object, kind: str, off: int, n: int, v: float) -> None:
    _buf(b, "target_buffer").fill(kind, off, n, v)


def balloc(n: int, align: int) -> Buffer:
    return Buffer.alloc(n)


def bclone(b: object, off: int, n: int, align: int) -> Buffer:
    return _buf(b, "source_buffer").clone(off, n)


def blen(b: object) -> int:
    return len(_buf(b))


def bcopy(src: object, soff: int, dst: object, doff: int, n: int) -> None:
    _buf(src, "source_buffer").copy_to(soff, _buf(dst, "target_buffer"), doff, n)


def bcompare(a: object, aoff: int, b: object, boff: int, n: int) -> int:
    return _buf(a, "lhs_buffer").compare(aoff, _buf(b, "rhs_buffer"), boff, n)


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(data: bytes, k0: int = 0x0706050403020100, k1: int = 0x0F0E0D0C0B0A0908) -> int:
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):  # one SipRound: one half-round per line, as in the reference
            v0 = (v0 + v1) & M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)  # noqa: E702
            v2 = (v2 + v3) & M64; v3 = _rotl(v3, 16); v3 ^= v2  # noqa: E702
            v0 = (v0 + v3) & M64; v3 = _rotl(v3, 21); v3 ^= v0  # noqa: E702
            v2 = (v2 + v1) & M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)  # noqa: E702
    n = len(data)
    end = n - (n % 8)
    for i in range(0, end, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v3 ^= m
        rounds(2)
        v0 ^= m
    b = ((n & 0xFF) << 56) | int.from_bytes(data[end:], "little")
    v3 ^= b
    rounds(2)
    v0 ^= b
    v2 ^= 0xFF
    rounds(4)
    return (v0 ^ v1 ^ v2 ^ v3) & M64


def bhash(b: object, off: int, n: int) -> int:
    buf = _buf(b, "source_buffer")
    buf.check_range(off, n)
    return wrap_i64(siphash24(bytes(buf.data[off:off + n])))


# ----------------------------------------------------------------- lists ----
def _list(v: object) -> VmList:
    if v is None:
        raise err(StatusCode.INVALID_ARGUMENT, "list is null")
    if not isinstance(v, VmList):
        raise err(StatusCode.INVALID_ARGUMENT, "ref is not a vm.list")
    return v


def lalloc(et: Any, cap: int) -> VmList:
    if cap < 0:
        raise err(StatusCode.INVALID_ARGUMENT, f"invalid list capacity {cap}")
    return VmList(None if et is OPAQUE_TYPE else et)


def lreserve(lst: object, n: int) -> None:
    _list(lst)


def lsize(lst: object) -> int:
    return len(_list(lst).items)


def lresize(lst: object, n: int) -> None:
    _list(lst).resize(n)


def lget(lst: object, i: int, kind: str) -> Any:
    return _list(lst).get_value(i, kind)


def lset(lst: object, i: int, kind: str, v: float) -> None:
    _list(lst).set_value(i, kind, v)


def lgetref(lst: object, i: int, want: object) -> Any:
    return _list(lst).get_ref(i, want if isinstance(want, RefType) and want is not OPAQUE_TYPE
                              else None)


def lsetref(lst: object, i: int, v: object) -> None:
    _list(lst).set_ref(i, v)


# ----------------------------------------------------------------- calls ----
def fail(status: int, msg: str) -> VmError:
    code = status & 0x1F
    if code == 0:
        return err(StatusCode.INTERNAL,
                   f"vm.fail with OK status (message '{msg}'); refusing to run past it")
    return InvocationError(msg, StatusCode.from_int(code))


def callimp_variadic(state: Any, k: int, segments: tuple[Any, ...],
                     flat: list[Any]) -> tuple[Any, ...]:
    """Call a variadic import: regroup each ``C…D`` span into a list (of
    tuples when a span holds more than one value)."""
    bound = state.imports[k]
    if bound is None:
        decl = state.module.imports[k]
        raise err(StatusCode.NOT_FOUND,
                  f"optional import `{decl.full_name}` (ordinal {k}) not resolved")
    spans, res_codes = variadic_spans(bound.cconv)
    args: list[Any] = []
    pos = 0
    for seg, n in enumerate(spans):
        if n == 0:
            args.append(flat[pos])
            pos += 1
            continue
        count = max(segments[seg] if seg < len(segments) else 0, 0)
        if n == 1:
            args.append(flat[pos:pos + count])
        else:
            args.append([tuple(flat[pos + i * n:pos + (i + 1) * n]) for i in range(count)])
        pos += count * n
    try:
        res = bound(args)
    except VmError as e:
        e.annotate("while calling import")
        raise
    return convert_results(res, res_codes, bound.name)
