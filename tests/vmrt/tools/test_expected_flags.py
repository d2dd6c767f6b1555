"""iree-run-module 3.13's comparison flags: ``--expected_rtol``,
``--equality_mode=approximate|exact`` and ``--expected_bf16_threshold``
next to ``--expected_f16/f32/f64_threshold``.  Every case compares stdout
and the exit code with iree-run-module on the same program and inputs."""
from __future__ import annotations

import pytest

from tests.vmrt.hal.hal_testutil import iree_run, vmrt_run
from tests.vmrt.iree_tools import require_tool
from tests.vmrt.tools.test_load_api import Compiler

IDENTITY = """
func.func @f16(%a: tensor<4xf16>) -> tensor<4xf16> { return %a : tensor<4xf16> }
func.func @bf16(%a: tensor<4xbf16>) -> tensor<4xbf16> { return %a : tensor<4xbf16> }
func.func @f32(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }
func.func @f64(%a: tensor<4xf64>) -> tensor<4xf64> { return %a : tensor<4xf64> }
func.func @i32(%a: tensor<4xi32>) -> tensor<4xi32> { return %a : tensor<4xi32> }
func.func @f8(%a: tensor<4xf8E5M2>) -> tensor<4xf8E5M2> { return %a : tensor<4xf8E5M2> }
func.func @two(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
"""

# (function, input, expected, extra flags)
CASES = [
    ("f32", "4xf32=1 2 3 100", "4xf32=1 2 3 100.0005", []),            # passes by rtol only
    ("f32", "4xf32=1 2 3 100", "4xf32=1 2 3 100.0005", ["--expected_rtol=0"]),
    ("f32", "4xf32=1 2 3 100", "4xf32=1 2 3 100.0015", []),
    ("f32", "4xf32=1 2 3 100", "4xf32=1 2 3 100.0015", ["--expected_rtol=1e-4"]),
    ("f32", "4xf32=1 2 3 100", "4xf32=1 2 3 100.0005", ["--equality_mode=exact"]),
    ("f32", "4xf32=1 2 3 100", "4xf32=1 2 3 100", ["--equality_mode=exact"]),
    ("f32", "4xf32=1 2 3 -0", "4xf32=1 2 3 0", ["--equality_mode=exact"]),
    ("f32", "4xf32=1 2 3 -0", "4xf32=1 2 3 0", ["--equality_mode=approximate"]),
    ("f32", "4xf32=1 2 nan 4", "4xf32=1 2 -nan 4", []),
    ("f32", "4xf32=1 2 nan 4", "4xf32=1 2 -nan 4", ["--equality_mode=exact"]),
    ("f32", "4xf32=1 2 nan 4", "4xf32=1 2 nan 4", ["--equality_mode=exact"]),
    ("f32", "4xf32=inf 2 3 4", "4xf32=inf 2 3 4", []),
    ("f32", "4xf32=inf 2 3 4", "4xf32=-inf 2 3 4", ["--expected_rtol=1"]),
    ("f32", "4xf32=3e38 2 3 4", "4xf32=inf 2 3 4", ["--expected_rtol=1"]),
    ("f32", "4xf32=1e10 2 3 4", "4xf32=2e10 2 3 4", []),                 # %G in the message
    ("f32", "4xf32=1 2 3 4", "4xf32=1 2 3 4.5", ["--expected_f32_threshold=0.5"]),
    ("f16", "4xf16=1 2 3 4", "4xf16=1 2 3 4.004", []),
    ("f16", "4xf16=1 2 3 4", "4xf16=1 2 3 4.004", ["--expected_rtol=0.001"]),
    ("f16", "4xf16=1 2 3 4", "4xf16=1 2 3 4.004", ["--expected_f16_threshold=0.01"]),
    ("bf16", "4xbf16=1 2 3 4", "4xbf16=1 2 3 4.03", []),
    ("bf16", "4xbf16=1 2 3 4", "4xbf16=1 2 3 4.03", ["--expected_bf16_threshold=0.05"]),
    ("bf16", "4xbf16=1 2 3 4", "4xbf16=1 2 3 4.03", ["--expected_f16_threshold=0.05"]),
    ("f64", "4xf64=1 2 3 1000", "4xf64=1 2 3 1000.0101", []),
    ("f64", "4xf64=1 2 3 1000", "4xf64=1 2 3 1000.0102", []),
    ("f64", "4xf64=1 2 3 1000", "4xf64=1 2 3 1000.0102", ["--expected_f64_threshold=0.001"]),
    ("i32", "4xi32=1 2 3 4", "4xi32=1 2 3 5", ["--expected_rtol=1"]),
    ("i32", "4xi32=1 2 3 4", "4xi32=1 2 3 4", ["--equality_mode=exact"]),
    ("f8", "4xf8E5M2=1 2 3 4", "4xf8E5M2=1 2 3 5", ["--expected_f16_threshold=2",
                                                    "--expected_rtol=1"]),   # f8: exact
    ("f8", "4xf8E5M2=1 2 3 nan", "4xf8E5M2=1 2 3 nan", []),
]


@pytest.fixture(scope="module")
def identity():
    compile_ = Compiler(require_tool("iree-compile", "iree-base-compiler"))
    return compile_(IDENTITY, ["--iree-execution-model=host-only",
                               "--iree-input-demote-f64-to-f32=false"], "identity")


@pytest.mark.parametrize("fn,given,expected,extra", CASES)
def test_like_iree_run_module(identity, iree_run_module, fn, given, expected, extra):
    args = [f"--module={identity}", f"--function={fn}", f"--input={given}",
            f"--expected_output={expected}", *extra]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert (ours.rc, ours.stdout) == (theirs.rc, theirs.stdout), ours.stderr


def test_two_results_one_fails(identity, iree_run_module):
    args = [f"--module={identity}", "--function=two", "--input=2xf32=1 2", "--input=2xf32=3 4",
            "--expected_output=2xf32=1 2.00002", "--expected_output=2xf32=3 4.001",
            "--expected_rtol=0"]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert ours.rc == theirs.rc == 1
    assert ours.stdout == theirs.stdout
    assert ours.stdout.count("[FAILED]") == 1


@pytest.mark.parametrize("flag,message", [
    ("--equality_mode=fuzzy", "flag --equality_mode expects approximate or exact, got 'fuzzy'"),
    ("--expected_rtol=abc", "flag --expected_rtol expects a number, got 'abc'"),
    ("--expected_rtol=-1", "flag --expected_rtol expects a finite number >= 0, got '-1'"),
    ("--expected_bf16_threshold=nan", "flag --expected_bf16_threshold expects a finite number "
                                      ">= 0, got 'nan'"),
])
def test_bad_values_are_one_error_line(identity, flag, message):
    """(iree-run-module ignores these silently.)"""
    run = vmrt_run([f"--module={identity}", "--function=f32", "--input=4xf32=1 2 3 4",
                    "--expected_output=4xf32=1 2 3 4", flag])
    assert run.rc == 1 and run.stdout == ""
    assert run.stderr == f"INVALID_ARGUMENT; {message}\n"
