"""Loops in translated code (vmrt/bytecode/layout.py: superblocks, inner
loops, budget charged per run of iterations): results computed in the test,
the instructions counted against the trace (one line per instruction run,
the trace translation charging every block as it goes), and the budget
exhausted at exactly that count."""
from __future__ import annotations

import io

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import needs_iree

pytestmark = needs_iree

#: a register-only loop body (charged per run of iterations) nested in another
NESTED = """
func.func @tri(%n: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : i64
  %z = arith.constant 1 : i64
  %nn = arith.index_cast %n : i64 to index
  %r = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %z) -> (i64) {
    %s = scf.for %j = %c0 to %i step %c1 iter_args(%a = %acc) -> (i64) {
      %jj = arith.index_cast %j : index to i64
      %m = arith.muli %a, %c7 : i64
      %x = arith.xori %m, %jj : i64
      scf.yield %x : i64
    }
    scf.yield %s : i64
  }
  return %r : i64
}
"""

#: a loop body with a global store (charged block by block)
GLOBAL = """
util.global private mutable @acc : i64 = 0 : i64
func.func @count(%n: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nn = arith.index_cast %n : i64 to index
  scf.for %i = %c0 to %nn step %c1 {
    %ii = arith.index_cast %i : index to i64
    %v = util.global.load @acc : i64
    %w = arith.addi %v, %ii : i64
    util.global.store %w, @acc : i64
  }
  %r = util.global.load @acc : i64
  return %r : i64
}
"""

#: block arguments passed around (fib's swap, a rotation of three): the
#: copies at the back edge that the op computing them can make itself, and
#: those it cannot (a value still read after its copy)
SWAPS = """
func.func @fib(%n: i64) -> (i64, i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0, %b = %c1, %k = %c0)
      -> (i64, i64, i64) : i64 {
    %s = arith.addi %a, %b : i64
    %t = arith.xori %s, %i : i64
    %u = arith.addi %k, %t : i64
    scf.yield %b, %t, %u : i64, i64, i64
  }
  return %r#0, %r#2 : i64, i64
}
func.func @rot(%n: i64) -> (i64, i64, i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c5 = arith.constant 5 : i64
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %c1, %y = %c5, %z = %c0)
      -> (i64, i64, i64) : i64 {
    %m = arith.muli %x, %c5 : i64
    %p = arith.addi %m, %i : i64
    scf.yield %y, %z, %p : i64, i64, i64
  }
  return %r#0, %r#1, %r#2 : i64, i64, i64
}
"""


def _w64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _fib(n: int) -> list[int]:
    a, b, k = 0, 1, 0
    for i in range(n):
        t = _w64(a + b) ^ i
        a, b, k = b, t, _w64(k + t)
    return [a, k]


def _rot(n: int) -> list[int]:
    x, y, z = 1, 5, 0
    for i in range(n):
        x, y, z = y, z, _w64(x * 5 + i)
    return [x, y, z]


def _tri(n: int) -> int:
    acc = 1
    for i in range(n):
        for j in range(i):
            acc = ((acc * 7) & (2**64 - 1)) ^ j
    return acc - 2**64 if acc >> 63 else acc


def _run(vmfb, fn: str, n: int, **kw) -> tuple[list, int]:
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [mod], **kw) as ctx:
        res = ctx.invoke(f"module.{fn}", [n])
        return res, ctx.limits.executed


def _traced_count(vmfb, fn: str, n: int) -> int:
    out = io.StringIO()
    _run(vmfb, fn, n, trace=out)
    return len(out.getvalue().splitlines())


@pytest.mark.parametrize("src,fn,n,expect", [
    (NESTED, "tri", 0, _tri(0)), (NESTED, "tri", 3, _tri(3)), (NESTED, "tri", 40, _tri(40)),
    (GLOBAL, "count", 0, 0), (GLOBAL, "count", 9, 36)])
def test_loops_compute_count_and_exhaust_exactly(compile_mlir, src, fn, n, expect):
    vmfb = compile_mlir(src, name=fn)
    res, executed = _run(vmfb, fn, n)
    assert res == [expect]
    assert executed == _traced_count(vmfb, fn, n)
    assert _run(vmfb, fn, n, budget=executed)[0] == [expect]
    with pytest.raises(vmrt.BudgetExceeded) as ei:
        _run(vmfb, fn, n, budget=executed - 1)
    assert f"instruction budget of {executed - 1} exhausted" in str(ei.value)


@pytest.mark.parametrize("fn,oracle", [("fib", _fib), ("rot", _rot)])
def test_loops_passing_values_around(compile_mlir, fn, oracle):
    vmfb = compile_mlir(SWAPS, name="swaps")
    for n in (0, 1, 2, 3, 10, 100, 200):
        res, executed = _run(vmfb, fn, n)
        assert res == oracle(n)
        assert executed == _traced_count(vmfb, fn, n)
        traced = io.StringIO()
        assert _run(vmfb, fn, n, trace=traced)[0] == res


@pytest.mark.parametrize("src,fn,n", [(SWAPS, "fib", 7), (SWAPS, "rot", 5), (NESTED, "tri", 6)])
def test_every_budget_short_of_the_count_stops(compile_mlir, src, fn, n):
    """Counted loops (run by a Python range) charge exactly what runs: any
    smaller budget stops the program, the exact one does not."""
    vmfb = compile_mlir(src, name=fn)
    res, executed = _run(vmfb, fn, n)
    assert executed == _traced_count(vmfb, fn, n)
    assert _run(vmfb, fn, n, budget=executed) == (res, executed)
    for budget in range(1, executed):
        with pytest.raises(vmrt.BudgetExceeded):
            _run(vmfb, fn, n, budget=budget)


def test_a_long_loop_refills_and_stops_at_its_budget(compile_mlir):
    # more instructions than one refill of the budget counter (ExecutionLimits.CHUNK)
    vmfb = compile_mlir(NESTED, name="tri")
    n = 400
    res, executed = _run(vmfb, "tri", n)
    assert res == [_tri(n)] and executed > 2 * vmrt.ExecutionLimits.CHUNK
    assert _run(vmfb, "tri", n, budget=executed)[0] == [_tri(n)]
    with pytest.raises(vmrt.BudgetExceeded):
        _run(vmfb, "tri", n, budget=executed - 1)
