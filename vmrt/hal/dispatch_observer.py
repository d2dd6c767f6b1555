"""The one seam dispatch tools watch through (``--compare_with``,
``--dump_dispatches``, ``--check_races``).

Inside ``with observe_dispatches(observer):`` every dispatch the calling
thread's command buffers execute is handed to ``observer(obs)`` as an
:class:`ObservedDispatch` instead of being run; the observer runs it
(``obs.run()``, or its own way: :mod:`vmrt.hal.local.races` runs the
workgroups itself).  The observer is per thread (a context variable), so two
programs on two threads can be watched by two observers; other threads are
unaffected, and with no observer a command buffer pays one lookup per
submission.

Tool-only options of a dispatch the tool runs itself are not parameters of
``dispatch()`` either: inside ``with workgroup_probe(order=..., writes=...)``
an executable's ``dispatch()`` on the calling thread runs only the workgroups
of ``order`` (linear indices, x fastest) in that order, and an emulated one
appends ``(binding, byte offset, size)`` of every store into a binding to
``writes`` (the race checker, :mod:`vmrt.hal.local.races`).

An observer with a ``transfer`` method also sees the fill, update and copy
commands: ``observer.transfer(command, what, run, *args)`` must return
``run(*args)`` (the bytes the command moved).  Inside ``with
record_workgroup_ranges(recorder):`` the code that runs a contiguous range
of a dispatch's workgroups on some thread (the calling one or a local-task
worker) runs it as ``recorder(indices, run, *args)`` on that thread, which
must return ``run(*args)``: a profile times each range
(:mod:`vmrt.tools.profile`).  The recorder is looked up once per dispatch on
the calling thread (:func:`in_range`); with none, nothing is wrapped.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial

from elfkit.support import DataRecord

from ..errors import VmError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

Observer = Callable[["ObservedDispatch"], None]

#: the dispatch observer of the running thread
_OBSERVER: ContextVar[Observer | None] = ContextVar("vmrt_dispatch_observer", default=None)


#: ``current_observer()``: the observer of the calling thread, or None (the
#: variable's own getter: no Python frame per submission)
current_observer: Callable[[], Observer | None] = _OBSERVER.get


@contextmanager
def observe_dispatches(observer: Observer) -> Iterator[None]:
    """Within this block, every dispatch the calling thread's command buffers
    execute is passed to ``observer`` instead of being run; the observer
    must run it (:attr:`ObservedDispatch.run`)."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


class WorkgroupProbe(DataRecord, frozen=True, slots=True):
    """What :func:`workgroup_probe` asks of the dispatches it wraps."""
    order: tuple[int, ...] | None       # linear workgroup indices to run, in order
    writes: list[tuple[int, int, int]] | None   # gets (binding, offset, size) per store


#: the workgroup probe of the running thread
_PROBE: ContextVar[WorkgroupProbe | None] = ContextVar("vmrt_workgroup_probe", default=None)

#: ``current_probe()``: the calling thread's :class:`WorkgroupProbe`, or None
current_probe: Callable[[], WorkgroupProbe | None] = _PROBE.get


@contextmanager
def workgroup_probe(order: Sequence[int] | None = None,
                    writes: list[tuple[int, int, int]] | None = None
                    ) -> Iterator[WorkgroupProbe]:
    """Within this block, ``exe.dispatch(...)`` on the calling thread runs
    only the workgroups ``order`` names (linear indices, x fastest; each
    must be inside the grid), one after another in that order, and an
    emulated executable appends ``(binding, byte offset, size)`` of every
    store its code makes into a binding to ``writes`` (a memory write hook:
    a store of the value already there counts; a native dispatch given
    ``writes`` fails, it cannot see its stores).  Dispatches a command
    buffer runs from a prepared form ignore the probe: a tool calls
    ``dispatch()`` itself."""
    probe = WorkgroupProbe(None if order is None else tuple(int(k) for k in order), writes)
    token = _PROBE.set(probe)
    try:
        yield probe
    finally:
        _PROBE.reset(token)


#: ``recorder(indices, run, *args)``: runs ``run(*args)`` (workgroups ``indices``
#: of the dispatch being observed) on the calling thread, timing it
RangeRecorder = Callable[..., "Any"]

#: the workgroup range recorder of the running thread
_RANGES: ContextVar[RangeRecorder | None] = ContextVar("vmrt_range_recorder", default=None)

#: ``current_range_recorder()``: the calling thread's range recorder, or None
current_range_recorder: Callable[[], RangeRecorder | None] = _RANGES.get


@contextmanager
def record_workgroup_ranges(recorder: RangeRecorder) -> Iterator[None]:
    """Within this block, each workgroup range of a dispatch started on the
    calling thread runs through ``recorder`` (see the module docstring)."""
    token = _RANGES.set(recorder)
    try:
        yield
    finally:
        _RANGES.reset(token)


def in_range(recorder: RangeRecorder | None, indices: Sequence[int],
             run: Callable[..., Any]) -> Callable[..., Any]:
    """``run`` itself when ``recorder`` is None, else a callable that runs
    ``run(*args)`` through the recorder as workgroups ``indices`` (on the
    thread that calls it)."""
    return run if recorder is None else partial(recorder, indices, run)


class ObservedDispatch(DataRecord, frozen=True, slots=True):
    """One dispatch about to run: what an observer sees."""
    command: Any                                # the recorded command_buffer.Dispatch
    what: str                                   # "command 3 (dispatch)"
    ranges: tuple[tuple[Any, int, int], ...]    # (HalBuffer, start, length) per binding
    run: Callable[[], None]                     # run it as the command buffer would
    deadline: float | None

    def binding(self, i: int) -> Any:
        """Binding ``i``'s bytes (a numpy uint8 view of its buffer, read-only
        when the buffer is: module data under ``--module_mode=mmap``)."""
        buf, start, length = self.ranges[i]
        return buf.as_array()[start:start + length]

    def names(self) -> tuple[str, str]:
        """(executable name, export name)."""
        exe, ordinal = self.command.executable.exe, self.command.ordinal
        try:
            export = exe.export(ordinal).name
        except (AttributeError, VmError):
            export = f"ordinal {ordinal}"
        return str(getattr(exe, "name", "?")), export
