"""Helpers for writing conformance programs whose expected values come from
NumPy (an oracle independent of vmrt and of IREE).

A generator script builds a :class:`Program` of test functions; each
function takes its inputs through ``util.unfoldable_constant`` (so the
compiler cannot fold the computation away) and checks its result against a
constant computed here with NumPy."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

_FLOAT = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _scalar(x: Any, ety: str) -> str:
    if ety == "i1":
        return "true" if bool(x) else "false"
    if ety.startswith("i"):
        return str(int(x))
    v = float(x)
    if not np.isfinite(v):
        raise ValueError(f"non-finite {v} in a dense literal")
    return flit(v)


def flit(v: float) -> str:
    """A float literal MLIR accepts (it wants a ``.`` before an exponent)."""
    s = repr(float(v))
    return s.replace("e", ".0e") if "e" in s and "." not in s else s


def _nested(a: np.ndarray, ety: str) -> str:
    if a.ndim == 0:
        return _scalar(a.item(), ety)
    return "[" + ", ".join(_nested(x, ety) for x in a) + "]"


def ttype(shape: tuple[int, ...], ety: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + ety + ">"


def dense(a: Any, ety: str) -> str:
    """``dense<...> : tensor<...>`` for the array ``a`` (bf16 from float32)."""
    a = np.asarray(a)
    return f"dense<{_nested(a, ety)}> : {ttype(a.shape, ety)}"


def as_type(a: Any, ety: str) -> np.ndarray:
    """``a`` rounded/wrapped to ``ety`` the way the MLIR type holds it."""
    a = np.asarray(a)
    if ety in _FLOAT:
        return a.astype(_FLOAT[ety])
    if ety == "bf16":
        import ml_dtypes
        return a.astype(ml_dtypes.bfloat16).astype(np.float32)
    if ety == "i1":
        return a.astype(bool)
    bits = int(ety[1:])

    def wrap(v: Any) -> int:
        v = int(v) & ((1 << bits) - 1)
        return v - (1 << bits) if v >= 1 << (bits - 1) else v
    flat = [wrap(v) for v in a.reshape(-1).tolist()]
    return np.array(flat, dtype=np.int64).reshape(a.shape)


class Program:
    def __init__(self, header: str = "") -> None:
        self.header = header
        self.funcs: list[str] = []

    def func(self, name: str, inputs: list[tuple[Any, str]], body: str,
             expected: Any, ety: str, *, almost: bool = False, atol: float | None = None,
             result: str = "%r") -> None:
        """A test function: ``%a0, %a1, ...`` are the inputs, ``body``
        computes ``result``, which must equal ``expected`` (of element type
        ``ety``; ``almost`` compares floats with a tolerance)."""
        lines = [f"func.func @{name}() {{"]
        for i, (arr, t) in enumerate(inputs):
            lines.append(f"  %a{i} = util.unfoldable_constant {dense(as_type(arr, t), t)}")
        lines.extend("  " + ln.strip() for ln in body.strip().splitlines())
        exp = as_type(expected, ety)
        tt = ttype(exp.shape, ety)
        if almost:
            tol = "" if atol is None else f", atol {flit(atol)}"
            lines.append(f"  check.expect_almost_eq_const({result}, {dense(exp, ety)}{tol}) : {tt}")
        else:
            lines.append(f"  check.expect_eq_const({result}, {dense(exp, ety)}) : {tt}")
        lines.append("  return")
        lines.append("}")
        self.funcs.append("\n".join(lines))

    def raw(self, text: str) -> None:
        self.funcs.append(text.strip())

    def text(self) -> str:
        head = self.header.strip()
        return (head + "\n" if head else "") + "\n".join(self.funcs) + "\n"

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text())
