"""The dispatch walk of executable libraries: what IREE's local-sync command
buffer and local-task workers do around ``iree_hal_local_executable_issue_call``.

:func:`dispatch_library` checks a dispatch's arguments against the export,
writes the dispatch state (constants, binding pointers and lengths, grid)
and one workgroup state per workgroup (``WS_BATCH`` at a time), and calls
the export's function once per workgroup, x fastest:

* natively, in host memory (one reusable dispatch-state block per thread),
  the grid handed out in chunks to ``threads`` host threads (on x86_64 by
  the native team of :mod:`~vmrt.hal.local.workgroup_loop_team` where it
  applies, else from Python, :mod:`~vmrt.hal.local.task_pool`; the workers
  only help: one not running is not waited for), each thread flushing denormals to
  zero while it runs a chunk (:mod:`~vmrt.hal.local.fpu_state`); each batch
  of states runs as a prepared dispatch's ranges do, in one call of the
  native workgroup loop (:class:`~vmrt.hal.local.workgroup_loop.WorkgroupRunner`,
  the GIL released during it); the deadline and a cancel are checked
  between workgroups;
* emulated, in the executable's machine, the bindings staged into guest
  memory and back (:class:`~vmrt.hal.local.bindings.StagedBindings`), each
  workgroup bounded by the invocation's deadline and instruction budget
  (:mod:`~vmrt.hal.local.dispatch_limits`) and entered with the guest's
  denormals flushed (``exe.entry``); ``threads`` > 1 runs on worker
  machines (:mod:`~vmrt.hal.local.emulated_workers`).

A tool's options (chosen workgroups, recorded stores) come from
:func:`vmrt.hal.dispatch_observer.current_probe`, not from parameters.
The executable is anything with the library ABI's queries
(``entry``, ``layout``, ``workgroup_records``, ``env``, ``machine``,
``backend``, ``export``): :class:`~vmrt.hal.local.elf_executable.ElfExecutable`.
"""
from __future__ import annotations

import struct
import sys
from collections.abc import Sequence

import elfkit

from ...errors import DispatchError, StatusCode
from ..buffer import aligned_memory
from ..dispatch_observer import current_probe, current_range_recorder, in_range
from . import dispatch_args as dargs
from . import fpu_state, guest_profile
from .bindings import StagedBindings
from .dispatch_limits import (
    ExecutionLimits,
    current_limits,
    guest_workgroup,
    stop_error,
    stopping_guest,
)
from .guest import GuestMemory
from .workgroup_loop import WorkgroupRunner, each_workgroup, workgroup_failure

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .exports import ExportInfo

#: workgroup states written at a time
WS_BATCH = 4096


def dispatch_library(exe: Any, export: Any, workgroup_count: Any = (1, 1, 1),
                     bindings: Sequence[Any] = (), constants: Sequence[Any] = (), *,
                     workgroup_size: Sequence[int] | None = None, threads: int = 1,
                     processor_id: int = 0, deadline: float | None = None) -> list[Any]:
    """:meth:`ElfExecutable.dispatch <vmrt.hal.local.elf_executable.ElfExecutable.dispatch>`
    of ``exe``; see the module docstring."""
    exe.check_open()
    exp = exe.export(export)
    where = f"executable '{exe.name}' export '{exp.name}'"
    wc, ws3 = dargs.grid(workgroup_count, workgroup_size, exp.workgroup_size, where)
    bindings = list(bindings)
    arrays = dargs.binding_arrays(bindings, exp.binding_count if exp.has_attrs else None,
                                 where)
    np = sys.modules.get("numpy")      # a numpy array comes only from a caller that imported it
    constants = constants if np is not None and isinstance(constants, np.ndarray) \
        else list(constants)
    if exp.has_attrs and len(constants) != exp.constant_count:
        raise DispatchError(f"{where} takes {exp.constant_count} constant(s), "
                            f"{len(constants)} given")
    if wc[0] * wc[1] * wc[2] == 0:
        return bindings
    probe = current_probe()
    order, writes = (None, None) if probe is None else (probe.order, probe.writes)
    cbytes = dargs.u32_words(constants, f"{where}: constants")
    grid = _Grid(exe, exp, wc, ws3, cbytes, where, deadline, processor_id)
    if order is not None:
        grid.indices = dargs.workgroup_order(order, grid.total, where)
    threads = max(1, int(threads))
    if exe.backend == "native":
        if writes is not None:
            raise DispatchError(f"{where}: only an emulated dispatch can record its writes")
        _run_native(grid, arrays, threads)
    else:
        _run_emulated(grid, arrays, threads, writes)
    return bindings


