"""The translation cache: the compiled Python a bytecode module was translated
into, kept on disk so the next load of the same ``.vmfb`` skips the translator
(like ``__pycache__`` does for ``.py`` files).

An entry is keyed by a hash of the module's bytes (its rodata segments only by
where they lie: the translation never reads their contents), of the Python that
reads it (``sys.implementation.cache_tag``, the marshal format) and of vmrt's own
translator: the path, size and modification time of every source file of
:mod:`vmrt.bytecode` (the translator, :mod:`vmrt.bytecode.translate`, among
them: subpackages count) and :mod:`vmrt.vm`.  Changing the module or vmrt picks
another key; stale entries are simply never read again.

Where: ``$VMRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/vmrt``, else
``~/.cache/vmrt``; ``VMRT_NO_CACHE=1`` turns the cache off (nothing read or
written).  A cache file is only a cache: it is read only from a directory and
file owned by the current user and writable by nobody else; it carries its
key and a checksum of its contents; anything unexpected (truncated, corrupt,
renamed, other Python, wrong shape, a symbolic link, a FIFO or device, a file
over :data:`MAX_ENTRY` bytes) is ignored without waiting or reading it and the module is translated
again.  Failing to write the cache is silent too.  The file format and these
checks are ``elfkit.support.codecache``'s (shared with elfkit's own caches).
"""
from __future__ import annotations

import os
import sys

from elfkit.support import codecache

try:    # the C module behind hashlib.blake2b (hashlib itself costs ~2 ms to import)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python without it
    from hashlib import blake2b

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import CodeType
    from typing import Any

__all__ = ["cache_dir", "cache_key", "load", "source_files", "store"]

_DIGEST = 32
#: the packages whose sources decide what a module is translated into
_PACKAGES = ("bytecode", "vm")
_fingerprint: list[bytes] = []


def cache_dir() -> str | None:
    """The cache directory, or None when the cache is turned off."""
    return codecache.cache_dir("vmrt")


def _vmrt_fingerprint() -> bytes:
    """What identifies this vmrt's translator (computed once per process)."""
    if not _fingerprint:
        h = blake2b(digest_size=_DIGEST)
        h.update(sys.implementation.cache_tag.encode() + b"\0" + sys.version.encode())
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for pkg in _PACKAGES:
            for name, size, mtime in source_files(root, pkg):
                h.update(f"{name}:{size}:{mtime}\0".encode())
        _fingerprint.append(h.digest())
    return _fingerprint[0]


def source_files(root: str, pkg: str) -> list[tuple[str, int, int]]:
    """``(path, size, mtime_ns)`` of every ``.py`` file under ``root/pkg``,
    subpackages included (path relative to ``root``, ``/``-separated), sorted."""
    out: list[tuple[str, int, int]] = []
    with os.scandir(os.path.join(root, pkg)) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.name.endswith(".py") and e.is_file():
            st = e.stat()
            out.append((f"{pkg}/{e.name}", st.st_size, st.st_mtime_ns))
        elif e.is_dir() and os.path.exists(os.path.join(e.path, "__init__.py")):
            out += source_files(root, f"{pkg}/{e.name}")     # a subpackage
    return out


def cache_key(data: bytes, variant: str, data_spans: Sequence[tuple[int, int]] = ()) -> bytes:
    """The key of the translation of module ``data`` (``variant``: which
    translation, e.g. plain or traced).  ``data_spans`` (offset, length) are
    the module's rodata segments: their contents are data the translated code
    reads at run time, never part of a translation, so only where they lie
    counts (an MNIST module's weights are ~95 % of its bytes)."""
    h = blake2b(digest_size=_DIGEST)
    h.update(_vmrt_fingerprint())
    h.update(variant.encode() + b"\0")
    view = memoryview(data)
    pos = 0
    for off, n in sorted(data_spans):
        start, end = max(off, pos), min(off + n, len(view))
        if start >= end:
            continue
        h.update(view[pos:start])
        h.update(f"\0rodata {start}:{end}\0".encode())
        pos = end
    h.update(view[pos:])
    return h.digest()


#: the largest entry read (a translation is Python source and constants, never
#: the module's rodata; anything larger is no entry of ours)
MAX_ENTRY = 256 << 20


def _name(key: bytes) -> str:
    return key.hex() + ".vmtc"


def load(key: bytes, count: int) -> tuple[CodeType, list[Any], list[str]] | None:
    """``(code, constants, sources)`` stored under ``key`` for a module of
    ``count`` functions, or None (no entry, cache off, or an entry that is not
    exactly what :func:`store` writes)."""
    entry = codecache.load(cache_dir(), _name(key), key, MAX_ENTRY)
    return entry if _well_formed(entry, count) else None


def _well_formed(entry: object, count: int) -> bool:
    if not (isinstance(entry, tuple) and len(entry) == 3):
        return False
    code, consts, sources = entry
    return (type(code) is type(_well_formed.__code__) and isinstance(consts, list)
            and isinstance(sources, list) and len(sources) == count
            and all(isinstance(s, str) for s in sources))


def store(key: bytes, code: CodeType, consts: list[Any], sources: list[str]) -> None:
    """Keep a translation under ``key`` (best effort: never raises for I/O or
    for constants marshal cannot write)."""
    codecache.store(cache_dir(), _name(key), key, (code, consts, sources))
