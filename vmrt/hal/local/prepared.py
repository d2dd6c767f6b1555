"""A native dispatch recorded once and run many times over changing bindings.

A command buffer the compiler memoizes runs the same dispatch (export, grid,
constants) on every submission; only the binding addresses change.
:meth:`vmrt.hal.local.executable.Executable.prepare` checks the arguments
once and returns a :class:`NativeDispatch`; per thread it owns one host block
holding the constants, the binding pointers and lengths and the dispatch
state (written once but for the pointers and lengths), and the workgroup
states of the whole grid (read-only to the dispatch code), so a run is two
``struct.pack_into`` and one native call per workgroup.  Several threads
(``threads`` > 1, IREE's ``local-task``) run on a shared pool and take
workgroups one at a time from a shared counter (``itertools.count``, whose
``next`` is one step under the GIL), so a worker that starts late or loses
its core takes fewer, and the dispatch ends at most one workgroup after the
grid runs out.  ctypes releases the GIL during each call.  Worker ``t``
(the calling thread is 0) runs every workgroup with processor id ``t``:
the block holds one copy of the grid's workgroup states per worker.
Errors are those of :meth:`Executable.dispatch`.
"""
from __future__ import annotations

import itertools
import struct
import threading

from ...errors import DispatchError, StatusCode, VmError
from ..buffer import aligned_memory
from .dispatch_args import workgroup_xyz
from .dispatch_limits import ExecutionLimits, before_workgroup, current_limits

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from concurrent.futures import ThreadPoolExecutor
    from typing import Any

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()


def worker_pool(threads: int) -> ThreadPoolExecutor:
    """The process-wide pool of ``threads`` workers (made on first use)."""
    with _POOL_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            # imported here: a local-sync run needs no pool (concurrent.futures
            # imports logging and traceback, ~4 ms of start-up)
            from concurrent.futures import ThreadPoolExecutor
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="vmrt-task")
        return pool


