"""Parameter indexes: the parameters of one scope, from files and memory.

``--parameters=[SCOPE=]FILE`` adds a file's parameters to the index of
SCOPE (the empty scope when none is given); several files may share a scope.
Files are mapped read-only (``--parameter_mode=file``, the default: only the
parameters a program loads are read from disk) or read whole into memory
first (``preload``).  The format follows the file name's extension
(``.irpa``, ``.gguf``, ``.safetensors``), as in IREE's tools.

From Python, :class:`ParameterIndex` also holds arrays::

    idx = vmrt.ParameterIndex("model", {"w": np.ones((4, 3), np.float32)})
    vmrt.load("m.vmfb", parameters=[idx, ("opt", "opt.irpa")])
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ...errors import ParameterError, StatusCode
from . import gguf, irpa, safetensors
from .entries import ParameterEntry

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: file extension -> parser, as IREE's tools pick them
FORMATS = {"irpa": irpa.parse, "gguf": gguf.parse, "safetensors": safetensors.parse}
#: ``--parameter_mode`` values (iree-run-module's)
PARAMETER_MODES = ("file", "preload")


def map_file(path: str, mode: str = "file") -> Any:
    """The bytes of ``path`` as a read-only memoryview: mapped (``file``) or
    read into memory (``preload``)."""
    if mode not in PARAMETER_MODES:
        raise ParameterError(f"unrecognized --parameter_mode= value '{mode}' (expected one of "
                             f"{', '.join(PARAMETER_MODES)})")
    import mmap  # only when a program has parameters (start-up time)
    import stat
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):   # a FIFO would block, a device never end
            raise ParameterError(f"parameter file '{path}' is not a regular file")
        with open(path, "rb") as f:
            if mode == "preload":
                try:
                    return memoryview(f.read()).toreadonly()
                except MemoryError:
                    raise ParameterError(f"parameter file '{path}' does not fit in memory "
                                         "(--parameter_mode=file maps it instead)",
                                         StatusCode.RESOURCE_EXHAUSTED) from None
            if os.fstat(f.fileno()).st_size == 0:
                return memoryview(b"")
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except FileNotFoundError:
        raise ParameterError(f"failed to open parameter file '{path}' (no such file)",
                             StatusCode.NOT_FOUND) from None
    except OSError as e:
        raise ParameterError(f"failed to open parameter file '{path}': {e.strerror or e}",
                             StatusCode.NOT_FOUND) from None


def parse_file(path: str, mode: str = "file") -> list[ParameterEntry]:
    """The entries of the file ``path`` (its format from its extension,
    checked before the file is opened), mapped or read as ``mode`` says."""
    name = os.path.basename(path)
    ext = name.rpartition(".")[2].lower() if "." in name else ""
    parser = FORMATS.get(ext)
    if parser is None:
        raise ParameterError(f"unsupported parameter file format `{ext}` ('{path}'); the "
                             "extension must be one of .irpa, .gguf, .safetensors",
                             StatusCode.UNIMPLEMENTED)
    return parser(map_file(path, mode), path)


def _array_bytes(key: str, value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        view = memoryview(value)
    else:
        import numpy as np  # only for arrays given as parameters
        arr = np.asarray(value)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        flat: Any = arr.reshape(-1).view(np.uint8)
        view = memoryview(flat) if arr.size else memoryview(b"")
    if not view.c_contiguous:
        raise ParameterError(f"parameter `{key}` is not contiguous memory")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


class ParameterIndex:
    """The parameters of one ``scope``: ``key -> ParameterEntry``.  A key
    added twice keeps its first entry (the first file given wins, as in
    IREE's tools)."""

    def __init__(self, scope: str = "", arrays: Mapping[str, Any] | None = None):
        self.scope = scope
        self.entries: dict[str, ParameterEntry] = {}
        #: the files whose parameters this index holds
        self.files: list[str] = []
        for key, value in (arrays or {}).items():
            self.add_array(key, value)

    def add(self, entry: ParameterEntry) -> None:
        self.entries.setdefault(entry.key, entry)

    def add_array(self, key: str, value: Any) -> None:
        """A parameter over the memory of ``value`` (a numpy array or any
        contiguous bytes-like object; no copy: a writable array is what a
        ``scatter`` into the parameter changes)."""
        data = _array_bytes(key, value)
        self.add(ParameterEntry(key, len(data), data=data))

    def add_splat(self, key: str, length: int, pattern: bytes) -> None:
        """A parameter of ``length`` bytes repeating ``pattern`` (1-16 bytes)."""
        if len(pattern) not in (1, 2, 4, 8, 16) or length < 0:
            raise ParameterError(f"splat parameter `{key}`: pattern of {len(pattern)} bytes "
                                 "must be 1, 2, 4, 8 or 16 bytes and the length >= 0")
        self.add(ParameterEntry(key, length, pattern=bytes(pattern)))

    def load(self, path: str | os.PathLike[str], mode: str = "file") -> ParameterIndex:
        """Add the parameters of a ``.irpa``, ``.gguf`` or ``.safetensors`` file."""
        path = os.fspath(path)
        try:
            for entry in parse_file(path, mode):
                self.add(entry)
        except ParameterError as e:
            e.annotate(f"loading parameter file '{path}'")
            raise
        self.files.append(path)
        return self

    def lookup(self, key: str) -> ParameterEntry:
        entry = self.entries.get(key)
        if entry is None:
            where = f" (files: {', '.join(self.files)})" if self.files else ""
            raise ParameterError(f"no parameter found in scope '{self.scope}' with key "
                                 f"'{key}'{where}", StatusCode.NOT_FOUND)
        return entry

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def __repr__(self) -> str:
        return f"<ParameterIndex scope={self.scope!r} {len(self.entries)} entries>"


def _scope_path(text: str) -> tuple[str, str]:
    """``[SCOPE=]FILE`` (a flag value) as (scope, file)."""
    scope, eq, path = text.partition("=")
    return (scope, path) if eq else ("", text)


def build_indexes(specs: Iterable[Any], mode: str = "file") -> list[ParameterIndex]:
    """One index per scope, in first-seen order, from ``specs``: flag values
    ``[SCOPE=]FILE``, path objects (the empty scope), ``(scope, path)``
    pairs, :class:`ParameterIndex` objects, or mappings ``scope -> path``,
    ``scope -> [paths]`` or ``scope -> {key: array}``."""
    by_scope: dict[str, ParameterIndex] = {}

    def index(scope: str) -> ParameterIndex:
        if not isinstance(scope, str):
            raise ParameterError(f"a parameter scope must be a string, got {scope!r}")
        return by_scope.setdefault(scope, ParameterIndex(scope))

    def add(scope: str, value: Any) -> None:
        if isinstance(value, (str, os.PathLike)):
            index(scope).load(value, mode)
        elif isinstance(value, Mapping):
            for key, arr in value.items():
                index(scope).add_array(key, arr)
        elif isinstance(value, (list, tuple)):
            for v in value:
                add(scope, v)
        else:
            raise ParameterError(f"cannot use a {type(value).__name__} as parameters of scope "
                                 f"'{scope}' (expected a file path or a mapping key -> array)")

    for spec in specs:
        if isinstance(spec, ParameterIndex):
            if spec.scope in by_scope:
                for entry in spec.entries.values():
                    by_scope[spec.scope].add(entry)
            else:
                by_scope[spec.scope] = spec
        elif isinstance(spec, str):
            add(*_scope_path(spec))
        elif isinstance(spec, os.PathLike):
            add("", spec)
        elif isinstance(spec, tuple) and len(spec) == 2:
            add(spec[0], spec[1])
        elif isinstance(spec, Mapping):
            for scope, value in spec.items():
                add(scope, value)
        else:
            raise ParameterError(f"cannot use a {type(spec).__name__} as parameters (expected "
                                 "a path, a (scope, path) pair, a mapping or a ParameterIndex)")
    return list(by_scope.values())


__all__ = ["FORMATS", "PARAMETER_MODES", "ParameterIndex", "build_indexes", "map_file",
           "parse_file"]
