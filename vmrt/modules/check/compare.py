"""The comparisons behind the ``check`` module and the failure messages
iree-check-module prints for them (googletest's wording: ``Value of: ...``,
``Failed``, its container and character printers).

Semantics, as IREE's check module has them:

* ``expect_eq``: element types equal (exact type codes: ``i32`` is not
  ``si32``), shapes equal and the bytes of the two views equal.
* ``expect_almost_eq``: element types and shapes equal, then per element
  (in the element type's arithmetic: f16 in f32, f32 in f32, f64 in f64)
  ``lhs == rhs or (isfinite(rhs) and |lhs - rhs| <= atol + rtol * |rhs|)
  or both NaN``; the first failing element is reported.  Any other element
  type is ``INVALID_ARGUMENT; unsupported element type T``.
* ``expect_all_true``: every element of an integer (8-64 bit, signless,
  signed or unsigned) or f32/f64 view is nonzero.
"""
from __future__ import annotations

import math

from ...errors import HalError, StatusCode
from ...hal.buffer_view import BufferView, format_buffer_view, is_packed
from ...hal.element_types import element_type_code

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: googletest prints at most this many container elements
MAX_PRINTED_ELEMENTS = 32
#: iree-check-module prints each view with at most this many elements
MAX_FORMATTED_ELEMENTS = 1024

_ALL_TRUE_TYPES = frozenset({"i8", "si8", "ui8", "i16", "si16", "ui16", "i32", "si32",
                             "ui32", "i64", "si64", "ui64", "f32", "f64"})
_ALMOST_EQ_TYPES = frozenset({"f16", "f32", "f64"})


def _unsupported(element_type: str) -> HalError:
    return HalError(f"unsupported element type {element_type}", StatusCode.INVALID_ARGUMENT)


def _bytes(view: BufferView) -> bytes:
    """The elements' bytes (the storage's, without importing numpy; sub-byte
    types as their unpacked array's)."""
    if is_packed(view.element_type):
        return view.array.tobytes()
    return bytes(view.storage)


def _views_text(lhs: BufferView, rhs: BufferView) -> str:
    return ("\n  lhs:\n    " + format_buffer_view(lhs, MAX_FORMATTED_ELEMENTS)
            + "\n  rhs:\n    " + format_buffer_view(rhs, MAX_FORMATTED_ELEMENTS))


# ------------------------------------------------------------ expect_true ---
def expect_true_message(operand: int, expected: bool) -> str | None:
    """googletest's EXPECT_TRUE / EXPECT_FALSE text for an i32 operand, or
    None when the expectation holds."""
    if bool(operand) == expected:
        return None
    actual, want = ("true", "false") if operand else ("false", "true")
    note = f"Expected {operand} to be nonzero." if expected else f"Expected {operand} to be zero."
    return f"Value of: operand\n  Actual: {actual}\nExpected: {want}\n{note}"


# -------------------------------------------------------- expect_all_true ---
def _c_char_literal(code: int) -> tuple[str, bool]:
    """googletest's character literal for a byte; (text, was_hex_escaped)."""
    special = {0: "\\0", 0x27: "\\'", 0x5C: "\\\\", 7: "\\a", 8: "\\b", 0xC: "\\f",
               0xA: "\\n", 0xD: "\\r", 9: "\\t", 0xB: "\\v"}
    if code in special:
        return special[code], False
    if 0x20 <= code < 0x7F:
        return chr(code), False
    return f"\\x{code:X}", True


def _print_char(value: int, signed: bool) -> str:
    """How googletest prints a (signed or unsigned) char: ``'\\x1' (1)``."""
    byte = value & 0xFF
    text, hexed = _c_char_literal(byte)
    out = f"'{text}'"
    if value == 0:
        return out
    out += f" ({value}"
    if not (hexed or 1 <= value <= 9):
        out += ", 0x%X" % (value & 0xFFFFFFFF if signed and value < 0 else value)
    return out + ")"


def _print_float(value: float, digits: int) -> str:
    """googletest prints floats with the fewest digits that still read back."""
    if math.isnan(value):
        return "nan" if math.copysign(1.0, value) > 0 else "-nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    for precision in range(1, digits + 1):
        text = f"{value:.{precision}g}"
        if float(text) == value:
            return text
    return f"{value:.{digits}g}"


