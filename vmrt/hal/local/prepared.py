"""A native dispatch recorded once and run many times over changing bindings.

A command buffer the compiler memoizes runs the same dispatch (export, grid,
constants) on every submission; only the binding addresses change.
:meth:`vmrt.hal.local.elf_executable.ElfExecutable.prepare`
(:func:`prepare_native`) checks the arguments once and returns a
:class:`NativeDispatch`; per thread it owns one host block
holding the constants, the binding pointers and lengths and the dispatch
state (written once but for the pointers and lengths), and the workgroup
states of the whole grid (read-only to the dispatch code), so a run is one
``struct.pack_into`` and one native call for the whole grid: the native
workgroup loop (:mod:`~vmrt.hal.local.workgroup_loop`) calls the dispatch
function for each workgroup state in turn, stops at the first nonzero
status and says which workgroup returned it (a single workgroup is called
directly; where the loop does not apply, and under a deadline, one ctypes
call per workgroup).  Several threads
(``threads`` > 1, IREE's ``local-task``) take chunks of the grid from a
shared counter: on x86_64 in native code, the calling thread and workers
spinning between grids (:mod:`~vmrt.hal.local.workgroup_loop_team`, a
hand-off of a microsecond or so), elsewhere, under a deadline and under a
profile from Python (:mod:`~vmrt.hal.local.task_pool`), the calling thread
first, each chunk one call of the loop during which ctypes releases the
GIL.  Either way the workers only help: one not running when the calling
thread has run what was left is not waited for.  A workgroup's processor
id is that of the contiguous range of the grid it falls in (thread ``t``
of ``threads``), whichever thread runs it.  A grid so cheap that waking
the workers costs more than they save (its first runs time both) runs on the
calling thread alone from then on, as does one the workers stall on average
(:data:`STALLED`; for :data:`RETRY_RUNS` runs, then it is tried again); a
grid whose first two runs on the workers take :data:`LONG_ON_WORKERS` or
more stays on them at once; results are the same either way.
Each thread flushes denormals to zero while it runs workgroups
(:mod:`~vmrt.hal.local.fpu_state`).  A cancel stops the grid between
workgroups (the loop reads a cancel word), a deadline too (checked before
each workgroup).  Errors are those of :meth:`ElfExecutable.dispatch`.
"""
from __future__ import annotations

import struct
import threading
import time

from ...errors import VmError
from ..buffer import HostBytes, aligned_memory
from ..dispatch_observer import current_probe, current_range_recorder, in_range
from . import dispatch_args as dargs
from . import library_abi as abi
from .dispatch_limits import ExecutionLimits, before_workgroup, current_limits
from .fpu_state import pop, push
from .workgroup_loop import WorkgroupRunner

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

#: the most workgroups a prepared dispatch caches the states of
MAX_PREPARED_WORKGROUPS = 4096
#: runs of a multi-threaded dispatch that try both ways (see NativeDispatch.inline)
TRIALS = 8
#: a grid that won its trials on the workers goes back to the calling thread
#: alone (for RETRY_RUNS runs) when its mean time on the workers (moving, over about
#: MEAN_RUNS runs) exceeds STALLED times its fastest trial alone, or when the
#: calling thread spent more than STALL_SHARE of its runs (moving mean)
#: waiting for workers at the end (the native team measures that; a grid kept
#: on the workers by LONG_ON_WORKERS has no time alone to compare with): the
#: trials keep each way's fastest run, which hides the runs a worker stalls
#: (on a busy machine a worker descheduled in the middle of its chunk makes
#: the caller wait for it: an LSTM matmul of 30 us averaged 0.9 ms on two
#: threads)
MEAN_RUNS = 16
STALLED = 1.2
STALL_SHARE = 0.5
#: a grid a stall guard sent back tries both ways again after this many runs
#: alone, doubled each time it is sent back (up to 64 times): a busy spell
#: of the machine does not keep it off the workers for good
RETRY_RUNS = 1024
#: how many times a grid settled its way (NativeDispatch.settled)
_SETTLED = [0]
#: the first two runs on the workers this long (seconds) each keep the
#: workers without trying the calling thread alone: handing out chunks costs
#: tens of microseconds, so the trials could only lose (ResNet-50's
#: convolutions on local-task alternated ~280 and ~500 ms per call for their
#: 8 trials).  Two runs, not one, and without the time the calling thread
#: waited for a worker at the end: on a busy machine one run of a 40 us grid
#: can take milliseconds (the caller or a worker descheduled), and an LSTM's
#: 8-workgroup matmul kept the workers for good that way
LONG_ON_WORKERS = 2e-3

