"""``/tmp/perf-PID.map``: perf's names for natively loaded plugin code.

``perf report`` (and other profilers) name addresses in anonymous memory
from ``/tmp/perf-<pid>.map``, one ``START SIZE name`` line per function,
START and SIZE in hex.  With ``ELFKIT_PERF_MAP=1`` in the environment, or
after ``enable()``, every plugin loaded natively appends its functions
there, and so do symbols added later (``Module.add_symbols``: the
dispatch functions of a stripped IREE library).  Lines are never removed
(perf reads the file after the process ends); a later load at the same
address simply adds newer lines.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from .environ import getenv
from .symfile import PluginSymbol, function_symbols

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_switch: dict[str, bool | None] = {"on": None}
_lock = threading.Lock()


def enable(on: bool = True) -> None:
    """Write perf map lines for plugins loaded from now on (``False``:
    stop; the environment variable no longer decides)."""
    _switch["on"] = bool(on)


def enabled() -> bool:
    on = _switch["on"]
    if on is not None:
        return on
    v = getenv("ELFKIT_PERF_MAP")
    return v is not None and v.strip().lower() in ("1", "yes", "true", "on")


def path() -> str:
    """This process's map file."""
    return f"/tmp/perf-{os.getpid()}.map"


def lines(module: Any, symbols: Sequence[PluginSymbol] | None = None) -> list[str]:
    """The map lines of a loaded module: ``START SIZE name`` per function
    (or per symbol of ``symbols``, those added to it later)."""
    syms = function_symbols(module) if symbols is None else symbols
    return [f"{s.address:x} {s.size:x} {s.name}\n" for s in syms if s.size]


def record(module: Any, symbols: Sequence[PluginSymbol] | None = None) -> None:
    """Append a module's functions (or just ``symbols``) to the map (when enabled)."""
    if not enabled():
        return
    text = "".join(lines(module, symbols))
    if not text:
        return
    with _lock:
        try:
            fd = os.open(path(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        except OSError as e:      # a profiling aid must not fail the load
            import warnings  # only then (start-up time)
            warnings.warn(f"elfkit: cannot append to {path()}: {e.strerror or e}", stacklevel=2)