def _print_element(value: Any, element_type: str) -> str:
    if element_type in ("i8", "si8"):
        return _print_char(int(value), True)
    if element_type == "ui8":
        return _print_char(int(value), False)
    if element_type == "f32":
        return _print_float(float(value), 9)
    if element_type == "f64":
        return _print_float(float(value), 17)
    return str(int(value))


def _print_container(values: Any, element_type: str) -> str:
    parts = []
    for i, v in enumerate(values):
        if i == MAX_PRINTED_ELEMENTS:
            parts.append("...")
            break
        parts.append(_print_element(v, element_type))
    return "{ " + ", ".join(parts) + " }" if parts else "{}"


def expect_all_true_message(view: BufferView) -> str | None:
    """googletest's EXPECT_THAT(..., Each(Not(0))) text, or None when every
    element is nonzero; unsupported element types raise."""
    if view.element_type not in _ALL_TRUE_TYPES:
        raise _unsupported(view.element_type)
    flat = view.array.reshape(-1)
    zeros = (flat == 0).nonzero()[0]
    if not len(zeros):
        return None
    zero = "'\\0'" if view.element_type in ("i8", "si8", "ui8") else "0"
    return (f"Value of: ToSpan<T>(bytes)\nExpected: only contains elements that isn't equal "
            f"to {zero}\n  Actual: {_print_container(flat, view.element_type)}, whose element "
            f"#{int(zeros[0])} doesn't match")


# -------------------------------------------------------------- expect_eq ---
def expect_eq_message(lhs: BufferView, rhs: BufferView) -> str | None:
    """iree-check-module's ``Expected equality`` text, or None when equal."""
    types_eq = element_type_code(lhs.element_type) == element_type_code(rhs.element_type)
    shape_eq = lhs.shape == rhs.shape
    contents_eq = _bytes(lhs) == _bytes(rhs)
    if types_eq and shape_eq and contents_eq:
        return None
    text = "Expected equality of these values."
    if not types_eq:
        text += " Element types do not match."
    if not shape_eq:
        text += " Shapes do not match."
    if not contents_eq:
        text += " Contents does not match."
    return "Failed\n" + text + _views_text(lhs, rhs)


# ------------------------------------------------------- expect_almost_eq ---
def first_not_close(lhs: Any, rhs: Any, atol: float, rtol: float) -> int | None:
    """Index of the first element pair failing IREE's NumPy-style fuzzy
    comparison (computed in the arrays' arithmetic type), or None."""
    import numpy as np
    work = np.float64 if lhs.dtype == np.float64 else np.float32
    a = lhs.reshape(-1).astype(work)
    b = rhs.reshape(-1).astype(work)
    with np.errstate(all="ignore"):
        bound = work(atol) + work(rtol) * np.abs(b)
        close = (a == b) | (np.isfinite(b) & (np.abs(a - b) <= bound)) \
            | (np.isnan(a) & np.isnan(b))
    bad = (~close).nonzero()[0]
    return int(bad[0]) if len(bad) else None


def _g(value: float) -> str:
    """C++ ostream's default formatting of a float/double (``%g``)."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:g}"


def _e3(value: float) -> str:
    """``std::scientific`` with precision 3 (``%.3e``)."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:.3e}"


def expect_almost_eq_message(lhs: BufferView, rhs: BufferView, atol: float,
                             rtol: float) -> str | None:
    """iree-check-module's ``Expected near equality`` text, or None."""
    types_eq = element_type_code(lhs.element_type) == element_type_code(rhs.element_type)
    shape_eq = lhs.shape == rhs.shape
    bad = None
    if types_eq and shape_eq:
        if lhs.element_type not in _ALMOST_EQ_TYPES:
            raise _unsupported(lhs.element_type)
        bad = first_not_close(lhs.array, rhs.array, atol, rtol)
    if types_eq and shape_eq and bad is None:
        return None
    text = "Expected near equality of these values."
    if not types_eq:
        text += " Element types do not match."
    if not shape_eq:
        text += " Shapes do not match."
    if bad is not None:
        a = float(lhs.array.reshape(-1)[bad])
        b = float(rhs.array.reshape(-1)[bad])
        diff = b - a        # in double, as the C++ does (NaN signs are the host's)
        text += (f" Contents does not match to tolerance parameters atol={_g(atol)}, "
                 f"rtol={_g(rtol)}. The first failure occurs at index {bad} as the lhs value "
                 f"{_g(a)} differs from the rhs value {_g(b)} by {_e3(diff)}.")
    return "Failed\n" + text + _views_text(lhs, rhs)
