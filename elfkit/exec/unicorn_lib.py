"""Where unicorn's C library is and how elfkit opens it.

The emulated backend calls ``libunicorn`` through ctypes without importing
the ``unicorn`` Python package (~45 ms): ``library_path`` finds the library
in the installed package's directory (:func:`find_spec` does not
run the package) or in ``$LIBUNICORN_PATH``, and ``open_library`` opens it
with lazy binding and, on Linux, deep binding (:func:`dlopen_flags`).
Opening the 24 MB library takes a few milliseconds of the dynamic linker's
time, which ``prefetch`` moves to a background thread
(the GIL is not held meanwhile) for a caller that knows an emulated machine
is coming and has other work to do first.  Nothing of the emulated backend
is imported here.
"""
from __future__ import annotations

import ctypes
import os
import stat
import sys
import threading

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["dlopen_flags", "find_spec", "package_dir", "library_path", "open_library",
           "prebound_path", "prefetch"]

_LIB_NAMES = {"darwin": ("libunicorn.2.dylib", "libunicorn.dylib"),
              "win32": ("unicorn.dll",), "cygwin": ("cygunicorn.dll",)}


def find_spec(name: str, path: list[str] | None = None) -> Any:
    """The module spec of ``name`` (searched for in ``path``, a list of
    directories, when given) from the finders of ``sys.meta_path``, as
    ``importlib.util.find_spec`` asks them, without running the module;
    None if no finder knows it.  (``importlib.util``'s import costs every
    emulated process ~0.6 ms.)"""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        spec = None if find is None else find(name, path)
        if spec is not None:
            return spec
    return None


def package_dir() -> str:
    """The installed ``unicorn`` package's directory (ImportError if none)."""
    spec = find_spec("unicorn")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the unicorn package is not installed (pip install unicorn)")
    return list(spec.submodule_search_locations)[0]


def library_path() -> tuple[str | None, list[str]]:
    """(the library's path or None, the directories searched)."""
    names = _LIB_NAMES.get(sys.platform, ("libunicorn.so.2", "libunicorn.so"))
    pkg = package_dir()
    dirs = [d for d in (os.environ.get("LIBUNICORN_PATH"), os.path.join(pkg, "lib"), pkg) if d]
    for d in dirs:
        for n in names:
            path = os.path.join(d, n)
            if os.path.exists(path):
                return path, dirs
    return None, dirs


def _lazy_dlopen() -> tuple[Any, Any] | None:
    """libc's ``dlopen``/``dlerror`` where ``RTLD_LAZY`` can be asked for, else None."""
    if getattr(os, "RTLD_LAZY", None) is None or sys.platform != "linux" \
            or os.environ.get("LD_BIND_NOW"):
        return None
    try:
        libc = ctypes.CDLL(None)
        dlopen, dlerror = libc.dlopen, libc.dlerror
    except (OSError, AttributeError):        # pragma: no cover - static or odd libc
        return None
    dlopen.restype, dlopen.argtypes = ctypes.c_void_p, (ctypes.c_char_p, ctypes.c_int)
    dlerror.restype, dlerror.argtypes = ctypes.c_char_p, ()
    return dlopen, dlerror


def dlopen_flags() -> int:
    """The ``dlopen`` flags libunicorn is opened with (where ``_lazy_dlopen``
    works): ``RTLD_LAZY | RTLD_LOCAL``, plus ``RTLD_DEEPBIND`` unless
    ``LD_PRELOAD`` is set.

    libunicorn exports all of its ~30,000 functions and variables, generic
    QEMU names among them (``cpu_reset``, ``cpu_exit``, ``cpu_class_init``),
    and refers to them through its GOT and PLT.  Without deep binding each
    such reference is looked up in the process's global scope first, so a
    library loaded ``RTLD_GLOBAL`` before it that defines the same name takes
    the call over (the emulator then runs someone else's ``cpu_reset``);
    with it the library's own definitions come first, and the ~17,000
    symbol lookups its relocation makes find their symbol in the first
    object searched (~0.5 ms of the ~4 ms the dynamic linker spends).  A
    preloaded interposer (a sanitizer's or an allocator's ``malloc``) is
    meant to be seen by every library, and ASan refuses ``RTLD_DEEPBIND``:
    with ``LD_PRELOAD`` set the flag is left out."""
    flags = os.RTLD_LAZY | os.RTLD_LOCAL
    deep = getattr(os, "RTLD_DEEPBIND", 0)
    if deep and not os.environ.get("LD_PRELOAD"):
        flags |= deep
    return flags


#: part of a pre-bound copy's name: bumped when :mod:`~elfkit.exec.unicorn_prebind` changes
PREBIND_VERSION = 1
_prebound: dict[tuple[str, int], str] = {}
_prebound_lock = threading.Lock()