def prepare_native(exe: Any, export: Any, workgroup_count: Any, constants: Sequence[int],
                   binding_count: int, threads: int = 1) -> NativeDispatch | None:
    """``exe.dispatch(export, workgroup_count, <binding_count bindings>,
    constants, threads=threads)`` of a native executable library checked
    once (see :meth:`ElfExecutable.prepare`); None when that does not apply
    (local memory, more than :data:`MAX_PREPARED_WORKGROUPS` workgroups,
    arguments dispatch() rejects)."""
    try:
        exp = exe.export(export)
        where = f"executable '{exe.name}' export '{exp.name}'"
        wc, ws3 = dargs.grid(workgroup_count, None, exp.workgroup_size, where)
        if exp.has_attrs and (binding_count != exp.binding_count
                              or len(constants) != exp.constant_count):
            return None
        cbytes = dargs.u32_words(constants, f"{where}: constants")
    except VmError:
        return None
    total = wc[0] * wc[1] * wc[2]
    if not 0 < total <= MAX_PREPARED_WORKGROUPS or exp.local_memory_size or \
            not 0 < binding_count <= abi.MAX_BINDING_COUNT or len(cbytes) > 256:
        return None
    return NativeDispatch(exe, exp, wc, ws3, cbytes, binding_count, where, max(1, int(threads)))


