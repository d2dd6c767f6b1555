"""IREE device replay both ways: captures ``iree-run-module
--device_replay_output`` writes, replayed by ``vmrt replay`` (local-sync and
local-task captures, transfers, constants, executable substitution with an
aarch64 build run emulated), and captures ``vmrt run
--device_replay_output`` writes, read by IREE's ``iree-dump-replay`` and
run by ``iree-run-replay``.  Expected values come from numpy."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import vmrt
from tests.startup_imports import heavy, imports_of
from tests.vmrt.tools.replay_testutil import (
    floats,
    iree_capture,
    iree_tool,
    vmrt_capture,
    vmrt_replay,
)

RNG = np.random.default_rng(26)
X = RNG.standard_normal(16).astype(np.float32)
W = RNG.standard_normal((16, 8)).astype(np.float32)
B = RNG.standard_normal(8).astype(np.float32)
MLP_INPUTS = [f"1x16xf32={floats(X)}", f"16x8xf32={floats(W.reshape(-1))}",
              f"1x8xf32={floats(B)}"]
MLP = X.astype(np.float64) @ W + B


@pytest.fixture(scope="module")
def mlp(iree):
    """The README's mlp for x86_64 and aarch64: vmfbs and dispatch libraries."""
    return iree.compile("mlp", "x86_64"), iree.compile("mlp", "aarch64")


@pytest.fixture(scope="module")
def captures(hal_compile, mlp, tmp_path_factory):
    d = tmp_path_factory.mktemp("replay")
    ew, fills = hal_compile("elementwise.mlir"), hal_compile("fills.mlir")
    return {
        "add": iree_capture(d / "add.ireereplay", ew, "add",
                            ["8xf32=1,2,3,4,5,6,7,8", "8xf32=10"]),
        "matmul_task": iree_capture(d / "mm.ireereplay", hal_compile("matmul.mlir"), "matmul",
                                    ["4x8xf32=1", "8x3xf32=2"], device="local-task"),
        "pad": iree_capture(d / "pad.ireereplay", fills, "pad", ["4xf32=1,2,3,4"]),
        "two": iree_capture(d / "two.ireereplay", fills, "two", ["4xf32=1,2,3,4", "5"]),
        "big_const": iree_capture(d / "big.ireereplay", hal_compile("consts.mlir"),
                                  "big_const", ["256xf32=1"]),
        "mlp": iree_capture(d / "mlp.ireereplay", mlp[0].vmfb, None, MLP_INPUTS),
    }


def expect(values: np.ndarray, kind: str = "f32") -> str:
    shape = "x".join(map(str, values.shape))
    return f"--expected_output={shape}x{kind}={floats(values.reshape(-1))}"


def test_iree_capture_replays_and_checks_expected_outputs(captures):
    got = vmrt_replay(captures["add"], expect(np.arange(11, 19, dtype=np.float32)))
    assert got.rc == 0, got.stderr
    assert "1 dispatch(es) of 1 executable(s) (native), 1 output(s)" in got.stdout
    assert "not recorded in the capture" in got.stdout      # IREE records no read bytes
    assert "[SUCCESS] output[0]" in got.stdout
    bad = vmrt_replay(captures["add"], "--expected_output=8xf32=11,12,13,14,15,16,17,19")
    assert bad.rc == 1
    assert "[FAILED] output[0]: 1 of 8 f32 elements differ; first: [7] got=18 expected=19" \
        in bad.stdout


def test_local_task_capture_replays_on_workers(captures):
    want = np.full((4, 3), 16.0, np.float32)        # ones(4x8) @ twos(8x3)
    got = vmrt_replay(captures["matmul_task"], "--device=local-task", expect(want))
    assert got.rc == 0 and "[SUCCESS] output[0]" in got.stdout, got.stdout + got.stderr


def test_transfers_fills_and_constants(captures):
    a = np.array([1, 2, 3, 4], np.float32)
    pad = vmrt_replay(captures["pad"], expect(np.pad(a, 3, constant_values=9.0)))
    assert pad.rc == 0 and "[SUCCESS]" in pad.stdout, pad.stdout + pad.stderr
    two = vmrt_replay(captures["two"], expect(a + a), "--expected_output=5xi32=3")
    assert two.rc == 0 and two.stdout.count("[SUCCESS]") == 2, two.stdout + two.stderr
    # the constant comes from a file imported inline and a queue_read
    big = vmrt_replay(captures["big_const"],
                      expect(1 + np.arange(256, dtype=np.float32) / 2))
    assert big.rc == 0 and "[SUCCESS]" in big.stdout, big.stdout + big.stderr


