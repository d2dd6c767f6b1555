"""``vmrt run --profile=FILE`` and ``vmrt.load(..., profile=...)``: the run's
timeline as Chrome/Perfetto trace-event JSON.

Every trace is checked against the Trace Event Format's rules as
ui.perfetto.dev and chrome://tracing read them (:func:`check_trace`).  What
it shows is checked against independent sources: the dispatches (count,
names, workgroup counts) and the allocation sizes against the profile the
real IREE runtime writes for the same program (``iree-run-module
--device_profiling_mode`` exported by ``iree-profile export
--format=ireeperf-jsonl``), the dispatch counts and byte totals against
``--print_statistics`` of a run without a profile.

(A real trace processor cannot be used here: the ``perfetto`` package's
``TraceProcessor`` downloads its ``trace_processor`` binary at run time.)
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import vmrt_run
from tests.vmrt.iree_tools import REPO, iree_profile_records
from vmrt.errors import UsageError

#: the Trace Event Format phases the profile uses
PHASES = {"X", "M", "C", "i"}


def _strict(text: str) -> dict:
    def no_constant(name: str) -> None:
        raise AssertionError(f"{name} in a trace (not JSON)")
    return json.loads(text, parse_constant=no_constant)


def check_trace(doc: dict) -> list[dict]:
    """The schema checks of a trace (see the module docstring); its events."""
    assert set(doc) >= {"traceEvents", "displayTimeUnit"}
    assert doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    named: set[tuple[int, int]] = set()
    used: set[tuple[int, int]] = set()
    process_named = set()
    for e in events:
        assert isinstance(e["name"], str) and e["name"], e
        assert e["ph"] in PHASES, e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "thread_sort_index"), e
            if e["name"] == "thread_name":
                assert isinstance(e["args"]["name"], str) and e["args"]["name"]
                named.add((e["pid"], e["tid"]))
            elif e["name"] == "process_name":
                process_named.add(e["pid"])
            continue
        assert isinstance(e.get("args", {}), dict)
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "i":
            assert e["s"] in ("t", "p", "g"), e
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values()), e
        used.add((e["pid"], e["tid"]))
    assert used <= named, f"threads without a thread_name: {used - named}"
    assert {pid for pid, _ in used} <= process_named
    # slices on one thread nest: a slice starting inside another ends inside it
    by_thread: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            start = round(e["ts"] * 1000)
            by_thread[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000)))
    for spans in by_thread.values():
        stack: list[int] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], f"slice [{start}, {end}) overlaps its parent"
            stack.append(end)
    return events


def _read(path) -> list[dict]:
    return check_trace(_strict(open(path, encoding="utf-8").read()))


def _slices(events: list[dict], category: str) -> list[dict]:
    return [e for e in events if e["ph"] == "X" and category in e["cat"].split(",")]


def _statistics(stderr: str) -> dict[str, int]:
    """``executable:export -> count`` of --print_statistics."""
    return {key: int(n) for n, key in
            re.findall(r"^\s+(\d+) dispatches .* mean\s+(\S+)$", stderr, re.M)}


def _bytes_allocated(stderr: str) -> int:
    return sum(int(n) for n in re.findall(r"/\s+(\d+)B allocated", stderr))


def _check_workgroups(events: list[dict], once: bool = True) -> dict[int, set[int]]:
    """Each dispatch's workgroup slices cover its grid exactly once (at least
    once unless ``once``: a tool may run them several times) and lie inside
    it in time; the threads each dispatch's workgroups ran on."""
    dispatches = {e["args"]["dispatch"]: e for e in _slices(events, "dispatch")}
    ranges: dict[int, list[dict]] = defaultdict(list)
    for e in _slices(events, "workgroups"):
        ranges[e["args"]["dispatch"]].append(e)
    assert set(ranges) == set(dispatches)
    threads = {}
    for index, d in dispatches.items():
        covered = sorted(k for r in ranges[index] for k in (
            r["args"]["order"] if "order" in r["args"] else
            range(r["args"]["first"], r["args"]["first"] + r["args"]["count"])))
        if once:
            assert covered == list(range(d["args"]["workgroups"])), d
        else:
            assert sorted(set(covered)) == list(range(d["args"]["workgroups"])), d
        x, y, z = map(int, d["args"]["workgroup_count"].split("x"))
        assert x * y * z == d["args"]["workgroups"]
        for r in ranges[index]:
            assert d["ts"] <= r["ts"] + 0.001 and r["ts"] + r["dur"] <= d["ts"] + d["dur"] + 0.002
            assert r["cat"] == d["cat"].replace("dispatch", "workgroups")
        threads[index] = {r["tid"] for r in ranges[index]}
    return threads


