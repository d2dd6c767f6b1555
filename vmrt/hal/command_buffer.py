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

Tools watch dispatches through one seam (:mod:`vmrt.hal.dispatch_observer`):
inside ``observe_dispatches(observer)`` each dispatch is handed to the
observer, which runs it.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from elfkit.support import DataRecord

from ..errors import HalError, StatusCode
from ..vm.types import RefObject
from .buffer import BUFFER_ALIGNMENT, WHOLE_BUFFER, HalBuffer, HostBytes, aligned_memory
from .dispatch_observer import ObservedDispatch, current_observer
from .objects import COMMAND_BUFFER_TYPE, HalExecutable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# iree_hal_command_buffer_mode_t bits
MODE_ONE_SHOT = 1 << 0


class BufferRef(DataRecord, frozen=True, slots=True):
    """A buffer operand: ``buffer`` or, when it is None, binding-table ``slot``."""
    slot: int
    buffer: HalBuffer | None
    offset: int
    length: int


class Fill(DataRecord, frozen=True, slots=True):
    target: BufferRef
    pattern: bytes


class Update(DataRecord, frozen=True, slots=True):
    source: bytes
    target: BufferRef


class Copy(DataRecord, frozen=True, slots=True):
    source: BufferRef
    target: BufferRef


class Dispatch(DataRecord, frozen=True, slots=True):
    executable: HalExecutable
    ordinal: int
    workgroups: tuple[int, int, int]
    constants: tuple[int, ...]
    bindings: tuple[BufferRef, ...]


def _resolve(ref: BufferRef, table: Sequence[tuple[HalBuffer, int, int]],
             what: str) -> tuple[HalBuffer, int, int]:
    """The byte range ``(buffer, start, length)`` a command operand names."""
    return resolve_all((ref,), table, (what,))[0]


def resolve_all(refs: Sequence[BufferRef], table: Sequence[tuple[HalBuffer, int, int]],
                labels: Sequence[str]) -> list[tuple[HalBuffer, int, int]]:
    """:func:`_resolve` of each operand (``labels`` name them in errors)."""
    out = []
    n = len(table)
    for ref, what in zip(refs, labels):
        if ref.buffer is not None:
            buf, base = ref.buffer, 0
            limit = len(buf.bytes)
        else:
            if not 0 <= ref.slot < n:
                raise HalError(f"{what}: binding table slot {ref.slot} out of range (the "
                               f"submission provides {n} binding(s))", StatusCode.OUT_OF_RANGE)
            buf, base, tlen = table[ref.slot]
            if buf is None:
                raise HalError(f"{what}: binding table slot {ref.slot} is null",
                              StatusCode.INVALID_ARGUMENT)
            size = len(buf.bytes)
            limit = size if tlen == WHOLE_BUFFER else base + tlen
            if base < 0 or limit > size or base > limit:
                raise HalError(f"{what}: binding table slot {ref.slot} range [{base}, {limit}) "
                              f"is out of bounds of a {size}-byte buffer", StatusCode.OUT_OF_RANGE)
        start = base + ref.offset
        length = limit - start if ref.length == WHOLE_BUFFER else ref.length
        if ref.offset < 0 or length < 0 or start + length > limit:
            where = "buffer" if ref.buffer is not None else f"binding table slot {ref.slot}"
            raise HalError(f"{what}: range [{ref.offset}, {ref.offset + length}) is out of "
                          f"bounds of {where} ({limit - base} bytes)", StatusCode.OUT_OF_RANGE)
        out.append((buf, start, length))
    return out


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


