"""One background thread that stops running calls: at their wall-clock
deadlines, and when the process gets a signal (Ctrl-C) while the main thread
is inside an emulated call.

unicorn's own ``emu_start(timeout=...)`` starts and joins a thread on every
call (measured ~75 us per call here), which would dominate short calls.
Instead a call registers its deadline with this shared watchdog (a dict
insert under a lock) and the watchdog calls the stop function when it
passes, repeating every few milliseconds until the call has unregistered --
so a stop that lands just before ``uc_emu_start`` began is not lost.  If a
stop function raises, the thread carries on and ``disarm`` hands the error to
the call, which raises it.

Signals: Python runs signal handlers only between bytecodes of the main
thread, never while it is inside ``uc_emu_start``.  So the first emulated
call made on the main thread installs a wakeup fd (``signal.set_wakeup_fd``;
an fd installed before, e.g. by asyncio, keeps getting every byte).  When a
signal whose Python handler always raises arrives (SIGINT under Python's
default handler: Ctrl-C, ``KeyboardInterrupt``), the watchdog stops the
machine running on the main thread (``MAIN[0]``, its runner:
``stop_for_signal``), whose call then runs the handlers and ends with their
exception.  A stopped run is never resumed: unicorn checks for a stop
request after every guest load and store and then rewinds the PC to the
start of that instruction, so a resumed run would execute the instruction's
loads and stores again (a store recorded twice, ``add [m], 1`` adding
twice, ``ldr x0, [x0]`` loading through the loaded value).  Handlers that
may return (any other Python handler) therefore do not stop a call: they
run at the next bytecode of the main thread -- in a hook of the call, if it
has one, or once it returns -- like for any other long C call.

Only a call that started before the signal arrived is stopped: the wakeup
fd is a datagram socket whose reader gets the kernel's time stamp of each
write, compared with the call's start (``CallState.started``); a signal that
arrived before was handled by the main thread's bytecode before the call's
guest code ran (its KeyboardInterrupt perhaps caught), and the watchdog,
which needs the GIL to read the fd, often learns of it only once the next
call runs.  Until the main thread has run the handlers (``PENDING``) the
stop is repeated every few milliseconds (for at most two seconds): a stop
that lands between the call's registration and the start of
``uc_emu_start`` is lost, and the call would otherwise run on with the
signal unhandled.  A call that starts on the main thread while ``PENDING``
is set runs the handlers first and clears it, under its machine's stop
lock; so does a call that ends with a KeyboardInterrupt (raised in a hook).
"""
from __future__ import annotations

# _signal: the C module behind ``signal``, loaded at every start-up (``signal``'s
# import builds its enums, ~0.6 ms of an emulated process's start-up, for two
# functions and a handler that are the same objects)
import _signal  # type: ignore[import-not-found]  # (typeshed has no stub of it)
import itertools
import os
import select
import sys
import threading
import time
from collections.abc import Callable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_REPEAT = 0.002
#: how long a signal keeps stopping the main thread's call until the call has
#: run the handlers: a stop that lands just before ``uc_emu_start`` begins
#: is lost (unicorn clears stop requests when it starts)
_SIGNAL_REPEAT_FOR = 2.0

#: the runner (``_runner.CallRunner``) of the machine running a call on the
#: main thread, if any (set by the callers)
MAIN: list[Any] = [None]
#: whether the signal wakeup fd is installed (checked by callers on the main thread)
SIGNALS: list[bool] = [False]
#: while a signal whose handler raises may not have been handled by the main
#: thread yet: when it arrived (``time.time_ns()``; ``_UNKNOWN`` where the
#: kernel does not time-stamp the wakeup fd), else 0.  Main-thread calls read
#: and clear it under their stop lock, and are stopped only for a signal
#: that arrived after they started (``CallState.started``): one that arrived
#: before was handled by the main thread's bytecode before the call ran
PENDING: list[int] = [0]
_UNKNOWN = 1 << 62


