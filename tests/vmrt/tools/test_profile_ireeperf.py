"""``vmrt run --profile=FILE.ireeperf.jsonl``: a run's profile in IREE's
``ireeperf-jsonl`` interchange, checked with IREE's own tools.

The oracle is the real IREE runtime's profile of the same program
(``iree-run-module --device_profiling_mode=host-execution,
executable-metadata,memory-events``, exported by ``iree-profile export
--format=ireeperf-jsonl``): the dispatches (export names, workgroup counts,
tiles), the executable functions (binding and constant counts, workgroup
sizes) and the allocation sizes must be IREE's.  Then IREE's renderer,
``iree-profile-render --format=perfetto``, must accept vmrt's file and draw
each of vmrt's dispatches as a slice (read back from the ``.pftrace`` with
the Perfetto protos the renderer itself uses).  (An unwritable
``.ireeperf.jsonl`` path: test_profile.py's unwritable-profile test.)
"""
from __future__ import annotations

import io
import json
import re
import subprocess

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import vmrt_run
from tests.vmrt.iree_tools import iree_profile_records, require_tool
from vmrt.errors import UsageError
from vmrt.tools.profile import open_profile
from vmrt.tools.profile_ireeperf import SCHEMA_VERSION, ireeperf_records


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _read(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return _check(_records(fh.read()))


def _check(records: list[dict]) -> list[dict]:
    """The stream's frame: the schema record first, one version, a session."""
    assert records[0]["record_type"] == "schema"
    assert records[0]["format"] == "ireeperf-jsonl"
    assert all(r["schema_version"] == SCHEMA_VERSION for r in records)
    assert [r.get("event") for r in records if r["record_type"] == "session"] == \
        ["begin", "end"]
    return records


def _of(records: list[dict], record_type: str, op: str | None = None) -> list[dict]:
    return [r for r in records if r["record_type"] == record_type
            and (op is None or r.get("op") == op)]


def _dispatches(records: list[dict]) -> list[tuple[str, list[int], int]]:
    return [(r["key"], r["workgroup_count"], r["tile_count"])
            for r in _of(records, "host_execution_event", "dispatch")]


def _functions(records: list[dict]) -> set[tuple]:
    return {(r["name"], r["binding_count"], r["constant_count"], tuple(r["workgroup_size"]))
            for r in _of(records, "executable_function")}


@pytest.fixture(scope="module")
def iree_records(hal_compile, chain_inputs, tmp_path_factory):
    """IREE's own ireeperf-jsonl of chain.mlir on local-task."""
    records = iree_profile_records(hal_compile("chain.mlir"),
                                   ["--function=chain", *chain_inputs[2]],
                                   "host-execution,executable-metadata,memory-events",
                                   tmp_path_factory.mktemp("iree_ireeperf"))
    _check(records)
    return records


def render(path) -> tuple[list[tuple[str, str]], str]:
    """``iree-profile-render --format=perfetto path``: the track events of the
    ``.pftrace`` it writes as (track name, event name) for slice begins and
    instants, and its summary line."""
    tool = require_tool("iree-profile-render", "iree-base-runtime")
    out = f"{path}.pftrace"
    proc = subprocess.run([tool, "--format=perfetto", str(path), "-o", out],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
    trace = Trace()
    with open(out, "rb") as fh:
        trace.ParseFromString(fh.read())
    tracks = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet
              if p.HasField("track_descriptor")}
    events = [(tracks[p.track_event.track_uuid], p.track_event.name) for p in trace.packet
              if p.HasField("track_event") and p.track_event.type in (
                  p.track_event.TYPE_SLICE_BEGIN, p.track_event.TYPE_INSTANT)]
    return events, proc.stderr


@pytest.mark.parametrize("device", ["local-sync", "local-task"])
def test_ireeperf_matches_iree_and_renders(hal_compile, chain_inputs, iree_records, tmp_path,
                                           device):
    path = tmp_path / "chain.ireeperf.jsonl"
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", "--function=chain",
                    *chain_inputs[2], f"--device={device}", "--task_topology_group_count=3",
                    f"--profile={path}"])
    assert got.rc == 0, got.stderr
    records = _read(path)
    # what IREE's runtime records for the same program, with IREE's fields
    for kind in ("session", "device", "queue", "executable", "executable_function",
                 "host_execution_event", "memory_event"):
        assert {tuple(r) for r in _of(records, kind)} == {tuple(r) for r in
                                                         _of(iree_records, kind)}, kind
    assert _dispatches(records) == _dispatches(iree_records)
    assert _functions(records) == _functions(iree_records)
    exe_ids = {r["executable_id"] for r in _of(records, "executable")}
    for r in _of(records, "host_execution_event", "dispatch"):
        assert r["executable_id"] in exe_ids and r["status_code"] == 0
        assert r["start_host_time_ns"] <= r["end_host_time_ns"]
        assert r["duration_ns"] == r["end_host_time_ns"] - r["start_host_time_ns"]
        assert r["tile_duration_sum_ns"] > 0
    allocated = sorted(r["length"] for r in _of(records, "memory_event")
                       if r["event_type"] == "buffer_allocate")
    freed = sorted(r["length"] for r in _of(records, "memory_event")
                   if r["event_type"] == "buffer_free")
    assert allocated == freed == sorted(r["length"] for r in _of(iree_records, "memory_event")
                                        if r["event_type"] == "queue_alloca")
    # IREE's renderer accepts it and draws vmrt's dispatches and allocations
    events, summary = render(path)
    assert [name for track, name in events if track == "host execution"] == \
        [key for key, _, _ in _dispatches(records)]
    assert sum(1 for _, name in events if name.startswith("memory:buffer_")) == \
        2 * len(allocated)
    assert "host_execution_slices=3" in summary and "skipped_host_execution_events=0" in summary