class _Grid:
    """One dispatch being walked: the export, its grid and its arguments."""

    def __init__(self, exe: Any, exp: ExportInfo, wc: tuple[int, int, int],
                 ws3: tuple[int, int, int], cbytes: bytes, where: str, deadline: float | None,
                 processor_id: int):
        self.exe, self.exp, self.wc, self.ws3, self.cbytes = exe, exp, wc, ws3, cbytes
        self.where, self.deadline, self.processor_id = where, deadline, processor_id
        self.total = wc[0] * wc[1] * wc[2]
        #: the linear workgroup indices to run, in order (None: all, x fastest)
        self.indices: list[int] | None = None
        self.limits: ExecutionLimits | None = current_limits()
        #: times each range of workgroups when a profile watches (else None)
        self.rec = current_range_recorder()
        self.fn = exe.entry(exp)
        self._runner: WorkgroupRunner | None = None

    def runner(self) -> WorkgroupRunner:
        """The native workgroup loop's runner of this dispatch (made once)."""
        if self._runner is None:
            self._runner = WorkgroupRunner(self.exe, self.exp, self.wc, self.where)
        return self._runner

    def run_order(self) -> Sequence[int]:
        """The linear indices of the workgroups to run, in order."""
        return range(self.total) if self.indices is None else self.indices

    def walk(self, ds: int, indices: Sequence[int], processor_id: int, mem: GuestMemory,
             place: Callable[[bytes], int],
             run: Callable[[int, int, Sequence[int]], None]) -> None:
        """Workgroups ``indices`` one after another: their states written
        ``WS_BATCH`` at a time where ``place`` puts them, each batch run by
        ``run(ds, address of its first state, its indices)``."""
        exe, exp, wc = self.exe, self.exp, self.wc
        local = mem.alloc(exp.local_memory_size, 64) if exp.local_memory_size else 0
        for start in range(0, len(indices), WS_BATCH):
            chunk = indices[start:start + WS_BATCH]
            run(ds, place(exe.workgroup_records(wc, chunk, processor_id, local,
                                                exp.local_memory_size)), chunk)


# -- native: host memory, host threads ------------------------------------------------
def _run_native(grid: _Grid, arrays: list[Any], threads: int) -> None:
    exe = grid.exe
    ptrs = [dargs.host_address(a) for a in arrays]
    ds = host_state(exe, grid.cbytes, ptrs, [a.nbytes for a in arrays], grid.ws3, grid.wc,
                    threads)
    if grid.indices is None and threads > 1 and grid.total > 1:
        if not _native_team(grid, ds, threads):
            _native_threads(grid, ds, threads)
        return
    mem = GuestMemory(exe.machine)          # the export's local memory
    try:
        order = grid.run_order()
        in_range(grid.rec, order, _native_range)(grid, ds, order, grid.processor_id, mem)
    finally:
        mem.free_all()


def _native_range(grid: _Grid, ds: int, indices: Sequence[int], processor_id: int,
                  mem: GuestMemory) -> None:
    """Workgroups ``indices`` on this thread: each batch of states in one
    call of the native workgroup loop (:meth:`WorkgroupRunner.run`), as a
    prepared dispatch runs them."""
    keep: list[Any] = []
    runner = grid.runner()

    def place(rec: bytes) -> int:
        block, base = aligned_memory(len(rec), "workgroup states")
        block[:] = rec
        keep[:] = [block]               # (the block lives until the next chunk)
        return base

    def run(ds: int, base: int, chunk: Sequence[int]) -> None:
        runner.run(ds, base, 0, len(chunk), grid.deadline, grid.limits, True, chunk)

    fpu = fpu_state.push()              # this thread flushes denormals while it runs them
    try:
        grid.walk(ds, indices, processor_id, mem, place, run)
    finally:
        fpu_state.pop(fpu)


def _native_team(grid: _Grid, ds: int, threads: int) -> bool:
    """The grid on the native team of x86_64 hosts
    (:mod:`~vmrt.hal.local.workgroup_loop_team`: chunks claimed in native
    code, a workgroup's processor id that of the contiguous range of the
    grid it falls in, as a prepared dispatch's); False (nothing ran) where
    that does not apply: no team or no native loop, a deadline or a
    profile (checked or timed from Python), local memory (per thread),
    more than ``WS_BATCH`` workgroups, the team busy."""
    runner = grid.runner()
    if grid.deadline is not None or grid.rec is not None or runner.loop is None or \
            grid.exp.local_memory_size or grid.total > WS_BATCH:
        return False
    from .workgroup_loop_team import team, team_chunk  # local-task only
    crew = team()
    if crew is None:
        return False
    threads = min(threads, grid.total)
    states = grid.exe.layout.thread_records(grid.wc, threads)
    block, base = aligned_memory(len(states), "workgroup states")
    block[:] = states
    fpu = fpu_state.push()
    try:
        return runner.run_team(crew, ds, base, grid.total, team_chunk(grid.total, threads),
                               threads, grid.limits) is not None
    finally:
        fpu_state.pop(fpu)