def _transfer(cmd: Any, table: Sequence[tuple[HalBuffer, int, int]], what: str) -> int:
    """Run a fill, update or copy command; the bytes it wrote."""
    if isinstance(cmd, Fill):
        buf, start, length = _resolve(cmd.target, table, what)
        fill_range(buf, start, length, cmd.pattern, _target(cmd.target, what))
        return length
    if isinstance(cmd, Update):
        buf, start, length = _resolve(cmd.target, table, what)
        if length > len(cmd.source):
            raise HalError(f"{what}: {length} bytes requested from a {len(cmd.source)}-"
                          "byte source", StatusCode.OUT_OF_RANGE)
        buf.writable(_target(cmd.target, what))[start:start + length] = \
            memoryview(cmd.source)[:length]
        return length
    if isinstance(cmd, Copy):
        sbuf, s, n = _resolve(cmd.source, table, what)
        tbuf, t, m = _resolve(cmd.target, table, what)
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
    ranges = tuple(_resolve(b, table, w) for b, w in zip(cmd.bindings, labels))
    return ObservedDispatch(cmd, what, ranges, lambda: run_dispatch(
        cmd, table, what, deadline, prepared, labels, threads), deadline)


def _target(ref: BufferRef, what: str) -> str:
    """How IREE names a command's target in an access error."""
    return what if ref.buffer is not None else f"binding table slot {ref.slot}"


