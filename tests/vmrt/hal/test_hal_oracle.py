"""Programs compiled for the local HAL device (llvm-cpu): ``vmrt run`` prints
exactly what the pip ``iree-run-module`` prints, byte for byte; programs
compiled for other CPUs run under emulation and print what IREE prints for
the x86_64 build."""
from __future__ import annotations

import numpy as np
import pytest

from tests.vmrt.hal.hal_testutil import run_args

ELEMENTWISE = [
    ("add", ["8xf32=1 2 3 4 5 6 7 8", "8xf32=0.5"]),
    ("mul_add", ["5xf32=1 2 3 4 5", "5xf32=3"]),
    ("mul_add", ["1000xf32=1.5", "1000xf32=-3"]),
    ("mul_add", ["0xf32", "0xf32"]),
    ("iops", ["4x4xi32=7", "4x4xi32=[1 2 3 4][5 6 7 8][9 10 11 12][13 14 15 16]"]),
    ("with_const", ["4xf32=2"]),
]
MATMUL = [
    ("matmul", ["4x8xf32=1", "8x3xf32=2"]),
    ("mlp", ["3x16xf32=0.25", "16x32xf32=-0.5", "32xf32=1"]),
    ("mlp", ["3x16xf32=0.25", "16x32xf32=0.5", "32xf32=1"]),
    ("mlp", ["1x16xf32=1", "16x32xf32=0.125", "32xf32=-1"]),
]
CONSTS = [
    ("big_const", ["256xf32=1"]),          # hal.allocator.import of rodata
    ("splat", []),                         # hal.device.queue.fill
    ("concat", ["4xf32=1 2 3 4", "4xf32=5 6 7 8"]),     # command_buffer.copy_buffer
    ("ident", ["4xf32=1 2 3 4"]),
    ("zeros", ["5"]), ("zeros", ["0"]),
    ("reduce", ["16x32xf32=1"]),
    ("scalar_out", ["4xi32=1 2 3 4"]),     # hal.buffer.load of a device result
]

FILLS = [
    ("pad", ["4xf32=1 2 3 4"]),
    ("two", ["4xf32=1 -3 0.5 8", "3"]), ("two", ["4xf32=2", "0"]), ("two", ["4xf32=2", "100"]),
    ("upd", ["4xi32=9 8 7 6"]),
]

TYPES = [
    ("i8add", ["16xi8=100", "16xi8=1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 127"]),
    ("i64mul", ["3xi64=5000000000 -3 7", "3xi64=3 9 -1"]),
    ("f16add", ["5xf16=1.5 2 3 4 5", "5xf16=0.25"]),
    ("big", ["300x200xf32=0.5"]),
    # i1 tensors are raw bytes in hex for iree-run-module, both ways
    ("i1pass", ["4xi1=01 00 FF 0a"]), ("i1pass", ["4xi1=01"]),
    ("i1cmp", ["4xi32=1 5 3 -2", "4xi32=2 2 3 0"]),
]


def _ids(cases):
    return [f"{f}-{' '.join(i)[:40]}" for f, i in cases]


def _same(ref, got):
    assert got.rc == ref.rc, (ref, got)
    assert got.stdout == ref.stdout
    if ref.rc:
        assert got.status == ref.status, (ref.stderr, got.stderr)


@pytest.mark.parametrize("fn,inputs", ELEMENTWISE, ids=_ids(ELEMENTWISE))
def test_elementwise(hal_compile, both, fn, inputs):
    ref, got = both(run_args(hal_compile("elementwise.mlir"), fn, inputs))
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


@pytest.mark.parametrize("fn,inputs", MATMUL, ids=_ids(MATMUL))
def test_matmul(hal_compile, both, fn, inputs):
    ref, got = both(run_args(hal_compile("matmul.mlir"), fn, inputs))
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


