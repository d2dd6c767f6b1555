"""``local-task`` under emulation: one emulated machine per worker thread.

An emulated executable lives in one unicorn machine, and a machine runs one
call at a time.  To spread a dispatch's workgroups over ``threads`` host
threads, :class:`EmulatedWorkers` loads the same library into ``threads - 1``
more machines of its own (once, on first use, each on its worker's thread
while the calling thread already runs workgroups on the executable's own
machine; kept on the executable and closed with it); every worker takes
chunks of the grid from one shared counter (:mod:`~vmrt.hal.local.task_pool`)
until none is left, so a worker whose machine is still loading just takes
fewer.  unicorn releases the GIL
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
states, whose processor id is the worker's number (0: the calling thread).  The workers share the
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
from ..buffer import address_of
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
    """One dispatch's bindings in page-aligned host blocks (anonymous
    ``mmap``s: no numpy, whose import would cost a command's first dispatch
    a quarter of a second), each alias group once, mapped into any number
    of machines.  ``blocks`` are those of the previous dispatch, reused when
    the sizes match (so are the machines' mappings of them); ``used`` those
    of this one."""

    def __init__(self, arrays: Sequence[Any], blocks: dict[tuple[int, int], Any]):
        import mmap
        self.arrays = list(arrays)
        self.groups = alias_groups(self.arrays)
        #: per group: ((mmap, its address), offset of the group's span in it, span size)
        self.placed: list[tuple[tuple[Any, int], int, int]] = []
        self.used: dict[tuple[int, int], Any] = {}
        for g, group in enumerate(self.groups):
            lo, hi = self._span(group)
            n = hi - lo
            size = -(-(n + 63) // 4096) * 4096
            block = blocks.get((g, size))
            if block is None:
                mm = mmap.mmap(-1, size)
                block = (mm, address_of(memoryview(mm)))
            self.used[(g, size)] = block
            off = (size - n) & ~63
            view = memoryview(block[0])
            view[:off] = bytes(off)
            view[off:] = bytes(size - off)              # bytes between bindings stay zero
            for i in group:
                a = self.arrays[i]
                start = off + host_address(a) - lo
                view[start:start + a.nbytes] = host_view(a)
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
        for group, ((mm, addr), off, n) in zip(self.groups, self.placed):
            writable = any(host_writable(self.arrays[i]) for i in group)
            base = machine.share_pages(mm, addr, len(mm), writable)
            bases.append(base)
            lo, _hi = self._span(group)
            for i in group:
                ptrs[i] = base + off + host_address(self.arrays[i]) - lo
            end = base + len(mm)
            guards.append((group[-1], base + off, n, end, end + 4096))
        return ptrs, guards

    def copy_back(self) -> None:
        """What the workers wrote lands in the caller's writable arrays."""
        for group, (block, off, _n) in zip(self.groups, self.placed):
            lo, _hi = self._span(group)
            view = memoryview(block[0])
            for i in group:
                a = self.arrays[i]
                if host_writable(a):
                    start = off + host_address(a) - lo
                    host_view(a)[:] = view[start:start + a.nbytes]


class EmulatedWorkers:
    """The worker machines of one emulated executable (see the module doc)."""

    def __init__(self, exe: Any):
        self.exe = exe
        self.workers: list[Any] = []          # extra Executables, one machine each (or None)
        self.blocks: dict[tuple[int, int], Any] = {}
        self.lock = threading.Lock()          # one parallel dispatch at a time
        self.slots = threading.Lock()         # guards the list of workers
        #: workgroups each machine ran in the last dispatch (the executable's first)
        self.taken: list[int] = []
        self.job: _Job | None = None          # the dispatch running

    def worker(self, t: int) -> Any:
        """Worker ``t``'s executable (t >= 1), loaded into a machine of its
        own on first use -- on the worker's thread, while the others run."""
        with self.slots:
            while len(self.workers) < t:
                self.workers.append(None)
            w = self.workers[t - 1]
        if w is not None:
            return w
        exe = self.exe
        try:
            w = exe.emulated_copy()
        except elfkit.ElfkitError as e:
            raise ExecutableError(f"executable '{exe.name}': loading worker {t}: {e}") from e
        for limit in ("timeout", "instruction_budget"):
            if hasattr(exe.machine, limit):
                setattr(w.machine, limit, getattr(exe.machine, limit))
        with self.slots:
            self.workers[t - 1] = w
        return w

    @property
    def machines(self) -> list[Any]:
        """The worker machines loaded so far (the executable's own excluded)."""
        return [w.machine for w in self.workers if w is not None]

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
            shared = SharedBindings(arrays, self.blocks)
            self.blocks = shared.used
            job = self.job = _Job(exp, wc, ws3, cbytes, threads, where, deadline, shared,
                                  limits)
            try:
                job.run(self)
            finally:
                self.job = None
                if job.shares is not None:
                    job.shares.settle()
                job.release()
                self.taken = job.chunks.taken
            shared.copy_back()

    def cancel(self, error: VmError | None = None) -> None:
        """Stop the dispatch running (from any thread): every worker stops,
        and the dispatch raises ``error`` (default: CANCELLED)."""
        job = self.job
        if job is not None:
            job.cancelled = error or VmError(f"{job.where}: the dispatch was cancelled",
                                             StatusCode.CANCELLED)
            job.halt()

    def close(self) -> None:
        workers, self.workers = self.workers, []
        for w in workers:
            if w is not None:
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
        self.parts: list[tuple[Any, ...] | None] = [None] * threads
        from .task_pool import Chunks  # (queue, heapq: a local-sync run imports none of it)
        self.chunks = Chunks(wc[0] * wc[1] * wc[2], threads)
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

    def run(self, workers: EmulatedWorkers) -> None:
        """Every worker at once (the calling thread on the executable's own
        machine, at once; the others once their machine is loaded and
        prepared), each taking chunks of the grid until none is left."""
        from .task_pool import run_workers
        errors = run_workers(self.threads, lambda t: self.run_worker(workers, t), self.halt)
        chunks = self.chunks
        chunks.failed = [f for f in chunks.failed if not isinstance(f[1], _Stopped)]
        chunks.check([e for e in errors if not isinstance(e, _Stopped)])
        if self.cancelled is not None:
            raise self.cancelled

    def run_worker(self, workers: EmulatedWorkers, t: int) -> None:
        """Worker ``t``: its machine (loaded the first time), its guest
        state, then chunks of the grid; when it fails, the others stop too."""
        try:
            exe = workers.exe if t == 0 else workers.worker(t)
            if self.stop.is_set():
                raise _Stopped()
            part = self.parts[t] = self.prepare(exe, t)
        except BaseException:
            self.halt()
            raise
        self.running.add(t)
        try:
            self.chunks.run(t, lambda chunk: in_range(self.rec, chunk, self.run_range)(
                t, part, chunk.start, chunk.stop))
        except BaseException:
            self.running.discard(t)
            self.halt()
            raise
        finally:
            self.running.discard(t)

    def halt(self) -> None:
        """Stop every worker: at its next workgroup, and inside the current one
        (only machines whose worker is still in its range are cancelled)."""
        self.stop.set()
        self.chunks.stop()
        for t in list(self.running):
            part = self.parts[t]
            if part is not None:
                part[0].machine.cancel(wait=0)

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

