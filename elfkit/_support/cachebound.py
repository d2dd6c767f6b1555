"""A size bound for the on-disk caches (elfkit's and vmrt's directories).

Each cache directory is kept under ``$ELFKIT_CACHE_MAX_BYTES`` (elfkit's,
by default :data:`DEFAULT_MAX`) or ``$VMRT_CACHE_MAX_BYTES`` (vmrt's, by
default :data:`DEFAULT_MAX_VMRT`) bytes of disk (:func:`usage`: a 1 KB
entry takes a 4 KB block): when it is larger, the least recently used entries (oldest modification
time; a read refreshes it, see :func:`touch`) are deleted until it is under
three quarters of the bound.

Cheap: a read never looks at the directory, and a write seldom does.  A
scan (``prune``: a stat of every entry, ~20 ms for 6,000 of them) leaves a
note in the directory (:data:`NOTE`: the bytes it found and when), to which
every write appends its size; a process's first write there reads the note
instead of scanning when it is younger than :data:`NOTE_TRUST` and says there
is room (the total it tells counts every write since the scan, a rewritten
entry twice: never less than the truth but for a write racing a scan's
rewrite of the note).  A process scans again when its own writes since add
up past the bound, or the note is missing, old or damaged.  Safe with other processes doing
the same: only regular files of the current user whose names are cache
entries are deleted (never a temporary file being written aside and
renamed into place, ``*.tmp``, nor anything else someone keeps there), in a
directory that is private (:func:`elfkit._support.files.private_dir`); a
file that vanishes meanwhile is skipped; a deleted entry is only a miss.
"""
from __future__ import annotations

import os
import re
import stat as _stat
import time

from .files import private_dir

__all__ = ["DEFAULT_MAX", "DEFAULT_MAX_VMRT", "ENTRY", "NOTE", "max_bytes", "prune", "touch",
           "usage", "written"]

#: the default bound of elfkit's cache directory, in bytes (its entries are
#: small: code objects, DWARF site lists, helper libraries)
DEFAULT_MAX = 32 << 20
#: the default bound of vmrt's (translations of whole modules, up to MBs each)
DEFAULT_MAX_VMRT = 256 << 20
#: the names of cache entries (what elfkit and vmrt write; the temporary
#: files they rename into place end in ``.tmp`` and never match); a pattern
#: compiled when first used (a prune), not at every start-up
ENTRY = (r"[0-9a-f]+(?:-code|-src)?\.vmtc|(?:code|records|dwarf-sites|dwarf-moves|help|output"
         r"|entry-points|jit-debug|blockhook)(?:-[\w.-]*)?\.(?:bin|so|sum)")
#: a read refreshes an entry's time only when it is older than this (seconds)
TOUCH_AFTER = 60.0
#: the note a scan leaves in the directory (never an entry: never pruned):
#: ``"<bytes> <time>\n"`` then one ``"<bytes>\n"`` line per write since
NOTE = "bound-note"
#: a note older than this (seconds), or longer than NOTE_MAX bytes, is
#: replaced by a scan (what it missed, a write racing a scan, stays bounded)
NOTE_TRUST = 3600.0
NOTE_MAX = 64 << 10

#: per directory: bytes written by this process since it last scanned it
_since: dict[str, int] = {}
#: per directory: its size at the last scan
_size: dict[str, int] = {}


def touch(fd: int, mtime: float) -> None:
    """A read of the entry open as ``fd`` (modified at ``mtime``): mark it
    used now (at most once a minute; best effort)."""
    now = time.time()
    if now - mtime > TOUCH_AFTER:
        try:
            os.utime(fd)
        except (OSError, NotImplementedError):
            pass


def max_bytes(var: str, default: int = DEFAULT_MAX) -> int:
    """The bound ``$var`` sets (a whole number of bytes), else ``default``."""
    try:
        value = int(os.environ.get(var, "").replace("_", ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def usage(st: os.stat_result) -> int:
    """The disk a file takes (its blocks; its length where blocks are not told)."""
    blocks = getattr(st, "st_blocks", None)
    return blocks * 512 if blocks is not None else st.st_size


def written(directory: str, nbytes: int, limit: int) -> None:
    """``nbytes`` were just written to ``directory``, bounded to ``limit``
    bytes: prune it at this process's first write there, and when the
    writes since the last scan could have pushed it past the bound."""
    nbytes = (nbytes + 4095) & -4096        # (what it takes on disk, in 4 KB blocks)
    since = _since.get(directory)
    if since is None:
        noted = _noted(directory)
        if noted is not None and noted + nbytes <= limit:
            _size[directory], _since[directory] = noted, nbytes
            _note_write(directory, nbytes)
            return
    elif _size.get(directory, 0) + since + nbytes <= limit:
        _since[directory] = since + nbytes
        _note_write(directory, nbytes)
        return
    _since[directory] = 0
    _size[directory] = left = prune(directory, limit)
    _note_scan(directory, left)


def _noted(directory: str) -> int | None:
    """The bytes the directory's note tells (its scan's, plus every write
    since), or None when it has none this process can trust."""
    try:
        fd = os.open(os.path.join(directory, NOTE), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or \
                st.st_size > NOTE_MAX or not private_dir(directory):
            return None
        lines = os.read(fd, NOTE_MAX + 1).split(b"\n")
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        first = lines[0].split(b" ")
        total, when = int(first[0]), float(first[1])
        total += sum(int(n) for n in lines[1:-1])
    except (ValueError, IndexError):
        return None
    if lines[-1] or len(first) != 2 or not 0 <= time.time() - when <= NOTE_TRUST:
        return None                     # (a torn last line, a future or old scan)
    return total


def _note_write(directory: str, nbytes: int) -> None:
    """Add a write of ``nbytes`` to the directory's note (best effort: a
    missing note stays missing, the next process scans)."""
    try:
        fd = os.open(os.path.join(directory, NOTE), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW
                     | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if _stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, b"%d\n" % nbytes)
    except OSError:
        pass
    finally:
        os.close(fd)


def _note_scan(directory: str, left: int) -> None:
    """Replace the directory's note by a scan's ``left`` bytes, now."""
    if not private_dir(directory):
        return
    path = os.path.join(directory, NOTE)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, b"%d %r\n" % (left, time.time()))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def prune(directory: str, max_bytes: int) -> int:
    """Delete the least recently used entries of ``directory`` when its
    entries take more than ``max_bytes``, down to three quarters of it;
    returns the bytes left."""
    if not private_dir(directory):
        return 0
    uid = os.getuid()
    found: list[tuple[float, int, str]] = []
    is_entry = re.compile(ENTRY).fullmatch
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if not is_entry(entry.name):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:                 # gone meanwhile
                    continue
                if _stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                    found.append((st.st_mtime, usage(st), entry.path))
    except OSError:
        return 0
    total = sum(size for _t, size, _p in found)
    if total <= max_bytes:
        return total
    target = max_bytes * 3 // 4
    found.sort()
    for _mtime, size, path in found:
        if total <= target:
            break
        try:
            os.unlink(path)
        except FileNotFoundError:               # another process pruned it
            pass
        except OSError:
            continue
        total -= size
    return total
