"""Integer and float semantics on random inputs: numpy is the oracle for
wrapping integer arithmetic and IEEE f32 arithmetic; a smaller sample is
checked against iree-run-module."""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, vmrt_run

pytestmark = needs_iree

i32s = st.integers(-(1 << 31), (1 << 31) - 1)
i64s = st.integers(-(1 << 63), (1 << 63) - 1)
f32s = st.floats(width=32, allow_nan=False)


@pytest.fixture(scope="module")
def ctx(compile_mlir):
    inst = vmrt.Instance()
    mods = [vmrt.BytecodeModule.load(inst, compile_mlir("ints.mlir"))]
    c = vmrt.Context(inst, mods)
    inst2 = vmrt.Instance()
    c2 = vmrt.Context(inst2, [vmrt.BytecodeModule.load(inst2, compile_mlir("floats.mlir"))])
    return c, c2


def n32(v):
    return np.array([v], dtype=np.int64).astype(np.int32)


@settings(max_examples=400, deadline=None)
@given(a=i32s, b=i32s)
def test_i32_ring_ops(ctx, a, b):
    c = ctx[0]
    A, B = n32(a), n32(b)
    with np.errstate(over="ignore"):
        assert c.invoke("module.add32", [a, b]) == [int((A + B)[0])]
        assert c.invoke("module.sub32", [a, b]) == [int((A - B)[0])]
        assert c.invoke("module.mul32", [a, b]) == [int((A * B)[0])]
    sh = b & 31
    U = A.view(np.uint32)
    assert c.invoke("module.bits32", [a, b]) == [
        int((A & B)[0]), int((A | B)[0]), int((A ^ B)[0]),
        int((U << np.uint32(sh)).view(np.int32)[0]), int((A >> sh)[0]),
        int((U >> np.uint32(sh)).view(np.int32)[0])]
    UB = B.view(np.uint32)
    assert c.invoke("module.cmp32", [a, b]) == [int(a < b), int(U[0] < UB[0]), int(a >= b),
                                               int(U[0] > UB[0]), int(a == b), int(a != b)]
    assert c.invoke("module.minmax32", [a, b]) == [
        min(a, b), max(a, b), int(np.minimum(U, UB).view(np.int32)[0]),
        int(np.maximum(U, UB).view(np.int32)[0])]


@settings(max_examples=400, deadline=None)
@given(a=i32s, b=i32s.filter(lambda v: v != 0))
def test_i32_division(ctx, a, b):
    if a == -(1 << 31) and b == -1:
        return                      # C undefined behaviour; see README
    A, B = np.array([a], np.int64), np.array([b], np.int64)
    rem = int(np.fmod(A, B)[0])                 # C remainder: sign of the dividend
    quo = (a - rem) // b
    ua, ub = a & 0xFFFFFFFF, b & 0xFFFFFFFF
    def w(v: int) -> int:
        return v - (1 << 32) if v >= 1 << 31 else v
    assert ctx[0].invoke("module.divrem32", [a, b]) == [quo, rem, w(ua // ub), w(ua % ub)]


@settings(max_examples=300, deadline=None)
@given(a=i64s, b=i64s)
def test_i64_ops(ctx, a, b):
    A, B = np.array([a], np.int64), np.array([b], np.int64)
    with np.errstate(over="ignore"):
        assert ctx[0].invoke("module.arith64", [a, b]) == [
            int((A + B)[0]), int((A - B)[0]), int((A * B)[0]), a ^ b, max(a, b)]
    sh = b & 63
    U = A.view(np.uint64)
    assert ctx[0].invoke("module.shift64", [a, b]) == [
        int((U << np.uint64(sh)).view(np.int64)[0]), a >> sh,
        int((U >> np.uint64(sh)).view(np.int64)[0]), int(a < b),
        int(a & ((1 << 64) - 1) < b & ((1 << 64) - 1))]


def f32(x):
    return float(np.float32(x))


@settings(max_examples=400, deadline=None)
@given(a=f32s, b=f32s)
def test_f32_arith_is_ieee_single(ctx, a, b):
    A, B = np.float32(a), np.float32(b)
    with np.errstate(all="ignore"):
        want = [float(A + B), float(A - B), float(A * B), float(A / B)]
    got = ctx[1].invoke("module.arith", [a, b])[:4]
    for g, w in zip(got, want):
        assert struct.pack("<f", g) == struct.pack("<f", w) or (math.isnan(g) and math.isnan(w))


@settings(max_examples=25, deadline=None)
@given(a=i32s, b=i32s.filter(lambda v: v not in (0, -1)))
def test_i32_sample_against_iree(compile_mlir, a, b):
    vmfb = compile_mlir("ints.mlir")
    for fn in ("divrem32", "bits32"):
        args = [f"--module={vmfb}", f"--function={fn}", f"--input={a}", f"--input={b}"]
        assert vmrt_run(*args) == iree_run(*args)[:2] + ("",)


@settings(max_examples=25, deadline=None)
@given(a=st.floats(width=32), b=st.floats(width=32))
def test_f32_sample_against_iree(compile_mlir, a, b):
    vmfb = compile_mlir("floats.mlir")
    for fn in ("arith", "cmp", "minmax"):
        args = [f"--module={vmfb}", f"--function={fn}", f"--input={a!r}", f"--input={b!r}"]
        assert vmrt_run(*args) == iree_run(*args)[:2] + ("",)
