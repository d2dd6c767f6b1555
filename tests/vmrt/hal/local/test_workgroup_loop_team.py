"""The native team of local-task (vmrt.hal.local.workgroup_loop_team): a grid's
workgroups claimed in native code by the calling thread and a spinning
worker, each run once, the first failing workgroup in grid order reported,
a cancel obeyed, denormals flushed on every thread, and a worker that went
back to sleep woken again by the next grid."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from vmrt.errors import Cancelled, DispatchError
from vmrt.hal.local import workgroup_loop_team as wt
from vmrt.hal.local.fpu_state import pop, push
from vmrt.vm.context import ExecutionLimits

from .test_workgroup_loop import Host


@pytest.fixture
def team(monkeypatch):
    monkeypatch.delenv(wt.ENV, raising=False)
    t = wt.team()
    if t is None:
        pytest.skip("no native team on this host (x86_64 only)")
    return t


@pytest.fixture
def host():
    h = Host(wc=(8, 4, 1))              # 32 workgroups
    yield h
    h.m.close()


def _run(host, team, chunk=1, threads=2, limits=None):
    fpu = push()                        # the caller's FPU state is the caller's business
    try:
        return host.runner().run_team(team, 88, host.ws, 32, chunk, threads, limits)
    finally:
        pop(fpu)


def _two_threads_body(host):
    """A body whose workgroup 0 waits until another thread ran one: the
    grid can only end with two threads in it.  Returns the threads seen."""
    seen: dict[int, int] = {}
    other = threading.Event()

    def body(k: int) -> int:
        me = threading.get_ident()
        seen[k] = me
        if k == 0:
            assert other.wait(30), "no worker joined the grid"
        elif me != seen[0]:
            other.set()
        return 0
    host.body = body
    return seen


@pytest.mark.parametrize("chunk", [1, 3, 32])
def test_every_workgroup_runs_once(host, team, chunk):
    assert _run(host, team, chunk) >= 0.0
    assert sorted(host.ran) == list(range(32))


def test_a_worker_joins_and_flushes_denormals(host, team):
    seen = _two_threads_body(host)
    flushed: list[bool] = []
    inner = host.body

    def body(k: int) -> int:
        flushed.append(np.float32(1e-20) * np.float32(1e-20) == 0)
        return inner(k)
    host.body = body
    assert _run(host, team) >= 0.0
    assert sorted(host.ran) == list(range(32)) and len(set(seen.values())) == 2
    assert all(flushed)
    assert np.float32(1e-20) * np.float32(1e-20) != 0      # not here after the grid


def test_a_sleeping_worker_is_woken_by_the_next_grid(host, team):
    _run(host, team)
    deadline = time.monotonic() + 30
    while team.awake(1) and time.monotonic() < deadline:
        time.sleep(wt.SPIN_SECONDS * 10)    # it stops watching after SPIN_SECONDS
    assert not team.awake(1)
    host.ran.clear()
    seen = _two_threads_body(host)
    assert _run(host, team) >= 0.0
    assert len(set(seen.values())) == 2 and sorted(host.ran) == list(range(32))


def test_the_wait_for_a_slow_worker_is_measured(host, team):
    """The calling thread says how long it waited for a worker still in its
    chunk when none was left (what a descheduled worker costs)."""
    main = threading.get_ident()
    started = threading.Event()
    slept: list[int] = []

    def body(k: int) -> int:
        if threading.get_ident() == main:
            assert started.wait(30), "no worker joined the grid"
        elif not slept:
            slept.append(k)
            started.set()
            time.sleep(0.05)
        return 0
    host.body = body
    assert _run(host, team) >= 0.02
    assert sorted(host.ran) == list(range(32))


@pytest.mark.parametrize("status", [7, -3])
def test_the_first_failing_workgroup_in_grid_order_is_named(host, team, status):
    """Workgroups 9 and 20 fail; 20 fails first in time (9 waits for it):
    the error names 9, what one thread meets first, and nothing after the
    failures is claimed."""
    failed20 = threading.Event()

    def body(k: int) -> int:
        if k == 9:
            failed20.wait(30)
            return status
        if k == 20:
            failed20.set()
            return 5
        return 0
    host.body = body
    with pytest.raises(DispatchError) as info:
        _run(host, team)
    assert info.value.message == (f"export 'x' returned catastrophic error {status} in "
                                  f"workgroup (1, 1, 0)")
    assert set(range(10)) <= set(host.ran) and len(host.ran) <= 22


def test_a_failure_alone_on_one_thread(host, team):
    host.body = lambda k: 4 if k == 30 else 0
    with pytest.raises(DispatchError, match=r"error 4 in workgroup \(6, 3, 0\)"):
        _run(host, team, threads=1)
    assert host.ran == list(range(31))


def test_cancelled_before_and_during_the_grid(host, team):
    limits = ExecutionLimits()
    limits.cancel()
    with pytest.raises(Cancelled):
        _run(host, team, limits=limits)
    assert host.ran == []
    limits = ExecutionLimits()
    cancelled = threading.Event()

    def body(k: int) -> int:
        if k == 3:
            limits.cancel()
            cancelled.set()
        elif k > 3:
            cancelled.wait(30)          # none after 3 ends before the cancel
        return 0
    host.body = body
    with pytest.raises(Cancelled):
        _run(host, team, limits=limits)
    # each thread runs at most the workgroup it was in when the word was set
    assert set(range(4)) <= set(host.ran) and len(host.ran) <= 5


def test_a_busy_team_runs_nothing(host, team):
    """Another thread's grid holds the team: the caller takes the Python way."""
    assert team.busy.acquire(False)
    try:
        assert _run(host, team) is None
        assert host.ran == []
    finally:
        team.busy.release()


def test_stop_sends_the_workers_out_for_good(host, monkeypatch):
    """What runs at exit: no worker stays in the team's code; a grid after
    that runs on the calling thread alone (still every workgroup once)."""
    monkeypatch.delenv(wt.ENV, raising=False)
    crew = wt.new_team()
    assert crew is not None
    assert _run(host, crew) >= 0.0
    crew.stop(timeout=30)
    assert not crew.awake(1)
    host.ran.clear()
    assert _run(host, crew) >= 0.0
    assert sorted(host.ran) == list(range(32))
    crew.stop(timeout=30)
    assert not crew.awake(1)


def test_no_team_when_switched_off(monkeypatch):
    monkeypatch.setenv(wt.ENV, "0")
    assert wt.new_team() is None


@pytest.mark.parametrize("total,threads,want", [(8, 2, 1), (64, 2, 2), (4096, 2, 128),
                                                (3, 4, 1)])
def test_team_chunks(total, threads, want):
    assert wt.team_chunk(total, threads) == want