class Watchdog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[int, tuple[float, Callable[[], object]]] = {}
        self._errors: dict[int, BaseException] = {}
        self._ids = itertools.count(1)
        self._wake = float("inf")
        self._thread: threading.Thread | None = None
        pipe = _pipe()                            # wakes the thread: new deadline
        self._pipe_r = pipe[0]
        self._pipe_w = pipe[1]
        self._signals: _SignalChannel | None = None   # Python's handler writes to it
        self._sig_r = -1                          # (its read end)
        self._chain = -1                          # the wakeup fd installed before ours
        self._sig_until = 0.0                     # repeat signal stops until then

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="elfkit-watchdog",
                                            daemon=True)
            self._thread.start()

    def arm(self, seconds: float, fire: Callable[[], object]) -> int:
        deadline = time.monotonic() + seconds
        with self._lock:
            token = next(self._ids)
            self._entries[token] = (deadline, fire)
            self._start()
            if deadline < self._wake:
                self._wake = deadline
                _poke(self._pipe_w)
        return token

    def disarm(self, token: int) -> BaseException | None:
        """Unregister a deadline; returns the error its stop function raised, if any."""
        with self._lock:
            self._entries.pop(token, None)
            return self._errors.pop(token, None)

    def install_signals(self) -> None:
        """Route signals to this thread (main thread only; once)."""
        if SIGNALS[0] or threading.current_thread() is not threading.main_thread():
            return
        SIGNALS[0] = True
        channel = _SignalChannel()
        try:
            old = _signal.set_wakeup_fd(channel.w, warn_on_full_buffer=False)
        except (ValueError, OSError):         # pragma: no cover - not the main interpreter
            channel.close()
            return
        with self._lock:
            self._signals, self._sig_r, self._chain = channel, channel.r, old
            self._start()
            _poke(self._pipe_w)

    def _on_signal(self) -> None:
        with self._lock:                # (atomic with interrupt_handled)
            arrived = [stamp for signum, stamp in self._read_signals()
                       if _handler_raises(signum)]
            if arrived:
                PENDING[0] = max(PENDING[0], *arrived)
                self._sig_until = time.monotonic() + _SIGNAL_REPEAT_FOR
                self._stop_main()

    def _read_signals(self) -> list[tuple[int, int]]:
        """The signals Python's handler announced, with when they arrived
        (passed on to the fd installed before ours)."""
        channel = self._signals
        if channel is None:
            return []
        got = channel.read()
        if self._chain >= 0 and got:
            try:
                os.write(self._chain, bytes(signum for signum, _t in got))
            except OSError:
                pass
        return got

    def interrupt_handled(self) -> None:
        """The main thread's call ended with the KeyboardInterrupt of a SIGINT
        (raised in a hook, or by the handlers it ran): the signals that
        arrived so far are handled, so the watchdog must not act on them
        later (it would stop the next call for a signal already handled)."""
        if self._sig_r < 0:
            return
        with self._lock:
            self._read_signals()
            self.signals_handled()

    def _stop_main(self) -> None:
        m = MAIN[0]
        if m is not None:
            m.stop_for_signal()

    def after_fork_in_child(self) -> None:
        """The child of a fork has no watchdog thread, and a lock it held at
        the fork would be held forever: reset both (the next deadline starts
        a thread); calls of other threads are gone with them."""
        self._lock._at_fork_reinit()  # type: ignore[attr-defined]
        self._thread = None
        self._entries.clear()
        self._errors.clear()
        self._wake = float("inf")
        self._sig_until = 0.0                 # (Python clears the child's pending signals)
        PENDING[0] = 0
        m = MAIN[0]
        if m is not None and not m.state.lock._is_owned():
            MAIN[0] = None

    def signals_handled(self) -> None:
        """The main thread is about to run the signal handlers: stop repeating
        (a signal arriving from now on starts again)."""
        PENDING[0] = 0
        self._sig_until = 0.0

    def _loop(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                nearest = float("inf")
                for token, (deadline, fire) in list(self._entries.items()):
                    if deadline <= now:
                        try:
                            fire()
                        except Exception as e:  # noqa: BLE001 - returned by disarm()
                            self._errors.setdefault(token, e)
                        # keep stopping until the call disarms
                        deadline = now + _REPEAT
                        self._entries[token] = (deadline, fire)
                    nearest = min(nearest, deadline)
                if self._sig_until > now:
                    nearest = min(nearest, now + _REPEAT)
                self._wake = nearest
                fds = [self._pipe_r] + ([self._sig_r] if self._sig_r >= 0 else [])
            wait = None if nearest == float("inf") else max(0.0, nearest - now)
            try:
                ready, _w, _x = select.select(fds, [], [], wait)
            except InterruptedError:          # pragma: no cover - retried by Python
                continue
            if self._pipe_r in ready:
                try:
                    os.read(self._pipe_r, 512)
                except BlockingIOError:
                    pass
            if self._sig_r in ready:
                self._on_signal()
            elif self._sig_until > time.monotonic() and PENDING[0]:
                self._stop_main()


def _handler_raises(signum: int) -> bool:
    """Whether the Python handler of ``signum`` always raises (Python's
    default SIGINT handler), so that stopping the call it interrupts loses
    nothing: the call ends with its exception."""
    try:
        return _signal.getsignal(signum) is _signal.default_int_handler
    except ValueError:                        # not a signal number
        return False


class _SignalChannel:
    """The wakeup fd Python's signal handler writes each signal number to:
    a datagram socket pair whose reader gets the kernel's time stamp of
    each write (the moment the signal arrived), or a pipe where the kernel
    has no such stamps (arrival unknown)."""

    def __init__(self) -> None:
        # the C module: ``socket``'s import (its enums, selectors) costs ~2 ms
        # of every emulated process's start-up, for one socket pair made once
        import _socket  # (made once, by the first call on the main thread)
        self._socks: tuple[Any, Any] | None = None
        # SO_TIMESTAMPNS (== SCM_TIMESTAMPNS): Linux's generic value, which
        # Python does not name; a stamp that does not come means "unknown"
        self._stamp_kind = 35
        try:
            if not sys.platform.startswith("linux"):
                raise OSError("no SO_TIMESTAMPNS")
            r, w = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_DGRAM)
        except (AttributeError, OSError):     # pragma: no cover - not Linux
            self.r, self.w = _pipe()
            return
        try:
            r.setsockopt(_socket.SOL_SOCKET, self._stamp_kind, 1)
        except OSError:                       # pragma: no cover - no time stamps
            r.close()
            w.close()
            self.r, self.w = _pipe()
            return
        r.setblocking(False)
        w.setblocking(False)
        self._socks = (r, w)
        self.r, self.w = r.fileno(), w.fileno()

    def read(self) -> list[tuple[int, int]]:
        """(signal number, arrival in ``time.time_ns()`` or ``_UNKNOWN``) of
        each signal written since the last read."""
        out: list[tuple[int, int]] = []
        if self._socks is None:
            try:
                data = os.read(self.r, 512)
            except (BlockingIOError, InterruptedError):
                return out
            return [(signum, _UNKNOWN) for signum in data]
        sock = self._socks[0]
        while True:
            try:
                data, anc, _flags, _addr = sock.recvmsg(64, 64)
            except (BlockingIOError, InterruptedError):
                return out
            stamp = _UNKNOWN
            for _level, kind, payload in anc:
                if kind == self._stamp_kind and len(payload) >= 16:   # struct timespec
                    stamp = (int.from_bytes(payload[:8], sys.byteorder, signed=True)
                             * 1_000_000_000
                             + int.from_bytes(payload[8:16], sys.byteorder, signed=True))
            out.extend((signum, stamp) for signum in data)

    def close(self) -> None:
        if self._socks is None:
            os.close(self.r)
            os.close(self.w)
        else:
            for sock in self._socks:
                sock.close()


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def _poke(fd: int) -> None:
    try:
        os.write(fd, b"\0")
    except BlockingIOError:                   # already full: the thread will wake
        pass


WATCHDOG = Watchdog()
os.register_at_fork(after_in_child=WATCHDOG.after_fork_in_child)


def arm(seconds: float, fire: Callable[[], object]) -> int:
    return WATCHDOG.arm(seconds, fire)


def disarm(token: int) -> BaseException | None:
    return WATCHDOG.disarm(token)


def signals_handled() -> None:
    """Called by a main-thread call before it runs the signal handlers."""
    WATCHDOG.signals_handled()


def interrupt_handled() -> None:
    """See ``Watchdog.interrupt_handled``."""
    WATCHDOG.interrupt_handled()


def install() -> None:
    """Let signals stop emulated calls on the main thread (see module doc)."""
    WATCHDOG.install_signals()


__all__: list[Any] = ["arm", "disarm", "install", "interrupt_handled", "signals_handled",
                      "MAIN", "PENDING",
                      "SIGNALS", "WATCHDOG"]
