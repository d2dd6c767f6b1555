"""``/tmp/perf-PID.map``: perf's names for natively loaded plugin code.

``perf report`` (and other profilers) name addresses in anonymous memory
from ``/tmp/perf-<pid>.map``, one ``START SIZE name`` line per function,
START and SIZE in hex.  With ``ELFKIT_PERF_MAP=1`` in the environment, or
after ``enable()``, every plugin loaded natively appends its functions
there, and so do symbols added later (``Module.add_symbols``: the
dispatch functions of a stripped IREE library).  Lines are never removed
(perf reads the file after the process ends); a later load at the same
address adds only the lines not written yet (each line is written once per
process).  The file is created afresh; when something is already at its
path that is not a private regular file of the current user with one link
(a symbolic or hard link planted by someone, a FIFO, another user's file)
nothing is written, with a warning, and the load goes on.
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
    """Append a module's functions (or just ``symbols``) to the map (when
    enabled).  Each line is written once per process: a plugin loaded again
    at the same address adds nothing."""
    if not enabled():
        return
    with _lock:
        pid = os.getpid()
        if _out.get("pid") != pid:          # first use, or a forked child: its own map
            _out.clear()
            _out.update(pid=pid, fd=None, written=set(), refused=False)
        written: set[str] = _out["written"]
        new = [line for line in dict.fromkeys(lines(module, symbols)) if line not in written]
        if not new or _out["refused"]:
            return
        try:
            if _out["fd"] is None:
                _out["fd"] = _open(path())
            os.write(_out["fd"], "".join(new).encode())
        except (OSError, _Refused) as e:    # a profiling aid must not fail the load
            _out["refused"] = isinstance(e, _Refused)
            why = str(e) if isinstance(e, _Refused) else f"cannot append: {e.strerror or e}"
            import warnings  # only then (start-up time)
            warnings.warn(f"elfkit: perf map {path()}: {why}", stacklevel=2)
            return
        written.update(new)


#: this process's map: its pid, descriptor, lines written, and whether it was refused
_out: dict[str, Any] = {}


class _Refused(Exception):
    """The map's path holds something that is not this process's to append to."""


def _open(name: str) -> int:
    """A descriptor appending to ``name``: created afresh (never through a
    link someone planted), or an existing regular file of the current user
    with a single link (a map left by an earlier process of the same pid).
    Anything else -- a symbolic link (dangling or not), a hard link to
    another file, a file of another user, a FIFO, a device -- is refused
    (``_Refused``) and left untouched; nothing ever waits on a FIFO."""
    flags = (os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        return os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        pass
    import stat  # only here: the map usually is created afresh
    try:
        st = os.lstat(name)
    except OSError as e:
        raise _Refused(f"cannot inspect the existing file: {e.strerror or e}") from None
    if stat.S_ISLNK(st.st_mode):
        raise _Refused("is a symbolic link; not writing through it")
    if not stat.S_ISREG(st.st_mode):
        from .._support.files import file_kind
        raise _Refused(f"is {file_kind(st.st_mode)}; not writing to it")
    try:
        fd = os.open(name, flags)
    except OSError as e:
        raise _Refused(f"cannot open the existing file: {e.strerror or e}") from None
    st = os.fstat(fd)
    why = ("is not a regular file" if not stat.S_ISREG(st.st_mode)
           else f"belongs to uid {st.st_uid}" if st.st_uid != os.getuid()
           else f"has {st.st_nlink} links (a hard link to another file)" if st.st_nlink != 1
           else "is writable by others" if st.st_mode & 0o022 else "")
    if why:
        os.close(fd)
        raise _Refused(f"{why}; not writing to it")
    os.set_blocking(fd, True)
    return fd
