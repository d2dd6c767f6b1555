"""``local-task`` under emulation: one emulated machine per worker thread,
results bit-identical to ``local-sync`` (which runs every workgroup on one
machine), aliasing bindings still alias, deadlines stop every worker, and
the worker machines are closed with their executable."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.hal.local.device import Device
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

    def spy(self, exp, wc, ws3, arrays, cbytes, threads, where, deadline):
        used.append(min(threads, wc[0] * wc[1] * wc[2]))
        return orig(self, exp, wc, ws3, arrays, cbytes, threads, where, deadline)
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
