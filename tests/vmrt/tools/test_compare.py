"""``vmrt run --compare_with`` and ``vmrt.tools.compare.compare_programs``:
two builds run in lockstep, stopping at the first dispatch that differs."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.vmrt.hal.hal_testutil import vmrt_run
from tests.vmrt.tools.conftest import CPU_BUG_FACTOR
from vmrt.errors import UsageError
from vmrt.tools.compare import compare_programs, compare_results


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    d = tmp_path_factory.mktemp("compare")
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    return a, b, [f"--input=@{d / 'a.npy'}", f"--input=@{d / 'b.npy'}"]


def _values(line: str) -> list[tuple[int, float, float]]:
    return [(int(i), float(x), float(y))
            for i, x, y in re.findall(r"\[(\d+)\] A=(\S+) B=(\S+?)(?:;|$)", line)]


def test_builds_differing_in_one_op_stop_at_that_dispatch(hal_compile, inputs):
    a, b, args = inputs
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", *args,
                    f"--compare_with={hal_compile('chain_swapped.mlir')}"])
    assert got.rc == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[0] == "EXEC @chain"
    # dispatch 0 (a @ b) agrees; dispatch 1 is the first of the two that differ
    assert lines[1] == "[FAILED] dispatch 1 differs in binding 0"
    assert "export 'chain_dispatch_1_matmul_16x16x16_f32', 2x1x1 workgroups" in lines[2]
    assert "chain_swapped" in lines[3]
    m = a.astype(np.float64) @ b
    want_a, want_b = (m.T @ m).reshape(-1), (m @ m.T).reshape(-1)
    # binding 0 holds m (256 floats) then the middle matmul's result
    shown = _values(lines[4])
    assert shown and all(i >= 256 for i, _x, _y in shown)
    for i, x, y in shown:
        assert x == pytest.approx(want_a[i - 256], rel=1e-4)
        assert y == pytest.approx(want_b[i - 256], rel=1e-4)
    assert len(lines) == 5


def test_same_program_for_two_cpus_agrees_and_prints_the_result(hal_compile, inputs,
                                                                emulation):
    a, b, args = inputs
    x86, rv = hal_compile("chain.mlir"), hal_compile("chain.mlir", "riscv64")
    # the two CPUs round differently (FMA contraction): compare within 0.01
    got = vmrt_run([f"--module={x86}", *args, f"--compare_with={rv}",
                    "--expected_f32_threshold=0.01"])
    plain = vmrt_run([f"--module={x86}", *args])
    assert got.rc == 0, got.stdout + got.stderr
    assert got.stdout == plain.stdout
    m = a.astype(np.float64) @ b
    printed = got.stdout.splitlines()[2].split("=", 1)[1].split()
    np.testing.assert_allclose([float(v) for v in printed], (m.T @ m).max(axis=1), rtol=1e-4)


def test_plugin_wrong_on_one_cpu(hal_compile, cpu_bug_sos, emulation):
    rng = np.random.default_rng(3)
    lhs = rng.integers(-8, 8, 100).astype(np.float32)
    rhs = rng.integers(-8, 8, 100).astype(np.float32)
    text = [f"--input=100xf32={' '.join(str(v) for v in x)}" for x in (lhs, rhs)]
    x86 = hal_compile("simple_mul.mlir")
    rv = hal_compile("simple_mul.mlir", "riscv64")
    got = vmrt_run([f"--module={x86}", "--function=mixed_invocation", *text,
                    f"--executable_plugin={cpu_bug_sos}", f"--compare_with={rv}",
                    "--dispatch_element_type=f32"])
    assert got.rc == 1, got.stderr
    lines = got.stdout.splitlines()
    assert lines[1] == "[FAILED] dispatch 0 differs in binding 2"
    assert "export 'tiled_mul', 2x1x1 workgroups" in lines[2]
    bad = np.flatnonzero(lhs * rhs != lhs * rhs * CPU_BUG_FACTOR)
    # the binding is the output buffer, padded past the 100 elements
    assert re.search(rf"binding 2: {bad.size} of \d+ f32 elements differ", lines[4])
    for i, x, y in _values(lines[4]):
        assert i in bad
        assert x == lhs[i] * rhs[i] and y == lhs[i] * rhs[i] * CPU_BUG_FACTOR


def test_dispatch_sequences_of_another_shape_are_refused(hal_compile, inputs):
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", *inputs[2],
                    f"--compare_with={hal_compile('chain_short.mlir')}"])
    assert got.rc == 1
    assert got.stderr.startswith("INVALID_ARGUMENT; the programs' dispatch sequences differ "
                                 "in shape at dispatch ")
    assert len(got.stderr.splitlines()) == 1


def test_refuses_to_combine_with_other_dispatch_flags(hal_compile, inputs, tmp_path):
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", *inputs[2], "--check_races",
                    f"--compare_with={hal_compile('chain.mlir')}"])
    assert got.rc == 1
    assert "--compare_with cannot be combined with --check_races" in got.stderr


def test_from_python(hal_compile, inputs):
    a, b, _ = inputs
    out = compare_programs(hal_compile("chain.mlir"), hal_compile("chain_swapped.mlir"),
                           "chain", [a, b])
    assert out.dispatches == 1 and out.results is None
    assert out.mismatch is not None and out.mismatch.dispatch == 1
    assert out.mismatch.a is not None and out.mismatch.a.export.endswith("matmul_16x16x16_f32")
    m = a.astype(np.float64) @ b
    before = out.mismatch.a.before[0].view(np.float32)[:256].reshape(16, 16)
    np.testing.assert_allclose(before, m, rtol=1e-4, atol=1e-4)
    same = compare_programs(hal_compile("chain.mlir"), hal_compile("chain.mlir"), "chain",
                            [a, b])
    assert same.mismatch is None and same.dispatches == 3
    np.testing.assert_array_equal(same.results[0][0], same.results[1][0])
    np.testing.assert_allclose(same.results[0][0], (m.T @ m).max(axis=1), rtol=1e-4)


def test_errors_in_one_program_end_the_comparison(hal_compile, inputs):
    with pytest.raises(UsageError, match="differ in shape"):
        compare_programs(hal_compile("chain.mlir"), hal_compile("chain_short.mlir"), "chain",
                         [np.ones((16, 32), np.float32), np.ones((32, 16), np.float32)])
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", "--input=4xf32=1",
                    "--input=32x16xf32=1", f"--compare_with={hal_compile('chain.mlir')}"])
    assert got.rc == 1 and len(got.stderr.splitlines()) == 1


def test_a_dispatch_failing_in_one_build_ends_both(hal_compile, sos, emulation):
    from tests.vmrt.hal.local.plugins.conftest import Variants
    v = Variants()
    fails_on_riscv = sos([v.path("x86_64"), v.path("riscv64", import_status=5)],
                         "fails_on_riscv.sos")
    rv = hal_compile("simple_mul.mlir", "riscv64")
    got = vmrt_run([f"--module={hal_compile('simple_mul.mlir')}", "--function=plugin_mul",
                    "--input=8xf32=2", "--input=8xf32=3", f"--executable_plugin={fails_on_riscv}",
                    f"--compare_with={rv}"])
    assert got.rc == 1 and got.stdout == "EXEC @plugin_mul\n"
    assert got.stderr.startswith("INTERNAL; executable 'simple_mul_linked' export 'tiled_mul' "
                                 "returned catastrophic error 5")
    assert got.stderr.rstrip().endswith(f"running {rv}")
    assert len(got.stderr.splitlines()) == 1


def test_results_are_compared_element_by_element():
    a = [np.array([1.0, 2.0, np.nan], np.float32), 7]
    assert compare_results(a, [np.array([1.00005, 2.0, np.nan], np.float32), 7], None) is None
    m = compare_results(a, [np.array([1.0, 2.5, np.nan], np.float32), 7], None)
    assert m is not None and (m.dispatch, m.index) == (None, 0)
    assert m.difference.first == [(1, 2.0, 2.5)]
    m = compare_results(a, [a[0], 8], {"f32": 0.0})
    assert m is not None and m.index == 1 and m.difference.first == [(0, 7, 8)]
    with pytest.raises(UsageError, match="differs in type"):
        compare_results(a, [a[0].astype(np.float64), 7], None)


def test_an_interrupt_in_one_lane_stops_the_other_running_vm_code(compile_mlir):
    """issue 29: Ctrl-C during --compare_with while both programs ran VM code
    hung: the other lane was only stopped at its next dispatch.  Here lane A
    is interrupted at once while lane B spins in a VM loop with no dispatch."""
    import threading

    import vmrt
    from tests.vmrt.bytecode.test_bad_input import LOOP
    from vmrt.tools.compare import lockstep
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, compile_mlir(LOOP, name="spin"))
    ctx = vmrt.Context(inst, [mod])

    def interrupted():
        raise KeyboardInterrupt

    box: list[BaseException] = []

    def run():
        try:
            lockstep(interrupted, lambda: ctx.invoke("module.spin", [0]),
                     cancel=(lambda: None, lambda: ctx.cancel(0)))
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "lockstep did not stop the lane running VM code"
    assert len(box) == 1 and isinstance(box[0], KeyboardInterrupt)
    assert ctx.invoke("module.spin", [-5]) == [-1]          # the context stays usable
    ctx.close()
