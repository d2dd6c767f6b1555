"""``local-task`` under emulation: one emulated machine per worker thread,
results bit-identical to ``local-sync`` (which runs every workgroup on one
machine), aliasing bindings still alias, deadlines stop every worker, and
the worker machines are closed with their executable."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.hal.dispatch_observer import workgroup_probe
from vmrt.hal.local.device import Device, task_workers
from vmrt.hal.local.emulated_workers import EmulatedWorkers

from .test_local_task import _two_threads

ARCHES = ["aarch64", "riscv64"]


def _run(vmfb, device, fn, *args):
    with vmrt.load(vmfb, device=device) as prog:
        return prog[fn](*args)


@pytest.fixture
def two_threads(monkeypatch):
    """local-task with 2 workers whatever this machine's CPU count."""
    monkeypatch.setattr(Device, "__init__", _two_threads(Device.__init__))
    used: list[int] = []
    orig = EmulatedWorkers.dispatch

    def spy(self, exp, wc, ws3, arrays, cbytes, threads, where, deadline, **kwargs):
        used.append(min(threads, wc[0] * wc[1] * wc[2]))
        return orig(self, exp, wc, ws3, arrays, cbytes, threads, where, deadline, **kwargs)
    monkeypatch.setattr(EmulatedWorkers, "dispatch", spy)
    return used


def _inputs(fn):
    rng = np.random.default_rng(11)
    shapes = {"matmul": [(256, 256), (256, 256)], "scale": [(65536,)],
              "mlp": [(96, 16), (16, 32), (32,)], "chain": [(8, 8), (8, 8)]}[fn]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("program,fn", [("task_matmul.mlir", "matmul"),
                                        ("task_matmul.mlir", "scale"),
                                        ("matmul.mlir", "mlp"), ("matmul.mlir", "chain")])
def test_emulated_local_task_matches_local_sync(hal_compile, emulation, two_threads, arch,
                                                program, fn):
    vmfb = hal_compile(program, arch)
    args = _inputs(fn)
    sync = _run(vmfb, "local-sync", fn, *args)
    assert not two_threads
    task = _run(vmfb, "local-task", fn, *args)
    assert sync.dtype == task.dtype and sync.shape == task.shape
    assert sync.tobytes() == task.tobytes()
    if program == "task_matmul.mlir":      # many workgroups: they ran on 2 machines
        assert 2 in two_threads
    if fn == "matmul":
        np.testing.assert_allclose(task, args[0] @ args[1], rtol=1e-4, atol=1e-3)
    elif fn == "scale":
        np.testing.assert_allclose(task, np.sin(args[0] * np.float32(1.25)), rtol=1e-5,
                                   atol=1e-5)


# -- the Python API: Executable.dispatch(threads=N) ------------------------------

def _index(n: int) -> list[int]:
    return [n & 0xFFFFFFFF, n >> 32]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("alias", ["x", "y"])
