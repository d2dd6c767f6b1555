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
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator

from elfkit.records import DataRecord

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_VALUE = re.compile(r"^(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[.*\]\s*)?$")


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
        m = _VALUE.match(self.value)
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


def _dist_dirs() -> Iterator[tuple[str, str]] | None:
    """(normalised name, metadata directory) of each distribution on the
    path, or None when the path needs importlib.metadata."""
    path_finder = _path_finder()
    if any(f is not path_finder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return None
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
    return iter(found)


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


def entry_points(group: str) -> list[Any]:
    """The entry points of ``group`` of every distribution on the path."""
    dirs = _dist_dirs()
    if dirs is None:
        from importlib.metadata import entry_points as metadata_entry_points
        return list(metadata_entry_points(group=group))
    seen: set[str] = set()
    out: list[Any] = []
    for name, path in dirs:
        if name in seen:
            continue
        seen.add(name)
        try:
            with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        out += _parse(text, group, Distribution(name))
    return out


__all__ = ["Distribution", "EntryPoint", "entry_points"]