@pytest.fixture(scope="module")
def iree_profile(hal_compile, chain_inputs, tmp_path_factory):
    """What IREE's own profile of chain.mlir (local-task, x86_64) records:
    ``(dispatches as (name, workgroup count), allocation sizes)``."""
    records = iree_profile_records(hal_compile("chain.mlir"),
                                   ["--function=chain", *chain_inputs[2]],
                                   "queue-events,executable-metadata",
                                   tmp_path_factory.mktemp("iree_profile"))
    dispatches = [(r["key"], "x".join(map(str, r["workgroup_count"]))) for r in records
                  if r["record_type"] == "command_operation" and r["op"] == "dispatch"]
    allocas = sorted(r["payload_length"] for r in records
                     if r["record_type"] == "queue_event" and r["op"] == "alloca")
    assert dispatches and allocas
    return dispatches, allocas


def _run_profiled(tmp_path, vmfb, inputs, *flags):
    path = tmp_path / "chain.json"
    got = vmrt_run([f"--module={vmfb}", "--function=chain", *inputs, f"--profile={path}",
                    *flags])
    assert got.rc == 0, got.stderr
    return got, _read(path)


@pytest.mark.parametrize("device", ["local-sync", "local-task"])
def test_native_profile_matches_iree_and_statistics(hal_compile, chain_inputs, iree_profile,
                                                    tmp_path, device):
    inputs = chain_inputs[2]
    vmfb = hal_compile("chain.mlir")
    got, events = _run_profiled(tmp_path, vmfb, inputs, f"--device={device}",
                                "--task_topology_group_count=3")
    plain = vmrt_run([f"--module={vmfb}", "--function=chain", *inputs, f"--device={device}",
                      "--print_statistics"])
    assert got.stdout == plain.stdout           # the profile changes no result
    assert got.stderr == ""                     # no statistics printed unless asked
    dispatches, allocas = iree_profile
    shown = _slices(events, "dispatch")
    assert [(e["name"], e["args"]["workgroup_count"]) for e in shown] == dispatches
    stats = _statistics(plain.stderr)
    assert {f"{e['args']['executable']}:{e['args']['export']}" for e in shown} == set(stats)
    assert len(shown) == sum(stats.values())
    assert all(e["cat"] == "dispatch,native" and e["args"]["backend"] == "native"
               and e["args"]["arch"] == "x86_64" for e in shown)
    threads = _check_workgroups(events)
    (invocation,) = _slices(events, "invocation")
    assert invocation["name"] == "chain" and invocation["args"] == {"function": "chain"}
    caller = invocation["tid"]
    assert all(e["tid"] == caller for e in shown)
    for e in shown:
        assert invocation["ts"] <= e["ts"] and \
            e["ts"] + e["dur"] <= invocation["ts"] + invocation["dur"] + 0.001
    if device == "local-sync":
        assert all(t == {caller} for t in threads.values())
    else:   # chunks taken by the calling thread and the pool's workers as they
        # come (which thread ran which varies): at most one slice per workgroup,
        # and the 8-workgroup dispatch cut into at least two chunks
        assert len(_slices(events, "workgroups")) <= 2 + 2 + 8
        assert sum(e["args"]["dispatch"] == 2 for e in _slices(events, "workgroups")) >= 2
        names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
        assert all(names[t].startswith("vmrt-task") for t in threads[2] - {caller})
    # allocations: IREE's sizes, freed by the end, the live bytes counter agreeing
    allocs = [e for e in events if e["ph"] == "i" and e["name"] == "allocate"]
    frees = [e for e in events if e["ph"] == "i" and e["name"] == "free"]
    assert sorted(e["args"]["bytes"] for e in allocs) == allocas
    assert sum(e["args"]["bytes"] for e in allocs) == _bytes_allocated(plain.stderr)
    assert sorted(e["args"]["bytes"] for e in frees) == allocas
    live = [e for e in events if e["ph"] == "C"]
    assert len(live) == len(allocs) + len(frees)
    assert max(sum(e["args"].values()) for e in live) <= sum(allocas)
    assert sum(live[-1]["args"].values()) == 0


