"""The ``check`` module's comparisons and messages (IREE's semantics and
googletest's wording), without a compiler: buffer views made in Python and
the module invoked through a context, as a program would call it."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.hal.buffer_view import BufferView
from vmrt.modules.check import CheckModule, failures
from vmrt.modules.check.compare import (
    expect_all_true_message,
    expect_almost_eq_message,
    expect_eq_message,
    expect_true_message,
    first_not_close,
)


def bv(values, elem):
    from vmrt.hal.element_types import dtype_of
    return BufferView(np.array(values, dtype_of(elem)), elem)


def test_expect_true_false():
    assert expect_true_message(3, True) is None
    assert expect_true_message(0, False) is None
    assert expect_true_message(0, True) == (
        "Value of: operand\n  Actual: false\nExpected: true\nExpected 0 to be nonzero.")
    assert expect_true_message(-2, False) == (
        "Value of: operand\n  Actual: true\nExpected: false\nExpected -2 to be zero.")


def test_expect_eq_compares_type_shape_and_bytes_separately():
    # same bytes, different element type (signless vs signed): only the type differs
    assert expect_eq_message(bv([1, 2], "i32"), bv([1, 2], "si32")) == (
        "Failed\nExpected equality of these values. Element types do not match.\n"
        "  lhs:\n    2xi32=1 2\n  rhs:\n    2xsi32=1 2")
    # same bytes, different shape
    flat, square = bv([1, 2, 3, 4], "i8"), bv([[1, 2], [3, 4]], "i8")
    assert expect_eq_message(flat, square) == (
        "Failed\nExpected equality of these values. Shapes do not match.\n"
        "  lhs:\n    4xi8=1 2 3 4\n  rhs:\n    2x2xi8=[1 2][3 4]")
    # bit-exact: -0.0 is not 0.0, and equal NaN bit patterns are equal
    assert expect_eq_message(bv([0.0], "f32"), bv([-0.0], "f32")).startswith(
        "Failed\nExpected equality of these values. Contents does not match.\n")
    assert expect_eq_message(bv([np.nan], "f32"), bv([np.nan], "f32")) is None
    assert expect_eq_message(bv(5, "i32"), bv(5, "i32")) is None


def test_expect_all_true_printing():
    assert expect_all_true_message(bv([1, -1], "i64")) is None
    assert expect_all_true_message(bv(list(range(40)), "i16")) == (
        "Value of: ToSpan<T>(bytes)\nExpected: only contains elements that isn't equal to 0\n"
        "  Actual: { " + ", ".join(str(i) for i in range(32)) + ", ... }, whose element #0 "
        "doesn't match")
    assert expect_all_true_message(bv([200, 0], "ui8")).endswith(
        "  Actual: { '\\xC8' (200), '\\0' }, whose element #1 doesn't match")
    with pytest.raises(vmrt.HalError, match="unsupported element type f16"):
        expect_all_true_message(bv([1.0], "f16"))


def test_almost_eq_tolerances_and_messages():
    a = bv([1.0, 2.0, 3.0], "f32")
    assert expect_almost_eq_message(a, bv([1.0, 2.00005, 3.0], "f32"), 1e-4, 0.0) is None
    assert expect_almost_eq_message(a, bv([1.0, 2.0, 3.003], "f32"), 0.0, 1e-3) is None
    assert expect_almost_eq_message(a, bv([1.0, 2.0, 3.004], "f32"), 0.0, 1e-3) == (
        "Failed\nExpected near equality of these values. Contents does not match to tolerance "
        "parameters atol=0, rtol=0.001. The first failure occurs at index 2 as the lhs value 3 "
        "differs from the rhs value 3.004 by 4.000e-03.\n"
        "  lhs:\n    3xf32=1 2 3\n  rhs:\n    3xf32=1 2 3.004")
    # the tolerance is one-sided: rtol scales |rhs|
    assert first_not_close(np.float32([9.0]), np.float32([10.0]), 0.0, 0.1) is None
    assert first_not_close(np.float32([10.0]), np.float32([9.0]), 0.0, 0.1) == 0


def test_almost_eq_type_and_shape_mismatch_skip_contents():
    assert expect_almost_eq_message(bv([1.0], "f32"), bv([1.0, 2.0], "f32"), 1e-4, 0.0) == (
        "Failed\nExpected near equality of these values. Shapes do not match.\n"
        "  lhs:\n    1xf32=1\n  rhs:\n    2xf32=1 2")
    assert expect_almost_eq_message(bv([1.0], "f32"), bv([1.0], "f64"), 1e-4, 0.0).startswith(
        "Failed\nExpected near equality of these values. Element types do not match.\n")
    with pytest.raises(vmrt.HalError, match="^INVALID_ARGUMENT; unsupported element type i32$"):
        expect_almost_eq_message(bv([1], "i32"), bv([1], "i32"), 1e-4, 0.0)


def test_almost_eq_f64_agrees_with_numpy_isclose():
    """For f64 IREE's comparison is NumPy's isclose(equal_nan=True)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        b = rng.normal(size=8) * 10.0 ** rng.integers(-3, 4)
        a = b + rng.normal(size=8) * 10.0 ** rng.integers(-8, 0)
        a[rng.integers(0, 8)] = rng.choice([np.nan, np.inf, -np.inf, a[0]])
        b[rng.integers(0, 8)] = rng.choice([np.nan, np.inf, b[1]])
        atol, rtol = float(rng.choice([0.0, 1e-6, 1e-3])), float(rng.choice([0.0, 1e-5, 1e-2]))
        bad = np.nonzero(~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True))[0]
        assert first_not_close(a, b, atol, rtol) == (int(bad[0]) if len(bad) else None)


def test_module_in_a_context_records_and_continues():
    inst = vmrt.Instance()
    seen = []
    check = CheckModule(inst, on_failure=seen.append)
    assert [(e.name, e.cconv) for e in check.exports] == [
        ("expect_true", "0i_v"), ("expect_false", "0i_v"), ("expect_all_true", "0rr_v"),
        ("expect_eq", "0rrr_v"), ("expect_almost_eq", "0rrrff_v")]
    with vmrt.Context(inst, [check]) as ctx:
        ctx.invoke("check.expect_true", [0])
        ctx.invoke("check.expect_eq", [None, bv([1], "i32"), bv([2], "i32")])
        ctx.invoke("check.expect_almost_eq", [None, bv([1.0], "f32"), bv([1.0], "f32"),
                                              1e-4, 0.0])
        got = failures(ctx)
        assert [f.function for f in got] == ["expect_true", "expect_eq"] == \
            [f.function for f in seen]
        with pytest.raises(vmrt.VmError, match="unsupported element type i32; while invoking "
                           "native function check.expect_almost_eq"):
            ctx.invoke("check.expect_almost_eq", [None, bv([1], "i32"), bv([1], "i32"), 0.0, 0.0])
        with pytest.raises(vmrt.VmError, match="lhs buffer view is null"):
            ctx.invoke("check.expect_eq", [None, None, bv([1], "i32")])
    with vmrt.Context(inst, [check]) as fresh:
        assert failures(fresh) == []            # per-context state