@pytest.mark.parametrize("fn,inputs", CONSTS, ids=_ids(CONSTS))
def test_constants_fills_copies(hal_compile, both, fn, inputs):
    ref, got = both(run_args(hal_compile("consts.mlir"), fn, inputs))
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


@pytest.mark.parametrize("fn,inputs", TYPES, ids=_ids(TYPES))
def test_element_types(hal_compile, both, fn, inputs):
    ref, got = both(run_args(hal_compile("types.mlir"), fn, inputs))
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


@pytest.mark.parametrize("inputs", [["4xi1=1 0 1 1"], ["4xi1=0100"]], ids=["one-digit", "run-on"])
def test_i1_input_errors(hal_compile, both, inputs):
    ref, got = both(run_args(hal_compile("types.mlir"), "i1pass", inputs))
    assert ref.rc == 1
    _same(ref, got)


@pytest.mark.parametrize("fn,inputs", FILLS, ids=_ids(FILLS))
def test_command_buffer_fills(hal_compile, both, fn, inputs):
    ref, got = both(run_args(hal_compile("fills.mlir"), fn, inputs))
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


def test_several_dispatches_random(hal_compile, both, tmp_path):
    """Two dependent matmuls + an add (several dispatches in one command
    buffer), on random inputs passed as .npy files."""
    rng = np.random.default_rng(11)
    np.save(tmp_path / "a.npy", rng.standard_normal((8, 8)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal((8, 8)).astype(np.float32))
    ref, got = both(run_args(hal_compile("matmul.mlir"), "chain", ["@a.npy", "@b.npy"]),
                    cwd=tmp_path)
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


@pytest.mark.parametrize("inputs", [["4xf32=1", "8xf32=0.5"], ["8xi32=1", "8xf32=0.5"],
                                    ["2x4xf32=1", "8xf32=0.5"], ["8xf32=1"]],
                         ids=["dim", "element-type", "rank", "arity"])
def test_input_mismatch_errors(hal_compile, both, inputs):
    """hal.buffer_view.assert failures: same exit code, stdout and status
    message as iree-run-module."""
    ref, got = both(run_args(hal_compile("elementwise.mlir"), "add", inputs))
    assert ref.rc == 1
    _same(ref, got)


@pytest.mark.parametrize("inputs", [["4x4xui32=1", "4x4xsi32=5"], ["4x4xi16=1", "4x4xi32=5"],
                                    ["4x4xi64=1", "4x4xi32=5"], ["4x4xf32=1", "4x4xi32=5"]],
                         ids=["ui32-si32", "i16", "i64", "f32"])
def test_integer_signedness_is_compatible(hal_compile, both, inputs):
    """Integers of the program's width pass whatever their signedness (as in
    IREE); other widths and floats are element type mismatches."""
    ref, got = both(run_args(hal_compile("elementwise.mlir"), "iops", inputs))
    _same(ref, got)


def test_npy_int_inputs(hal_compile, both, tmp_path):
    """.npy int32 arrays are si32 views; the program's i32 accepts them."""
    np.save(tmp_path / "i.npy", np.arange(16, dtype=np.int32).reshape(4, 4))
    ref, got = both(run_args(hal_compile("elementwise.mlir"), "iops", ["@i.npy", "@i.npy"]),
                    cwd=tmp_path)
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


def test_local_task_device(hal_compile, both):
    ref, got = both(run_args(hal_compile("matmul.mlir"), "matmul", ["4x8xf32=1", "8x3xf32=2"],
                             device="local-task"))
    assert ref.rc == 0, ref.stderr
    _same(ref, got)


# ---------------------------------------------------------------------------
# the plugin program (an executable importing simple_mul_workgroup)
# ---------------------------------------------------------------------------

def test_plugin_program_goal(hal_compile, both, hal_sos):
    """The sample's invocation: `vmrt run --device=local-sync
    --executable_plugin=X.sos ... --function=mixed_invocation` prints what
    iree-run-module prints."""
    ref, got = both(run_args(hal_compile("simple_mul.mlir"), "mixed_invocation",
                             ["8xf32=2", "8xf32=4"], [hal_sos]))
    assert ref.rc == 0, ref.stderr
    assert ref.stdout.splitlines() == ["EXEC @mixed_invocation", "result[0]: hal.buffer_view",
                                       "8xf32=12 12 12 12 12 12 12 12"]
    _same(ref, got)


@pytest.mark.parametrize("n", [8, 130, 257])
def test_plugin_program_random(hal_compile, both, hal_sos, tmp_path, n):
    """Several workgroups (64 elements each) through the plugin, and the
    generated add after it."""
    rng = np.random.default_rng(n)
    np.save(tmp_path / "a.npy", rng.standard_normal(n).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal(n).astype(np.float32))
    for fn in ("mixed_invocation", "plugin_mul"):
        ref, got = both(run_args(hal_compile("simple_mul.mlir"), fn, ["@a.npy", "@b.npy"],
                                 [hal_sos]), cwd=tmp_path)
        assert ref.rc == 0, ref.stderr
        _same(ref, got)


def test_plugin_program_without_plugin(hal_compile, both):
    """Both fail; vmrt names the import nobody provides."""
    ref, got = both(run_args(hal_compile("simple_mul.mlir"), "mixed_invocation",
                             ["8xf32=2", "8xf32=4"]))
    assert ref.rc == got.rc == 1
    assert got.stdout == ref.stdout == ""
    assert got.status.startswith("NOT_FOUND; executable 'simple_mul_linked' is missing 1 "
                                 "required import(s): simple_mul_workgroup")
    assert "Traceback" not in got.stderr


@pytest.fixture(scope="module")
def aarch64_only_sos(plugins, tmp_path_factory):
    """The standalone plugin packed with its aarch64 slice only."""
    import subprocess
    import sys
    out = tmp_path_factory.mktemp("a64") / "a64.sos"
    subprocess.run([sys.executable, "-m", "elfkit", "fatelf", "pack", "-o", str(out),
                    str(plugins.path("standalone", "aarch64"))], check=True, capture_output=True)
    return str(out)


def test_plugin_without_a_slice_for_the_program_fails_like_iree(hal_compile, both,
                                                                 aarch64_only_sos):
    """An x86_64 program with an aarch64-only plugin: IREE fails when the
    plugin loads (device creation), INVALID_ARGUMENT, and so does vmrt."""
    ref, got = both(run_args(hal_compile("simple_mul.mlir"), "mixed_invocation",
                             ["8xf32=2", "8xf32=4"], [aarch64_only_sos]))
    assert ref.rc == got.rc == 1
    assert got.stdout == ref.stdout == ""
    assert ref.status == got.status == ("INVALID_ARGUMENT; no ELFs matching the runtime "
                                        "architecture or Linux ABI found in the FatELF")
    assert "it has code for aarch64; the program's executables are for x86_64" in got.stderr


def test_aarch64_program_with_an_aarch64_only_plugin(hal_compile, both, hal_sos,
                                                     aarch64_only_sos, emulation):
    """The same plugin serves a program built for its CPU (emulated here)."""
    from tests.vmrt.hal.hal_testutil import vmrt_run
    args = ["8xf32=2", "8xf32=4"]
    ref, _ = both(run_args(hal_compile("simple_mul.mlir"), "mixed_invocation", args, [hal_sos]))
    got = vmrt_run(run_args(hal_compile("simple_mul.mlir", "aarch64"), "mixed_invocation", args,
                            [aarch64_only_sos]))
    _same(ref, got)


# ---------------------------------------------------------------------------
# other CPUs, emulated (iree-run-module refuses them: compare with x86_64)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ["aarch64", "riscv64"])
def test_plugin_program_emulated(hal_compile, both, hal_sos, emulation, arch):
    from tests.vmrt.hal.hal_testutil import vmrt_run
    args = ["8xf32=2", "8xf32=4"]
    ref, _ = both(run_args(hal_compile("simple_mul.mlir"), "mixed_invocation", args, [hal_sos]))
    assert ref.rc == 0, ref.stderr
    got = vmrt_run(run_args(hal_compile("simple_mul.mlir", arch), "mixed_invocation", args,
                            [hal_sos]))
    _same(ref, got)


def test_aarch64_program_refused_by_iree_but_run_by_vmrt(hal_compile, iree_run_module, hal_sos,
                                                         emulation, tmp_path):
    from tests.vmrt.hal.hal_testutil import iree_run, vmrt_run
    rng = np.random.default_rng(5)
    np.save(tmp_path / "a.npy", rng.standard_normal(200).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal(200).astype(np.float32))
    a64 = run_args(hal_compile("simple_mul.mlir", "aarch64"), "mixed_invocation",
                   ["@a.npy", "@b.npy"], [hal_sos])
    assert iree_run(iree_run_module, a64, tmp_path).rc == 1      # no arm_64 loader on x86_64
    ref = iree_run(iree_run_module, run_args(hal_compile("simple_mul.mlir"), "mixed_invocation",
                                             ["@a.npy", "@b.npy"], [hal_sos]), tmp_path)
    assert ref.rc == 0, ref.stderr
    _same(ref, vmrt_run(a64, tmp_path))


@pytest.mark.parametrize("fn,inputs", [ELEMENTWISE[2], ELEMENTWISE[4], MATMUL[1], CONSTS[0],
                                       CONSTS[2]], ids=_ids([ELEMENTWISE[2], ELEMENTWISE[4],
                                                             MATMUL[1], CONSTS[0], CONSTS[2]]))
def test_generated_code_emulated_aarch64(hal_compile, both, emulation, fn, inputs):
    from tests.vmrt.hal.hal_testutil import vmrt_run
    prog = {"mul_add": "elementwise.mlir", "iops": "elementwise.mlir", "mlp": "matmul.mlir",
            "big_const": "consts.mlir", "concat": "consts.mlir"}[fn]
    ref, _ = both(run_args(hal_compile(prog), fn, inputs))
    assert ref.rc == 0, ref.stderr
    _same(ref, vmrt_run(run_args(hal_compile(prog, "aarch64"), fn, inputs)))


def test_system_plugin_output_order(hal_compile, iree_run_module, system_plugin):
    """The host system plugin prints from inside the dispatch (C stdio, fd 1):
    `python -m vmrt run` interleaves it with its own output the way
    iree-run-module does.  IREE reports the CPU core the thread runs on as
    processor_id; vmrt reports 0, so that line is compared by prefix."""
    import subprocess
    import sys
    args = run_args(hal_compile("simple_mul.mlir"), "mixed_invocation", ["8xf32=2", "8xf32=4"],
                    [system_plugin])
    ref = subprocess.run([iree_run_module, *args], capture_output=True, text=True, timeout=300)
    got = subprocess.run([sys.executable, "-m", "vmrt", "run", *args], capture_output=True,
                         text=True, timeout=300)
    assert ref.returncode == got.returncode == 0, (ref.stderr, got.stderr)
    norm = lambda text: [ln if not ln.startswith("processor_id=") else "processor_id=N"  # noqa
                         for ln in text.splitlines()]
    assert norm(got.stdout) == norm(ref.stdout)
    assert got.stdout.splitlines()[1] == "processor_id=0"


def test_missing_plugin_file_fails_at_device_creation(hal_compile, both, tmp_path):
    missing = tmp_path / "missing.sos"
    ref, got = both(run_args(hal_compile("elementwise.mlir"), "add", ["8xf32=1", "8xf32=2"],
                             [missing]))
    assert ref.rc == got.rc == 1 and ref.stdout == got.stdout == ""
    assert got.status.startswith(ref.status), (ref.stderr, got.stderr)