def test_emulated_aarch64_profile(hal_compile, chain_inputs, emulation, tmp_path):
    vmfb = hal_compile("chain.mlir", "aarch64")
    for device in ("local-sync", "local-task"):
        got, events = _run_profiled(tmp_path, vmfb, chain_inputs[2], f"--device={device}",
                                    "--task_topology_group_count=2")
        shown = _slices(events, "dispatch")
        assert len(shown) == 3
        assert all(e["cat"] == "dispatch,emulated" and e["args"]["backend"] == "emulated"
                   and e["args"]["arch"] == "aarch64" for e in shown)
        threads = _check_workgroups(events)
        names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
        if device == "local-task":      # worker machines on their own threads (which of
            # the two takes a chunk varies: a worker whose machine still loads takes none)
            assert all(names[t] == "MainThread" or names[t].startswith("vmrt-task")
                       for t in set().union(*threads.values()))
        else:
            assert all(len(t) == 1 for t in threads.values())


def test_vmvx_dispatches_run_on_the_calling_thread(hal_compile, chain_inputs, tmp_path):
    _got, events = _run_profiled(tmp_path, hal_compile("chain.mlir", "vmvx"), chain_inputs[2])
    shown = _slices(events, "dispatch")
    assert len(shown) == 3 and all(e["args"]["backend"] == "vmvx" for e in shown)
    threads = _check_workgroups(events)
    assert all(len(t) == 1 for t in threads.values())


def test_profile_composes_with_check_races_and_dump_dispatches(hal_compile, chain_inputs,
                                                               tmp_path):
    got, events = _run_profiled(tmp_path, hal_compile("chain.mlir"), chain_inputs[2],
                                "--check_races", f"--dump_dispatches={tmp_path / 'dump'}")
    assert "[RACE]" not in got.stdout
    assert len(_slices(events, "dispatch")) == 3
    assert len(list((tmp_path / "dump").iterdir())) == 3
    _check_workgroups(events, once=False)
    assert any("order" in e["args"] for e in _slices(events, "workgroups"))


def test_a_plain_run_does_not_load_the_profiler(hal_compile):
    """Without --profile nothing watches: the profiler is not even imported."""
    code = ("import sys\nfrom vmrt.tools.main import main\n"
            f"rc = main(['run', '--module={hal_compile('chain.mlir')}', '--input=16x32xf32=1', "
            "'--input=32x16xf32=1'])\n"
            "print('LOADED', 'vmrt.tools.profile' in sys.modules)\nsys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "LOADED False"


@pytest.mark.parametrize("n", [5, 300])
def test_transfers_show_their_bytes(hal_compile, tmp_path, n):
    """fills.mlir: @pad fills a 10xf32 result with the padding value and
    copies the 4xf32 input into it; @two fills an n-element i32 tensor."""
    path = tmp_path / "fills.json"
    vmfb = hal_compile("fills.mlir")
    got = vmrt_run([f"--module={vmfb}", "--function=pad", "--input=4xf32=1 2 3 4",
                    f"--profile={path}"])
    assert got.rc == 0, got.stderr
    shown = [(e["name"], e["args"]["bytes"]) for e in _slices(_read(path), "transfer")]
    assert shown == [("fill", 10 * 4), ("copy", 4 * 4)]
    got = vmrt_run([f"--module={vmfb}", "--function=two", "--input=4xf32=1 2 3 4",
                    f"--input={n}", f"--profile={path}"])
    assert got.rc == 0, got.stderr
    events = _read(path)
    assert [(e["name"], e["args"]["bytes"]) for e in _slices(events, "transfer")] == \
        [("fill", n * 4)]
    (invocation,) = _slices(events, "invocation")
    for e in _slices(events, "transfer") + _slices(events, "dispatch"):
        assert e["tid"] == invocation["tid"] and e["ts"] >= invocation["ts"]


def test_load_profile_to_a_file_and_a_stream(hal_compile, chain_inputs, tmp_path):
    a, b, _ = chain_inputs
    path = tmp_path / "load.json"
    with vmrt.load(hal_compile("chain.mlir"), device="local-task", profile=path) as prog:
        first = prog.chain(a, b)
        prog.chain(a, b)
        assert not path.exists()            # written whole when the program closes
    events = _read(path)
    assert [e["name"] for e in _slices(events, "invocation")] == ["chain", "chain"]
    assert len(_slices(events, "dispatch")) == 6
    _check_workgroups(events)
    assert [p.name for p in tmp_path.iterdir()] == ["load.json"]   # no temporary file left
    stream = io.StringIO()
    prog = vmrt.load(hal_compile("chain.mlir"), profile=stream)
    np.testing.assert_array_equal(prog.chain(a, b), first)
    prog.close()
    events = check_trace(_strict(stream.getvalue()))
    assert [e["name"] for e in _slices(events, "load")] == ["(create context)"]
    assert len(_slices(events, "dispatch")) == 3


def test_a_failed_run_keeps_its_profile(hal_compile, tmp_path):
    path = tmp_path / "fail.json"
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", "--input=4xf32=1",
                    "--input=32x16xf32=1", f"--profile={path}"])
    assert got.rc != 0
    (invocation,) = _slices(_read(path), "invocation")
    assert "shape rank mismatch" in invocation["args"]["error"]


