"""The run state of an emulated machine's calls: ``CallState``, one per
machine, created by the runner (``_runner``) and read and written by it, by
the callers it generates (``_codegen``) and by the hooks that stop a run
(host callbacks, gdb).  A plain record of public fields, so the generated
code reaches each with one attribute load.

Locking: ``lock`` (re-entrant) is held by a call for its whole duration and
by the machine's memory operations; ``slock`` guards the start and end of a
run against stop requests from other threads (``running``, ``gen``,
``active``, ``stop``).
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import weakref

from ...errors import ModuleClosedError
from . import _uc

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from ._uc import Engine

    F = TypeVar("F", bound=Callable[..., Any])

# why emulation stopped early (set before uc_emu_stop)
STOP_HOOK = "hook"            # a Python callback raised
STOP_TIMEOUT = "timeout"
STOP_CANCEL = "cancel"
STOP_INTR = "interrupt"       # CPU exception seen by the interrupt hook
STOP_BUDGET = "budget"
STOP_SIGNAL = "signal"        # a signal arrived while the main thread ran the call


#: the Python functions unicorn calls through ctypes (hooks, host callbacks),
#: each with the run state of its machine (see :meth:`CallState.guard`)
_GUARDED: weakref.WeakKeyDictionary[Any, CallState] = weakref.WeakKeyDictionary()
_previous_hook: Any = None


#: a KeyboardInterrupt Python raised where it could not propagate (see
#: ``_unraisable``), for the interrupted call to raise
LOST_INTERRUPT: list[BaseException | None] = [None]


def _unraisable(args: Any) -> None:
    """``sys.unraisablehook`` while machines have guarded functions: an
    exception escaping one of them ends its machine's call with it.  A
    KeyboardInterrupt Python raised in other code it cannot propagate from (a
    finalizer, a weakref callback run as a call ends) is kept in
    ``LOST_INTERRUPT``: the call the signal stopped (the watchdog's
    ``STOP_SIGNAL``) raises it when the handlers have nothing left to run.
    Anything else goes to the hook that was there before."""
    try:
        state = _GUARDED.get(args.object)
    except TypeError:               # an object that cannot be a weak key
        state = None
    exc = args.exc_value
    if state is not None and exc is not None:
        state.fail(exc)
        return
    if isinstance(exc, KeyboardInterrupt):
        LOST_INTERRUPT[0] = exc
        return
    (_previous_hook or sys.__unraisablehook__)(args)


class CallState:
    """``closed``: the machine was closed.  ``running``: guest code runs now
    (False again while a host callback makes a nested call).  ``gen``: number
    of the latest call; ``active``: the numbers of the calls in progress,
    outer first.  ``stop``: why the run was asked to stop (``STOP_*``), or
    None; ``hook_exc``: the exception a hook stopped it with.  ``limited``:
    calls need the limited run (a timeout, a budget or the x87 counter);
    ``count_mode``: unicorn's instruction counter is installed.  ``call_sp``:
    the stack pointer the next call starts below.  ``started``: when the
    latest call on the main thread started (``time.time_ns()``, for the
    watchdog: a signal that arrived before it does not stop it)."""

    __slots__ = ("lock", "slock", "closed", "running", "gen", "active", "stop", "hook_exc",
                 "limited", "count_mode", "call_sp", "handle", "closed_why", "started",
                 "unsealed", "seal", "__weakref__")

    def __init__(self, engine: Engine, call_sp: int) -> None:
        self.lock = threading.RLock()
        self.slock = threading.Lock()
        self.closed = False
        self.running = False
        self.gen = 0
        self.active: list[int] = []
        self.stop: str | None = None
        self.hook_exc: BaseException | None = None
        self.limited = False
        self.count_mode = False
        self.call_sp = call_sp
        self.started = 0
        self.handle = engine.handle
        #: why the machine was closed other than by close() (a fork, the exit)
        self.closed_why = ""
        #: released guarded spans guest code must not reach, still to be
        #: sealed by ``seal()`` before the next run (the machine's ``_spans``)
        self.unsealed: dict[int, Any] = {}
        self.seal: Callable[[], None] = self.unsealed.clear
        _STATES.add(self)

    def guard(self, fn: F) -> F:
        """Mark ``fn``, a Python function unicorn calls through ctypes (a hook),
        so that an exception escaping it ends the running call with that
        exception (:meth:`fail`).  ctypes would print such an exception
        ("Exception ignored ...") and drop it: a Ctrl-C whose
        KeyboardInterrupt Python raises as the hook is entered, before any
        ``try`` in it, was lost that way.  Returns ``fn``."""
        global _previous_hook
        if sys.unraisablehook is not _unraisable:
            _previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
        _GUARDED[fn] = self
        return fn

    def check_open(self) -> None:
        if self.closed:
            raise ModuleClosedError(f"the emulated machine was closed{self.closed_why}")

    def in_call(self) -> bool:
        """Whether the calling thread is inside a call (in a host callback)."""
        return bool(self.active) and self.lock._is_owned()  # type: ignore[attr-defined]

    def fail(self, exc: BaseException) -> None:
        """Stop the run from inside a hook: the call that runs raises ``exc``
        (the first one, if several hooks fail) once ``uc_emu_start`` returns."""
        if self.hook_exc is None:
            self.hook_exc = exc
        self.stop = STOP_HOOK
        _uc.lib.uc_emu_stop(self.handle)


#: every machine's run state (for fork and exit)
_STATES: weakref.WeakSet[CallState] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: a lock another thread
    held (a call in progress, a memory operation, a stop request) would be
    held forever, and the next call would hang.  The locks are reset in
    place (the generated callers hold them); a machine whose call ran on
    another thread is closed (its engine is in the middle of a run no
    thread will finish), with a message saying why.  A call the forking
    thread itself is in (a host callback that forked) carries on."""
    for state in list(_STATES):
        ours = state.lock._is_owned()  # type: ignore[attr-defined]
        state.slock._at_fork_reinit()  # type: ignore[attr-defined]
        if ours:
            continue
        state.lock._at_fork_reinit()  # type: ignore[attr-defined]
        if state.running or state.active:
            state.running = False
            state.active.clear()
            if not state.closed:
                state.closed = True
                state.closed_why = (": it was running a call on another thread when the "
                                    "process forked; load the plugin again in the child")


def _stop_at_exit() -> None:
    """The interpreter exits: stop the guest code other threads (daemon
    threads) are running, and let no new call start, so that no thread is
    inside unicorn while the process tears down (it crashed there)."""
    busy = []
    for state in list(_STATES):
        if state.closed or state.lock._is_owned():  # type: ignore[attr-defined]
            continue
        with state.slock:
            state.closed = True
            state.closed_why = ": the interpreter is exiting"
            if state.running:
                if state.stop is None:
                    state.stop = STOP_CANCEL
                _uc.lib.uc_emu_stop(state.handle)
                busy.append(state)
    end = time.monotonic() + 2.0
    while busy and time.monotonic() < end:
        busy = [s for s in busy if s.running]
        if busy:
            for s in busy:
                _uc.lib.uc_emu_stop(s.handle)
            time.sleep(0.001)       # (the GIL released: their threads leave the engine)


def stop_first_at_exit() -> None:
    """Make :func:`_stop_at_exit` the next exit handler to run (they run
    newest first): before the finalizers (``weakref.finalize``) that close
    machines, whose engines a daemon thread may still be running."""
    atexit.unregister(_stop_at_exit)
    atexit.register(_stop_at_exit)


os.register_at_fork(after_in_child=_after_fork_in_child)