def test_substituted_aarch64_executable_runs_emulated(captures, mlp, emulation):
    lib = mlp[1].library
    for selector in ("4", "all", "4@embedded-elf-arm_64"):
        got = vmrt_replay(captures["mlp"], f"--replay_executable_substitution={selector}={lib}",
                          expect(MLP.reshape(1, 8)))
        assert got.rc == 0, got.stdout + got.stderr
        assert "(emulated)" in got.stdout and "[SUCCESS] output[0]" in got.stdout
    missing = vmrt_replay(captures["mlp"], f"--replay_executable_substitution=9={lib}")
    assert missing.rc == 1
    assert "names executable 9, which the capture does not prepare" in missing.stderr
    wrong_cpu = vmrt_replay(captures["mlp"],
                            f"--replay_executable_substitution=4@embedded-elf-riscv_64={lib}")
    assert wrong_cpu.rc == 1 and "substituted executable" in wrong_cpu.stderr
    assert wrong_cpu.stderr.count("\n") == 1


def test_python_api(captures):
    result = vmrt.replay(captures["add"])
    assert result.ok and result.dispatches == 1 and result.executables == {4: "native"}
    (out,) = result.outputs
    np.testing.assert_array_equal(out.data.view(np.float32), np.arange(11, 19))
    assert out.recorded is None


@pytest.fixture(scope="module")
def vmrt_captures(hal_compile, mlp, tmp_path_factory, emulation):
    d = tmp_path_factory.mktemp("vmrt_replay")
    out = {}
    for name, module, fn, inputs, extra in [
            ("add", hal_compile("elementwise.mlir"), "add",
             ["8xf32=1,2,3,4,5,6,7,8", "8xf32=10"], ()),
            ("pad", hal_compile("fills.mlir"), "pad", ["4xf32=1,2,3,4"], ()),
            ("big_const", hal_compile("consts.mlir"), "big_const", ["256xf32=1"], ()),
            ("matmul_task", hal_compile("matmul.mlir"), "matmul", ["4x8xf32=1", "8x3xf32=2"],
             ("--device=local-task",)),
            ("mlp_aarch64", mlp[1].vmfb, None, MLP_INPUTS, ())]:
        path = d / f"{name}.ireereplay"
        got = vmrt_capture(path, module, fn, inputs, *extra)
        assert got.rc == 0, got.stderr
        out[name] = path
    return out


@pytest.mark.parametrize("name", ["add", "pad", "big_const", "matmul_task"])
def test_vmrt_capture_runs_in_iree_and_vmrt(vmrt_captures, name):
    path = vmrt_captures[name]
    ran = iree_tool("iree-run-replay", "--device=local-sync", path)
    assert ran.returncode == 0, ran.stderr
    got = vmrt_replay(path)
    assert got.rc == 0, got.stderr
    assert "(recorded in the capture)" in got.stdout
    assert "[SUCCESS] every recorded output matches the capture" in got.stdout


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the capture's dispatch is x86_64")
def test_native_replay_that_matches_its_capture_imports_no_numpy(vmrt_captures):
    # buffers are aligned host memory, the dispatch runs prepared, and outputs whose
    # bytes equal the recorded ones need no element-wise comparison
    for _ in range(2):      # the second run finds the library's caches
        out, imported = imports_of("vmrt", "replay", str(vmrt_captures["add"]))
    assert "[SUCCESS] every recorded output matches the capture" in out
    assert heavy(imported, ("numpy", "typing", "json")) == []
    # nor the output writers or the executable benchmark tool (start-up)
    assert heavy(imported, ("vmrt.tools.function_io", "vmrt.tools.executable_benchmark",
                            "vmrt.tools.benchmark_runner", "vmrt.tools.executable")) == []


def test_iree_dump_and_benchmark_replay_read_vmrt_capture(vmrt_captures):
    dump = iree_tool("iree-dump-replay", "--format=jsonl", vmrt_captures["add"])
    assert dump.returncode == 0, dump.stderr
    rows = [json.loads(line) for line in dump.stdout.splitlines()]
    ops = [r.get("operation") for r in rows if r.get("kind") == "operation"]
    assert ops.count("executable_cache.prepare_executable") == 1
    assert ops.count("command_buffer.dispatch") == 1
    assert ops.count("device.queue_execute") == 1
    assert ops.count("buffer.invalidate_range") == 1    # the result's bytes, as read
    summary = next(r for r in rows if r.get("kind") == "summary")
    assert summary["hermetic"] is True or summary["hermetic"] == "yes"
    text = iree_tool("iree-dump-replay", vmrt_captures["add"])
    assert text.returncode == 0 and text.stdout.startswith("IREE HAL replay v2.0")
    bench = iree_tool("iree-benchmark-replay", "--device=local-sync", "--benchmark_min_time=2x",
                      "--replay_scope=execute", vmrt_captures["add"])
    assert bench.returncode == 0, bench.stderr
    assert "BM_replay/scope:execute/process_time/manual_time" in bench.stdout