class NativeDispatch:
    """One recorded dispatch of a native executable; see the module docstring."""

    def __init__(self, exe: Any, exp: Any, wc: tuple[int, int, int], ws3: tuple[int, int, int],
                 cbytes: bytes, binding_count: int, where: str, threads: int = 1):
        self.exe = exe
        self.fn = exe.entry(exp)
        self.env = exe.env
        self.wc = wc
        self.total = wc[0] * wc[1] * wc[2]
        self.threads = max(1, min(threads, self.total))
        self.where = where
        lay = exe.layout
        self.ws_size = lay.ws_size
        word = "Q" if lay.word == 8 else "I"
        self.n = binding_count
        # the binding lengths follow the pointers, so one pack writes both
        self.b_off = 256
        self.l_off = self.b_off + binding_count * lay.word
        end = self.l_off + binding_count * lay.word
        self.d_off = max(256 + 128 * lay.word, -(-end // 64) * 64)
        self.pack = struct.Struct(f"<{2 * binding_count}{word}").pack_into
        self.cbytes = cbytes
        self.ws3 = ws3
        self.layout = lay
        self.local = threading.local()
        #: bytes between two workers' copies of the workgroup states
        self.span = self.total * self.ws_size

    def _block(self) -> tuple[Any, int, int, int]:
        """This thread's block: (memory, dispatch state address, offset of the
        workgroup states, their address)."""
        lay, n, wc = self.layout, self.n, self.wc
        ws_off = -(-(self.d_off + lay.ds_size) // 64) * 64
        block, base = aligned_memory(ws_off + self.threads * self.span, "dispatch state")
        block[:len(self.cbytes)] = self.cbytes
        state = lay.dispatch_state(self.ws3, len(self.cbytes) // 4, wc, self.threads, n,
                                   base if self.cbytes else 0, base + self.b_off if n else 0,
                                   base + self.l_off if n else 0)
        block[self.d_off:self.d_off + len(state)] = state
        off = ws_off
        for t in range(self.threads):       # worker t's copy: processor_id t
            rec = lay.workgroup_records(wc, range(self.total), t, 0, 0)
            block[off:off + len(rec)] = rec
            off += len(rec)
        mine = (block, base + self.d_off, ws_off, base + ws_off)
        self.local.mine = mine
        return mine

    def run(self, ptrs: list[int], sizes: list[int], deadline: float | None = None) -> None:
        """Run every workgroup over bindings at ``ptrs`` of ``sizes`` bytes."""
        if self.exe.closed:
            self.exe.check_open()
        try:
            block, ds, _recs, ws = self.local.mine
        except AttributeError:
            block, ds, _recs, ws = self._block()
        self.pack(block, self.b_off, *ptrs, *sizes)
        limits = current_limits()       # a cancel is checked between workgroups
        if self.total == 1:             # run_claimed(ds, ws, [0], ...) in this frame
            if deadline is not None or limits is not None and (
                    limits.cancelled or limits.parent is not None):
                before_workgroup(self.where, deadline, limits)
            try:
                r = self.fn(self.env, ds, ws)
            except VmError:
                raise
            except Exception as exc:
                raise self._failure(0, exc) from exc
            if r:
                raise self._failure(0, r)
            return
        if self.threads == 1:
            self.run_claimed(ds, ws, iter(range(self.total)), deadline, limits)
            return
        claims = itertools.count()
        span = self.span
        pool = worker_pool(self.threads - 1)
        failed = [[-1] for _ in range(self.threads)]
        futures = [pool.submit(self.run_claimed, ds, ws + t * span, claims, deadline, limits,
                               failed[t]) for t in range(1, self.threads)]
        errors: list[BaseException | None] = []
        try:
            self.run_claimed(ds, ws, claims, deadline, limits, failed[0])
            errors.append(None)
        except Exception as first:  # noqa: BLE001 - reported after the other workers end
            errors.append(first)
        errors += joined(futures)
        raise_first(errors, failed)

    def run_claimed(self, ds: int, ws: int, claims: Iterator[int], deadline: float | None,
                    limits: ExecutionLimits | None = None, failed: list[int] | None = None
                    ) -> None:
        """Workgroups (linear, x fastest) taken from ``claims`` until it
        passes the grid's end, over the workgroup states at ``ws``; the
        workgroup that failed is stored in ``failed[0]``."""
        fn, env, size, total = self.fn, self.env, self.ws_size, self.total
        k = -1
        try:
            for k in claims:  # k names the failing workgroup
                if k >= total:
                    break
                if deadline is not None or limits is not None and (
                        limits.cancelled or limits.parent is not None):
                    before_workgroup(self.where, deadline, limits)
                r = fn(env, ds, ws + k * size)
                if r:
                    raise self._failure(k, r)
        except VmError:
            if failed is not None:
                failed[0] = k
            raise
        except Exception as e:
            if failed is not None:
                failed[0] = k
            raise self._failure(k, e) from e

    def _failure(self, k: int, cause: Exception | int) -> DispatchError:
        return workgroup_failure(self.where, k, self.wc, cause)


def workgroup_failure(where: str, k: int, wc: tuple[int, int, int],
                      cause: Exception | int) -> DispatchError:
    """The error of native workgroup ``k`` of a ``wc`` grid that raised
    ``cause`` or returned it (a nonzero status)."""
    if isinstance(cause, int):
        return DispatchError(f"{where} returned catastrophic error {cause} in workgroup "
                             f"{workgroup_xyz(k, wc)}", StatusCode.INTERNAL)
    return DispatchError(f"{where} failed in workgroup {workgroup_xyz(k, wc)}: "
                         f"{type(cause).__name__}: {cause}", StatusCode.INTERNAL)


def joined(futures: list[Any]) -> list[BaseException | None]:
    """Wait for the other workers of a dispatch (after the calling thread
    ran out of workgroups): the error of each.  A worker the pool has not
    started yet is cancelled, as it would find no workgroup left: the
    dispatch does not wait for a busy machine to schedule it."""
    return [None if f.cancel() else f.exception() for f in futures]


def raise_first(errors: list[BaseException | None], failed: list[list[int]]) -> None:
    """Raise the error of the worker that failed on the lowest workgroup
    (``failed[t][0]``; the one a single thread would report), if any."""
    bad = [(failed[t][0], t) for t, e in enumerate(errors) if e is not None]
    if bad:
        raise errors[min(bad)[1]]  # type: ignore[misc]


def run_windows(fn: Any, env: int, ds: int, wc: tuple[int, int, int], claims: Iterator[int],
                records: Callable[[range], bytes], size: int, where: str,
                deadline: float | None, limits: ExecutionLimits | None,
                window: int = 4096, failed: list[int] | None = None) -> None:
    """One worker of a native dispatch not prepared beforehand: workgroups
    taken from ``claims`` (shared with the other workers) until it passes
    the grid's end.  ``records(indices)`` packs this worker's workgroup
    states (``size`` bytes each); they are written ``window`` workgroups at
    a time, when the worker first takes a workgroup of that window.  The
    workgroup that failed is stored in ``failed[0]``."""
    total = wc[0] * wc[1] * wc[2]
    lo, hi, base, k = 0, 0, 0, -1
    block = None
    try:
        for k in claims:  # k names the failing workgroup
            if k >= total:
                break
            if not lo <= k < hi:
                lo = k - k % window
                hi = min(lo + window, total)
                rec = records(range(lo, hi))
                block, base = aligned_memory(len(rec), "workgroup states")
                block[:] = rec
            if deadline is not None or limits is not None:
                before_workgroup(where, deadline, limits)
            r = fn(env, ds, base + (k - lo) * size)
            if r:
                raise workgroup_failure(where, k, wc, r)
    except VmError:
        if failed is not None:
            failed[0] = k
        raise
    except Exception as e:
        if failed is not None:
            failed[0] = k
        raise workgroup_failure(where, k, wc, e) from e
    del block


__all__ = ["NativeDispatch", "joined", "raise_first", "run_windows", "worker_pool",
           "workgroup_failure"]
