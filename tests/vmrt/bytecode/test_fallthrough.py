"""Blocks that follow their only predecessor in place (layout.py, "fall-through"):
branches of ``scf.if`` with side effects and a ``cf.assert`` (a ``cond_br``
to a failure block).  Results come from a Python oracle and iree-run-module,
instructions are counted against the trace translation (which keeps every
block an arm of the selection), and the budget runs out at exactly that count."""
from __future__ import annotations

import io
import re

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, vmrt_run

pytestmark = needs_iree

BRANCHY = """
util.global private mutable @hits : i64 = 0 : i64
func.func @branchy(%n: i64, %x: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %p = arith.cmpi sgt, %x, %c0 : i64
  %a = scf.if %p -> i64 {
    %h = util.global.load @hits : i64
    %h1 = arith.addi %h, %c1 : i64
    util.global.store %h1, @hits : i64
    %m = arith.muli %x, %c3 : i64
    scf.yield %m : i64
  } else {
    %h = util.global.load @hits : i64
    %h1 = arith.addi %h, %c3 : i64
    util.global.store %h1, @hits : i64
    %m = arith.subi %c0, %x : i64
    scf.yield %m : i64
  }
  %ok = arith.cmpi slt, %a, %n : i64
  cf.assert %ok, "value out of range"
  %h = util.global.load @hits : i64
  %q = arith.cmpi eq, %h, %c3 : i64
  %b = scf.if %q -> i64 {
    util.global.store %c0, @hits : i64
    %s = arith.addi %a, %h : i64
    scf.yield %s : i64
  } else {
    %s = arith.xori %a, %h : i64
    scf.yield %s : i64
  }
  return %b : i64
}
"""

#: (n, x) of each call, in order (one context: ``hits`` carries over)
CALLS = [(100, 5), (100, -4), (100, 0), (100, 7), (50, 2), (100, -9), (100, 1), (100, 3)]


def _oracle(calls: list[tuple[int, int]]) -> list[int]:
    hits, out = 0, []
    for n, x in calls:
        if x > 0:
            hits, a = hits + 1, x * 3
        else:
            hits, a = hits + 3, -x
        assert a < n
        if hits == 3:
            out.append(a + hits)
            hits = 0
        else:
            out.append(a ^ hits)
    return out


def _run(vmfb, calls, **kw) -> tuple[list[int], int]:
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [mod], **kw) as ctx:
        out = [ctx.invoke("module.branchy", [n, x])[0] for n, x in calls]
        return out, ctx.limits.executed


def test_branches_falling_through_compute_and_count_exactly(compile_mlir):
    vmfb = compile_mlir(BRANCHY, name="branchy")
    res, executed = _run(vmfb, CALLS)
    assert res == _oracle(CALLS)
    traced = io.StringIO()
    assert _run(vmfb, CALLS, trace=traced) == (res, executed)
    assert executed == len(traced.getvalue().splitlines())
    assert _run(vmfb, CALLS, budget=executed)[0] == res
    for budget in range(executed - 12, executed):
        with pytest.raises(vmrt.BudgetExceeded):
            _run(vmfb, CALLS, budget=budget)


def test_branches_falling_through_match_iree(compile_mlir):
    vmfb = compile_mlir(BRANCHY, name="branchy")
    for n, x in [(100, 5), (100, -4), (100, 0), (3, 2), (3, -7)]:
        args = (f"--module={vmfb}", "--function=branchy", f"--input={n}", f"--input={x}")
        rc, out, _err = iree_run(*args)
        got = vmrt_run(*args)
        assert got[0] == rc and (rc != 0 or got[1] == out), (n, x, got)
        if rc != 0:
            assert "value out of range" in got[2]


def test_an_assert_falling_through_fails_where_the_trace_does(compile_mlir):
    """The failure block stays an arm; the error names the same place in
    the plain and the trace translation."""
    vmfb = compile_mlir(BRANCHY, name="branchy")
    msgs = []
    for kw in ({}, {"trace": io.StringIO()}):
        with pytest.raises(vmrt.VmError) as ei:
            _run(vmfb, [(100, 5), (10, 4)], **kw)
        msgs.append(str(ei.value))
    assert "value out of range" in msgs[0]
    assert msgs[0] == msgs[1]


def test_blocks_with_one_predecessor_are_not_arms(compile_mlir):
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), compile_mlir(BRANCHY, name="branchy"))
    src = mod.disassemble_source(mod.exports[0].ordinal)
    arms = len(re.findall(r"\b(?:if|elif) b == \d+:", src))
    charges = src.count("L.left -= ")       # one at the top of each block run
    assert 0 < arms < charges, src
    # a branch whose other side follows in place: its ``if`` leaves, no ``else``
    assert re.search(r"^( +)    continue\n\1(?!else:|elif )\S", src, re.M), src
