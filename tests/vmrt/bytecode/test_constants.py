"""Registers holding one constant read as literals, and the range checks
that follow from a constant's sign (vmrt/bytecode/constregs.py,
templates.wrap_lines): results at both ends of the i32 and i64 ranges
against numpy's wrapping arithmetic, loops that cross INT64_MAX and INT64_MIN
against Python, and the same results from the trace translation (which
keeps every register)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import vmrt
from tests.vmrt.vmrt_testutil import needs_iree

pytestmark = needs_iree

I64_MAX, I64_MIN = (1 << 63) - 1, -(1 << 63)
I32_MAX, I32_MIN = (1 << 31) - 1, -(1 << 31)

CONSTS = """
func.func @c64(%x: i64) -> (i64, i64, i64, i64, i64, i64, i64, i64) {
  %c1 = arith.constant 1 : i64
  %cm1 = arith.constant -1 : i64
  %cmax = arith.constant 9223372036854775807 : i64
  %cmin = arith.constant -9223372036854775808 : i64
  %c7 = arith.constant 7 : i64
  %a = arith.addi %x, %c1 : i64
  %b = arith.subi %x, %c1 : i64
  %c = arith.addi %cm1, %x : i64
  %d = arith.addi %x, %cmax : i64
  %e = arith.addi %cmin, %x : i64
  %f = arith.subi %c1, %x : i64
  %g = arith.muli %x, %c7 : i64
  %h = arith.subi %cm1, %x : i64
  return %a, %b, %c, %d, %e, %f, %g, %h : i64, i64, i64, i64, i64, i64, i64, i64
}
func.func @c32(%x: i32) -> (i32, i32, i32, i32, i32, i32) {
  %c1 = arith.constant 1 : i32
  %cm1 = arith.constant -1 : i32
  %cmax = arith.constant 2147483647 : i32
  %c7 = arith.constant 7 : i32
  %a = arith.addi %x, %c1 : i32
  %b = arith.subi %x, %c1 : i32
  %c = arith.addi %cm1, %x : i32
  %d = arith.addi %x, %cmax : i32
  %e = arith.subi %c1, %x : i32
  %f = arith.muli %x, %c7 : i32
  return %a, %b, %c, %d, %e, %f : i32, i32, i32, i32, i32, i32
}
func.func @walk(%start: i64, %step: i64, %n: i64) -> (i64, i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %r:3 = scf.while (%i = %c0, %v = %start, %acc = %c0) : (i64, i64, i64) -> (i64, i64, i64) {
    %go = arith.cmpi slt, %i, %n : i64
    scf.condition(%go) %i, %v, %acc : i64, i64, i64
  } do {
  ^bb0(%i: i64, %v: i64, %acc: i64):
    %i1 = arith.addi %i, %c1 : i64
    %v1 = arith.addi %v, %step : i64
    %m = arith.muli %acc, %c3 : i64
    %a1 = arith.xori %m, %v1 : i64
    scf.yield %i1, %v1, %a1 : i64, i64, i64
  }
  return %r#1, %r#2 : i64, i64
}
func.func @span(%lb: i64, %ub: i64) -> i64 {
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %r = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %c1) -> i64 : i64 {
    %m = arith.muli %acc, %c3 : i64
    %x = arith.xori %m, %i : i64
    scf.yield %x : i64
  }
  return %r : i64
}
"""

#: count a value up or down by one, n times (`@up`, `@down`)
STEP = """
func.func @NAME(%start: i64, %n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r:2 = scf.while (%i = %c0, %v = %start) : (i64, i64) -> (i64, i64) {
    %go = arith.cmpi slt, %i, %n : i64
    scf.condition(%go) %i, %v : i64, i64
  } do {
  ^bb0(%i: i64, %v: i64):
    %i1 = arith.addi %i, %c1 : i64
    %v1 = arith.OP %v, %c1 : i64
    scf.yield %i1, %v1 : i64, i64
  }
  return %r#1 : i64
}
"""
CONSTS += STEP.replace("NAME", "up").replace("OP", "addi") + \
    STEP.replace("NAME", "down").replace("OP", "subi")

EDGES64 = [0, 1, -1, 2, -2, 7, I64_MAX, I64_MAX - 1, I64_MIN, I64_MIN + 1,
           I64_MAX // 7 + 1, I64_MIN // 7 - 1, 1 << 32, -(1 << 32)]
EDGES32 = [0, 1, -1, 2, -2, I32_MAX, I32_MAX - 1, I32_MIN, I32_MIN + 1,
           I32_MAX // 7 + 1, I32_MIN // 7 - 1]


def _ctx(vmfb, **kw) -> vmrt.Context:
    inst = vmrt.Instance()
    return vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, vmfb)], **kw)


@pytest.fixture(scope="module")
def ctxs(compile_mlir):
    vmfb = compile_mlir(CONSTS, name="constants")
    with _ctx(vmfb) as plain, _ctx(vmfb, trace=io.StringIO()) as traced:
        yield plain, traced


def _ints(a) -> list[int]:
    return [int(v) for v in a]


@pytest.mark.parametrize("x", EDGES64)
def test_i64_ops_with_constants_wrap_at_both_ends(ctxs, x):
    X = np.array([x], np.int64)
    with np.errstate(over="ignore"):
        want = _ints(np.concatenate([X + 1, X - 1, X - 1, X + I64_MAX, X + np.int64(I64_MIN),
                                     1 - X, X * 7, -1 - X]))
    for ctx in ctxs:
        assert ctx.invoke("module.c64", [x]) == want


@pytest.mark.parametrize("x", EDGES32)
def test_i32_ops_with_constants_wrap_at_both_ends(ctxs, x):
    X = np.array([x], np.int32)
    with np.errstate(over="ignore"):
        want = _ints(np.concatenate([X + np.int32(1), X - np.int32(1), X - np.int32(1),
                                     X + np.int32(I32_MAX), np.int32(1) - X, X * np.int32(7)]))
    for ctx in ctxs:
        assert ctx.invoke("module.c32", [x]) == want


def _wrap64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _walk(start: int, step: int, n: int) -> list[int]:
    v, acc = start, 0
    for _ in range(n):
        v = _wrap64(v + step)
        acc = _wrap64(acc * 3) ^ v
    return [v, acc]


@pytest.mark.parametrize("start,step,n", [
    (I64_MAX - 3, 1, 9), (I64_MIN + 3, -1, 9), (I64_MAX - 10, I64_MAX, 5),
    (I64_MIN + 10, I64_MIN, 5), (5, 3, 1000)])
def test_a_loop_crossing_the_ends_of_i64(ctxs, start, step, n):
    for ctx in ctxs:
        assert ctx.invoke("module.walk", [start, step, n]) == _walk(start, step, n)


@pytest.mark.parametrize("fn,start,sign", [("up", I64_MAX - 2, 1), ("down", I64_MIN + 2, -1)])
def test_counting_by_a_constant_past_the_end_wraps(ctxs, fn, start, sign):
    for n in (0, 1, 2, 3, 4, 7):
        want = _wrap64(start + sign * n)
        for ctx in ctxs:
            assert ctx.invoke(f"module.{fn}", [start, n]) == [want]


def _span(lb: int, ub: int) -> int:
    acc = 1
    for i in range(lb, ub):
        acc = _wrap64(acc * 3) ^ i
    return acc


@pytest.mark.parametrize("lb,ub", [(I64_MAX - 5, I64_MAX), (I64_MIN, I64_MIN + 5),
                                   (-3, 4), (I64_MAX - 1, I64_MAX), (5, 5), (6, 5)])
def test_a_counted_loop_up_to_int64_max(ctxs, lb, ub):
    """The counter's increment is not range-checked (it is below its bound)."""
    for ctx in ctxs:
        assert ctx.invoke("module.span", [lb, ub]) == [_span(lb, ub)]


def test_constants_reach_the_translation_as_literals(compile_mlir):
    """The loop body of `up` adds the literal 1 (no register) and checks
    only the end an add of 1 can cross (INT64_MAX) of the value it counts,
    and no end of the loop counter (below `n`)."""
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, compile_mlir(CONSTS, name="constants"))
    k = next(e.ordinal for e in mod.exports if e.name == "up")
    src = mod.disassemble_source(k)
    adds = [ln.strip() for ln in src.splitlines() if ln.strip().endswith(" + 1")]
    assert adds, src
    assert len(adds) == 2, src
    assert src.count(f"> {I64_MAX}: ") == 1 and f"< {I64_MIN}" not in src, src
