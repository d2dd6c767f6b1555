"""``hal.command_buffer``: commands recorded by the program and executed when
the command buffer is submitted (``hal.device.queue.execute[.indirect]``).

A command names each buffer it touches either directly (a ``hal.buffer``) or
by *slot* into the binding table given at submission (reusable command
buffers the compiler memoizes; the buffer ref is null then).  The table entry
supplies the buffer and a base offset the command's offset is added to.

Dispatches go to a prepared native dispatch (binding addresses) or to
:meth:`vmrt.Executable.dispatch` (``HostBytes`` ranges of the buffers); a buffer whose
address is not 64-byte aligned (a caller's input array, say) is staged through
an aligned copy for the dispatch, once per buffer so that aliasing bindings
still alias.  A native dispatch is prepared at its first submission
(:meth:`vmrt.Executable.prepare`); when every command has a prepared form and
nothing watches, a submission resolves each command's bindings with
:func:`run_resolved` (the common case, which :func:`run_dispatch` tries
first too) and leaves everything else to run_dispatch's checked path.
On hosts with the batch loop (:mod:`vmrt.hal.local.batch`), a submission
nothing watches, without a deadline or a profile, runs each run of
consecutive prepared dispatches and copies on the calling thread (not a
grid shared with worker threads) in one native call instead (planned at
the first submission, or again while a local-task grid is still trying
both ways; a program keeps no buffer, so a one-shot command buffer
recorded again in the same shape -- the same commands and dispatches, other
buffers -- reuses the program its first prepared dispatch keeps); an
operand the batch cannot take sends that run to the checked path.  A
reusable command buffer whose submission is one such run offers it as one
call (:attr:`CommandBuffer.plain`: the submission the hal module's
``queue.execute`` fast caller makes when no deadline or statistics apply).

Tools watch dispatches through one seam (:mod:`vmrt.hal.dispatch_observer`):
inside ``observe_dispatches(observer)`` each dispatch is handed to the
observer, which runs it.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from ..errors import HalError, StatusCode
from ..vm.types import RefObject
from .buffer import HalBuffer
from .commands import (
    BufferRef,
    Copy,
    Dispatch,
    Fill,
    Update,
    binding_labels,
    binding_specs,
    dispatch_runner,
    fill_range,
    gather,
    prepare_dispatch,
    resolve,
    resolve_all,
    run_dispatch,
    run_resolved,
)
from .dispatch_observer import ObservedDispatch, current_observer, current_range_recorder
from .objects import COMMAND_BUFFER_TYPE, HalExecutable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# iree_hal_command_buffer_mode_t bits
MODE_ONE_SHOT = 1 << 0
#: programs a prepared dispatch keeps for recordings starting with it
MAX_PLANS = 64


class CommandBuffer(RefObject):
    """A recorded list of commands; see the module docstring."""

    vm_type = COMMAND_BUFFER_TYPE

    def __init__(self, device: Any, modes: int, categories: int, binding_capacity: int):
        self.device = device
        self.modes = modes
        self.categories = categories
        self.binding_capacity = binding_capacity
        #: host threads a dispatch's workgroups run on: the device's, read again
        #: at the first submission (when the native dispatches are prepared)
        self.threads = getattr(device, "dispatch_threads", 1)
        self.commands: list[Any] = []
        self.finalized = False
        self.submitted = 0
        #: per command, made at the first submission: its label in errors and,
        #: for a dispatch, its bindings' labels (None: made when an error needs
        #: them) and its NativeDispatch (or None)
        self._plans: list[tuple[str, Sequence[str] | None, Any]] = []
        #: when every command is a prepared dispatch: one runner per command
        #: for submissions nothing watches (made at the first one), else ()
        self._runners: tuple[Any, ...] | None = None
        #: the submission's program where batches apply (made at the first
        #: submission nothing watches; () where none does): see _make_program
        self._program: tuple[Any, ...] | None = None
        #: the program bound to this recording's operands (see _bind), kept
        #: with the program
        self._bound: tuple[Any, ...] | None = None
        #: the plain submission of a reusable command buffer whose submission
        #: is one batch of dispatches (made with the bound program, by the
        #: batch: see ``Batch.plain``), else None: ``plain(table)`` runs a
        #: submission of this finalized buffer as :meth:`execute` would,
        #: except that its caller checks the device's statistics and the
        #: deadline are off and counts it in ``submitted``; False (nothing
        #: run) when a tool watches or an operand is odd: execute() then
        self.plain: Any = None

    # -- recording ------------------------------------------------------------------
    def _record(self, command: Any) -> None:
        if self.finalized:
            raise HalError("command buffer is finalized; no more commands can be recorded",
                          StatusCode.FAILED_PRECONDITION)
        self.commands.append(command)

    def ref(self, slot: int, buffer: HalBuffer | None, offset: int, length: int) -> BufferRef:
        if buffer is None and not 0 <= slot < max(self.binding_capacity, 0):
            raise HalError(f"indirect buffer slot {slot} exceeds the command buffer's binding "
                          f"capacity {self.binding_capacity}", StatusCode.OUT_OF_RANGE)
        return BufferRef(slot, buffer, offset, length)

    def fill(self, target: BufferRef, pattern: int, pattern_length: int) -> None:
        if pattern_length not in (1, 2, 4, 8):
            raise HalError(f"fill pattern length {pattern_length} must be 1, 2, 4 or 8 bytes",
                          StatusCode.INVALID_ARGUMENT)
        raw = (pattern & ((1 << (8 * pattern_length)) - 1)).to_bytes(pattern_length, "little")
        self._record(Fill(target, raw))

    def update(self, source: bytes, target: BufferRef) -> None:
        self._record(Update(bytes(source), target))

    def copy(self, source: BufferRef, target: BufferRef) -> None:
        self._record(Copy(source, target))

    def dispatch(self, executable: HalExecutable, ordinal: int, workgroups: tuple[int, int, int],
                 constants: Sequence[int], bindings: Sequence[BufferRef]) -> None:
        self._record(Dispatch(executable, ordinal, workgroups, tuple(constants), tuple(bindings)))

    def finalize(self) -> None:
        if self.finalized:
            raise HalError("command buffer is already finalized", StatusCode.FAILED_PRECONDITION)
        self.finalized = True

    # -- execution ------------------------------------------------------------------
    def _plan(self, i: int, cmd: Any) -> tuple[str, Sequence[str] | None, Any]:
        what = f"command {i} ({type(cmd).__name__.lower()})"
        if not isinstance(cmd, Dispatch):
            return what, (), None
        self.threads = getattr(self.device, "dispatch_threads", 1)
        return what, None, prepare_dispatch(cmd, self.device)

    def _all_plans(self) -> list[tuple[str, Sequence[str] | None, Any]]:
        """The plan of every command (made at the first submission).  Built
        aside and published whole: submissions from several threads (a
        command buffer shared by contexts) never see a list another one is
        still filling, where a command could take another's plan."""
        plans = self._plans
        if len(plans) < len(self.commands):
            plans = [*plans, *(self._plan(i, self.commands[i])
                               for i in range(len(plans), len(self.commands)))]
            self._plans = plans
        return plans

    def _make_runners(self) -> tuple[Any, ...]:
        """``(push, pop, runners)``: :func:`dispatch_runner` of each command
        when all are dispatches with a prepared form, run between one
        ``push()`` and ``pop(token)`` of the FPU state their prepared forms
        give (their ``run_flushed``); else ()."""
        plans = self._all_plans()
        if not plans or any(prepared is None for _w, _l, prepared in plans):
            return ()
        first = plans[0][2]
        push, pop = getattr(first, "push", None), getattr(first, "pop", None)
        flushed = push is not None and pop is not None and all(
            _flushable(prepared, push) for _w, _l, prepared in plans)
        runners = tuple(dispatch_runner(cmd, what, prepared, labels, self.threads, flushed)
                        for cmd, (what, labels, prepared) in zip(self.commands, plans))
        return (push, pop, runners) if flushed else (_no_fpu, _no_fpu, runners)

    def _find_program(self) -> tuple[Any, ...]:
        """:meth:`_make_program`, or the program a recording of the same
        shape made (see :func:`_shape`): kept by the prepared form of the
        first command, a dispatch, in its ``plans`` (a one-shot command
        buffer recorded each step of a loop plans once, not each step),
        until a local-task grid settles its way again (the ``settled()``
        count: a grid the program kept out of its batches, on the workers
        or trying both ways, may now run alone and join them; one a stall
        guard sent back, alone in a batch for a while, tries both ways
        again: a program holding it is kept there, not for good)."""
        cmds = self.commands
        first: Any = None
        plans = None
        if cmds and cmds[0].__class__ is Dispatch:
            first = prepare_dispatch(cmds[0], self.device)
            plans = getattr(first, "plans", None)
        if plans is None:
            return self._make_program()[0]
        key = _shape(cmds)
        settled = first.settled()
        hit = plans.get(key)
        if hit is not None and hit[0] == settled:
            if hit[2]:
                self._program = hit[1]
            return hit[1]
        program, kept = self._make_program()
        if kept:                            # for the next recordings too
            if len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = (settled, program, self._program is not None)
        return program

    def _make_program(self) -> tuple[tuple[Any, ...], bool]:
        """The submission as runs of consecutive prepared dispatches and
        copies, each one native call (:mod:`vmrt.hal.local.batch`, through
        the first dispatch's ``batch``), and the other commands' indices;
        () when no batch applies.  A run is ``(batch, first index, end
        index)``: a program keeps no buffer and fits every recording of
        its shape (:meth:`_bind` takes a recording's operands).  Kept for
        good (``_program``) when no grid's way may change; with it, whether
        it holds until the next ``settled()`` count (no grid trying both
        ways)."""
        device = self.device
        program: list[Any] = []
        steps: list[Any] = []           # the run's prepared dispatches, None for copies
        start = 0
        settling = trying = False

        def close(end: int) -> None:
            batch = steps[0].batch(tuple(steps))
            if batch is None:
                program.extend(range(start, end))
            else:
                program.append((batch, start, end))
            steps.clear()
        for i, cmd in enumerate(self.commands):
            cls = cmd.__class__
            if cls is Dispatch:
                prepared = None if binding_specs(cmd.bindings) is None else \
                    prepare_dispatch(cmd, device)
                if prepared is not None and hasattr(prepared, "joins_batches"):
                    if prepared.settling():
                        settling = True
                        trying = trying or prepared.trying()
                    if prepared.joins_batches():
                        if not steps:
                            start = i
                        steps.append(prepared)
                        continue
            elif cls is Copy and steps:
                steps.append(None)
                continue
            if steps:
                close(i)
            program.append(i)
        if steps:
            close(len(self.commands))
        out = tuple(program) if any(item.__class__ is not int for item in program) else ()
        if not settling:
            self._program = out     # for good (else made again at the next submission)
        return out, not trying

    def _bound_program(self) -> tuple[Any, ...]:
        """The submission's program (:meth:`_find_program`) bound to this
        recording's operands (:meth:`_bind`), both kept when made for good."""
        program = self._program
        if program is None:
            program = self._find_program()
        if program:
            program = self._bind(program)
        if self._program is not None:       # (else made again at the next submission)
            self._bound = program
            if len(program) == 1 and program[0].__class__ is not int and \
                    not self.modes & MODE_ONE_SHOT:
                plain = getattr(program[0][0], "plain", None)
                self.plain = None if plain is None else plain(program[0][1])
        return program

    def _bind(self, program: tuple[Any, ...]) -> tuple[Any, ...]:
        """``program`` with each run's operands as :func:`gather` takes them
        from this recording: ``(batch, each dispatch's bindings, the copies,
        first index, end index)`` (an operand :func:`gather` does not take,
        as in a program made for another recording of the shape, sends its
        run to the checked path, its commands one by one)."""
        bound: list[Any] = []
        cmds = self.commands
        for item in program:
            if item.__class__ is int:
                bound.append(item)
                continue
            batch, lo, hi = item
            dsteps: list[Any] = []
            csteps: list[Any] = []
            for cmd in cmds[lo:hi]:
                if cmd.__class__ is Copy:
                    csteps.append(cmd)
                else:
                    dsteps.append(cmd.bindings)
            bound.append((batch, dsteps, csteps, lo, hi))
        return tuple(bound)

    def _run_program(self, program: tuple[Any, ...],
                     table: Sequence[tuple[HalBuffer, int, int]]) -> None:
        """Run a submission through its bound program (see :meth:`_bind`)."""
        for item in program:
            if item.__class__ is int:
                self._checked(item, table, None)
                continue
            batch, dsteps, csteps, lo, hi = item
            values = gather(dsteps, csteps, table)
            if values is None:      # something odd: the checked path says what
                for i in range(lo, hi):
                    self._checked(i, table, None)
            else:
                batch.run(values)

    def _checked(self, i: int, table: Sequence[tuple[HalBuffer, int, int]],
                 deadline: float | None) -> None:
        """Run command ``i`` on its own, every operand checked."""
        cmd = self.commands[i]
        plans = self._plans     # (a one-shot command buffer plans only what it needs)
        what, labels, prepared = plans[i] if i < len(plans) else self._plan(i, cmd)
        if isinstance(cmd, Dispatch):
            run_dispatch(cmd, table, what, deadline, prepared, labels, self.threads)
        else:
            _transfer(cmd, table, what)

    def execute(self, table: Sequence[tuple[HalBuffer, int, int]] = (), *,
                deadline: float | None = None) -> None:
        """Run the recorded commands; dispatches stop at ``deadline``
        (``time.monotonic()`` seconds) with DEADLINE_EXCEEDED."""
        if not self.finalized:
            raise HalError("command buffer must be finalized before it is submitted",
                          StatusCode.FAILED_PRECONDITION)
        if self.modes & MODE_ONE_SHOT and self.submitted:
            raise HalError("one-shot command buffer submitted twice",
                          StatusCode.FAILED_PRECONDITION)
        self.submitted += 1
        # what watches this submission's dispatches, looked up once
        stats = getattr(self.device, "statistics", None)
        observer = current_observer()
        if stats is None and observer is None:
            if deadline is None and current_range_recorder() is None:
                program = self._bound
                if program is None:
                    program = self._bound_program()
                if program:
                    item = program[0]
                    if len(program) == 1:       # one batch (in this frame)
                        values = gather(item[1], item[2], table)
                        if values is not None:
                            item[0].run(values)
                            return
                    self._run_program(program, table)
                    return
            runners = self._runners
            if runners is None:
                runners = self._runners = self._make_runners()
            if runners:
                push, pop, each = runners
                token = push()
                try:
                    for specs, sizes, run, checked in each:
                        if specs is None or not run_resolved(specs, sizes, run, table,
                                                             deadline):
                            pop(token)          # the checked path sets its own
                            token = None
                            checked(table, deadline)
                            token = push()
                finally:
                    pop(token)
                return
            if self._run_plain(table, deadline):
                return
        plans = self._all_plans()
        timed = getattr(observer, "transfer", None)     # a profile times transfers too
        for i, cmd in enumerate(self.commands):
            what, labels, prepared = plans[i]
            if isinstance(cmd, Dispatch):
                t0 = 0.0 if stats is None else time.perf_counter()
                if observer is None:
                    run_dispatch(cmd, table, what, deadline, prepared, labels, self.threads)
                else:           # a tool watches (vmrt.hal.dispatch_observer)
                    observer(_observed(cmd, table, what, deadline, prepared, labels,
                                       self.threads))
                if stats is not None:
                    stats.record_dispatch(cmd.executable.exe, cmd.ordinal,
                                          time.perf_counter() - t0)
            elif timed is None:
                _transfer(cmd, table, what)
            else:
                timed(cmd, what, _transfer, cmd, table, what)

    def _run_plain(self, table: Sequence[tuple[HalBuffer, int, int]],
                   deadline: float | None) -> bool:
        """Run the commands of a submission nothing watches with the FPU
        state of the first prepared dispatch set once around them (transfers
        only move bytes) and restored around anything else; False (nothing
        run) when no dispatch is prepared."""
        plans = self._all_plans()
        prepared = next((p for _w, _l, p in plans if p is not None), None)
        push: Any = getattr(prepared, "push", None)
        pop: Any = getattr(prepared, "pop", None)
        if push is None or pop is None:
            return False
        token = push()
        try:
            for cmd, (what, labels, prepared) in zip(self.commands, plans):
                if not isinstance(cmd, Dispatch):
                    _transfer(cmd, table, what)
                    continue
                if _flushable(prepared, push):
                    specs = binding_specs(cmd.bindings)
                    if specs is not None and run_resolved(
                            specs, [b.length for b in cmd.bindings], prepared.run_flushed,
                            table, deadline):
                        continue
                pop(token)                  # the checked path sets its own
                token = None
                run_dispatch(cmd, table, what, deadline, prepared, labels, self.threads)
                token = push()
        finally:
            pop(token)
        return True