def test_emulated_dispatches_show_as_iree_names_them(hal_compile, chain_inputs, emulation,
                                                     iree_records, tmp_path):
    path = tmp_path / "a64.ireeperf.jsonl"
    got = vmrt_run([f"--module={hal_compile('chain.mlir', 'aarch64')}", "--function=chain",
                    *chain_inputs[2], "--device=local-task", f"--profile={path}"])
    assert got.rc == 0, got.stderr
    records = _read(path)
    # (the aarch64 code tiles differently: the names are the x86_64 program's)
    assert [k for k, _, _ in _dispatches(records)] == [k for k, _, _ in _dispatches(iree_records)]
    assert all(tiles == np.prod(wg) for _, wg, tiles in _dispatches(records))
    events, _ = render(path)
    assert len([1 for track, _ in events if track == "host execution"]) == 3


def test_transfers_carry_their_bytes(hal_compile, tmp_path):
    """fills.mlir's @pad fills a 10xf32 result and copies the 4xf32 input
    into it (IREE's queue operation types 5 and 4)."""
    path = tmp_path / "pad.ireeperf.jsonl"
    got = vmrt_run([f"--module={hal_compile('fills.mlir')}", "--function=pad",
                    "--input=4xf32=1 2 3 4", f"--profile={path}"])
    assert got.rc == 0, got.stderr
    ops = [(r["op"], r["type_value"], r["payload_length"])
           for r in _of(_read(path), "host_execution_event")]
    assert ops == [("fill", 5, 40), ("copy", 4, 16)]
    events, _ = render(path)
    assert [name for track, name in events if track == "host execution"] == \
        ["host:fill", "host:copy"]


def test_load_and_streams_choose_the_format(hal_compile, chain_inputs, tmp_path):
    a, b, _ = chain_inputs
    path = tmp_path / "load.ireeperf.jsonl"
    with vmrt.load(hal_compile("chain.mlir"), profile=path) as prog:
        first = prog.chain(a, b)
        prog.chain(a, b)
    assert len(_of(_read(path), "host_execution_event", "dispatch")) == 6
    assert [p.name for p in tmp_path.iterdir()] == ["load.ireeperf.jsonl"]
    stream = io.StringIO()
    prog = vmrt.load(hal_compile("chain.mlir"),
                     profile=open_profile(stream, format="ireeperf-jsonl"))
    np.testing.assert_array_equal(prog.chain(a, b), first)
    prog.close()
    assert len(_of(_records(stream.getvalue()), "host_execution_event", "dispatch")) == 3
    with pytest.raises(UsageError, match="unknown profile format 'pftrace'"):
        open_profile(tmp_path / "x.json", format="pftrace")
    assert not (tmp_path / "x.json").exists()


def test_ireeprof_bundle_reads_back_in_iree_profile(hal_compile, chain_inputs, tmp_path):
    """``--profile=FILE.ireeprof``: IREE's binary bundle, which ``iree-profile``
    reads; its ``export`` gives back exactly the records vmrt writes as
    ireeperf-jsonl for the same profile."""
    tool = require_tool("iree-profile", "iree-base-runtime")
    a, b, inputs = chain_inputs
    path = tmp_path / "chain.ireeprof"
    with vmrt.load(hal_compile("chain.mlir"), device="local-task", profile=path) as prog:
        prog.chain(a, b)
    exported = tmp_path / "exported.ireeperf.jsonl"
    subprocess.run([tool, "export", "--format=ireeperf-jsonl", f"--output={exported}",
                    str(path)], check=True, capture_output=True, timeout=300)

    assert _read(exported)[1:] == ireeperf_records(prog.profile)[1:]     # (not the schema)
    stats = subprocess.run([tool, "statistics", str(path)], check=True, capture_output=True,
                           text=True, timeout=300).stdout
    for key, _, _ in _dispatches(_read(exported)):
        assert re.search(rf"host_execute {key}\s+count=1 ", stats), stats
    # the command line writes it too
    got = vmrt_run([f"--module={hal_compile('chain.mlir')}", "--function=chain", *inputs,
                    f"--profile={tmp_path / 'run.ireeprof'}"])
    assert got.rc == 0, got.stderr
    summary = subprocess.run([tool, "summary", str(tmp_path / "run.ireeprof")], check=True,
                             capture_output=True, text=True, timeout=300).stdout
    assert "host_execution_events=3 " in summary and "non_ok_session_end=0" in summary
    with pytest.raises(UsageError, match="binary: give a path"):
        open_profile(io.StringIO(), format="ireeprof")
