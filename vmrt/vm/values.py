"""Conversions between host (Python/numpy) values and VM values."""
from __future__ import annotations

import math
import struct
from collections.abc import Callable

from ..errors import ArgumentError, InvocationError, StatusCode
from .buffer import Buffer
from .list import VmList
from .types import RefObject, type_of

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_F32 = struct.Struct("<f")


def wrap_i32(v: int) -> int:
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def wrap_i64(v: int) -> int:
    return ((v + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000


def round_f32(x: float) -> float:
    """Round a Python float to the nearest f32 (inf on overflow)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _as_int(v: Any, code: str) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    try:
        import numpy as np
        if isinstance(v, np.integer) or (isinstance(v, np.ndarray) and v.shape == ()
                                         and v.dtype.kind in "iub"):
            return int(v)
    except ImportError:  # pragma: no cover
        pass
    raise ArgumentError(f"expected an integer for cconv type `{code}` but got {type(v).__name__}",
                  StatusCode.INVALID_ARGUMENT)


def _as_float(v: Any, code: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    try:
        import numpy as np
        if isinstance(v, (np.floating, np.integer)) or \
                (isinstance(v, np.ndarray) and v.shape == ()):
            return float(v)
    except ImportError:  # pragma: no cover
        pass
    raise ArgumentError(f"expected a number for cconv type `{code}` but got {type(v).__name__}",
                  StatusCode.INVALID_ARGUMENT)


def to_vm(v: Any, code: str) -> Any:
    """Coerce one host value to the VM representation of cconv ``code``."""
    if code == "i":
        return wrap_i32(_as_int(v, code))
    if code == "I":
        return wrap_i64(_as_int(v, code))
    if code == "f":
        return round_f32(_as_float(v, code))
    if code == "F":
        return _as_float(v, code)
    if code == "r":
        if v is None or isinstance(v, RefObject) or type_of(v) is not None:
            return v
        if isinstance(v, (bytes, bytearray, memoryview)):
            return Buffer(bytearray(v))
        if isinstance(v, str):
            return Buffer(bytearray(v.encode()))
        if isinstance(v, (list, tuple)):
            return VmList(None, [_variant(x) for x in v])
        try:
            import numpy as np
            if isinstance(v, np.ndarray):
                return Buffer(bytearray(np.ascontiguousarray(v).tobytes()))
        except ImportError:  # pragma: no cover
            pass
        raise ArgumentError(f"cannot pass a {type(v).__name__} as a "
                            "ref", StatusCode.INVALID_ARGUMENT)
    raise ArgumentError(f"unsupported cconv type `{code}`", StatusCode.INVALID_ARGUMENT)


def _variant(x: Any) -> Any:
    if isinstance(x, (bool, int)):
        if -(1 << 31) <= int(x) < (1 << 31):
            return ("i32", int(x))
        return ("i64", wrap_i64(int(x)))
    if isinstance(x, float):
        return ("f32", round_f32(x))
    return to_vm(x, "r")


def convert_results(results: Any, codes: str, name: str) -> tuple[Any, ...]:
    """A called function's results as VM values of ``codes`` (checked count;
    ``name`` names the function in the error)."""
    if results is None:
        results = []
    if len(results) != len(codes):
        raise InvocationError(f"import {name} returned {len(results)} results, "
                              f"cconv expects {len(codes)}", StatusCode.INTERNAL)
    return tuple(to_vm(v, c) for v, c in zip(results, codes))


def result_converter(codes: str, name: str) -> Callable[[Any], tuple[Any, ...]]:
    """:func:`convert_results` for ``codes``, with fast paths for the common
    shapes (no result, one ref, one integer already in range)."""
    def generic(res: Any) -> tuple[Any, ...]:
        return convert_results(res, codes, name)

    if codes == "":
        def none(res: Any) -> tuple[Any, ...]:
            if not res:
                return ()
            return convert_results(res, codes, name)
        return none
    if codes == "r":
        def ref(res: Any) -> tuple[Any, ...]:
            if res is not None and len(res) == 1:
                v = res[0]
                if v is None or isinstance(v, RefObject):
                    return (v,)
            return convert_results(res, codes, name)
        return ref
    if codes in ("i", "I"):
        wrap = wrap_i32 if codes == "i" else wrap_i64

        def integer(res: Any) -> tuple[Any, ...]:
            if res is not None and len(res) == 1:
                v = res[0]
                if type(v) is int:
                    return (wrap(v),)
            return convert_results(res, codes, name)
        return integer
    return generic