def test_aarch64_capture_both_ways(vmrt_captures, mlp):
    """vmrt runs the aarch64 program emulated and captures it; IREE replays
    the capture with the x86_64 build substituted; vmrt replays it emulated
    and with the same substitution natively."""
    path, x86 = vmrt_captures["mlp_aarch64"], mlp[0].library
    ran = iree_tool("iree-run-replay", "--device=local-sync",
                    f"--replay_executable_substitution=4={x86}", path)
    assert ran.returncode == 0, ran.stderr
    plain = iree_tool("iree-run-replay", "--device=local-sync", path)
    assert plain.returncode != 0 and "embedded-elf-arm_64" in plain.stderr
    emulated = vmrt_replay(path, expect(MLP.reshape(1, 8)), "--expected_f32_threshold=1e-4")
    assert emulated.rc == 0 and "(emulated)" in emulated.stdout, emulated.stdout
    native = vmrt_replay(path, f"--replay_executable_substitution=4={x86}",
                         "--dispatch_element_type=f32")
    assert native.rc == 0 and "(native)" in native.stdout, native.stdout + native.stderr
    assert "[SUCCESS] every recorded output matches the capture" in native.stdout


def test_mismatch_reports_the_first_differing_elements(vmrt_captures, tmp_path):
    from vmrt.tools.replay_format import OP, read_capture
    data = bytearray(vmrt_captures["add"].read_bytes())
    cap = read_capture(str(vmrt_captures["add"]))
    rec = next(r for r in cap.records if r.operation == OP["buffer.invalidate_range"])
    # the recorded result's element 2 (13.0) becomes 13.5
    at = rec.offset + 96 + 40 + 8
    assert np.frombuffer(bytes(data[at:at + 4]), np.float32)[0] == 13.0
    data[at:at + 4] = np.float32(13.5).tobytes()
    bad = tmp_path / "bad.ireereplay"
    bad.write_bytes(bytes(data))
    got = vmrt_replay(bad)      # f32: the element type add's dispatch name ends in
    assert got.rc == 1
    assert "output[0]: buffer 7 [0, +32), 32 bytes, f32 (from its last dispatch)" in got.stdout
    assert ("[FAILED] output[0] (buffer 7 [0, +32)) differs from the capture: 1 of 8 f32 "
            "elements differ; first: [2] replay=13 capture=13.5") in got.stdout
    off = vmrt_replay(bad, "--expected=false")
    assert off.rc == 0 and "[FAILED]" not in off.stdout
    result = vmrt.replay(bad, element_type="i8")
    assert result.failures == ["output[0] (buffer 7 [0, +32)) differs from the capture: 1 of 32 "
                               "i8 elements differ; first: [10] replay=80 capture=88"]


def test_parameter_files_by_reference_remapped_and_captured(hal_compile, tmp_path):
    """A program reading .irpa parameters, captured with the files referenced
    by path (then moved: --replay_file_remap) and with the ranges read
    captured (then deleted: the capture is hermetic)."""
    from tests.vmrt.modules.io_parameters.conftest import PROGRAM, SPLAT, VALUES, expected
    from tests.vmrt.modules.io_parameters.param_files import write_irpa
    pytest.importorskip("iree.runtime")
    here, moved = tmp_path / "here", tmp_path / "moved"
    here.mkdir()
    write_irpa(here / "model.irpa", VALUES["model"])
    write_irpa(here / "quant.irpa", VALUES["quant"])
    write_irpa(here / "splat.irpa", {}, {"s": (32, SPLAT.tobytes())})
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 4 - 1
    flags = [f"--parameters=model={here / 'model.irpa'}",
             f"--parameters=quant={here / 'quant.irpa'}", f"--parameters={here / 'splat.irpa'}"]
    vmfb = hal_compile(str(PROGRAM))
    captured = {}
    for policy in ("reference", "capture-ranges"):
        path = tmp_path / f"{policy}.ireereplay"
        ran = iree_tool("iree-run-module", "--device=local-sync", f"--module={vmfb}",
                        f"--input=2x4xf32={floats(x.reshape(-1))}", *flags,
                        f"--device_replay_output={path}", f"--device_replay_file_policy={policy}")
        assert ran.returncode == 0, ran.stderr
        captured[policy] = path
    want = expected(x)
    kinds = ["f32", "f16", "i8", "i64", "f32"]
    checks = [f"--expected_output={'x'.join(map(str, w.shape))}x{k}="
              f"{','.join(str(v) for v in w.reshape(-1).tolist())}" for w, k in zip(want, kinds)]
    here.rename(moved)
    lost = vmrt_replay(captured["reference"])
    assert lost.rc == 1 and "device.import_file" in lost.stderr and "--replay_file_remap" in \
        lost.stderr
    remapped = vmrt_replay(captured["reference"], f"--replay_file_remap={here}={moved}", *checks)
    assert remapped.rc == 0 and remapped.stdout.count("[SUCCESS]") == 5, \
        remapped.stdout + remapped.stderr
    hermetic = vmrt_replay(captured["capture-ranges"], *checks)
    assert hermetic.rc == 0 and hermetic.stdout.count("[SUCCESS]") == 5, \
        hermetic.stdout + hermetic.stderr
