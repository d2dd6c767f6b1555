"""``vmrt executable benchmark`` (vmrt.tools.executable_benchmark) against
``iree-benchmark-executable`` on the x86_64 dispatch library of
plugins/data/codegen.mlir (same names, keys, row types, iteration counts
and console shape), deterministic guest-instruction counts on emulated CPUs,
and ``--dump_dispatches`` folders as input; the five foreign CPUs run emulated."""
from __future__ import annotations

import io
import json

import pytest

from tests.vmrt.iree_tools import require_tool
from tests.vmrt.tools.test_benchmark import iree_tool, rows_signature, shape, vmrt_benchmark
from vmrt.tools.main import main

#: saxpy over 64 floats: alpha = 1.0 (its f32 bits), n = 64 (two words)
SAXPY = ["--entry_point=1", "--binding=64xf32=1", "--binding=64xf32=2", "--binding=64xf32",
         "--constant=1065353216", "--constant=64", "--constant=0"]
FORMATS = {"x86_64": "x86_64", "aarch64": "arm_64", "riscv64": "riscv_64", "arm": "arm_32",
           "i386": "x86_32", "riscv32": "riscv_32"}


def vmrt_exe_benchmark(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(["executable", "benchmark", *map(str, argv)], stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def saxpy_args(lib, arch, *extra):
    return ["--device=local-sync", f"--executable_format=embedded-elf-{FORMATS[arch]}",
            f"--executable_file={lib}", *SAXPY, *extra]


def test_json_and_console_match_iree_benchmark_executable(iree):
    tool = require_tool("iree-benchmark-executable", "iree-base-runtime")
    lib = iree.compile("codegen", "x86_64").library
    args = saxpy_args(lib, "x86_64", "--workgroup_count=2,1,1", "--workgroup_count=1,1,1",
                      "--benchmark_min_time=3x", "--benchmark_repetitions=2")
    theirs = json.loads(iree_tool(tool, *args, "--benchmark_format=json")[0])
    rc, out, err = vmrt_exe_benchmark(*args, "--benchmark_format=json")
    assert rc == 0, err
    ours = json.loads(out)
    assert rows_signature(ours) == rows_signature(theirs)
    # 3x rounds up to one batch of 64 dispatches
    assert [r["iterations"] for r in ours["benchmarks"]] == \
        [r["iterations"] for r in theirs["benchmarks"]] == [64, 64, 2, 2, 2, 2] * 2
    assert [r["name"] for r in ours["benchmarks"]][::6] == [
        "BM_dispatch_2x1x1/process_time/real_time", "BM_dispatch_1x1x1/process_time/real_time"]
    assert [r["family_index"] for r in ours["benchmarks"]] == [0] * 6 + [1] * 6
    their_out = iree_tool(tool, *args)[0]
    rc, out, err = vmrt_exe_benchmark(*args)
    assert rc == 0, err
    assert [shape(ln) for ln in out.splitlines()] == [shape(ln) for ln in their_out.splitlines()]


@pytest.mark.parametrize("arch", ["aarch64", "riscv64", "arm", "i386", "riscv32"])
def test_guest_instructions_per_workgroup_are_deterministic(iree, emulation, arch):
    lib = iree.compile("codegen", arch).library
    args = saxpy_args(lib, arch, "--workgroup_count=2,1,1", "--workgroup_count=1,1,1",
                      "--benchmark_min_time=1x", "--batch_size=1", "--benchmark_format=json")
    counts = []
    for _ in range(2):
        rc, out, err = vmrt_exe_benchmark(*args)
        assert rc == 0, err
        counts.append([(r["name"], r["guest_instructions"], r["guest_instructions_per_workgroup"])
                       for r in json.loads(out)["benchmarks"]])
    assert counts[0] == counts[1]
    (_, two, per_wg2), (_, one, per_wg1) = counts[0]
    assert one > 0 and per_wg1 == one and per_wg2 == two / 2
    # the 2-workgroup dispatch counts what its workgroups count run one at a time
    import numpy as np

    from vmrt.hal.dispatch_observer import workgroup_probe
    from vmrt.hal.local.executable import Executable
    from vmrt.tools.executable_benchmark import count_dispatch_instructions
    x, y, out = (np.ones(64, np.float32), np.full(64, 2, np.float32), np.zeros(64, np.float32))

    def one_workgroup(exe, i):
        with workgroup_probe(order=[i]):
            return exe.dispatch(1, (2, 1, 1), [x, y, out], [1.0, 64, 0])
    with Executable.load(lib) as exe:
        assert exe.backend == "emulated"
        parts = [count_dispatch_instructions(exe, lambda i=i: one_workgroup(exe, i))
                 for i in (0, 1)]
    assert parts[0] == one and sum(parts) == two
    np.testing.assert_array_equal(out, 3.0)


def test_native_has_no_guest_instructions(iree):
    lib = iree.compile("codegen", "x86_64").library
    rc, out, err = vmrt_exe_benchmark(*saxpy_args(lib, "x86_64", "--workgroup_count=1,1,1",
                                                  "--benchmark_min_time=1x",
                                                  "--benchmark_format=json"))
    assert rc == 0, err
    assert not [k for k in json.loads(out)["benchmarks"][0] if k.startswith("guest")]


def test_a_dump_dispatches_folder_is_an_input(hal_compile, emulation, tmp_path):
    vmfb = hal_compile("matmul.mlir", "aarch64")
    out, err = io.StringIO(), io.StringIO()
    assert main(["run", f"--module={vmfb}", "--device=local-sync", "--function=matmul",
                 "--input=4x8xf32=1", "--input=8x3xf32=2",
                 f"--dump_dispatches={tmp_path / 'dump'}"], stdout=out, stderr=err) == 0, \
        err.getvalue()
    (folder,) = (tmp_path / "dump").iterdir()
    info = json.loads((folder / "dispatch.json").read_text())
    rc, text, err2 = vmrt_exe_benchmark(folder, "--benchmark_min_time=1x", "--batch_size=1",
                                        "--benchmark_format=json")
    assert rc == 0, err2
    (row,) = json.loads(text)["benchmarks"]
    x, y, z = info["workgroup_count"]
    assert row["name"] == f"BM_dispatch_{x}x{y}x{z}/process_time/real_time"
    # the same dispatch as vmrt benchmark counts inside the program
    rc, text, err3 = vmrt_benchmark(f"--module={vmfb}", "--device=local-sync",
                                    "--function=matmul", "--input=4x8xf32=1",
                                    "--input=8x3xf32=2", "--benchmark_min_time=1x",
                                    "--benchmark_format=json")
    assert rc == 0, err3
    program_row = json.loads(text)["benchmarks"][0]
    assert row["guest_instructions"] == program_row[f"guest_instructions:{info['export']}"] > 0


@pytest.mark.parametrize("flag, message", [
    ("--workgroup_count=1,2", "invalid workgroup count string `1,2`"),
    ("--constant=-1", "invalid push constant value `-1`"),
    ("--executable_format=vmvx-bytecode-fb", "UNIMPLEMENTED; executable format"),
    ("--executable_format=embedded-elf-arm_64", "aarch64"),
    ("--entry_point=9", ""),
    ("--batch_size=0", "--batch_size"),
    ("--device=vulkan", "UNIMPLEMENTED"),
    ("--benchmark_repetitions=x", "--benchmark_repetitions")])
def test_bad_flags_are_one_error_line(iree, flag, message):
    lib = iree.compile("codegen", "x86_64").library
    rc, out, err = vmrt_exe_benchmark(f"--executable_file={lib}", *SAXPY,
                                      "--workgroup_count=1,1,1", "--benchmark_min_time=1x", flag)
    assert rc == 1 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err


def test_missing_inputs(tmp_path):
    for args in ([], [f"--executable_file={tmp_path / 'none.so'}"], [str(tmp_path)]):
        rc, out, err = vmrt_exe_benchmark(*args, "--workgroup_count=1,1,1")
        assert rc == 1 and out == "" and len(err.splitlines()) == 1, err


def test_help():
    rc, out, _ = vmrt_exe_benchmark("--help")
    assert rc == 0 and "--executable_file=FILE" in out and "--workgroup_count" in out
    out2 = io.StringIO()
    assert main(["executable", "--help"], stdout=out2, stderr=io.StringIO()) == 0
    assert "vmrt executable benchmark" in out2.getvalue()