class NativeDispatch:
    """One recorded dispatch of a native executable; see the module docstring."""

    def __init__(self, exe: Any, exp: Any, wc: tuple[int, int, int], ws3: tuple[int, int, int],
                 cbytes: bytes, binding_count: int, where: str, threads: int = 1):
        self.exe = exe
        #: runs ranges of workgroups (one native call per range where it can)
        self.runner = WorkgroupRunner(exe, exp, wc, where)
        self.fn = self.runner.fn
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
        #: run every workgroup on the calling thread (None: not known yet):
        #: the first :data:`TRIALS` runs nothing profiles take turns on the
        #: worker threads and on the calling thread alone, then the way whose
        #: fastest run was faster stays (handing chunks to the workers can
        #: cost more than it saves)
        self.inline: bool | None = None
        self.trials = 0
        #: the fastest run (seconds) on the workers [0] and alone [1]
        self.best = [float("inf"), float("inf")]
        #: the first run on the workers was long (see LONG_ON_WORKERS)
        self.long = False
        self.taken: list[int] = []
        #: the mean time of a run on the workers since the trials (moving,
        #: over ~:data:`MEAN_RUNS` runs)
        self.mean = 0.0
        #: the share of those runs the calling thread waited for workers (moving)
        self.stall = 0.0
        #: runs alone left before the trials start again (0: none planned),
        #: and how many times a stall guard sent the grid back
        self.retry = 0
        self.guarded = 0
        #: the native team this grid runs on (None: not looked up yet,
        #: False: none) and its chunk size there
        self.team: Any = None
        self.chunk = 1
        #: batches starting with this dispatch (see :meth:`batch`)
        self.batches: dict[tuple[Any, ...], Any] = {}
        #: the programs of command buffers whose recording starts with this
        #: dispatch, per shape, with the settled() count they were made at
        #: (kept by vmrt.hal.command_buffer)
        self.plans: dict[tuple[Any, ...], Any] = {}
        #: whether a batch of this dispatch alone applies (None: not known
        #: yet; asked once it runs on the calling thread alone)
        self.solo: bool | None = None

    def region_size(self) -> int:
        """The bytes of the host block :meth:`write_region` fills."""
        return self.ws_off() + self.total * self.ws_size

    def ws_off(self) -> int:
        """Where the workgroup states start in the block."""
        return -(-(self.d_off + self.layout.ds_size) // 64) * 64

    def write_region(self, block: Any, base: int,
                     bindings: int | None = None) -> tuple[int, int]:
        """Write the constants, the dispatch state and the grid's workgroup
        states into ``block`` (host memory at the 64-byte aligned ``base``);
        the addresses of the dispatch state and of the first workgroup
        state.  The binding pointers, then their lengths, are at
        ``bindings`` (an address; None: :attr:`b_off` of the block)."""
        lay, n, wc = self.layout, self.n, self.wc
        ws_off = self.ws_off()
        block[:len(self.cbytes)] = self.cbytes
        ptrs = base + self.b_off if bindings is None else bindings
        state = lay.dispatch_state(self.ws3, len(self.cbytes) // 4, wc, self.threads, n,
                                   base if self.cbytes else 0, ptrs if n else 0,
                                   ptrs + n * lay.word if n else 0)
        block[self.d_off:self.d_off + len(state)] = state
        states = lay.thread_records(wc, self.threads)  # processor_id: the range's thread
        block[ws_off:ws_off + len(states)] = states
        return base + self.d_off, base + ws_off

    def _block(self) -> tuple[Any, int, int, int]:
        """This thread's block: (memory, dispatch state address, offset of the
        workgroup states, their address)."""
        block, base = aligned_memory(self.region_size(), "dispatch state")
        ds, ws = self.write_region(block, base)
        mine = (block, ds, ws - base, ws)
        self.local.mine = mine
        return mine

    def settled(self) -> int:
        """How many times a grid of the process settled its way (at the end
        of its trials): a program planned at another count may have kept a
        grid that now runs alone out of its batches (see
        ``vmrt.hal.command_buffer``'s kept programs)."""
        return _SETTLED[0]

    def settling(self) -> bool:
        """Whether the way this dispatch runs may still change (a grid for
        several threads still trying both ways, or sent back for a while
        by a stall guard): a plan made now is not for good."""
        return self.threads > 1 and (self.inline is None or self.retry > 0)

    def trying(self) -> bool:
        """Whether this dispatch is a grid for several threads still trying
        both ways (a plan made now holds only for this submission; one
        made while a grid runs alone for a while, :meth:`settling` but not
        trying, holds until the next :meth:`settled` count)."""
        return self.threads > 1 and self.inline is None

    def joins_batches(self) -> bool:
        """Whether this dispatch may run in a batch now (see :meth:`batch`):
        on the calling thread alone (one thread, or a grid settled there,
        for good or for a while: a batch counts its runs, see
        :meth:`ran_alone`), where the batch loop applies."""
        if self.threads > 1 and self.inline is not True:
            return False
        solo = self.solo
        if solo is None:        # (what batch() makes of it does not change from now on)
            solo = self.solo = self.batch((self,)) is not None
        return solo

    def batch(self, steps: tuple[Any, ...]) -> Any:
        """The :class:`~vmrt.hal.local.batch.Batch` of ``steps`` (prepared
        dispatches, this one first, and None for copies), kept per steps;
        None where it does not apply."""
        got = self.batches.get(steps, False)
        if got is False:
            from .batch import make_batch
            got = make_batch(steps)
            if got is None and any(p is not None and p.threads > 1 for p in steps):
                return None         # (may apply once their grids settle: not kept)
            if len(self.batches) >= 64:
                self.batches.clear()
            self.batches[steps] = got
        return got

    #: the FPU state of dispatches (:mod:`~vmrt.hal.local.fpu_state`): a
    #: caller running several dispatches sets it once with ``push()``, runs
    #: them with :meth:`run_flushed` and restores it with ``pop(token)``
    push = staticmethod(push)
    pop = staticmethod(pop)

    def run_flushed(self, ptrs: list[int], sizes: list[int],
                    deadline: float | None = None) -> None:
        """:meth:`run` on a thread whose FPU state the caller set (:attr:`push`)
        (workers set their own: a new one starts keeping denormals)."""
        self.run(ptrs, sizes, deadline, True)

    def run(self, ptrs: list[int], sizes: list[int], deadline: float | None = None,
            flushed: bool = False) -> None:
        """Run every workgroup over bindings at ``ptrs`` of ``sizes`` bytes
        (``flushed``: this thread's FPU state is already set)."""
        if self.exe.closed:
            self.exe.check_open()
        try:
            block, ds, _recs, ws = self.local.mine
        except AttributeError:
            block, ds, _recs, ws = self._block()
        self.pack(block, self.b_off, *ptrs, *sizes)
        limits = current_limits()       # a cancel is checked between workgroups
        rec = current_range_recorder()  # a profile times the ranges (None: not profiled)
        if self.total == 1 and rec is None:     # run_range(ds, ws, 0, 1, ...) in this frame
            if deadline is not None or limits is not None and (
                    limits.cancelled or limits.parent is not None):
                before_workgroup(self.where, deadline, limits)
            fpu = None if flushed else push()
            try:
                r = self.fn(self.env, ds, ws)
            except VmError:
                raise
            except Exception as exc:
                raise self.runner.failure(0, exc) from exc
            finally:
                if fpu is not None:
                    pop(fpu)
            if r:
                raise self.runner.failure(0, r)
            return
        if self.threads == 1 or rec is None and self.inline:
            in_range(rec, range(self.total), self.run_range)(ds, ws, 0, self.total, deadline,
                                                             limits, flushed)
            if self.retry:              # sent back by a stall guard: try again after a while
                self.ran_alone()
            return
        if rec is None and self.inline is None:     # still trying both ways
            trial = self.trials
            self.trials += 1
            # odd trials alone, but for the second when the first was long
            alone = 1 if trial % 2 and (trial > 1 or not self.long) else 0
            t0 = time.perf_counter()
            waited = 0.0
            if alone:
                self.run_range(ds, ws, 0, self.total, deadline, limits, flushed)
            else:
                waited = self._run_threads(ds, ws, deadline, limits, rec, flushed)
            took = time.perf_counter() - t0
            self.best[alone] = min(self.best[alone], took)
            # long: the calling thread's own part (not its wait for a stalled worker)
            long = not alone and took - waited >= LONG_ON_WORKERS
            if trial == 0:
                self.long = long
            elif trial == 1 and self.long and long:     # long twice
                self.inline = False
                _SETTLED[0] += 1
            elif self.trials >= TRIALS:
                self.inline = self.best[1] <= self.best[0]
                self.mean = self.best[0]
                _SETTLED[0] += 1
            return
        if rec is not None:
            self._run_threads(ds, ws, deadline, limits, rec, flushed)
            return
        t0 = time.perf_counter()
        waited = self._run_threads(ds, ws, deadline, limits, rec, flushed)
        took = time.perf_counter() - t0
        self.mean += (took - self.mean) / MEAN_RUNS
        self.stall += (waited / max(took, 1e-9) - self.stall) / MEAN_RUNS
        if self.mean > STALLED * self.best[1] or self.stall > STALL_SHARE:
            self.inline = True          # the workers stall it on average: alone for a while
            self.retry = RETRY_RUNS << min(self.guarded, 6)
            self.guarded += 1
            self.stall = 0.0
            _SETTLED[0] += 1            # (kept programs may now take it into a batch)

    def ran_alone(self) -> None:
        """Count a run alone of a grid a stall guard sent back (``retry``
        runs, by :meth:`run` or a batch): after the last it tries both ways
        again (and leaves the batches: a new :meth:`settled` count)."""
        self.retry -= 1
        if self.retry <= 0:     # (<: two threads counted the last run at once)
            self.retry = 0
            self.inline, self.trials, self.best = None, 0, [float("inf")] * 2
            _SETTLED[0] += 1

    def _run_threads(self, ds: int, ws: int, deadline: float | None,
                     limits: ExecutionLimits | None, rec: Any, flushed: bool = False) -> float:
        """The grid in chunks on :attr:`threads` threads: on the native team
        (:mod:`~vmrt.hal.local.workgroup_loop_team`) where it applies (not
        under a deadline or a profile, which time or check each workgroup
        range from Python), else handed out from Python.  Returns how long
        the calling thread waited for workers at the end on the team (0.0
        from Python)."""
        if deadline is None and rec is None and self.runner.loop is not None:
            crew = self.team
            if crew is None:
                from .workgroup_loop_team import team, team_chunk  # local-task only
                crew = self.team = team() or False
                self.chunk = team_chunk(self.total, self.threads)
            if crew:
                fpu = None if flushed else push()
                try:
                    waited = self.runner.run_team(crew, ds, ws, self.total, self.chunk,
                                                  self.threads, limits)
                    if waited is not None:
                        return waited
                finally:
                    if fpu is not None:
                        pop(fpu)
        from .task_pool import Chunks, native_chunk, run_workers  # threads > 1 only
        chunks = Chunks(self.total, self.threads, native_chunk(self.total, self.threads))

        def chunk_run(chunk: range) -> None:
            in_range(rec, chunk, self.run_range)(ds, ws, chunk.start, chunk.stop, deadline,
                                                 limits)
        errors = run_workers(self.threads, lambda t: chunks.run(t, chunk_run), chunks.stop,
                             optional=True)
        #: workgroups each worker ran in the last multi-threaded run
        self.taken = chunks.taken
        chunks.check(errors)
        return 0.0

    def run_range(self, ds: int, ws: int, start: int, end: int, deadline: float | None,
                  limits: ExecutionLimits | None = None, flushed: bool = False) -> None:
        """Workgroups ``start`` to ``end`` (linear, x fastest): one call of the
        native workgroup loop (:class:`~vmrt.hal.local.workgroup_loop.WorkgroupRunner`)."""
        self.runner.run(ds, ws, start, end, deadline, limits, flushed)



def run_prepared(exe: Any, export: Any, workgroup_count: Any, bindings: Sequence[Any],
                 constants: Sequence[Any], deadline: float | None) -> bool:
    """One dispatch over :class:`~vmrt.hal.buffer.HostBytes` bindings through
    the export's prepared form (``exe.prepare``, cached: what command buffers
    run), on the calling thread; False (nothing run) when a binding is
    something else or empty, a workgroup probe watches (only the general
    path honours one) or the dispatch has no prepared form."""
    if not bindings or current_probe() is not None or not all(
            b.__class__ is HostBytes and b.nbytes for b in bindings):
        return False
    prepared = exe.prepare(export, workgroup_count, constants, len(bindings))
    if prepared is None:
        return False
    prepared.run([b.address for b in bindings], [b.nbytes for b in bindings], deadline)
    return True

__all__ = ["MAX_PREPARED_WORKGROUPS", "NativeDispatch", "prepare_native", "run_prepared"]
