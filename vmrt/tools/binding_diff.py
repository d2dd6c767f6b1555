"""Element-aware comparison of two arrays of the same bytes (dispatch
bindings, results), shared by ``vmrt run --compare_with``,
``--dump_dispatches`` replays and ``vmrt executable dispatch
--expected_output``.

A dispatch binding is raw bytes: its element type is taken from the export
name IREE gives a dispatch (``main_dispatch_0_matmul_4x8x16_f32`` ends in its
element type); when the name carries none, or the binding's length is not a
multiple of that type's size, the bytes are compared as ``i8``.  Floats match
when both are NaN or they differ by at most the type's threshold
(``--expected_f32_threshold``-style: ``f16`` also covers bf16 and the f8
types); everything else must be equal.
"""
from __future__ import annotations

from elfkit.support import DataRecord

from ..errors import UsageError, VmError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: the default absolute tolerances of iree-run-module's --expected_*_threshold
DEFAULT_THRESHOLDS = {"f16": 0.001, "f32": 0.0001, "f64": 0.0001}
#: how many differing elements a report lists
SHOWN = 4

def dispatch_element_type(flags: Any) -> str | None:
    """``--dispatch_element_type``: the element type of the bindings of a
    dispatch whose export name carries none (None: bytes)."""
    name = flags.values.get("dispatch_element_type")
    if name is None:
        return None
    # (imported here and below: a replay whose outputs match needs neither)
    from ..hal.element_types import dtype_of
    try:
        dtype_of(name)
    except VmError:
        raise UsageError(f"--dispatch_element_type: unknown element type '{name}'") from None
    return name


def typed(raw: Any, element_type: str | None) -> tuple[Any, str]:
    """``raw`` (uint8 bytes) viewed as ``element_type`` when its length allows,
    else as ``i8``; returns (array, the type used)."""
    import numpy as np

    from ..hal.element_types import dtype_of
    flat = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    if element_type is not None:
        dt = dtype_of(element_type)
        if flat.size % dt.itemsize == 0:
            return flat.view(dt), element_type
    return flat.view(np.int8), "i8"


class Difference(DataRecord, frozen=True):
    """Where two arrays differ."""
    element_type: str
    count: int                                # differing elements
    total: int                                # elements compared
    first: list[tuple[int, Any, Any]]         # (index, a, b) of the first few

    def describe(self, a_label: str = "a", b_label: str = "b") -> str:
        shown = "; ".join(f"[{i}] {a_label}={_fmt(x)} {b_label}={_fmt(y)}"
                          for i, x, y in self.first)
        return (f"{self.count} of {self.total} {self.element_type} elements differ; first: "
                f"{shown}")


def _fmt(v: Any) -> str:
    """``%g`` text; floats that %g rounds are shown with 9 digits (so two
    values that differ never print the same)."""
    if isinstance(v, float):
        from .function_io import format_g
        text = format_g(v)
        return text if v != v or float(text) == v else f"{v:.9g}"
    return str(v)


def is_float(element_type: str) -> bool:
    return element_type.startswith(("f", "bf"))


def diff(a: Any, b: Any, element_type: str,
         thresholds: dict[str, float] | None = None) -> Difference | None:
    """None when ``a`` and ``b`` (same dtype and size) agree element by element."""
    import numpy as np
    a = np.asarray(a).reshape(-1)
    b = np.asarray(b).reshape(-1)
    if a.size != b.size:
        raise ValueError(f"comparing {a.size} with {b.size} elements")
    th = DEFAULT_THRESHOLDS if thresholds is None else thresholds
    if is_float(element_type):
        thr = th.get(element_type, th.get("f16", 0.0))
        af, bf = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~(np.isnan(af) & np.isnan(bf)) & ~(np.abs(af - bf) <= thr)
            bad &= ~(af == bf)                 # equal infinities
    else:
        bad = a != b
    idx = np.flatnonzero(bad)
    if idx.size == 0:
        return None
    conv = float if is_float(element_type) else int
    first = [(int(i), conv(a[i]), conv(b[i])) for i in idx[:SHOWN]]
    return Difference(element_type, int(idx.size), int(a.size), first)


def diff_bytes(a: Any, b: Any, element_type: str | None,
               thresholds: dict[str, float] | None = None) -> Difference | None:
    """:func:`diff` of two raw byte arrays viewed as ``element_type``."""
    ta, used = typed(a, element_type)
    tb, _ = typed(b, element_type)
    return diff(ta, tb, used, thresholds)
