"""``--device=local-task``: a native dispatch's workgroups on worker threads,
results bit-identical to ``local-sync``."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.hal.local.device import Device, task_workers
from vmrt.hal.local.prepared import NativeDispatch
from vmrt.hal.local.workgroup_loop import WorkgroupRunner


def test_task_workers_bounded():
    n = task_workers()
    assert 1 <= n <= 16
    assert Device("local-task").dispatch_threads == n
    assert Device("local-sync").dispatch_threads == 1


def _run(vmfb, device, fn, *args):
    with vmrt.load(vmfb, device=device) as prog:
        first = prog[fn](*args)
        again = prog[fn](*args)        # the second submission reuses prepared dispatches
    np.testing.assert_array_equal(first, again)
    return first


@pytest.mark.parametrize("fn", ["matmul", "scale"])
def test_local_task_matches_local_sync(hal_compile, fn):
    vmfb = hal_compile("task_matmul.mlir")
    rng = np.random.default_rng(7)
    if fn == "matmul":
        args = [rng.standard_normal((256, 256), np.float32) for _ in range(2)]
    else:
        args = [rng.standard_normal(65536).astype(np.float32)]
    sync = _run(vmfb, "local-sync", fn, *args)
    task = _run(vmfb, "local-task", fn, *args)
    assert sync.dtype == task.dtype and sync.shape == task.shape
    assert sync.tobytes() == task.tobytes()
    if fn == "matmul":
        np.testing.assert_allclose(sync, args[0] @ args[1], rtol=1e-4, atol=1e-3)


def test_threaded_prepared_dispatch_splits_the_grid(hal_compile, monkeypatch):
    """Under local-task a multi-workgroup dispatch really runs on 2 threads."""
    monkeypatch.setattr(Device, "__init__", _two_threads(Device.__init__))
    seen: list[int] = []
    orig, orig_team = NativeDispatch.run_range, WorkgroupRunner.run_team

    def spy(self, ds, ws, start, end, *limits):
        seen.append(self.threads)
        return orig(self, ds, ws, start, end, *limits)

    def spy_team(self, team, ds, ws, total, chunk, threads, limits):     # the native team
        ran = orig_team(self, team, ds, ws, total, chunk, threads, limits)
        seen.extend([threads] if ran is not None else [])
        return ran
    monkeypatch.setattr(NativeDispatch, "run_range", spy)
    monkeypatch.setattr(WorkgroupRunner, "run_team", spy_team)
    vmfb = hal_compile("task_matmul.mlir")
    x = np.linspace(-1, 1, 65536, dtype=np.float32)
    with vmrt.load(vmfb, device="local-task") as prog:
        out = prog["scale"](x)
    np.testing.assert_array_equal(out, _run(vmfb, "local-sync", "scale", x))
    assert 2 in seen


def _two_threads(init):
    def wrapped(self, uri, *a, **k):
        init(self, uri, *a, **k)
        if self.identifier == "local-task":
            self.dispatch_threads = 2
    return wrapped


def _two_threads_and_prepared(monkeypatch) -> list[NativeDispatch]:
    """local-task with two threads; the list collects every prepared dispatch made."""
    monkeypatch.setattr(Device, "__init__", _two_threads(Device.__init__))
    made: list[NativeDispatch] = []
    orig = NativeDispatch.__init__

    def spy(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        made.append(self)
    monkeypatch.setattr(NativeDispatch, "__init__", spy)
    return made


def test_threaded_prepared_dispatch_keeps_the_faster_way(hal_compile, monkeypatch):
    """A multi-threaded prepared dispatch tries its first runs on the workers
    and on the calling thread alone, then keeps one way: every call's result
    is local-sync's."""
    from vmrt.hal.local.prepared import LONG_ON_WORKERS, TRIALS
    made = _two_threads_and_prepared(monkeypatch)
    vmfb = hal_compile("task_matmul.mlir")
    x = np.linspace(-1, 1, 65536, dtype=np.float32)
    want = _run(vmfb, "local-sync", "scale", x)
    with vmrt.load(vmfb, device="local-task") as prog:
        for _ in range(TRIALS + 2):
            np.testing.assert_array_equal(prog["scale"](x), want)
    threaded = [d for d in made if d.threads > 1]
    assert threaded
    for d in threaded:
        if d.trials == 2 and d.inline is False:     # its first two runs on the workers were long
            assert d.best[0] >= LONG_ON_WORKERS and d.best[1] == float("inf")
            continue
        assert d.trials == TRIALS and d.inline in (True, False)
        assert all(0 < t < float("inf") for t in d.best)


def test_a_long_run_on_the_workers_keeps_them_without_trials(hal_compile, monkeypatch):
    """A grid whose first two runs on the workers take LONG_ON_WORKERS or
    more stays on the workers at once (no trial runs on the calling thread
    alone), and computes local-sync's result."""
    from vmrt.hal.local import prepared
    monkeypatch.setattr(prepared, "LONG_ON_WORKERS", 0.0)   # every run counts as long
    made = _two_threads_and_prepared(monkeypatch)
    vmfb = hal_compile("task_matmul.mlir")
    x = np.linspace(-1, 1, 65536, dtype=np.float32)
    want = _run(vmfb, "local-sync", "scale", x)
    with vmrt.load(vmfb, device="local-task") as prog:
        for _ in range(3):
            np.testing.assert_array_equal(prog["scale"](x), want)
    threaded = [d for d in made if d.threads > 1]
    assert threaded
    for d in threaded:
        assert d.trials == 2 and d.inline is False and d.best[1] == float("inf")