@pytest.mark.parametrize("target", ["missing/p.json", "dir", "missing/p.ireeperf.jsonl",
                                    "dir.ireeperf.jsonl", "missing/p.ireeprof"])
def test_unwritable_profile_is_one_error_line_and_no_file(hal_compile, tmp_path, target):
    """(also in IREE's formats, test_profile_ireeperf.py)"""
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir.ireeperf.jsonl").mkdir()
    before = sorted(os.listdir(tmp_path))
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", "--input=16x32xf32=1",
                    "--input=32x16xf32=1", f"--profile={tmp_path / target}"])
    assert got.rc != 0 and got.stdout == ""     # refused before anything ran
    assert len(got.stderr.splitlines()) == 1 and "cannot write the profile" in got.stderr
    assert sorted(os.listdir(tmp_path)) == before and os.listdir(tmp_path / "dir") == [] \
        and os.listdir(tmp_path / "dir.ireeperf.jsonl") == []
    with pytest.raises(UsageError, match="cannot write the profile"):
        vmrt.load(hal_compile("chain.mlir"), profile=tmp_path / target)
    with pytest.raises(UsageError, match="profile must be a path or a text stream"):
        vmrt.load(hal_compile("chain.mlir"), profile=42)


def test_compare_with_refuses_a_profile(hal_compile, tmp_path):
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", f"--profile={tmp_path / 'p'}",
                    f"--compare_with={hal_compile('chain.mlir')}"])
    assert got.rc != 0 and "--compare_with cannot be combined with --profile" in got.stderr
    assert not (tmp_path / "p").exists()


def test_calls_from_two_threads_each_on_their_thread(hal_compile, chain_inputs, tmp_path):
    import threading
    a, b, _ = chain_inputs
    stream = io.StringIO()
    with vmrt.load(hal_compile("chain.mlir"), device="local-task", profile=stream) as prog:
        threads = [threading.Thread(target=prog.chain, args=(a, b), name=f"caller{i}")
                   for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events = check_trace(_strict(stream.getvalue()))
    calls = _slices(events, "invocation")
    assert len(calls) == 2 and len({c["tid"] for c in calls}) == 2
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(names[c["tid"]] for c in calls) == ["caller0", "caller1"]
    for c in calls:     # each call's three dispatches on its thread, inside it
        mine = [d for d in _slices(events, "dispatch") if d["tid"] == c["tid"]]
        assert len(mine) == 3
        assert all(c["ts"] <= d["ts"] and d["ts"] + d["dur"] <= c["ts"] + c["dur"] + 0.001
                   for d in mine)
    _check_workgroups(events)


def test_an_unclosed_program_writes_its_profile_when_collected(hal_compile, chain_inputs,
                                                               tmp_path):
    import gc
    a, b, _ = chain_inputs
    path = tmp_path / "unclosed.json"
    prog = vmrt.load(hal_compile("chain.mlir"), profile=path)
    prog.chain(a, b)
    del prog
    gc.collect()
    assert len(_slices(_read(path), "dispatch")) == 3
