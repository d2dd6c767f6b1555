"""``vmrt test`` (iree-check-module) on compiled programs: the googletest
output, exit codes and flags; the failures vmrt records against what the
expectations see under the pip ``iree.runtime`` (the oracle), for programs
compiled for x86_64 (native) and aarch64 (emulated)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

import vmrt
from tests.vmrt.modules.check.check_support import (
    PROGRAMS,
    ROOT,
    compile_program,
    expected_outcome,
    normalize_times,
    oracle_calls,
    vmrt_test,
)
from vmrt.modules.check import failures
from vmrt.tools.test import run_tests

F64 = ("--iree-input-demote-f64-to-f32=false",)


def _normalize(text: str) -> str:
    """Times vary; bytecode offsets may differ between targets."""
    return re.sub(r"\+[0-9A-F]{8}", "+PC", normalize_times(text))


def test_output_and_exit_code():
    proc = vmrt_test(f"--module={compile_program('expects')}")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    golden = (PROGRAMS / "expects.golden.txt").read_text()
    assert _normalize(proc.stdout) == golden


@pytest.mark.parametrize("arch", ["x86_64", "aarch64", "riscv64"])
@pytest.mark.parametrize("name,extra", [("expects", ()), ("f64", F64)])
def test_failures_match_oracle(arch, name, extra):
    """vmrt's recorded failures are what IREE's check module makes of the
    values IREE's runtime passes it (the x86_64 build run by iree.runtime)."""
    run = run_tests(compile_program(name, arch, extra), device="local-sync")
    oracle = oracle_calls(compile_program(name, "x86_64", extra), [r.name for r in run.results])
    for r in run.results:
        want_failures, want_error = expected_outcome(oracle[r.name])
        assert [(f.function, f.message) for f in r.failures] == want_failures, r.name
        if want_error is None:
            assert r.error is None, r.name
        else:
            assert r.error is not None and str(r.error).startswith(want_error), r.name
        assert r.passed == (not want_failures and want_error is None)


def test_aarch64_prints_what_x86_64_prints():
    x86 = vmrt_test(f"--module={compile_program('expects', 'x86_64')}")
    arm = vmrt_test(f"--module={compile_program('expects', 'aarch64')}")
    assert arm.returncode == x86.returncode == 1
    assert _normalize(arm.stdout) == _normalize(x86.stdout)


def test_passing_program_exits_0():
    proc = vmrt_test(f"--module={compile_program('passing')}", "--device=local-sync")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert normalize_times(proc.stdout) == (
        "[==========] Running 2 tests from 1 test suite.\n"
        "[----------] Global test environment set-up.\n"
        "[----------] 2 tests from module\n"
        "[ RUN      ] module.sums\n"
        "[       OK ] module.sums (N ms)\n"
        "[ RUN      ] module.truths\n"
        "[       OK ] module.truths (N ms)\n"
        "[----------] 2 tests from module (N ms total)\n\n"
        "[----------] Global test environment tear-down\n"
        "[==========] 2 tests from 1 test suite ran. (N ms total)\n"
        "[  PASSED  ] 2 tests.\n")


def test_expect_failure_flag():
    failing = vmrt_test(f"--module={compile_program('expects')}", "--expect_failure")
    assert failing.returncode == 0
    assert failing.stdout.endswith("\n10 FAILED TESTS\nTest failed as expected\n")
    passing = vmrt_test(f"--module={compile_program('passing')}", "--expect_failure")
    assert passing.returncode == 1
    assert passing.stdout.endswith("[  PASSED  ] 2 tests.\nTest passed but expected failure\n")


def test_function_with_arguments_is_refused():
    proc = vmrt_test(f"--module={compile_program('bad_signature')}")
    assert proc.returncode == 1
    assert proc.stdout == ("Test failed\nINVALID_ARGUMENT; expected function with no inputs or "
                           "outputs, but export 'takes_arg' has signature '0i_i'\n")


def test_load_errors_and_bad_flags(tmp_path):
    missing = tmp_path / "none.vmfb"
    proc = vmrt_test(f"--module={missing}")
    assert proc.returncode == 1
    assert proc.stdout.startswith("Test failed\nNOT_FOUND; ")
    assert str(missing) in proc.stdout
    proc = vmrt_test("--function=x")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "INVALID_ARGUMENT; flag 'function' not recognized\n"
    proc = vmrt_test()
    assert proc.stdout == "Test failed\nINVALID_ARGUMENT; no --module= specified\n"


def test_vmrt_run_skips_reporting_like_iree_run_module():
    """``vmrt run`` links the check module but, like iree-run-module (where
    the optional imports stay unresolved), prints nothing for failures."""
    vmfb = compile_program("expects")
    args = [f"--module={vmfb}", "--function=true_fail", "--device=local-sync"]
    ours = subprocess.run([sys.executable, "-m", "vmrt", "run", *args], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert (ours.returncode, ours.stdout, ours.stderr) == (0, "EXEC @true_fail\n", "")
    iree = shutil.which("iree-run-module")
    if iree:
        theirs = subprocess.run([iree, *args], capture_output=True, text=True)
        assert (theirs.returncode, theirs.stdout) == (0, ours.stdout)


def test_python_api():
    vmfb = compile_program("expects")
    with vmrt.load(vmfb) as prog:
        assert prog.true_fail() is None                  # the function runs to its end
        got = failures(prog)
        assert [f.function for f in got] == ["expect_true", "expect_false"]
        assert str(got[1]).startswith("check.expect_false: Failure\nValue of: operand\n")
        prog.true_pass()
        assert len(failures(prog)) == 2                  # recorded per context, oldest first
    run = run_tests(vmfb)
    assert run.suite == "module"
    assert [r.name for r in run.failed] == [
        "true_fail", "all_true_fail_i32", "all_true_fail_i8", "eq_fail_contents",
        "eq_fail_shape", "almost_eq_fail", "almost_eq_rtol_edge", "almost_eq_special",
        "almost_eq_f16", "error_stops"]
    assert run.results[0].passed and run.results[0].ordinal == 0
    err = run.results[-1].error
    assert err.code == vmrt.StatusCode.INVALID_ARGUMENT
    assert err.message == "unsupported element type i1"


def test_print_statistics_per_test():
    """``--print_statistics``: each test's own context's figures, after the
    test, on stderr; ``run_tests(statistics=True)`` gives the same.  In
    passing.mlir ``sums`` runs one elementwise dispatch, ``truths`` none."""
    program = compile_program("passing")
    proc = vmrt_test(f"--module={program}", "--device=local-sync", "--print_statistics")
    assert proc.returncode == 0, proc.stderr
    blocks = re.split(r"^\[ statistics of (\w+) \]\n", proc.stderr, flags=re.M)
    assert blocks[0] == "" and blocks[1::2] == ["sums", "truths"]
    sums, truths = blocks[2], blocks[4]
    assert sums.startswith("[[ iree_hal_allocator_t memory statistics ]]\n")
    rows = re.findall(r"^ +(\d+) dispatches .* ms mean  \S+:(\S+)$", sums, re.M)
    assert len(rows) == 1 and rows[0][0] == "1" and "sums_dispatch_" in rows[0][1]
    assert "(no dispatches)" in truths
    run = run_tests(program, device="local-sync", statistics=True)
    (stats_sums,), (stats_truths,) = (list(r.statistics.values()) for r in run.results)
    assert [(d.count, k.split(":")[1]) for k, d in stats_sums.dispatches.items()] == \
        [(1, rows[0][1])]
    assert stats_truths.dispatches == {}
    assert run_tests(program, device="local-sync").results[0].statistics == {}