def _checked_scale(hal_compile):
    """task_matmul on local-task and a call of its ``scale`` checked against
    local-sync's result."""
    vmfb = hal_compile("task_matmul.mlir")
    x = np.linspace(-1, 1, 65536, dtype=np.float32)
    want = _run(vmfb, "local-sync", "scale", x)
    prog = vmrt.load(vmfb, device="local-task")
    return prog, lambda: np.testing.assert_array_equal(prog["scale"](x), want)


def _spy_ways(monkeypatch, workers, alone) -> None:
    """``workers(d)`` before each run of prepared dispatch ``d`` on the
    workers, ``alone(d)`` before each of its trial runs on the calling
    thread alone (not the workers' chunks, which come through run_range too)."""
    orig_threads, orig_range = NativeDispatch._run_threads, NativeDispatch.run_range
    inside: list[bool] = []

    def on_workers(self, *args):
        workers(self)
        inside.append(True)
        try:
            return orig_threads(self, *args)
        finally:
            inside.pop()

    def on_range(self, *args):
        if not inside and self.threads > 1 and self.inline is None:
            alone(self)
        return orig_range(self, *args)
    monkeypatch.setattr(NativeDispatch, "_run_threads", on_workers)
    monkeypatch.setattr(NativeDispatch, "run_range", on_range)


def test_one_long_run_on_the_workers_does_not_keep_them(hal_compile, monkeypatch):
    """A first run on the workers that is long only once (a busy machine
    descheduled the caller) is run on the workers again instead of being
    trusted; the second being short, the trials go on and the faster way
    is chosen as for any grid."""
    import time

    from vmrt.hal.local import prepared
    monkeypatch.setattr(prepared, "LONG_ON_WORKERS", 0.2)
    made = _two_threads_and_prepared(monkeypatch)
    ways: list[str] = []

    def on_workers(d):
        ways.append("workers")
        if len(ways) == 1:
            time.sleep(0.25)            # the first run is long
    _spy_ways(monkeypatch, on_workers, lambda d: ways.append("alone"))
    prog, scale = _checked_scale(hal_compile)
    with prog:
        for _ in range(prepared.TRIALS):
            scale()
    (d,) = [d for d in made if d.threads > 1]
    assert d.trials == prepared.TRIALS and d.inline is not None
    assert ways[:2] == ["workers", "workers"]
    assert ways[2:prepared.TRIALS].count("alone") == 3
    assert 0 < d.best[1] < float("inf")


def test_a_grid_the_workers_stall_goes_back_to_the_calling_thread(hal_compile, monkeypatch):
    """A grid that won its trials on the workers but whose runs there then
    take longer on average than STALLED times its fastest run alone (a
    worker descheduled mid-chunk makes the caller wait) runs alone, with
    local-sync's result, and tries both ways again RETRY_RUNS runs later."""
    import time

    from vmrt.hal.local import prepared
    monkeypatch.setattr(prepared, "LONG_ON_WORKERS", 1.0)     # (no grid here is long)
    monkeypatch.setattr(prepared, "RETRY_RUNS", 3)
    made = _two_threads_and_prepared(monkeypatch)
    _spy_ways(monkeypatch,
              lambda d: time.sleep(0.05 if d.inline is False else 0),   # stalled after the trials
              lambda d: time.sleep(0.01))                               # the trials alone: slower
    prog, scale = _checked_scale(hal_compile)
    with prog:
        for _ in range(prepared.TRIALS):
            scale()
        (d,) = [d for d in made if d.threads > 1]
        assert d.inline is False and d.best[1] >= 0.01
        for _ in range(12):
            scale()
            if d.inline:
                break
        assert d.inline is True and d.mean > prepared.STALLED * d.best[1]
        # after RETRY_RUNS runs alone it tries both ways again
        assert d.retry == prepared.RETRY_RUNS == 3 and d.guarded == 1
        for _ in range(3):
            scale()
        assert d.inline is None and d.trials == 0 and d.retry == 0
        scale()
        assert d.trials == 1


def test_a_long_grid_whose_caller_mostly_waits_for_workers_goes_alone(hal_compile,
                                                                       monkeypatch):
    """A grid kept on the workers (long twice) whose calling thread then
    spends more than STALL_SHARE of its runs waiting for workers at the end
    (what the native team measures) runs alone (for RETRY_RUNS runs)."""
    import time

    from vmrt.hal.local import prepared
    monkeypatch.setattr(prepared, "LONG_ON_WORKERS", 0.0)   # every run counts as long
    made = _two_threads_and_prepared(monkeypatch)
    orig = NativeDispatch._run_threads
    stalled: list[bool] = []

    def waiting(self, *args):
        waited = orig(self, *args)
        if self.inline is False:
            stalled.append(True)
            t0 = time.perf_counter()
            time.sleep(0.05)
            return waited + time.perf_counter() - t0    # as if a worker held its chunk
        return waited
    monkeypatch.setattr(NativeDispatch, "_run_threads", waiting)
    prog, scale = _checked_scale(hal_compile)
    with prog:
        for _ in range(2):
            scale()
        (d,) = [d for d in made if d.threads > 1]
        assert d.inline is False and d.best[1] == float("inf")
        for _ in range(20):
            scale()
            if d.inline:
                break
        assert d.inline is True and d.retry == prepared.RETRY_RUNS     # sent back
        assert 5 <= len(stalled) <= 20
