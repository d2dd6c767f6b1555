"""``--device=local-task``: a native dispatch's workgroups on worker threads,
results bit-identical to ``local-sync``."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.hal.local.device import Device, task_workers
from vmrt.hal.local.executable import Executable
from vmrt.hal.local.plugins.manager import PluginManager
from vmrt.hal.local.prepared import NativeDispatch


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
    orig = NativeDispatch.run_claimed

    def spy(self, *args):
        seen.append(self.threads)
        return orig(self, *args)
    monkeypatch.setattr(NativeDispatch, "run_claimed", spy)
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


def test_workers_share_the_grid_and_report_the_lowest_failure(iree):
    """Native workers take workgroups from a shared counter: every workgroup
    runs once, with the processor id of one of the workers; when several
    fail, the error raised is the lowest one's, the one a single thread
    reports."""
    seen: list[tuple[int, int]] = []
    refuse_from = [1 << 30]

    def mul3(call):
        b0, o0, b1, o1, b2, o2, size, tid = call.words(8)
        seen.append((tid, call.u32(8 * call.word_size)))
        if tid >= refuse_from[0]:
            raise ValueError(f"workgroup {tid} refuses")
        x = call.array(b0 + 4 * o0, np.float32, size)
        y = call.array(b1 + 4 * o1, np.float32, size)
        call.store(b2 + 4 * o2, x * y * np.float32(3))
    groups, n = 40, 64 * 40
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.zeros(n, np.float32)
    args = ("tiled_mul", groups, [a, b, out], [n, 0])
    with PluginManager() as mgr:
        mgr.register({"simple_mul_workgroup": mul3})
        with Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=mgr) as exe:
            exe.dispatch(*args, threads=3)
            np.testing.assert_array_equal(out, a * b * np.float32(3))
            assert sorted(t for t, _ in seen) == list(range(groups))
            assert {p for _, p in seen} <= {0, 1, 2}
            refuse_from[0] = 10
            with pytest.raises(vmrt.VmError) as sync:
                exe.dispatch(*args)
            for _ in range(5):
                with pytest.raises(vmrt.VmError) as task:
                    exe.dispatch(*args, threads=3)
                assert str(task.value) == str(sync.value)
                assert "(10, 0, 0)" in str(task.value)
