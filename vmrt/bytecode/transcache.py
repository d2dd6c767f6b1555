"""The module cache: what loading a ``.vmfb`` derives from its bytes -- its
parsed and checked definition and the Python its functions were translated
into (each function is translated on its first call: the entry holds the
functions translated so far) -- kept on disk so the next load of the same
module neither parses, verifies nor translates it again (like
``__pycache__`` does for ``.py`` files).  Beside the entry, under the same
translation's id, the compiled code of the functions compiled so far (a
later load compiles none of them again) and the functions' sources (read
only when a function whose code is not kept is called: a load whose code
is all kept reads the parsed module, the constants and the code).

An entry is keyed by a hash of the module's bytes (the external rodata
segments after the FlatBuffer only by the file's length: neither the parser
nor the translation reads their contents), of the Python that reads it
(``sys.implementation.cache_tag``, the marshal format) and of vmrt's own
loader: the path, size and modification time of every source file of
:mod:`vmrt.bytecode` (the translator, :mod:`vmrt.bytecode.translate`, among
them: subpackages count) and :mod:`vmrt.vm`.  Changing the module or vmrt picks
another key; stale entries are simply never read again.  An entry exists only
for a module that loaded without error: a malformed module is parsed (and
refused) every time.

Where: ``$VMRT_CACHE_DIR``, else ``$XDG_CACHE_HOME/vmrt``, else
``~/.cache/vmrt``; ``VMRT_NO_CACHE=1`` turns the cache off (nothing read or
written); the directory is kept under ``$VMRT_CACHE_MAX_BYTES`` (least
recently used entries deleted).  A cache file is only a cache: it is read only from a directory and
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
    from types import CodeType
    from typing import Any

__all__ = ["cache_dir", "cache_key", "load", "load_code", "load_sources", "source_files",
           "store", "store_code"]

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


def cache_key(data: bytes, variant: str, end: int | None = None) -> bytes:
    """The key of module ``data`` (``variant``: which translation, e.g. plain
    or traced).  ``end``: where the module's FlatBuffer ends (see
    :func:`vmrt.bytecode.format.flatbuffer_end`): the bytes after it are the
    external rodata segments, data the translated code reads at run time and
    the parser only bounds-checks, so only the file's length counts of them
    (a program's dispatch libraries and weights are most of its bytes)."""
    h = blake2b(digest_size=_DIGEST)
    h.update(_vmrt_fingerprint())
    h.update(f"{variant}\0{len(data)}\0".encode())
    h.update(memoryview(data)[:len(data) if end is None else end])
    return h.digest()


#: the largest entry read (a translation is Python source and constants, never
#: the module's rodata; anything larger is no entry of ours)
MAX_ENTRY = 256 << 20


def _name(key: bytes, part: str = "") -> str:
    return key.hex() + part + ".vmtc"


def load(key: bytes) -> tuple[tuple[Any, ...], list[Any], bytes] | None:
    """``(module record, constants, translation id)`` stored under ``key``
    (see :func:`store`), or None (no entry, cache off, or an entry that is
    not exactly what :func:`store` writes).  The functions' sources are
    read apart, when one is needed (:func:`load_sources`)."""
    entry = codecache.load(cache_dir(), _name(key), key, MAX_ENTRY)
    return entry if _well_formed(entry) else None


def _well_formed(entry: object) -> bool:
    if not (isinstance(entry, tuple) and len(entry) == 3):
        return False
    record, consts, tid = entry
    return (isinstance(record, tuple) and len(record) == RECORD_FIELDS
            and isinstance(consts, list) and isinstance(record[11], tuple)
            and isinstance(tid, bytes) and len(tid) > 0)


#: the length of :func:`vmrt.bytecode.format.module_record`'s tuples (its 12th
#: item is the function table)
RECORD_FIELDS = 15


def store(key: bytes, record: tuple[Any, ...], consts: list[Any], sources: list[str | None],
          where: str | None) -> bytes:
    """Keep what loading a module derives from its bytes under ``key`` in
    cache directory ``where``: its parsed definition (``record``) and its
    translation: the constant table, and apart (beside the entry, under
    the translation's id: a load whose functions' code is kept reads none
    of it) each function's Python source, None for a function not
    translated yet.  Returns the translation's id (fresh each time:
    compiled code and sources are kept under it, so code compiled from one
    translation never meets another's constants).  Best effort: never
    raises for I/O or for constants marshal cannot write."""
    tid = os.urandom(16)
    codecache.store(where, _name(key, "-src"), _part_key(key, "src", tid), list(sources))
    codecache.store(where, _name(key), key, (record, consts, tid))
    return tid


def load_sources(key: bytes, tid: bytes, count: int) -> list[str | None] | None:
    """The sources of the ``count`` functions of translation ``tid`` of the
    module stored under ``key`` (:func:`store`), or None (not kept, or not
    exactly that)."""
    sources = codecache.load(cache_dir(), _name(key, "-src"), _part_key(key, "src", tid),
                             MAX_ENTRY)
    if not (isinstance(sources, list) and len(sources) == count
            and all(s is None or type(s) is str for s in sources)):
        return None
    return sources


def _part_key(key: bytes, part: str, tid: bytes) -> bytes:
    return key + b"\0" + part.encode() + b"\0" + tid


def load_code(key: bytes, tid: bytes) -> dict[int, CodeType]:
    """The compiled code of the functions of translation ``tid`` of the module
    stored under ``key`` (:func:`store_code`): function ordinal -> code
    (empty: none kept)."""
    codes = codecache.load(cache_dir(), _name(key, "-code"), _part_key(key, "code", tid), MAX_ENTRY)
    if not isinstance(codes, dict):
        return {}
    code_type = type(_well_formed.__code__)
    return {k: c for k, c in codes.items() if type(k) is int and type(c) is code_type}


def store_code(key: bytes, tid: bytes, codes: dict[int, CodeType], where: str | None) -> None:
    """Keep the compiled code of the functions of translation ``tid``
    compiled so far in cache directory ``where`` (functions are compiled on
    first call: a program's later loads read the code of the functions it
    called and compile none of them again)."""
    codecache.store(where, _name(key, "-code"), _part_key(key, "code", tid), codes)
