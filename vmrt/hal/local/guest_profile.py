"""Where the guest time of emulated dispatches goes (``vmrt run
--guest_profile=FILE``, ``vmrt.load(guest_profile=...)``).

While a :class:`GuestProfileFile` collects, every emulated dispatch runs on
the executable's own machine (no worker machines) with elfkit's guest
profile switched on (``EmulatedMachine.profile``): instructions per
function -- the dispatch functions are named after their exports -- and
source line.  A machine profiles from its first dispatch until the
profile is finished (the counts of a machine closed before then are lost).
Collection is process-wide: dispatches of every program running meanwhile
count.  The file is written when collection ends: an SVG
flame chart (``.svg``) or speedscope JSON (``.json``).
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator

from ...errors import UsageError, VmError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_active: list[Any] = []          # the GuestProfiles collecting, newest last
_lock = threading.Lock()
#: id(machine) -> (weak reference, the profile it counts into)
_machines: dict[int, tuple[weakref.ref[Any], Any]] = {}


def current() -> Any:
    """The guest profile emulated dispatches count into, else None."""
    return _active[-1] if _active else None


@contextlib.contextmanager
def profiling(machine: Any) -> Iterator[None]:
    """Profile what ``machine`` runs inside the ``with`` block into the
    current guest profile (nothing when none collects).  The machine keeps
    profiling until the profile is finished: switching the profile on or off
    flushes its translated code, which, done for every dispatch, made
    profiled runs ten times slower instead of about 1.2 times."""
    prof = current()
    if prof is not None:
        with _lock:
            ref = _machines.get(id(machine))
            start = ref is None or ref[0]() is not machine or ref[1] is not prof
            if start:
                _machines[id(machine)] = (weakref.ref(machine), prof)
        if start:       # (outside the lock: this waits for a call running on the machine)
            machine.profile(prof)
    yield


def _stop_machines(prof: Any) -> None:
    """Stop the machines profiling into ``prof``, charging their counts."""
    with _lock:
        mine = [k for k, (_r, p) in _machines.items() if p is prof]
        refs = [_machines.pop(k)[0] for k in mine]
    for ref in refs:
        machine = ref()
        if machine is not None:
            machine.profile(None)


class GuestProfileFile:
    """Collects a guest profile for ``path`` from ``start`` to ``finish``."""

    def __init__(self, path: str | os.PathLike[str], name: str = "vmrt guest") -> None:
        from elfkit import ElfkitError
        from elfkit.exec import GuestProfile, check_profile_path  # only when asked for
        try:
            self.path = check_profile_path(path)
        except ElfkitError as e:
            raise UsageError(f"--guest_profile: {e}") from e
        self.profile = GuestProfile(name)
        self._on = False

    def start(self) -> None:
        with _lock:
            if not self._on:
                _active.append(self.profile)
                self._on = True

    def stop(self) -> None:
        with _lock:
            if not self._on:
                return
            _active.remove(self.profile)
            self._on = False
        _stop_machines(self.profile)

    def finish(self) -> None:
        """Stop collecting and write the file (``VmError`` if it cannot be
        written; no partial file is left)."""
        if not self._on:
            return
        self.stop()
        from elfkit import ElfkitError
        try:
            self.profile.write(self.path)
        except ElfkitError as e:
            raise VmError(str(e)) from e

    @contextlib.contextmanager
    def stopped_on_error(self) -> Iterator[None]:
        """Stop collecting (without writing) if the block raises."""
        try:
            yield
        except BaseException:
            self.stop()
            raise
