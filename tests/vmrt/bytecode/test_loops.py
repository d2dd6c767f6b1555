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


def test_a_long_loop_refills_and_stops_at_its_budget(compile_mlir):
    # more instructions than one refill of the budget counter (ExecutionLimits.CHUNK)
    vmfb = compile_mlir(NESTED, name="tri")
    n = 400
    res, executed = _run(vmfb, "tri", n)
    assert res == [_tri(n)] and executed > 2 * vmrt.ExecutionLimits.CHUNK
    assert _run(vmfb, "tri", n, budget=executed)[0] == [_tri(n)]
    with pytest.raises(vmrt.BudgetExceeded):
        _run(vmfb, "tri", n, budget=executed - 1)