def fill_range(buf: HalBuffer, start: int, length: int, pattern: bytes, what: str) -> None:
    k = len(pattern)
    if start % k or length % k:
        raise HalError(f"{what}: offset {start} and length {length} must be multiples of the "
                      f"{k}-byte pattern", StatusCode.INVALID_ARGUMENT)
    dst = buf.writable(what)[start:start + length]
    if length <= _FILL_CHUNK:
        dst[:] = pattern * (length // k)
        return
    chunk = pattern * (_FILL_CHUNK // k)
    for off in range(0, length, _FILL_CHUNK):
        n = min(_FILL_CHUNK, length - off)
        dst[off:off + n] = chunk[:n]


#: a large fill writes its pattern this many bytes at a time
_FILL_CHUNK = 1 << 16


def binding_labels(what: str, count: int) -> list[str]:
    """How errors name the bindings of command ``what``."""
    return [f"{what} binding {i}" for i in range(count)]


def prepare_dispatch(cmd: Dispatch, device: Any) -> Any:
    """The executable's prepared form of a recorded dispatch (its ``prepare``,
    on the device's ``dispatch_threads`` threads), or None."""
    prepare = getattr(cmd.executable.exe, "prepare", None)
    if prepare is None or 0 in cmd.workgroups:
        return None
    return prepare(cmd.ordinal, cmd.workgroups, list(cmd.constants), len(cmd.bindings),
                   threads=getattr(device, "dispatch_threads", 1))


def binding_specs(refs: Sequence[BufferRef]) -> tuple[tuple[Any, ...], ...] | None:
    """Per binding ``(slot, its fixed buffer or None, offset, offset +
    length)`` when every binding is a range of fixed, non-zero length at a
    non-negative offset (what :func:`run_resolved` takes), else None."""
    if not all(b.slot >= 0 and b.offset >= 0 and b.length > 0 for b in refs):
        return None
    return tuple((b.slot, b.buffer, b.offset, b.offset + b.length) for b in refs)


def run_resolved(specs: tuple[tuple[Any, ...], ...], sizes: list[int], run: Any,
                 table: Sequence[tuple[HalBuffer, int, int]], deadline: float | None) -> bool:
    """The binding-table resolution of the common case, shared by the
    runners and :func:`run_dispatch`: when every binding of ``specs`` (see
    :func:`binding_specs`) lies inside its table entry, itself inside an
    aligned buffer (or inside its fixed aligned buffer), call
    ``run(pointers, sizes, deadline)`` and return True.  Otherwise (a short,
    null, whole-buffer or out-of-bounds entry, a misaligned buffer) return
    False without running anything: the checked path stages the binding or
    reports what is wrong."""
    ptrs: list[int] = []
    try:
        for slot, buf, off, end in specs:
            if buf is None:
                buf, base, tlen = table[slot]
                # inside the entry [base, base + tlen), itself inside the buffer
                if base < 0 or end > tlen or base + tlen > buf.bytes.nbytes:
                    return False
                off += base
            elif end > buf.bytes.nbytes:
                return False
            addr = buf.address
            if addr % BUFFER_ALIGNMENT:     # (also -1: not contiguous)
                return False
            ptrs.append(addr + off)
    except (IndexError, TypeError, ValueError, AttributeError):
        return False
    run(ptrs, sizes, deadline)
    return True


def dispatch_runner(cmd: Dispatch, what: str, prepared: Any, labels: Sequence[str] | None,
                    threads: int, flushed: bool = False) -> tuple[Any, list[int], Any, Any]:
    """``(specs, sizes, run, checked)`` of a recorded dispatch with a
    prepared form: a submission calls ``run_resolved(specs, sizes, run,
    table, deadline)`` (the common case, in that one frame) and, when that
    returns False or ``specs`` is None, ``checked(table, deadline)``
    (:func:`run_dispatch`, which stages odd bindings or reports what is
    wrong).  ``flushed``: ``run`` is the prepared form's ``run_flushed``
    (the caller sets the FPU state around the runs)."""
    def checked(table: Sequence[tuple[HalBuffer, int, int]], deadline: float | None) -> None:
        run_dispatch(cmd, table, what, deadline, prepared, labels, threads)
    return binding_specs(cmd.bindings), [b.length for b in cmd.bindings], \
        prepared.run_flushed if flushed else prepared.run, checked


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


def run_dispatch(cmd: Dispatch, table: Sequence[tuple[HalBuffer, int, int]], what: str,
                 deadline: float | None = None, prepared: Any = None,
                 labels: Sequence[str] | None = None, threads: int = 1) -> None:
    """Execute one recorded dispatch: ``prepared`` (see :func:`prepare_dispatch`)
    when every binding is a non-empty range of an aligned buffer, else
    :meth:`vmrt.Executable.dispatch`."""
    if prepared is not None:            # (never made for an empty grid)
        specs = binding_specs(cmd.bindings)
        if specs is not None and run_resolved(specs, [b.length for b in cmd.bindings],
                                              prepared.run, table, deadline):
            return
    if 0 in cmd.workgroups:
        return
    if labels is None:
        labels = binding_labels(what, len(cmd.bindings))
    ranges = resolve_all(cmd.bindings, table, labels)
    staged: dict[int, tuple[HalBuffer, memoryview, int]] = {}
    try:
        if prepared is not None and all(n and buf.address != -1 for buf, _s, n in ranges):
            # aligned buffers as they are, misaligned ones through an aligned copy
            ptrs, sizes = [], []
            for buf, start, length in ranges:
                addr = buf.address
                if addr % BUFFER_ALIGNMENT:
                    addr = _stage(buf, staged)[1]
                ptrs.append(addr + start)
                sizes.append(length)
            prepared.run(ptrs, sizes, deadline)
            return
        bindings = []
        for buf, start, length in ranges:
            if buf.address == -1 or buf.address % BUFFER_ALIGNMENT:
                data, addr = _stage(buf, staged)
                if buf.bytes.readonly:      # the copy is bound read-only as the buffer is
                    data = data.toreadonly()
            else:
                data, addr = buf.bytes, buf.address
            if length == 0:
                bindings.append(HostBytes(*aligned_memory(BUFFER_ALIGNMENT)))   # never read
            else:
                bindings.append(HostBytes(data[start:start + length], addr + start, data))
        cmd.executable.exe.dispatch(cmd.ordinal, cmd.workgroups, bindings, list(cmd.constants),
                                    deadline=deadline, threads=threads)
    finally:
        for buf, copy, _addr in staged.values():
            if not buf.bytes.readonly:
                buf.bytes[:] = copy


def _stage(buf: HalBuffer, staged: dict[int, tuple[HalBuffer, memoryview, int]]
           ) -> tuple[memoryview, int]:
    """An aligned copy of a buffer (once per dispatch, so aliasing bindings alias)."""
    hit = staged.get(id(buf))
    if hit is None:
        copy, addr = aligned_memory(len(buf.bytes), "dispatch staging")
        copy[:] = buf.bytes
        hit = staged[id(buf)] = (buf, copy, addr)
    return hit[1], hit[2]