def _shape(commands: Sequence[Any]) -> tuple[Any, ...]:
    """What a program depends on in a recording (see
    ``CommandBuffer._find_program``): each command's kind and, for a
    dispatch, what its prepared form is made of (executable, export, grid,
    constants, binding count); not the buffers (a program keeps none; a
    binding :func:`gather` does not take sends its run to the checked path)."""
    return tuple([(cmd.executable, cmd.ordinal, cmd.workgroups, cmd.constants,
                   len(cmd.bindings)) if cmd.__class__ is Dispatch else cmd.__class__
                  for cmd in commands])


def _transfer(cmd: Any, table: Sequence[tuple[HalBuffer, int, int]], what: str) -> int:
    """Run a fill, update or copy command; the bytes it wrote."""
    if isinstance(cmd, Fill):
        buf, start, length = resolve(cmd.target, table, what)
        fill_range(buf, start, length, cmd.pattern, _target(cmd.target, what))
        return length
    if isinstance(cmd, Update):
        buf, start, length = resolve(cmd.target, table, what)
        if length > len(cmd.source):
            raise HalError(f"{what}: {length} bytes requested from a {len(cmd.source)}-"
                          "byte source", StatusCode.OUT_OF_RANGE)
        buf.writable(_target(cmd.target, what))[start:start + length] = \
            memoryview(cmd.source)[:length]
        return length
    if isinstance(cmd, Copy):
        sbuf, s, n = resolve(cmd.source, table, what)
        tbuf, t, m = resolve(cmd.target, table, what)
        if n != m:
            raise HalError(f"{what}: source has {n} bytes, target {m}",
                          StatusCode.INVALID_ARGUMENT)
        # (memoryview assignment copies overlapping ranges correctly)
        tbuf.writable(_target(cmd.target, what))[t:t + n] = sbuf.bytes[s:s + n]
        return n
    return 0


