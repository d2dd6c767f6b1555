"""``--print_statistics`` and ``Program.statistics()``: the device's
allocator statistics compared with iree-run-module's (which also counts the
tool's staging of each ``--input``), dispatch counts compared with the
``hal.command_buffer.dispatch`` calls in the execution trace."""
from __future__ import annotations

import io
import re
import subprocess

import numpy as np
import pytest

import vmrt
from tests.vmrt.vmrt_testutil import vmrt_run

PROGRAM = "elementwise.mlir"
HEAP = re.compile(r"^\s*(HOST_LOCAL|DEVICE_LOCAL): +(\d+)B peak / +(\d+)B allocated / +(\d+)B "
                  r"freed / +(-?\d+)B live$", re.M)
DISPATCH = re.compile(r"^ +(\d+) dispatches +([\d.]+) ms total +([\d.]+) ms mean  (\S+):(\S+)$",
                      re.M)
CASES = [("add", ["8xf32=1", "8xf32=2"], 64),
         ("iops", ["4x4xi32=3", "4x4xi32=2"], 128),
         ("with_const", ["4xf32=1"], 16),
         ("mul_add", ["5xf32=1", "5xf32=2"], 40)]


@pytest.fixture(scope="module")
def program(hal_compile):
    return hal_compile(PROGRAM, "x86_64")


def _heaps(text: str) -> dict[str, tuple[int, ...]]:
    return {m.group(1): tuple(int(x) for x in m.groups()[1:]) for m in HEAP.finditer(text)}


@pytest.mark.parametrize("fn,inputs,input_bytes", CASES)
def test_allocator_statistics_match_iree(program, fn, inputs, input_bytes):
    args = [f"--module={program}", "--device=local-sync", f"--function={fn}",
            *(f"--input={i}" for i in inputs), "--print_statistics"]
    iree = subprocess.run(["iree-run-module", *args], capture_output=True, text=True,
                          timeout=120)
    assert iree.returncode == 0, iree.stderr
    rc, out, err = vmrt_run(*args)
    assert rc == 0, err
    assert out == iree.stdout           # the statistics go to stderr, as IREE's do
    assert err.startswith("[[ iree_hal_allocator_t memory statistics ]]\n")
    theirs, ours = _heaps(iree.stderr), _heaps(err)
    assert set(ours) == {"HOST_LOCAL", "DEVICE_LOCAL"}
    peak, allocated, freed, live = ours["DEVICE_LOCAL"]
    # iree-run-module also allocates device memory for each --input
    assert allocated == theirs["DEVICE_LOCAL"][1] - input_bytes
    assert 0 < peak <= allocated and live == allocated - freed
    assert ours["HOST_LOCAL"] == (0, 0, 0, 0)


def test_dispatch_counts_match_the_trace(program):
    trace = io.StringIO()
    with vmrt.load(program, statistics=True, trace=trace) as prog:
        a = np.arange(16, dtype=np.int32).reshape(4, 4)
        b = np.full((4, 4), 3, np.int32)
        for _ in range(3):
            mul, sub = prog.iops(a, b)
            np.testing.assert_array_equal(mul, a * b)
            np.testing.assert_array_equal(sub, a - b)
        stats = prog.statistics()
        assert stats is not None
        text = stats.format()
    calls = _dispatches_in_trace(trace.getvalue())
    counts = {key: d.count for key, d in stats.dispatches.items()}
    assert sum(counts.values()) == calls == 2 * 3
    assert all(key.split(":", 1)[1].startswith("iops_dispatch_") for key in counts)
    assert all(d.total_seconds > 0 and d.mean_seconds == d.total_seconds / d.count
               for d in stats.dispatches.values())
    rows = DISPATCH.findall(text)
    assert sorted((int(n), f"{e}:{x}") for n, _t, _m, e, x in rows) == \
        sorted((n, k) for k, n in counts.items())
    dev = stats.heaps["DEVICE_LOCAL"]
    # each call allocates its two 64-byte results (or one buffer holding both)
    assert dev.allocations >= 3 and dev.bytes_allocated >= 3 * 2 * a.nbytes
    assert dev.bytes_peak <= dev.bytes_allocated


def _dispatches_in_trace(text: str) -> int:
    """Dispatches run, from the trace: each queue submission of a command
    buffer runs the dispatches recorded into it (memoized command buffers
    are recorded once in ``__init`` and submitted per call)."""
    recorded: dict[str, int] = {}
    run = 0
    for line in text.splitlines():
        m = re.search(r"@hal\.command_buffer\.dispatch\(%[rR]\d+\((!hal\.command_buffer/\w+)\)",
                      line)
        if m:
            recorded[m.group(1)] = recorded.get(m.group(1), 0) + 1
        elif re.search(r"@hal\.device\.queue\.execute(\.indirect)?\(", line):
            cb = re.search(r"\((!hal\.command_buffer/\w+)\)", line)
            assert cb, line
            run += recorded.get(cb.group(1), 0)
    return run


def test_statistics_are_off_by_default(program):
    with vmrt.load(program) as prog:
        prog.add(np.ones(8, np.float32), np.ones(8, np.float32))
        assert prog.statistics() is None
    rc, _out, err = vmrt_run(f"--module={program}", "--device=local-sync", "--function=add",
                             "--input=8xf32=1", "--input=8xf32=2")
    assert (rc, err) == (0, "")


def test_statistics_of_a_closed_program(program):
    prog = vmrt.load(program, statistics=True)
    prog.close()
    with pytest.raises(vmrt.VmError, match="closed"):
        prog.statistics()
