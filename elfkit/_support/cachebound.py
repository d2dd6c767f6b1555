"""A size bound for the on-disk caches (elfkit's and vmrt's directories).

Each cache directory is kept under ``$ELFKIT_CACHE_MAX_BYTES`` (elfkit's,
by default :data:`DEFAULT_MAX`) or ``$VMRT_CACHE_MAX_BYTES`` (vmrt's, by
default :data:`DEFAULT_MAX_VMRT`) bytes of disk (:func:`usage`: a 1 KB
entry takes a 4 KB block): when it is larger, the least recently used entries (oldest modification
time; a read refreshes it, see :func:`touch`) are deleted until it is under
three quarters of the bound.

Cheap: a read never looks at the directory.  A process scans a directory
once, at its first write there (:func:`written`), and again only when its
own writes since add up past the bound.  Safe with other processes doing
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

__all__ = ["DEFAULT_MAX", "DEFAULT_MAX_VMRT", "ENTRY", "max_bytes", "prune", "touch", "usage",
           "written"]

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
    if since is None or _size.get(directory, 0) + since + nbytes > limit:
        _since[directory] = 0
        _size[directory] = prune(directory, limit)
    else:
        _since[directory] = since + nbytes


def prune(directory: str, max_bytes: int) -> int:
    """Delete the least recently used entries of ``directory`` when its
    entries take more than ``max_bytes``, down to three quarters of it;
    returns the bytes left."""
    if not private_dir(directory):
        return 0
    uid = os.getuid()
    found: list[tuple[float, int, str]] = []
    try:
        with os.scandir(directory) as it:
            for entry in it:
                if not re.fullmatch(ENTRY, entry.name):
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
