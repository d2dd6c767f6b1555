"""``--trace_execution`` on ``vmrt run`` and ``vmrt test``, and the trace
stream of ``vmrt.load``: one IREE-format line per instruction executed,
on stderr (the results on stdout unchanged)."""
from __future__ import annotations

import io
import re

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import needs_iree, vmrt_run
from vmrt.tools.main import main

pytestmark = needs_iree

SUMSQ = """
func.func @sumsq(%n: i32) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %nn = arith.index_cast %n : i32 to index
  %r = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %z) -> (i32) {
    %ii = arith.index_cast %i : index to i32
    %sq = arith.muli %ii, %ii : i32
    %a = arith.addi %acc, %sq : i32
    scf.yield %a : i32
  }
  return %r : i32
}
"""

CHECKED = """
func.func @test_five() {
  %a = arith.constant 5 : i32
  %b = util.optimization_barrier %a : i32
  %c = arith.cmpi eq, %b, %a : i32
  %d = arith.extui %c : i1 to i32
  check.expect_true(%d) : i32
  return
}
"""

LINE = re.compile(r"^\[([\w.@]+)(?:\+[0-9A-F]{8})?\]    \S.*$")


def test_run_trace_goes_to_stderr(compile_mlir):
    vmfb = compile_mlir(SUMSQ, name="sumsq32")
    rc, plain, err = vmrt_run(f"--module={vmfb}", "--input=6")
    assert (rc, err) == (0, "")
    rc, out, trace = vmrt_run(f"--module={vmfb}", "--input=6", "--trace_execution")
    assert rc == 0 and out == plain
    expect = sum(i * i for i in range(6))
    assert f"i32={expect}" in out
    lines = trace.splitlines()
    assert lines and all(LINE.match(ln) for ln in lines)
    assert re.fullmatch(rf"\[module\.sumsq\+[0-9A-F]{{8}}\]    vm\.return %i\d+\({expect}\)",
                        lines[-1])
    # one compare per loop test: i = 0..6
    assert sum(" = vm.cmp.lt." in ln for ln in lines) == 7


def test_test_command_traces_tests_and_check_calls(compile_mlir):
    vmfb = compile_mlir(CHECKED, name="checked")
    out, err = io.StringIO(), io.StringIO()
    rc = main(["test", f"--module={vmfb}", "--trace_execution"], stdout=out, stderr=err)
    assert rc == 0, out.getvalue()
    assert "[  PASSED  ] 1 test." in out.getvalue()
    lines = err.getvalue().splitlines()
    assert lines and all(LINE.match(ln) for ln in lines)
    call = next(i for i, ln in enumerate(lines) if "vm.call @check.expect_true(" in ln)
    assert lines[call].endswith("(%i0(1))") or re.search(r"\(%i\d+\(1\)\)$", lines[call])
    assert lines[call + 1] == "[check.expect_true]    <native> returned ()"


def test_load_writes_the_trace_to_a_stream(compile_mlir):
    vmfb = compile_mlir(SUMSQ, name="sumsq32")
    trace = io.StringIO()
    with vmrt.load(vmfb, device=None, trace=trace) as prog:
        assert int(prog.sumsq(3)) == 5
    text = trace.getvalue()
    assert text.startswith("[module.sumsq+") and text.endswith("(5)\n")
    quiet = io.StringIO()
    with vmrt.load(vmfb, device=None) as prog:
        assert int(prog.sumsq(3)) == 5
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("bad", [123, "stderr", object()])
def test_load_rejects_a_trace_that_is_not_a_stream(compile_mlir, bad):
    vmfb = compile_mlir(SUMSQ, name="sumsq32")
    with pytest.raises(vmrt.ArgumentError, match="trace must be a text stream"):
        vmrt.load(vmfb, device=None, trace=bad)
    with pytest.raises(vmrt.ArgumentError, match="got int"):
        vmrt.Context(vmrt.Instance(), [], trace=5)
