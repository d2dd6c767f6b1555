"""The entry points of one group, read without importing
:mod:`importlib.metadata` (whose import alone costs more than the rest of a
host-only ``vmrt run``'s start-up).

Distributions are found as :mod:`importlib.metadata` finds them on a plain
``sys.path``: the ``*.dist-info`` and ``*.egg-info`` directories of each
directory on the path, in path order, the first distribution of each
(normalised) name shadowing later ones; ``entry_points.txt`` is read the same
way (``[group]`` sections of ``name = module:attr [extras]`` lines, ``#``
comments).  When the path holds anything this does not read (a zip
file or egg) or another finder publishes distributions, the answer comes from
:mod:`importlib.metadata` itself.

The answer is kept in vmrt's cache directory (``entry-points-<checksum>.bin``, one
file per path and group, so that commands run with different paths do not evict
each other's; next to the translation cache, private to the user, off with
``VMRT_NO_CACHE=1``) with the
modification time of each directory on the path and of each ``entry_points.txt``
read: while none of them changes (installing or removing a distribution changes
its directory's), the next start reads that file instead of listing every
directory on the path.

Within one process the answer is also remembered (a program loaded again and
again, as a server or a bench does, asks for the same group each time): it
is used again while the directories on the path and the ``entry_points.txt``
files of the distributions that have entry points in the group keep their
modification times, a dozen ``stat`` calls instead of one per distribution.
So a distribution installed or removed, or an entry point of the group
edited, is seen at once; an ``entry_points.txt`` with nothing in the group
edited in place to add some is seen by the next process (as Python's own
import system caches directory listings within a process).
"""
from __future__ import annotations

import os
import re
import sys
import time

from elfkit.errors import ElfkitError
from elfkit.support import DataRecord, codecache, open_regular

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: an entry point's value (compiled when first used: start-up time)
_VALUE = r"^(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[.*\]\s*)?$"


class Distribution(DataRecord, frozen=True):
    name: str


class EntryPoint(DataRecord, frozen=True):
    """One entry point: ``name = value`` of ``dist``'s ``group`` section."""
    name: str
    value: str
    group: str
    dist: Distribution

    def load(self) -> Any:
        """The object the value names (``module`` or ``module:attr.attr``)."""
        m = re.match(_VALUE, self.value)
        if m is None:
            raise ValueError(f"malformed entry point value {self.value!r}")
        name = m.group("module")
        __import__(name)            # importlib.import_module without importing importlib
        obj: Any = sys.modules[name]
        for part in (m.group("attr") or "").split("."):
            if part:
                obj = getattr(obj, part)
        return obj


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _path_finder() -> Any:
    """importlib.machinery.PathFinder, without importing importlib (and the
    warnings module it imports): the interpreter's import system already holds it."""
    finder = getattr(sys.modules.get("_frozen_importlib_external"), "PathFinder", None)
    if finder is None:        # pragma: no cover - an interpreter without the frozen bootstrap
        from importlib.machinery import PathFinder as finder
    return finder


def _only_path_finder() -> bool:
    """Whether distributions are found only on the path (no other finder has any)."""
    path_finder = _path_finder()
    return not any(f is not path_finder and hasattr(f, "find_distributions")
                   for f in sys.meta_path)


def _dist_dirs() -> list[tuple[str, str]] | None:
    """(normalised name, metadata directory) of each distribution on the
    path, or None when the path needs importlib.metadata."""
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        where = entry or "."
        if not os.path.isdir(where):
            if os.path.exists(where):       # a zip file or egg on the path
                return None
            continue
        try:
            names = os.listdir(where)
        except OSError:
            continue
        for kind in ("dist-info", "egg-info"):     # importlib.metadata's order
            for child in names:
                stem, dot, ext = child.rpartition(".")
                if dot and ext == kind:
                    found.append((_normalise(stem.partition("-")[0]),
                                  os.path.join(where, child)))
    return found


def _parse(text: str, group: str, dist: Distribution) -> list[EntryPoint]:
    out: list[EntryPoint] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section == group:
            name, eq, value = line.partition("=")
            if eq:
                out.append(EntryPoint(name.strip(), value.strip(), group, dist))
    return out


def _cache_file(key: bytes) -> str:
    """The cache file of one key (one per path and group: commands run with
    different paths or groups do not evict each other's answer)."""
    return f"entry-points-{codecache.checksum(key):023x}.bin"

#: a file changed this recently may change again within the same timestamp
#: tick; such an answer is not kept (git's "racy" rule)
_RACY_NS = 2_000_000_000


def entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` of every distribution on the path."""
    if not _only_path_finder():
        return _from_metadata(group)
    try:
        # the working directory matters only through relative entries ('' for -c, -m)
        relative = any(not os.path.isabs(entry) for entry in sys.path)
        key: tuple[Any, ...] | None = (os.getcwd() if relative else "", tuple(sys.path),
                                       group)
    except OSError:             # the working directory is gone: nothing to key on
        key = None
    rows = _remembered(key) if key is not None else None
    if rows is None:
        kept = _cached(key) if key is not None else None
        if kept is None:
            dirs = _dist_dirs()
            if dirs is None:
                return _from_metadata(group)
            rows, read = _scan(dirs, group)
            stamps = _stamps([__file__, *(entry or "." for entry in sys.path), *read])
            if key is not None:
                _store(key, stamps, rows)
        else:
            stamps, rows = kept
        if key is not None:
            _remember(key, stamps, rows)
    return [EntryPoint(name, value, group, Distribution(dist)) for name, value, dist in rows]


def _from_metadata(group: str) -> list[Any]:
    from importlib.metadata import entry_points as metadata_entry_points
    return list(metadata_entry_points(group=group))


def _scan(dirs: list[tuple[str, str]], group: str
          ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """((name, value, distribution) of each entry point of ``group``, the
    ``entry_points.txt`` paths looked at)."""
    seen: set[str] = set()
    rows: list[tuple[str, str, str]] = []
    read: list[str] = []
    for name, path in dirs:
        if name in seen:
            continue
        seen.add(name)
        read.append(os.path.join(path, "entry_points.txt"))
        text = _read_text(read[-1])
        if text is None:
            continue
        rows += [(ep.name, ep.value, name) for ep in _parse(text, group, Distribution(name))]
    return rows, read


#: the largest entry_points.txt read (anything larger is no metadata file)
_MAX_TEXT = 16 << 20


def _read_text(path: str) -> str | None:
    """The text of a metadata file, or None when it is missing, is not a
    regular file (a FIFO there would never end) or is absurdly large."""
    try:
        fd, size = open_regular(path, "entry_points.txt")
    except (OSError, ElfkitError):
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(_MAX_TEXT + 1) if size <= _MAX_TEXT else None
    if data is None or len(data) > _MAX_TEXT:
        return None
    return data.decode("utf-8", errors="replace")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _key_bytes(key: tuple[Any, ...]) -> bytes:
    return repr(key).encode()


#: this process's answers: key -> (the stamps that decide, rows, whether those
#: stamps are still all of them: narrowed to the ones that decide on first reuse)
_MEMO: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[tuple[str, str, str]], bool]] = {}


def _remembered(key: tuple[Any, ...]) -> list[tuple[str, str, str]] | None:
    """This process's answer for ``key`` while what decides it is unchanged."""
    memo = _MEMO.get(key)
    if memo is None:
        return None
    stamps, rows, narrowed = memo
    if not narrowed:
        stamps = _deciding(stamps, rows)
        _MEMO[key] = (stamps, rows, True)
    for path, stamp in stamps:
        if _stamp(path) != stamp:
            del _MEMO[key]
            return None
    return rows


def _deciding(stamps: tuple[Any, ...], rows: list[tuple[str, str, str]]) -> tuple[Any, ...]:
    """The stamps that decide ``rows`` within a process: the path's directories
    (and this file) and the ``entry_points.txt`` of each distribution with rows."""
    with_rows = {dist for _name, _value, dist in rows}
    return tuple((p, s) for p, s in stamps
                 if not p.endswith(_TEXT) or _dist_name(p) in with_rows)


def _remember(key: tuple[Any, ...], stamps: tuple[Any, ...],
              rows: list[tuple[str, str, str]]) -> None:
    """Keep ``rows`` for this process, decided by the stamps :func:`_deciding`
    keeps; not when any of them is too recent (racy).  A command asks once:
    the stamps are narrowed (a distribution name parsed per ``entry_points.txt``,
    ~150 of them in a full site-packages) only when the answer is used again,
    unless one of them is racy (then now, to decide)."""
    if not _racy(stamps):
        _MEMO[key] = (stamps, rows, False)
        return
    decide = _deciding(stamps, rows)
    if not _racy(decide):
        _MEMO[key] = (decide, rows, True)


_TEXT = os.sep + "entry_points.txt"


def _dist_name(text_path: str) -> str:
    """The normalised distribution name of an ``entry_points.txt`` path
    (:func:`_normalise` of the name part of its directory's stem, without a
    regular expression: ~150 of these narrow a process's answer)."""
    stem = text_path[:-len(_TEXT)].rpartition(os.sep)[2].rpartition(".")[0]
    name = stem.partition("-")[0].lower().replace(".", "_")
    while "__" in name:
        name = name.replace("__", "_")
    return name


def _stamps(paths: list[str]) -> tuple[tuple[str, tuple[int, int] | None], ...]:
    return tuple((p, _stamp(p)) for p in paths)


def _racy(stamps: tuple[Any, ...]) -> bool:
    recent = time.time_ns() - _RACY_NS
    return any(s is not None and s[0] >= recent for _p, s in stamps)


def _cached(key: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[tuple[str, str, str]]] | None:
    """(stamps, rows) kept for ``key`` when nothing they were read from has changed."""
    kb = _key_bytes(key)
    kept = codecache.load(codecache.cache_dir("vmrt"), _cache_file(kb), kb)
    if not (isinstance(kept, tuple) and len(kept) == 2):
        return None
    stamps, rows = kept
    if not isinstance(stamps, tuple) or not isinstance(rows, list) or \
            not all(isinstance(r, tuple) and len(r) == 3 for r in rows):
        return None
    for path, stamp in stamps:
        if _stamp(path) != stamp:
            return None
    return stamps, rows


def _store(key: tuple[Any, ...], stamps: tuple[Any, ...],
           rows: list[tuple[str, str, str]]) -> None:
    where = codecache.cache_dir("vmrt")
    if where is None or _racy(stamps):
        return
    kb = _key_bytes(key)
    codecache.store(where, _cache_file(kb), kb, (stamps, rows))


__all__ = ["Distribution", "EntryPoint", "entry_points"]
