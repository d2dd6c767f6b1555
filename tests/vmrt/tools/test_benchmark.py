"""``vmrt benchmark`` (vmrt.tools.benchmark) against ``iree-benchmark-module``:
the same benchmark names, JSON keys and row types, console lines of the same
shape (timings differ, so numbers are masked); exact ``Nx`` iteration
counts; deterministic guest-instruction counters for an emulated program."""
from __future__ import annotations

import io
import json
import re
import subprocess

import pytest

from tests.vmrt.iree_tools import require_tool
from vmrt.tools.benchmark import benchmark_program
from vmrt.tools.main import main

MATMUL_INPUTS = ("4x8xf32=1", "8x3xf32=2")


@pytest.fixture(scope="module")
def iree_benchmark_module() -> str:
    return require_tool("iree-benchmark-module", "iree-base-runtime")


def vmrt_benchmark(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(["benchmark", *map(str, argv)], stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def iree_tool(tool, *argv):
    p = subprocess.run([tool, *map(str, argv)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout, p.stderr


def matmul_args(vmfb, *extra):
    return [f"--module={vmfb}", "--device=local-sync", "--function=matmul",
            *(f"--input={i}" for i in MATMUL_INPUTS), *extra]


def shape(line: str) -> str:
    """A console line with its numbers (and their unit prefixes) masked."""
    line = re.sub(r"\d+(\.\d+)?(e[+-]\d+)?[kMGTPEZYmunpfazy]?", "N", line)
    return re.sub(r" +", " ", line)


def rows_signature(doc):
    return [(r["name"], r["run_name"], r["run_type"], r.get("aggregate_name"),
             r.get("aggregate_unit"), r["time_unit"], sorted(r)) for r in doc["benchmarks"]]


def test_json_has_iree_benchmark_modules_schema(hal_compile, iree_benchmark_module):
    vmfb = hal_compile("matmul.mlir", "x86_64")
    args = matmul_args(vmfb, "--benchmark_min_time=3x", "--benchmark_repetitions=2",
                       "--benchmark_format=json")
    theirs = json.loads(iree_tool(iree_benchmark_module, *args)[0])
    rc, out, err = vmrt_benchmark(*args)
    assert rc == 0, err
    ours = json.loads(out)
    assert sorted(ours["context"]) == sorted(theirs["context"])
    assert rows_signature(ours) == rows_signature(theirs)
    assert [r["iterations"] for r in ours["benchmarks"]] == \
        [r["iterations"] for r in theirs["benchmarks"]] == [3, 3, 2, 2, 2, 2]
    for row in ours["benchmarks"]:
        assert row["items_per_second"] > 0 and row["real_time"] > 0


def test_console_and_csv_lines_have_iree_benchmark_modules_shape(hal_compile,
                                                                  iree_benchmark_module):
    vmfb = hal_compile("matmul.mlir", "x86_64")
    for fmt in ("console", "csv"):
        args = matmul_args(vmfb, "--benchmark_min_time=2x", "--benchmark_repetitions=2",
                           f"--benchmark_format={fmt}")
        their_out, their_err = iree_tool(iree_benchmark_module, *args)
        rc, out, err = vmrt_benchmark(*args)
        assert rc == 0, err
        assert [shape(ln) for ln in out.splitlines()] == \
            [shape(ln) for ln in their_out.splitlines()]
        # the context on stderr: date, Running ..., CPUs, caches, load, warnings
        theirs = [shape(ln) for ln in their_err.splitlines() if not ln.startswith("Running ")]
        assert [shape(ln) for ln in err.splitlines() if not ln.startswith("Running ")] == theirs
    for extra in ("--benchmark_counters_tabular", "--benchmark_display_aggregates_only",
                  "--benchmark_report_aggregates_only", "--benchmark_dry_run"):
        args = matmul_args(vmfb, "--benchmark_min_time=2x", "--benchmark_repetitions=2", extra)
        rc, text, err = vmrt_benchmark(*args)
        assert rc == 0, err
        assert [shape(ln) for ln in text.splitlines()] == \
            [shape(ln) for ln in iree_tool(iree_benchmark_module, *args)[0].splitlines()], extra
    lines = out.splitlines()
    assert lines[0].startswith("name,iterations,real_time,cpu_time,time_unit,")
    assert lines[-1].startswith('"BM_matmul/process_time/real_time_cv",2,')


def test_console_columns_are_aligned(hal_compile):
    rc, out, err = vmrt_benchmark(*matmul_args(hal_compile("matmul.mlir", "x86_64"),
                                               "--benchmark_min_time=2x",
                                               "--benchmark_repetitions=3"))
    assert rc == 0, err
    dashes, header, _, *rows = out.splitlines()
    width = len("BM_matmul/process_time/real_time") + len("_stddev")
    assert header == f"{'Benchmark':<{width}} {'Time':>13} {'CPU':>15} {'Iterations':>12}" \
        " UserCounters..."
    assert dashes == "-" * len(header)
    assert [r.split()[0] for r in rows] == ["BM_matmul/process_time/real_time"] * 3 + [
        f"BM_matmul/process_time/real_time_{s}" for s in ("mean", "median", "stddev", "cv")]
    for r in rows[:3]:
        assert re.fullmatch(r"\S+ +[\d.]+ ms +[\d.]+ ms +2 items_per_second=[\d.]+k?/s", r)
        assert r.index(" ms") == width + 11
    assert re.fullmatch(r"\S+ +[\d.]+ % +[\d.]+ % +3 items_per_second=[\d.]+%", rows[-1])


def test_nx_runs_exactly_n_iterations(hal_compile):
    rows = benchmark_program(hal_compile("matmul.mlir", "x86_64"), function="matmul",
                             inputs=MATMUL_INPUTS, device="local-sync", min_time="5x",
                             repetitions=3)
    assert [r["run_type"] for r in rows] == ["iteration"] * 3 + ["aggregate"] * 4
    assert [r["iterations"] for r in rows] == [5, 5, 5, 3, 3, 3, 3]
    assert [r["repetition_index"] for r in rows[:3]] == [0, 1, 2]
    assert [r["aggregate_name"] for r in rows[3:]] == ["mean", "median", "stddev", "cv"]
    # an untimed warm-up first does not change the count
    rc, out, err = vmrt_benchmark(*matmul_args(hal_compile("matmul.mlir", "x86_64"),
                                               "--benchmark_min_time=4x",
                                               "--benchmark_min_warmup_time=0.05s",
                                               "--benchmark_format=json"))
    assert rc == 0, err
    assert [r["iterations"] for r in json.loads(out)["benchmarks"]] == [4]



def test_seconds_grow_the_iteration_count_until_a_run_lasts_that_long(hal_compile):
    (row,) = benchmark_program(hal_compile("matmul.mlir", "x86_64"), function="matmul",
                               inputs=MATMUL_INPUTS, device="local-sync", min_time="0.05s")
    assert row["iterations"] > 1
    assert row["iterations"] * row["real_time"] >= 50.0 * (1 - 1e-9)     # ms


def test_all_exports_without_inputs_as_iree_picks_them(hal_compile, iree_benchmark_module):
    vmfb = hal_compile("sort_const.mlir", "x86_64")
    args = [f"--module={vmfb}", "--device=local-sync", "--benchmark_list_tests"]
    rc, out, err = vmrt_benchmark(*args)
    assert rc == 0, err
    assert out == iree_tool(iree_benchmark_module, *args)[0] == \
        "BM_sort_const/process_time/real_time\nBM_sort_const5/process_time/real_time\n"
    rows = benchmark_program(vmfb, device="local-sync", min_time="1x", filter="const5")
    assert [r["name"] for r in rows] == ["BM_sort_const5/process_time/real_time"]
    rows = benchmark_program(vmfb, device="local-sync", min_time="1x", filter="-const5")
    assert [r["name"] for r in rows] == ["BM_sort_const/process_time/real_time"]


def test_guest_instructions_of_an_emulated_program_are_deterministic(hal_compile, emulation):
    vmfb = hal_compile("matmul.mlir", "aarch64")
    runs = [benchmark_program(vmfb, function="matmul", inputs=MATMUL_INPUTS,
                              device=device, min_time="2x", repetitions=2)
            for device in ("local-sync", "local-sync", "local-task")]
    counts = [{k: v for k, v in r.items() if k.startswith("guest_instructions")}
              for rows in runs for r in rows if r["run_type"] == "iteration"]
    assert counts[0]["guest_instructions"] > 0
    assert all(c == counts[0] for c in counts)
    (export,) = [k for k in counts[0] if k.startswith("guest_instructions:")]
    assert export.startswith("guest_instructions:matmul_dispatch_")
    assert counts[0][export] == counts[0]["guest_instructions"]
    aggregates = {r["aggregate_name"]: r["guest_instructions"] for r in runs[0]
                  if r["run_type"] == "aggregate"}
    total = counts[0]["guest_instructions"]
    assert aggregates == {"mean": total, "median": total, "stddev": 0.0, "cv": 0.0}


def test_native_programs_have_no_guest_instructions(hal_compile):
    rows = benchmark_program(hal_compile("matmul.mlir", "x86_64"), function="matmul",
                             inputs=MATMUL_INPUTS, device="local-sync", min_time="1x")
    assert not [k for k in rows[0] if k.startswith("guest_instructions")]


@pytest.mark.parametrize("flag", [
    "--benchmark_min_time=abc", "--benchmark_min_time=0x", "--benchmark_min_time=-1s",
    "--benchmark_repetitions=0", "--benchmark_format=xml", "--benchmark_out_format=yaml",
    "--benchmark_filter=(", "--time_unit=h", "--batch_size=0", "--benchmark_nope=1",
    "--benchmark_context=novalue", "--benchmark_dry_run=maybe",
    "--benchmark_min_warmup_time=soon",
    "--benchmark_out=/nonexistent/dir/out.json"])
def test_bad_flags_are_one_error_line(hal_compile, flag):
    rc, out, err = vmrt_benchmark(*matmul_args(hal_compile("matmul.mlir", "x86_64"), flag,
                                               "--benchmark_min_time=1x"
                                               if "min_time" not in flag else flag))
    assert rc == 1
    assert out == ""
    assert len(err.splitlines()) == 1 and "; " in err, err


def test_benchmark_out_whole_or_not_at_all(hal_compile, tmp_path):
    vmfb = hal_compile("matmul.mlir", "x86_64")
    target = tmp_path / "out.json"
    # the input shape is checked when the function runs: the benchmark fails
    rc, out, err = vmrt_benchmark(f"--module={vmfb}", "--device=local-sync",
                                  "--function=matmul", "--input=2x8xf32=1",
                                  "--input=8x3xf32=2", "--benchmark_min_time=1x",
                                  f"--benchmark_out={target}")
    # (the run context was printed before the benchmark ran, as Google Benchmark does)
    assert rc == 1 and err.splitlines()[-1].startswith("INVALID_ARGUMENT; input0 shape"), err
    assert list(tmp_path.iterdir()) == []
    for fmt, check in (("json", lambda t: json.loads(t)["benchmarks"][0]["iterations"] == 2),
                       ("csv", lambda t: t.splitlines()[-1].startswith('"BM_matmul/')),
                       ("console", lambda t: " items_per_second=" in t.splitlines()[-1])):
        rc, out, err = vmrt_benchmark(*matmul_args(vmfb, "--benchmark_min_time=2x",
                                                   f"--benchmark_out={target}",
                                                   f"--benchmark_out_format={fmt}"))
        assert rc == 0, err
        assert check(target.read_text())
        assert out.startswith("---")          # the display stays console
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_help_is_true():
    out, err = io.StringIO(), io.StringIO()
    assert main(["--help"], stdout=out, stderr=err) == 0
    assert "vmrt benchmark --module=PATH" in out.getvalue()
    rc, out, _ = vmrt_benchmark("--help")
    assert rc == 0
    from vmrt.tools.benchmark import BENCHMARK_FLAGS
    for flag in sorted(BENCHMARK_FLAGS.values | BENCHMARK_FLAGS.bools | BENCHMARK_FLAGS.lists):
        if not flag.startswith("task_") and flag not in ("version", "help"):
            assert f"--{flag}" in out, flag


def test_vmvx_dispatches_count_their_instructions(hal_compile):
    from tests.vmrt.hal.local.vmvx.vmvx_testutil import compile_vmvx
    vmfb = compile_vmvx("elementwise.mlir")
    runs = [benchmark_program(vmfb, function="fops", inputs=("3x5xf32=1", "3x5xf32=2"),
                              device="local-sync", min_time="1x") for _ in range(2)]
    (row,), (again,) = runs
    per_export = {k: v for k, v in row.items() if k.startswith("guest_instructions:")}
    assert len(per_export) == 4 and all(v > 0 for v in per_export.values())
    assert row["guest_instructions"] == sum(per_export.values())
    assert {k: v for k, v in again.items() if k.startswith("guest")} == \
        {k: v for k, v in row.items() if k.startswith("guest")}


def test_json_text_is_laid_out_as_google_benchmarks(hal_compile, iree_benchmark_module):
    """Same indentation, key order and number spelling (``%.16e`` doubles)."""
    args = matmul_args(hal_compile("matmul.mlir", "x86_64"), "--benchmark_min_time=2x",
                       "--benchmark_repetitions=2", "--benchmark_format=json",
                       "--benchmark_context=ci=yes")
    rc, out, err = vmrt_benchmark(*args)
    assert rc == 0, err

    def layout(text):
        text = re.sub(r'"(date|host_name|executable|library_version|library_build_type)": '
                      r'"[^"]*"', r'"\1": S', text)
        text = re.sub(r"-?\d\.\d{16}e[+-]\d{2}", "D", text)
        text = re.sub(r'"load_avg": \[[^\]]*\]', '"load_avg": L', text)
        return re.sub(r"\b\d+\b", "N", text)
    assert layout(out) == layout(iree_tool(iree_benchmark_module, *args)[0])


@pytest.mark.parametrize("value, text", [
    (92907.4, "92.9074k"), (999.0, "999"), (1000.0, "1k"), (1200.0, "1.2k"),
    (999000.0, "999k"), (999500.0, "0.9995M"), (8776140.0, "8.77614M"), (0.5, "0.5"),
    (0.01, "0.01"), (0.001, "1m"), (0.0005, "500u"), (0.0, "0"), (242.0, "242"),
    (-2500.0, "-2.5k")])
def test_counters_are_spelled_as_google_benchmark_spells_them(value, text):
    """(Google Benchmark 1.9.5's string_util.cc rules: above 999 scaled by 1000,
    below 0.01 scaled up to at least 1.)"""
    from vmrt.tools.benchmark_format import human_number
    assert human_number(value) == text
