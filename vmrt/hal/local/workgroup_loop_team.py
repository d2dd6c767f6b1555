"""A native grid shared by the local-task threads without the interpreter.

Handing a grid to the worker threads from Python (:mod:`~vmrt.hal.local.task_pool`)
costs a thread wake-up, the interpreter lock passed back and forth and a
wake-up back: tens of microseconds, more than a small grid takes (an
LSTM's 8-workgroup matmuls run in ~40 us on one thread, ~70 us on two).
IREE's workers take tiles from shared counters in native code.  The team
does the same on x86_64 hosts, with three small functions of hand-written
machine code (:mod:`~vmrt.hal.local.workgroup_loop_x86_64`, written once
per process into a page of a native machine kept for the process):

* a control block (:class:`Team`): one 64-bit word ``gen << 32 | next``
  the grid's chunks are claimed from with ``lock cmpxchg`` (a claim
  checks the generation, so a worker late from an earlier grid claims
  nothing), a count of the workgroups finished, the grid's parameters
  (the workgroup loop of :mod:`~vmrt.hal.local.workgroup_loop`, its
  function, environment, dispatch state, workgroup states, the cancel
  word), the first failure (``k << 32 | status``, the smallest ``k``
  kept) and a stop flag;
* ``team_run``, called by the dispatching thread (the GIL released): it
  claims and runs chunks until none is left, closes the grid (no claim
  succeeds after that) and waits, spinning, then yielding the CPU, until
  every claimed workgroup finished (and says how long it waited: a worker
  descheduled in the middle of its chunk makes a short grid long); so a
  worker that is not running costs nothing but the claims the caller
  makes itself;
* ``team_worker``, called on a worker thread (:func:`~vmrt.hal.local.task_pool.post`):
  it watches the generation for :data:`SPIN_SECONDS` (``pause``, the
  time-stamp counter, ``sched_yield`` now and then), joins each new grid,
  then goes back to sleep in Python (a dispatch that finds it asleep wakes
  it; the caller never waits for it to wake; see
  :mod:`~vmrt.hal.local.workgroup_loop_x86_64` for why no grid opened as a
  worker stops watching is missed by both).

A workgroup returning nonzero stops the claims (the chunks claimed run to
their end): the error is that of the first failing workgroup in grid order,
as on one thread.  A cancel stops every thread's loop through the cancel
word.  Only one grid runs on the team at a time (another thread's dispatch
meanwhile takes the Python path).  Results are those of one thread:
workgroups are independent and each runs once.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

from .fpu_state import pop, push
from .task_pool import post

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: how long an idle worker watches for the next grid before it sleeps
SPIN_SECONDS = 3e-4
#: ``VMRT_TASK_TEAM=0`` in the environment: no team (the Python hand-off)
ENV = "VMRT_TASK_TEAM"

# the control block's words (u64 index; each group on its own cache line)
_WORD, _FIN, _PARAMS, _FAIL, _STOP, _WAIT, _QUIT, _AWAKE = 0, 8, 16, 32, 33, 34, 40, 48
_NO_FAIL = (1 << 64) - 1
_WORDS = _AWAKE + 16 + 8        # (+ 8: room to align the block to 64 bytes)

_LOCK = threading.Lock()
_TEAM: list[Team | None] = []
#: the native machine holding the team's code, kept for the process
_MACHINE: list[Any] = []


class Team:
    """The control block and the native functions; see the module docstring."""

    def __init__(self, address: int, worker_off: int, run_off: int, tsc_off: int,
                 open_off: int):
        u64 = ctypes.c_uint64
        raw = (u64 * _WORDS)()
        skip = (-ctypes.addressof(raw) % 64) // 8
        self._raw = raw
        self.ctl = (u64 * (_WORDS - 8)).from_buffer(raw, skip * 8)
        self.address = ctypes.addressof(self.ctl)
        self._run = ctypes.CFUNCTYPE(u64, u64, u64)(address + run_off)
        self._worker = ctypes.CFUNCTYPE(u64, u64, u64, u64, u64)(address + worker_off)
        self._open = ctypes.CFUNCTYPE(u64, u64, u64)(address + open_off)
        tsc = ctypes.CFUNCTYPE(u64)(address + tsc_off)
        t0, c0 = time.perf_counter(), tsc()
        while (t1 := time.perf_counter()) - t0 < 2e-4:    # (no sleep: the first call waits)
            pass
        rate = (tsc() - c0) / (t1 - t0)
        self.spin_ticks = max(1000, int(rate * SPIN_SECONDS))
        self.tick = 1 / max(rate, 1.0)      # seconds
        self.gen = 0
        self.ctl[_WORD] = 0xFFFFFFFF         # generation 0, closed
        self.busy = threading.Lock()
        #: the generation each worker saw last
        self.seen = [0] * 16

    def run(self, loop: int, fn: int, env: int, ds: int, ws: int, size: int, total: int,
            chunk: int, cancel: int, threads: int) -> tuple[int, bool, float] | None:
        """Workgroups ``0 .. total-1`` (states at ``ws + k * size``) in
        chunks of ``chunk`` on the calling thread and up to ``threads - 1``
        workers: ``(first failure, stopped, waited)`` where the failure is
        ``k << 32 | status`` (``2**64 - 1``: none), ``stopped`` says the
        grid stopped early (a failure or a cancel) and ``waited`` is how
        long (seconds) the calling thread waited for workers to finish
        their chunks once none was left; None when another thread's grid
        has the team (nothing ran)."""
        if not self.busy.acquire(False):
            return None
        try:
            c = self.ctl
            c[_PARAMS:_PARAMS + 9] = [loop, fn, env, ds, ws, size, total, chunk, cancel]
            c[_FIN] = 0
            c[_FAIL] = _NO_FAIL
            c[_STOP] = 0
            gen = self.gen = (self.gen + 1) & 0xFFFFFFFF or 1
            # open (claims start at 0) with a full barrier before the awake words
            # are read: a worker stopping meanwhile sees the grid or is woken
            self._open(self.address, gen << 32)
            for t in range(1, min(threads, 16)):
                if not c[_AWAKE + t]:
                    c[_AWAKE + t] = 1
                    post(t, self.serve)
            self._run(self.address, gen)
            return c[_FAIL], bool(c[_STOP]), c[_WAIT] * self.tick
        finally:
            self.busy.release()

    def stop(self, timeout: float = 0.1) -> None:
        """Send every worker out of the team's code for good and wait (up to
        ``timeout`` seconds) until none is in it: at exit, before the
        interpreter frees the control block a watching worker reads."""
        self.ctl[_QUIT] = 1
        end = time.monotonic() + timeout
        while any(self.ctl[_AWAKE + 1:_AWAKE + 16]) and time.monotonic() < end:
            time.sleep(SPIN_SECONDS)

    def awake(self, t: int) -> bool:
        """Whether worker ``t`` is watching for grids (or was woken to)."""
        return bool(self.ctl[_AWAKE + t])

    def serve(self, t: int) -> None:
        """Worker ``t``: join grids until none came for :data:`SPIN_SECONDS`
        (denormals flushed meanwhile, as on the dispatching thread)."""
        fpu = push()
        try:
            self.seen[t] = self._worker(self.address, self.spin_ticks, self.seen[t],
                                        self.address + 8 * (_AWAKE + t))
        finally:
            pop(fpu)


def team() -> Team | None:
    """The process's team (made on first use), or None on a host without
    its code (other than x86_64 Linux) or with ``VMRT_TASK_TEAM=0``."""
    if _TEAM:
        return _TEAM[0]
    with _LOCK:
        if not _TEAM:
            _TEAM.append(new_team())
    return _TEAM[0]


def new_team() -> Team | None:
    """A new team (:func:`team` is the process's), None where there is none."""
    if os.environ.get(ENV, "") == "0":
        return None
    from elfkit.arch import host
    from elfkit.exec import PROT_EXEC, PROT_READ, create_machine
    arch = host()
    # System V code that calls Linux's sched_yield (syscall 24) itself: Linux only
    if arch is None or arch.name != "x86_64" or not sys.platform.startswith("linux"):
        return None
    from .workgroup_loop_x86_64 import TEAM_CODE, TEAM_OPEN, TEAM_RUN, TEAM_TSC, TEAM_WORKER
    try:
        machine = create_machine(arch, "native")
        page = arch.page_size
        size = -(-len(TEAM_CODE) // page) * page
        addr = machine.reserve(size, page)
        machine.write(addr, TEAM_CODE)
        machine.protect(addr, size, PROT_READ | PROT_EXEC)
    except Exception:  # noqa: BLE001 - no executable page: the Python hand-off
        return None
    _MACHINE.append(machine)            # kept for the process: workers run its code
    crew = Team(addr, TEAM_WORKER, TEAM_RUN, TEAM_TSC, TEAM_OPEN)
    import atexit
    atexit.register(crew.stop)
    return crew


def team_chunk(total: int, threads: int) -> int:
    """The chunk size of a grid of ``total`` workgroups on the team: a
    claim costs a ``lock cmpxchg``, so small grids go one workgroup at a
    time (the threads finish together), big ones in ~16 chunks a thread."""
    return max(1, total // (max(1, threads) * 16))


__all__ = ["ENV", "SPIN_SECONDS", "Team", "new_team", "team", "team_chunk"]