def _native_threads(grid: _Grid, ds: int, threads: int) -> None:
    """The grid in chunks taken by ``threads`` threads (the calling one
    first, :mod:`~vmrt.hal.local.task_pool`), thread ``t`` with processor
    id ``t``."""
    from .task_pool import Chunks, native_chunk, run_workers  # local-task only
    threads = min(threads, grid.total)
    chunks = Chunks(grid.total, threads, native_chunk(grid.total, threads))
    mems = [GuestMemory(grid.exe.machine) for _ in range(threads)]

    def body(t: int) -> None:
        chunks.run(t, lambda chunk: in_range(grid.rec, chunk, _native_range)(
            grid, ds, chunk, t, mems[t]))
    try:
        errors = run_workers(threads, body, chunks.stop, optional=True)
    finally:
        for m in mems:
            m.free_all()
    chunks.check(errors)


def host_state(exe: Any, cbytes: bytes, ptrs: list[int], sizes: list[int],
               ws3: tuple[int, int, int], wc: tuple[int, int, int], threads: int) -> int:
    """The dispatch state of a native dispatch in the calling thread's
    reusable host block of ``exe`` (``exe.scratch``): constants at 0,
    binding pointers at 256, lengths after them, the dispatch state last
    (16-byte aligned); its address."""
    lay = exe.layout
    w = lay.word
    block = getattr(exe.scratch, "block", None)
    if block is None:       # (aligned host memory, no numpy: a direct dispatch imports none)
        block = exe.scratch.block = aligned_memory(256 + 128 * w + 64, "dispatch state")
    view, base = block
    word = "Q" if w == 8 else "I"
    b_off, l_off, d_off = 256, 256 + 64 * w, 256 + 128 * w
    view[:len(cbytes)] = cbytes
    n = len(ptrs)
    struct.pack_into(f"<{n}{word}", view, b_off, *ptrs)
    struct.pack_into(f"<{n}{word}", view, l_off, *sizes)
    state = lay.dispatch_state(ws3, len(cbytes) // 4, wc, threads, n,
                               base if cbytes else 0, base + b_off if n else 0,
                               base + l_off if n else 0)
    view[d_off:d_off + len(state)] = state
    return base + d_off


# -- emulated: guest memory, worker machines --------------------------------------------
def _run_emulated(grid: _Grid, arrays: list[Any], threads: int,
                  writes: list[tuple[int, int, int]] | None) -> None:
    exe = grid.exe
    if threads > 1 and writes is None and guest_profile.current() is None:
        from .emulated_workers import EmulatedWorkers, use_workers  # several threads only
        if use_workers(exe, threads, grid.wc, grid.indices):
            exe.workers = exe.workers or EmulatedWorkers(exe)
            exe.workers.dispatch(grid.exp, grid.wc, grid.ws3, arrays, grid.cbytes, threads,
                                 grid.where, grid.deadline)
            return
    machine = exe.machine
    mem = GuestMemory(machine)              # per-dispatch allocations
    staged = StagedBindings(machine, arrays)
    try:
        ds = mem.alloc_dispatch_state(grid.cbytes, staged.stage(), [a.nbytes for a in arrays],
                                      grid.ws3, grid.wc, 1)

        placed: list[int] = []

        def place(rec: bytes) -> int:           # (the previous chunk's states are done)
            if placed:
                mem.free(placed.pop())
            placed.append(mem.alloc_bytes(rec, 16))
            return placed[0]

        def run(ds: int, base: int, chunk: Sequence[int]) -> None:
            _emulated_batch(grid, machine, ds, base, chunk, staged.explain_fault)

        with stopping_guest(machine, grid.limits), staged.recording(writes), \
                guest_profile.profiling(machine):
            order = grid.run_order()
            in_range(grid.rec, order, grid.walk)(ds, order, grid.processor_id, mem, place, run)
        staged.copy_back()
    finally:
        mem.free_all()
        staged.release()


def _emulated_batch(grid: _Grid, machine: Any, ds: int, base: int, chunk: Sequence[int],
                    explain: Callable[[Exception], tuple[str, StatusCode] | None]) -> None:
    """The emulated workgroups ``chunk`` whose states start at ``base``, each
    under the invocation's limits; a failure names its workgroup
    (``explain`` may name the binding a fault touched)."""
    env, size, fn, where = grid.exe.env, grid.exe.layout.ws_size, grid.fn, grid.where

    def call(k: int) -> int:
        return guest_workgroup(fn, machine, (env, ds, base + k * size), where, grid.deadline,
                               grid.limits)

    def failure(k: int, cause: Exception | int) -> Exception:
        if isinstance(cause, elfkit.CallTimeout):
            return stop_error(cause, where, grid.limits)
        xyz = dargs.workgroup_xyz(chunk[k], grid.wc)
        why = None if isinstance(cause, int) else explain(cause)
        if why is not None:
            return DispatchError(f"{where}, workgroup {xyz}: {why[0]}", why[1])
        return workgroup_failure(where, xyz, cause)
    each_workgroup(call, 0, len(chunk), failure)


__all__ = ["WS_BATCH", "dispatch_library", "host_state"]