def _observed(cmd: Dispatch, table: Sequence[tuple[HalBuffer, int, int]], what: str,
              deadline: float | None, prepared: Any, labels: Sequence[str] | None,
              threads: int) -> ObservedDispatch:
    if labels is None:
        labels = binding_labels(what, len(cmd.bindings))
    ranges = tuple(resolve(b, table, w) for b, w in zip(cmd.bindings, labels))
    return ObservedDispatch(cmd, what, ranges, lambda: run_dispatch(
        cmd, table, what, deadline, prepared, labels, threads), deadline)


def _target(ref: BufferRef, what: str) -> str:
    """How IREE names a command's target in an access error."""
    return what if ref.buffer is not None else f"binding table slot {ref.slot}"


def _flushable(prepared: Any, push: Any) -> bool:
    """Whether ``prepared`` runs under the FPU state ``push`` sets on the
    calling thread (its ``run_flushed``), one thread or several: worker
    threads set their own (a new one starts keeping denormals, whatever its
    creator's state, and each sets the dispatch's state around its part), so
    a submission sets the calling thread's once, not per dispatch."""
    return prepared is not None and getattr(prepared, "push", None) is push and \
        hasattr(prepared, "run_flushed")


def _no_fpu(token: Any = None) -> None:
    """push/pop of runners whose prepared forms set the FPU state themselves."""


__all__ = ["MODE_ONE_SHOT", "BufferRef", "CommandBuffer", "Copy", "Dispatch", "Fill", "Update",
           "fill_range", "resolve_all"]
