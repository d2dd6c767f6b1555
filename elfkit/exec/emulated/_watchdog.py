"""One background thread that enforces wall-clock deadlines of running calls.

unicorn's own ``emu_start(timeout=...)`` starts and joins a thread on every
call (measured ~75 us per call here), which would dominate short calls.
Instead a call registers its deadline with this shared watchdog (a dict
insert under a lock) and the watchdog calls ``uc_emu_stop`` when it passes,
repeating every few milliseconds until the call has unregistered -- so a
stop that lands just before ``uc_emu_start`` began is not lost.  If a stop
function raises, the thread carries on and ``disarm`` hands the error to the
call, which raises it.
"""
from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

_REPEAT = 0.005


class Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._entries: dict[int, tuple[float, Callable[[], None]]] = {}
        self._errors: dict[int, BaseException] = {}
        self._ids = itertools.count(1)
        self._wake = float("inf")
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, fire: Callable[[], None]) -> int:
        deadline = time.monotonic() + seconds
        with self._cond:
            token = next(self._ids)
            self._entries[token] = (deadline, fire)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="elfkit-watchdog",
                                                daemon=True)
                self._thread.start()
            if deadline < self._wake:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> BaseException | None:
        """Unregister a deadline; returns the error its stop function raised, if any."""
        with self._cond:
            self._entries.pop(token, None)
            return self._errors.pop(token, None)

    def _loop(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                nearest = float("inf")
                for token, (deadline, fire) in list(self._entries.items()):
                    if deadline <= now:
                        try:
                            fire()
                        except Exception as e:  # noqa: BLE001 - returned by disarm()
                            self._errors.setdefault(token, e)
                        # keep stopping until the call disarms
                        self._entries[token] = (now + _REPEAT, fire)
                        deadline = now + _REPEAT
                    nearest = min(nearest, deadline)
                self._wake = nearest
                self._cond.wait(None if nearest == float("inf") else max(0.0, nearest - now))


WATCHDOG = Watchdog()


def arm(seconds: float, fire: Callable[[], None]) -> int:
    return WATCHDOG.arm(seconds, fire)


def disarm(token: int) -> BaseException | None:
    return WATCHDOG.disarm(token)


__all__: list[Any] = ["arm", "disarm", "WATCHDOG"]
