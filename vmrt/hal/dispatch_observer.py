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
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from elfkit.records import DataRecord

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