def test_threaded_in_place_saxpy_aliases(iree, emulation, arch, alias):
    """The output binding is an input (one host array bound twice): every
    worker machine sees one copy of it, and the result is what the code
    wrote, identical to one thread."""
    n = 32 * 40 + 5
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal(n).astype(np.float32)
    y0 = rng.standard_normal(n).astype(np.float32)
    results = []
    with vmrt.Executable.load(iree.compile("codegen", arch).library) as exe:
        for threads in (1, 2):
            x, y = x0.copy(), y0.copy()
            out = x if alias == "x" else y
            exe.dispatch("saxpy", -(-n // 32), [x, y, out], [1.5, *_index(n)], threads=threads)
            results.append(out.tobytes())
        assert len(exe.workers.machines) == 1
    assert results[0] == results[1]
    assert results[0] != (x0 if alias == "x" else y0).tobytes()


@pytest.mark.parametrize("arch", ARCHES)
def test_threaded_fault_reported_and_other_worker_stopped(iree, emulation, arch, monkeypatch):
    """Worker 1's first workgroup reads past binding 0: the fault is reported
    against the binding exactly as on one thread, and worker 0 is stopped
    long before the end of its half of a large grid."""
    groups = 100000                                 # worker 0's half: ~1 s or more
    n = 32 * groups
    calls = {}
    orig_entry = vmrt.Executable.entry

    def counting_entry(self, exp):
        fn = orig_entry(self, exp)

        def counted(*args, **kwargs):
            calls[id(self)] = calls.get(id(self), 0) + 1
            return fn(*args, **kwargs)
        return counted
    x = np.ones(n // 2, np.float32)                   # too small for the second half
    y = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with vmrt.Executable.load(iree.compile("codegen", arch).library) as exe:
        with pytest.raises(vmrt.DispatchError) as sync_err, workgroup_probe(order=[groups // 2]):
            exe.dispatch("saxpy", groups, [x, y, out], [1.0, *_index(n)])
        monkeypatch.setattr(vmrt.Executable, "entry", counting_entry)
        with pytest.raises(vmrt.DispatchError) as e:
            exe.dispatch("saxpy", groups, [x, y, out], [1.0, *_index(n)], threads=2)
        assert e.value.code == vmrt.StatusCode.OUT_OF_RANGE
        assert str(e.value) == str(sync_err.value)
        assert f"workgroup ({groups // 2}, 0, 0)" in str(e.value)
        assert calls.get(id(exe), 0) < groups // 2     # worker 0 did not finish its half
        assert not out.any()                           # a failed dispatch writes nothing back
        monkeypatch.undo()
        y, out = y[:1024], out[:1024]                  # the executable is still usable
        exe.dispatch("saxpy", 32, [y, y, out], [1.0, *_index(1024)], threads=2)
        assert (out == 2).all()


def test_deadline_stops_a_threaded_emulated_dispatch(hal_compile, emulation, two_threads):
    vmfb = hal_compile("slow_matmul.mlir", "aarch64")
    a = np.ones((1024, 1024), np.float32)
    with vmrt.load(vmfb, device="local-task", timeout=0.5) as prog:
        with pytest.raises(vmrt.BudgetExceeded) as e:
            prog.mm(a, a)
        assert e.value.code == vmrt.StatusCode.DEADLINE_EXCEEDED
        assert 2 in two_threads
        np.testing.assert_array_equal(prog.small(np.arange(4, dtype=np.float32)),
                                      [0, 2, 4, 6])


def test_worker_machines_closed_with_the_executable(iree, emulation):
    import gc
    import weakref

    import elfkit
    n = 32 * 8
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    exe = vmrt.Executable.load(iree.compile("codegen", "riscv64").library)
    exe.dispatch("saxpy", 8, [x, x, out], [1.0, *_index(n)], threads=3)
    assert (out == 2).all()
    machines = exe.workers.machines
    assert len(machines) == 2 and exe.machine not in machines
    refs = [weakref.ref(m) for m in machines]
    exe.close()
    for m in machines:
        with pytest.raises(elfkit.ModuleClosedError):
            m.alloc(16)
    del m, machines
    gc.collect()
    assert all(r() is None for r in refs)


def test_dispatch_machines_run_with_the_inexact_flag_raised(iree, emulation):
    """unicorn evaluates floats with the host FPU only once the sticky
    inexact flag is up: every machine running dispatch code has it raised,
    and exact arithmetic still gives exact results."""
    n = 32 * 8
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    exe = vmrt.Executable.load(iree.compile("codegen", "riscv64").library)
    try:
        exe.dispatch("saxpy", 8, [x, x, out], [3.0, *_index(n)], threads=3)
        assert out.tobytes() == (np.float32(3.0) * x + x).tobytes()
        machines = [exe.machine, *exe.workers.machines]
        assert len(machines) == 3
        assert all(m.inexact_flag == ("FCSR", 1) for m in machines)
    finally:
        exe.close()


def test_traced_machine_keeps_one_thread(iree, emulation, tmp_path):
    """An execution trace watches one machine: a traced executable is not
    replicated, so the trace holds every workgroup's code."""
    n = 32 * 8
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with vmrt.Executable.load(iree.compile("codegen", "aarch64").library) as exe:
        exe.machine.trace(tmp_path / "trace.txt", mode="compact")
        assert exe.machine.observed
        exe.dispatch("saxpy", 8, [x, x, out], [1.0, *_index(n)], threads=2)
        exe.machine.trace(None)
        assert not exe.machine.observed
        assert exe.workers is None
    assert (out == 2).all()
    assert (tmp_path / "trace.txt").stat().st_size > 0


CTRL_C_CHILD = """
import threading, numpy as np, vmrt
from vmrt.hal.local.device import Device
from vmrt.hal.local.emulated_workers import EmulatedWorkers
init = Device.__init__
def two(self, *a, **k):
    init(self, *a, **k)
    self.dispatch_threads = 2
Device.__init__ = two
main = threading.main_thread()
calls = {{"main": 0, "worker": 0}}
entry = vmrt.Executable.entry
def counting(self, exp):
    fn = entry(self, exp)
    def counted(*a, **k):
        if threading.current_thread() is main:
            calls["main"] += 1
            if calls["main"] == 2:          # the main thread's worker runs guest code
                print("ready", flush=True)  # (the parent sends SIGINT on this line)
        else:
            # the other worker waits until Ctrl-C stopped the dispatch (its
            # workers' stop flag), so the call cannot end before the signal
            # arrives, however late it comes
            running[-1].job.stop.wait()
            calls["worker"] += 1
        return fn(*a, **k)
    return counted
vmrt.Executable.entry = counting
grids, running = [], []
run = EmulatedWorkers.dispatch
def recording(self, exp, wc, *a, **k):
    grids.append(wc[0] * wc[1] * wc[2])
    running.append(self)
    return run(self, exp, wc, *a, **k)
EmulatedWorkers.dispatch = recording
a = np.ones((1024, 1024), np.float32)
with vmrt.load({vmfb!r}, device="local-task") as prog:
    try:
        prog.mm(a, a)
        print("not interrupted")
    except KeyboardInterrupt:
        print("interrupted", calls["main"], calls["worker"], grids[-1])
    print(prog.small(np.arange(4, dtype=np.float32)).tolist())
"""


def test_ctrl_c_stops_every_worker(hal_compile, emulation):
    """Ctrl-C interrupts the worker on the main thread; the other worker is
    stopped too, and the program stays usable.  The child says when its main
    thread runs workgroups, and only then gets SIGINT; its other worker waits
    until the dispatch was told to stop, so however late the signal comes the
    call cannot end without it, and a lost Ctrl-C hangs the child (reported)
    instead of passing or failing by timing."""
    import os
    import select
    import signal
    import subprocess
    import sys
    from pathlib import Path
    vmfb = hal_compile("slow_matmul.mlir", "aarch64")
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD.format(vmfb=str(vmfb))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)})
    try:
        ready, _w, _x = select.select([proc.stdout], [], [], 600)
        first = proc.stdout.readline() if ready else ""
        if first == "ready\n":
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the child did not end after SIGINT: Ctrl-C was lost\n{err[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert first == "ready\n", (first, out, err[-3000:])
    assert proc.returncode == 0, err[-3000:]
    lines = out.split("\n")
    word, main_calls, worker_calls, total = lines[0].split()
    assert word == "interrupted", out
    assert int(total) > 2
    assert 2 <= int(main_calls) <= int(total) // 2 + 1     # within its half of the grid
    assert int(worker_calls) == 1        # released by the stop: one workgroup, then stopped
    assert lines[1] == "[0.0, 2.0, 4.0, 6.0]"


def test_cancel_from_another_thread_stops_every_worker(iree, emulation, monkeypatch):
    """``EmulatedWorkers.cancel`` (what an invocation's cancel calls) stops
    every worker and the dispatch raises CANCELLED; nothing is copied back.
    The cancel is issued from inside the 50th workgroup call, so the test
    does not depend on timing."""
    import threading

    from vmrt.hal.local import emulated_workers
    from vmrt.hal.local.dispatch_args import u32_words
    groups = 20000
    n = 32 * groups
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with vmrt.Executable.load(iree.compile("codegen", "riscv64").library) as exe:
        exe.dispatch("saxpy", 2, [x[:64], x[:64], out[:64]], [1.0, *_index(64)], threads=2)
        out[:] = 0
        workers = exe.workers
        exp = exe.export("saxpy")
        calls = []
        lock = threading.Lock()
        run_workgroup = emulated_workers.guest_workgroup

        def call(fn, machine, args, *limits):
            with lock:
                calls.append(machine)
                if len(calls) == 50:
                    threading.Thread(target=workers.cancel).start()
            return run_workgroup(fn, machine, args, *limits)
        monkeypatch.setattr(emulated_workers, "guest_workgroup", call)
        with pytest.raises(vmrt.VmError) as e:
            workers.dispatch(exp, (groups, 1, 1), exp.workgroup_size, [x, x, out],
                             u32_words([1.0, *_index(n)], "constants"), 2, "saxpy", None)
        monkeypatch.undo()
        assert e.value.code == vmrt.StatusCode.CANCELLED
        assert len(calls) < groups // 2
        assert not out.any()
        exe.dispatch("saxpy", 2, [x[:64], x[:64], out[:64]], [1.0, *_index(64)], threads=2)
        assert (out[:64] == 2).all()


def test_worker_count_read_at_first_submission(hal_compile, emulation, monkeypatch):
    """The program's command buffer is recorded in ``__init`` (memoized), yet
    its emulated dispatches use the device's ``dispatch_threads`` as set
    before the first call, like its native (prepared) dispatches do."""
    used: list[int] = []
    orig = EmulatedWorkers.dispatch

    def spy(self, exp, wc, ws3, arrays, cbytes, threads, where, deadline, **kwargs):
        used.append(threads)
        return orig(self, exp, wc, ws3, arrays, cbytes, threads, where, deadline, **kwargs)
    monkeypatch.setattr(EmulatedWorkers, "dispatch", spy)
    vmfb = hal_compile("task_matmul.mlir", "aarch64")
    args = _inputs("scale")
    wanted = task_workers() + 1              # never the count the device started with
    with vmrt.load(vmfb, device="local-task") as prog:
        ctx = prog.context
        devices = [d for m in ctx.modules for d in getattr(ctx.state_of(m), "devices", ())]
        assert devices
        for d in devices:
            d.dispatch_threads = wanted
        task = prog["scale"](*args)
    assert used and set(used) == {wanted}
    assert task.tobytes() == _run(vmfb, "local-sync", "scale", *args).tobytes()
