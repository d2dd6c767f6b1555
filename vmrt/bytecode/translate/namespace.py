"""What translated code runs in: the global names the generated Python refers to
(the runtime helpers of :mod:`vmrt.bytecode.translate.runtime`, struct packers, the
register reinterpretations) and turning compiled code into the module's
functions.  Kept apart from the translator so a module whose translation comes
from the cache (:mod:`vmrt.bytecode.transcache`) never imports it."""
from __future__ import annotations

import itertools
import operator
import struct
from collections.abc import Callable

from ...errors import LoadError, StatusCode, VmError
from . import runtime

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

__all__ = ["REINTERPRET", "WIDTH", "compile_functions", "function_code", "functions_of",
           "lazy_functions", "to_float", "to_int"]

#: the packers of the register widths (``ST_i32``, ``UN_i32``, ``PK_i32`` ...)
WIDTH = {"i32": struct.Struct("<i"), "i64": struct.Struct("<q"),
         "f32": struct.Struct("<f"), "f64": struct.Struct("<d")}
_F32, _F64 = WIDTH["f32"], WIDTH["f64"]


def to_int(v: Any, bits: int, src_bits: int) -> Any:
    """``v`` read as a ``bits``-wide signed integer: a float gives its IEEE
    bit pattern (``src_bits`` wide: 32 for an f32 value, 64 for f64)."""
    if type(v) is float:
        try:
            raw = (_F32 if src_bits == 32 else _F64).pack(v)
        except OverflowError:         # not an f32 value after all
            raw = _F64.pack(v)
        v = int.from_bytes(raw, "little")
    elif type(v) is not int:
        return v
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def to_float(v: Any, bits: int) -> Any:
    """``v`` read as a ``bits``-wide float: an integer's low bits are the
    IEEE bit pattern."""
    if type(v) is not int:
        return v
    raw = (v & ((1 << bits) - 1)).to_bytes(bits // 8, "little")
    return (_F32 if bits == 32 else _F64).unpack(raw)[0]


def pair(lo: Any, hi: Any) -> Any:
    """The i64 of a register pair from its halves' integer bits (the low
    register may hold a whole i64: its low 32 bits count)."""
    if type(lo) is float:           # a float's bits (only a damaged program mixes them)
        lo = to_int(lo, 64, 32)
    if type(hi) is float:
        hi = to_int(hi, 32, 32)
    return to_int(((hi & 0xFFFFFFFF) << 32) | (lo & 0xFFFFFFFF), 64, 64)


def high(v: Any) -> Any:
    """The high 32-bit register of the i64 ``v``, as an i32."""
    if type(v) is float:
        v = to_int(v, 64, 64)
    return to_int(v >> 32, 32, 32)


#: what the translated code calls, by name (added to its namespace)
REINTERPRET = {"REINT_I": to_int, "REINT_F": to_float, "PAIR": pair, "HIGH": high}


def _namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {name: getattr(runtime, name) for name in dir(runtime)
                          if not name.startswith("_")}
    for k, f1 in runtime.FMATH.items():
        ns[f"FM_{k}"] = f1
    for k, f2 in runtime.FMATH2.items():
        ns[f"FM_{k}"] = f2
    for k, st in WIDTH.items():
        ns[f"ST_{k}"] = st
        ns[f"UN_{k}"] = st.unpack_from
        ns[f"PK_{k}"] = st.pack_into
    ns.update(REINTERPRET)
    ns["REPEAT"] = itertools.repeat
    ns["LEN_HINT"] = operator.length_hint
    ns["_VmError"] = VmError
    ns["_StatusCode"] = StatusCode
    return ns


def function_code(sources: list[str], filename: str) -> CodeType:
    """The code object defining ``f0`` .. ``fN-1`` from their sources."""
    return compile("\n".join(sources), filename, "exec")


def functions_of(code: CodeType, ns_extra: dict[str, Any], count: int) -> list[Callable[..., Any]]:
    """Run ``code`` (from :func:`function_code`) in a fresh namespace holding the
    runtime names and ``ns_extra``; its functions ``f0`` .. ``f{count-1}``."""
    ns = _namespace()
    ns.update(ns_extra)
    exec(code, ns)
    return [ns[f"f{i}"] for i in range(count)]


def compile_functions(sources: list[str], ns_extra: dict[str, Any],
                      filename: str) -> list[Callable[..., Any]]:
    return functions_of(function_code(sources, filename), ns_extra, len(sources))


def lazy_functions(count: int, ns_extra: dict[str, Any], filename: str,
                   source_of: Callable[[int], str], code_of: Callable[[int], CodeType | None],
                   compiled: Callable[[int, CodeType], None]) -> list[Callable[..., Any]]:
    """Functions ``f0`` .. ``f{count-1}``, each compiled on its first call:
    until then ``fK`` (in the list and in the namespace the functions call
    each other through) is a stand-in that gets the code -- from
    ``code_of(K)`` (the cache), else by compiling ``source_of(K)`` (which may
    translate it then), then given to ``compiled(K, code)`` -- puts the real
    function in its place and calls it."""
    ns = _namespace()
    ns.update(ns_extra)
    fns: list[Callable[..., Any]] = []
    pending = set(range(count))

    def real(k: int) -> Callable[..., Any]:
        if k in pending:
            code = code_of(k)
            if code is None:
                source = source_of(k)
                try:
                    code = compile(source, filename, "exec")
                except (SyntaxError, RecursionError, MemoryError) as e:  # pragma: no cover
                    raise LoadError(f"failed to translate function {k}: {e}") from None
                compiled(k, code)
            exec(code, ns)
            fns[k] = ns[f"f{k}"]
            pending.discard(k)
        return fns[k]

    fns += map(_StandIn, range(count), itertools.repeat(real, count))
    ns.update(zip([f"f{k}" for k in range(count)], fns))
    return fns


class _StandIn:
    """Function ``fK`` until its first call (see :func:`lazy_functions`): one
    small object per function (a closure would be three: the function, its
    cell and the cells' tuple, all of them for the cyclic GC to scan)."""

    __slots__ = ("k", "real")

    def __init__(self, k: int, real: Callable[[int], Callable[..., Any]]):
        self.k = k
        self.real = real

    @property
    def __name__(self) -> str:
        return f"f{self.k}"

    def __call__(self, *args: Any) -> Any:
        return self.real(self.k)(*args)
