"""``local-task`` under emulation: one emulated machine per worker thread.

An emulated executable lives in one unicorn machine, and a machine runs one
call at a time.  To spread a dispatch's workgroups over ``threads`` host
threads, :class:`EmulatedWorkers` loads the same library into ``threads - 1``
more machines of its own (once, on first use; kept on the executable and
closed with it) and runs a contiguous range of the grid on each, the
executable's own machine on the calling thread.  unicorn releases the GIL
while it runs guest code, so the machines really run in parallel.

Guest memory is shared through the host: each group of bindings that alias
(:func:`~vmrt.hal.local.bindings.alias_groups`) is copied once into a
page-aligned host block, and that block is mapped zero-copy into every
machine (``EmulatedMachine.share``).  A write by any machine lands in the
one block, which is copied back into the caller's arrays after the last
workgroup -- the same bytes local-sync produces.  Each binding ends within
63 bytes of the end of its block, and the machine keeps an unmapped page
after every mapping, so an access past a binding faults and is reported
against it.  Each machine gets its own dispatch state (its binding
addresses, which may differ from machine to machine) and its own workgroup
states, whose processor id is the worker's number.  The workers share the
invocation's instruction budget without a lock
(:class:`~vmrt.hal.local.dispatch_limits.BudgetShares`): the dispatch runs
out of budget exactly where one thread would, and every instruction run is
charged.

When one worker fails (a fault, a deadline, Ctrl-C on the calling thread),
the others are stopped: between workgroups by a shared flag and inside one
by ``Machine.cancel``; the first error is raised.  Executables whose imports
were resolved by plugins are not replicated (their plugins live in the
manager's machine), nor those whose machine gdb or a trace watches: they
keep running on one thread.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence

import elfkit

from ...errors import (
    Cancelled,
    DispatchError,
    ExecutableError,
    StatusCode,
    VmError,
)
from ..dispatch_observer import current_range_recorder, in_range
from .bindings import alias_groups, explain_binding_fault
from .dispatch_args import host_address, host_view, host_writable, workgroup_xyz
from .dispatch_limits import (
    ExecutionLimits,
    current_limits,
    guest_workgroup,
    shares_for,
    stop_error,
)
from .guest import GuestMemory
from .prepared import worker_pool

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_BATCH = 4096          # workgroup states written to guest memory at a time


class _Stopped(Exception):
    """A worker stopped because another one failed (never reported)."""


def use_workers(exe: Any, threads: int, wc: tuple[int, int, int], order: Any) -> bool:
    """Whether a dispatch of ``exe`` runs on worker machines: an emulated
    executable, several threads and workgroups, no explicit order, none of
    its imports resolved (a resolved import calls a plugin living in the
    executable's own machine), and its machine not watched by gdb or a
    trace (which would miss the workgroups run elsewhere)."""
    return (threads > 1 and order is None and wc[0] * wc[1] * wc[2] > 1
            and exe.backend == "emulated" and not any(i.function for i in exe.imports)
            and not exe.machine.observed)


class SharedBindings:
    """One dispatch's bindings in page-aligned host blocks, each alias group
    once, mapped into any number of machines.  ``blocks`` are those of the
    previous dispatch, reused when the sizes match (so are the machines'
    mappings of them); ``used`` those of this one."""

    def __init__(self, arrays: Sequence[Any], blocks: dict[tuple[int, int], Any]):
        import numpy as np

        # imported here: a native or host-only run never imports unicorn
        from elfkit.exec import page_aligned_empty
        self.arrays = list(arrays)
        self.groups = alias_groups(self.arrays)
        #: per group: (host block, offset of the group's span in it, span size)
        self.placed: list[tuple[Any, int, int]] = []
        self.used: dict[tuple[int, int], Any] = {}
        for g, group in enumerate(self.groups):
            lo, hi = self._span(group)
            n = hi - lo
            size = -(-(n + 63) // 4096) * 4096
            block = blocks.get((g, size))
            if block is None:
                block = page_aligned_empty(size, np.uint8)
            self.used[(g, size)] = block
            off = (size - n) & ~63
            block[:off] = 0
            block[off + n:] = 0
            view = block[off:off + n]
            view[:] = 0                                 # bytes between bindings stay zero
            for i in group:
                a = self.arrays[i]
                start = host_address(a) - lo
                view[start:start + a.nbytes] = np.frombuffer(host_view(a), np.uint8)
            self.placed.append((block, off, n))

    def _span(self, group: list[int]) -> tuple[int, int]:
        lo = min(host_address(self.arrays[i]) for i in group)
        hi = max(host_address(self.arrays[i]) + self.arrays[i].nbytes for i in group)
        return lo, hi

    def map_into(self, machine: Any, bases: list[int]
                 ) -> tuple[list[int], list[tuple[int, int, int, int, int]]]:
        """Share every block with ``machine`` (each block's guest address is
        appended to ``bases``; a group none of whose bindings is writable is
        mapped read-only): each binding's guest address, and per group what
        :func:`~vmrt.hal.local.bindings.explain_binding_fault` takes."""
        ptrs = [0] * len(self.arrays)
        guards = []
        for group, (block, off, n) in zip(self.groups, self.placed):
            if not any(host_writable(self.arrays[i]) for i in group):
                block = block.view()
                block.flags.writeable = False
            base = machine.share(block)
            bases.append(base)
            lo, _hi = self._span(group)
            for i in group:
                ptrs[i] = base + off + host_address(self.arrays[i]) - lo
            end = base + int(block.nbytes)
            guards.append((group[-1], base + off, n, end, end + 4096))
        return ptrs, guards

    def copy_back(self) -> None:
        """What the workers wrote lands in the caller's writable arrays."""
        for group, (block, off, _n) in zip(self.groups, self.placed):
            lo, _hi = self._span(group)
            for i in group:
                a = self.arrays[i]
                if host_writable(a):
                    start = off + host_address(a) - lo
                    host_view(a)[:] = memoryview(block[start:start + a.nbytes])


class EmulatedWorkers:
    """The worker machines of one emulated executable (see the module doc)."""

    def __init__(self, exe: Any):
        self.exe = exe
        self.workers: list[Any] = []          # extra Executables, one machine each
        self.blocks: dict[tuple[int, int], Any] = {}
        self.lock = threading.Lock()          # one parallel dispatch at a time
        self.job: _Job | None = None          # the dispatch running

    def _grow(self, count: int) -> None:
        exe = self.exe
        while len(self.workers) < count:
            try:
                w = exe.emulated_copy()
            except elfkit.ElfkitError as e:
                raise ExecutableError(f"executable '{exe.name}': loading worker "
                                      f"{len(self.workers) + 1}: {e}") from e
            for limit in ("timeout", "instruction_budget"):
                if hasattr(exe.machine, limit):
                    setattr(w.machine, limit, getattr(exe.machine, limit))
            self.workers.append(w)

    @property
    def machines(self) -> list[Any]:
        """The worker machines loaded so far (the executable's own excluded)."""
        return [w.machine for w in self.workers]

    def dispatch(self, exp: Any, wc: tuple[int, int, int], ws3: tuple[int, int, int],
                 arrays: Sequence[Any], cbytes: bytes, threads: int, where: str,
                 deadline: float | None) -> None:
        """Every workgroup of ``wc`` on ``threads`` machines (at most one per
        workgroup); what the code writes lands in ``arrays``.  The limits of
        the invocation running it apply: each workgroup is stopped at the
        ``deadline``, the workers share the budget (exactly: the dispatch
        stops where one thread would, and what every worker ran is
        charged), and a cancel stops every worker."""
        limits = current_limits()
        stop = contextlib.nullcontext() if limits is None else limits.stopping(
            lambda: self.cancel(Cancelled(f"{where}: the invocation was cancelled",
                                          StatusCode.CANCELLED)))
        with stop:
            self._dispatch(exp, wc, ws3, arrays, cbytes, threads, where, deadline, limits)

    def _dispatch(self, exp: Any, wc: tuple[int, int, int], ws3: tuple[int, int, int],
                  arrays: Sequence[Any], cbytes: bytes, threads: int, where: str,
                  deadline: float | None, limits: ExecutionLimits | None) -> None:
        total = wc[0] * wc[1] * wc[2]
        threads = max(1, min(threads, total))
        with self.lock:
            self._grow(threads - 1)
            execs = [self.exe, *self.workers[:threads - 1]]
            shared = SharedBindings(arrays, self.blocks)
            self.blocks = shared.used
            step, extra = divmod(total, threads)
            bounds, start = [], 0
            for t in range(threads):
                bounds.append((start, start + step + (t < extra)))
                start = bounds[-1][1]
            job = self.job = _Job(exp, wc, ws3, cbytes, threads, where, deadline, shared,
                                  limits)
            try:
                parts = job.parts = [job.prepare(w, t) for t, w in enumerate(execs)]
                job.run(parts, bounds)
            finally:
                self.job = None
                if job.shares is not None:
                    job.shares.settle()
                job.release()
            shared.copy_back()

    def cancel(self, error: VmError | None = None) -> None:
        """Stop the dispatch running (from any thread): every worker stops,
        and the dispatch raises ``error`` (default: CANCELLED)."""
        job = self.job
        if job is not None:
            job.cancelled = error or VmError(f"{job.where}: the dispatch was cancelled",
                                             StatusCode.CANCELLED)
            job.halt(job.parts)

    def close(self) -> None:
        workers, self.workers = self.workers, []
        for w in workers:
            w.close()
        self.blocks.clear()


class _Job:
    """One parallel dispatch: per worker its guest state, then the run."""

    def __init__(self, exp: Any, wc: tuple[int, int, int], ws3: tuple[int, int, int],
                 cbytes: bytes, threads: int, where: str, deadline: float | None,
                 shared: SharedBindings, limits: ExecutionLimits | None):
        self.exp, self.wc, self.ws3, self.cbytes = exp, wc, ws3, cbytes
        self.threads, self.where, self.deadline, self.shared = threads, where, deadline, shared
        self.stop = threading.Event()
        self.running: set[int] = set()        # workers inside their range
        self.mapped: list[tuple[Any, list[int], GuestMemory]] = []
        self.parts: list[tuple[Any, ...]] = []
        self.cancelled: VmError | None = None
        self.limits = limits
        self.shares = shares_for(limits, threads)
        self.rec = current_range_recorder()     # a profile times each worker's range

    def prepare(self, exe: Any, t: int) -> tuple[Any, Any, int, int, Any, tuple[Any, ...]]:
        """Map the bindings into worker ``t``'s machine and write its dispatch
        state: (executable, dispatch function, state address, local memory,
        guest memory, (guards, binding addresses) for fault reports)."""
        mem = GuestMemory(exe.machine)
        bases: list[int] = []
        self.mapped.append((exe.machine, bases, mem))
        ptrs, guards = self.shared.map_into(exe.machine, bases)
        sizes = [a.nbytes for a in self.shared.arrays]
        ds = mem.alloc_dispatch_state(self.cbytes, ptrs, sizes, self.ws3, self.wc, self.threads)
        local = mem.alloc(self.exp.local_memory_size, 64) if self.exp.local_memory_size else 0
        return exe, exe.entry(self.exp), ds, local, mem, (guards, ptrs)

    def run(self, parts: list[tuple[Any, ...]], bounds: list[tuple[int, int]]) -> None:
        pool = worker_pool(len(parts) - 1) if len(parts) > 1 else None
        futures = [pool.submit(in_range(self.rec, range(*bounds[t]), self.run_guarded), t,
                               parts, *bounds[t]) for t in range(1, len(parts))] if pool else []
        errors: list[BaseException] = []
        try:
            in_range(self.rec, range(*bounds[0]), self.run_guarded)(0, parts, *bounds[0])
        except BaseException as e:  # noqa: BLE001 - reported after the others stopped
            errors.append(e)
        for f in futures:
            while True:
                try:
                    e2 = f.exception()
                    break
                except BaseException as e3:  # noqa: BLE001 - Ctrl-C while waiting
                    self.halt(parts)
                    errors.append(e3)
            if e2 is not None:
                errors.append(e2)
        for err in errors:
            if not isinstance(err, _Stopped):
                raise err
        if self.cancelled is not None:
            raise self.cancelled

    def run_guarded(self, t: int, parts: list[tuple[Any, ...]], start: int, end: int) -> None:
        """Worker ``t``'s range; when it fails, the other workers stop too."""
        self.running.add(t)
        try:
            self.run_range(t, parts[t], start, end)
        except BaseException:
            self.running.discard(t)
            self.halt(parts)
            raise
        finally:
            self.running.discard(t)

    def halt(self, parts: list[tuple[Any, ...]]) -> None:
        """Stop every worker: at its next workgroup, and inside the current one
        (only machines whose worker is still in its range are cancelled)."""
        self.stop.set()
        for t in list(self.running):
            parts[t][0].machine.cancel(wait=0)

    def run_range(self, t: int, part: tuple[Any, ...], start: int, end: int) -> None:
        """Workgroups ``start`` to ``end`` (linear, x fastest) on worker ``t``."""
        exe, fn, ds, local, mem, guards = part
        size = mem.layout.ws_size
        env, stop, machine = exe.env, self.stop, exe.machine
        where, deadline, limits, shares = self.where, self.deadline, self.limits, self.shares
        for first in range(start, end, _BATCH):
            idx = range(first, min(first + _BATCH, end))
            rec = exe.workgroup_records(self.wc, idx, t, local, self.exp.local_memory_size)
            base = mem.alloc_bytes(rec, 16)
            k = 0
            try:
                for k in range(len(idx)):  # k names the failing workgroup
                    if stop.is_set():
                        raise _Stopped()
                    r = guest_workgroup(fn, machine, (env, ds, base + k * size), where,
                                        deadline, limits, shares, t)
                    if r:
                        raise DispatchError(f"{self.where} returned catastrophic error {r} in "
                                            f"workgroup {workgroup_xyz(idx[k], self.wc)}",
                                            StatusCode.INTERNAL)
            except (VmError, _Stopped):
                raise
            except elfkit.CallTimeout as e:
                if stop.is_set():
                    raise _Stopped() from None
                raise stop_error(e, where, limits) from None
            except Exception as e:              # a fault: reported against its workgroup
                if stop.is_set():               # (or how a call stopped by cancel ended)
                    raise _Stopped() from e
                self._fail(e, guards, workgroup_xyz(idx[k], self.wc))
            finally:
                mem.free(base)

    def _fail(self, e: Exception, faults: tuple[list[Any], list[int]], xyz: str) -> None:
        why = explain_binding_fault(e, faults[0], faults[1], self.shared.arrays)
        if why is not None:
            raise DispatchError(f"{self.where}, workgroup {xyz}: {why[0]}", why[1]) from e
        raise DispatchError(f"{self.where} failed in workgroup {xyz}: "
                            f"{type(e).__name__}: {e}", StatusCode.INTERNAL) from e

    def release(self) -> None:
        for machine, bases, mem in self.mapped:
            mem.free_all()
            for base in bases:
                machine.unshare(base)
        self.mapped = []


__all__ = ["EmulatedWorkers", "SharedBindings", "use_workers"]