def prebound_path(path: str) -> str:
    """The copy of the library at ``path`` whose references to its own
    symbols are bound already (:mod:`~elfkit.exec.unicorn_prebind`: ~2.5 ms
    less of the dynamic linker's time per process), made in elfkit's cache
    directory on first use; ``path`` itself where the copy would not bind
    the same: unless opened with ``RTLD_DEEPBIND`` (no ``LD_PRELOAD``) on an
    x86_64 Linux host, with ``ELFKIT_NO_CACHE`` set, or where it cannot be
    made or trusted (the cache directory or the file not private to this user, see
    :func:`elfkit._support.files.private_dir`; the copy keyed by the
    original's size, modification time and inode, so a reinstalled library
    gets a new one, which replaces the copies of that path made before)."""
    key = (path, dlopen_flags())
    with _prebound_lock:        # (the prefetch thread and the import's open)
        got = _prebound.get(key)
        if got is None:
            got = _prebound[key] = _find_prebound(path)
    return got


def _find_prebound(path: str) -> str:
    if not dlopen_flags() & getattr(os, "RTLD_DEEPBIND", 0) or _lazy_dlopen() is None \
            or os.uname().machine != "x86_64" \
            or os.environ.get("ELFKIT_NO_CACHE", "") not in ("", "0"):
        return path
    from .._support.files import private_dir, write_private
    from .cache import cache_dir
    try:
        st = os.stat(path)
    except OSError:
        return path
    import zlib
    root = cache_dir()
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except (OSError, ValueError):
        return path
    if not private_dir(root):       # (nothing is written, nor loaded, there)
        return path
    prefix = f"libunicorn-{zlib.crc32(os.fsencode(os.path.realpath(path))):08x}-"
    name = f"{prefix}{st.st_size:x}-{st.st_mtime_ns:x}-{st.st_ino:x}-prebound{PREBIND_VERSION}.so"
    copy = os.path.join(root, name)
    if not _trusted(root, copy, st.st_size, private_dir):
        from .unicorn_prebind import prebind  # once per installed library
        try:
            with open(path, "rb") as fh:
                made = prebind(fh.read())
        except OSError:
            return path
        if made is None:
            return path
        write_private(root, name, made[0])
        _drop_stale(root, prefix, name, private_dir)
    return copy if _trusted(root, copy, st.st_size, private_dir) else path


def _drop_stale(root: str, prefix: str, name: str, private_dir: Any) -> None:
    """Remove the copies of the same library path made before ``name`` (the
    library was reinstalled; a process still using one keeps its mapping)."""
    if not private_dir(root):
        return
    try:
        stale = [n for n in os.listdir(root) if n.startswith(prefix) and n != name
                 and n.endswith(".so")]
    except OSError:
        return
    for n in stale:
        try:
            os.unlink(os.path.join(root, n))
        except OSError:
            pass


def _trusted(root: str, copy: str, size: int, private_dir: Any) -> bool:
    """Whether ``copy`` is a regular file of ``size`` bytes, owned by this
    user and writable by nobody else, in a private directory."""
    try:
        st = os.lstat(copy)
    except OSError:
        return False
    return (private_dir(root) and stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o022 and st.st_size == size)


def _open(path: str) -> ctypes.CDLL:
    """``path`` opened with lazy binding where the C library allows it.

    ctypes always adds ``RTLD_NOW``, which makes the dynamic linker bind all
    ~7,800 PLT entries of libunicorn (it exports every function, so each is
    a symbol lookup) before the first call; ``RTLD_LAZY`` binds the few that
    are called on first use, ~1 ms less.  Elsewhere plain ``ctypes.CDLL``."""
    fns = _lazy_dlopen()
    if fns is None:
        return ctypes.CDLL(path)
    dlopen, dlerror = fns
    path = prebound_path(path)
    handle = dlopen(os.fsencode(path), dlopen_flags())
    if not handle:
        msg = dlerror()
        raise OSError(msg.decode("utf-8", "replace") if msg else f"cannot dlopen {path}")
    return ctypes.CDLL(path, handle=handle)


def open_library() -> ctypes.CDLL:
    """libunicorn, opened (again: the dynamic linker hands out the copy
    already loaded); ImportError saying what was tried when it cannot be."""
    path, dirs = library_path()
    if path is None:
        names = _LIB_NAMES.get(sys.platform, ("libunicorn.so.2",))
        raise ImportError(f"cannot load the unicorn library (no {names[0]} in {dirs})")
    try:
        return _open(path)
    except OSError as e:
        raise ImportError(f"cannot load the unicorn library ({path}: {e})") from None


_prefetched: list[threading.Thread] = []


def prefetch() -> None:
    """Start opening libunicorn on a daemon thread (once per process), so
    that the emulated backend's import finds it loaded.  Failures are left
    to that import to report."""
    if _prefetched:
        return
    try:
        path, _dirs = library_path()
        fns = _lazy_dlopen()
    except ImportError:
        return
    if path is None or fns is None:
        return
    dlopen, flags = fns[0], dlopen_flags()
    t = threading.Thread(target=lambda: dlopen(os.fsencode(prebound_path(path)), flags),
                         name="elfkit-unicorn-prefetch", daemon=True)
    _prefetched.append(t)
    t.start()
