"""One small on-disk cache for elfkit and vmrt: values :mod:`marshal` can
write (code objects, tuples, lists, dicts, strings, numbers) kept in private
files, each under a key that is checked before the value is used.

``store(where, name, key, value)`` writes file ``name`` of directory
``where``; ``load(where, name, key)`` gives the value back, or None when the
file is missing or is anything but what ``store`` wrote for that exact key on
this Python.  ``compile_cached(source, filename)`` is :func:`compile` whose
code objects are kept that way (elfkit's generated callers use it).

A file holds a magic number, the key's and the payload's lengths, a checksum
of the payload, the key itself (this Python's identity -- cache tag, version,
marshal format -- followed by the caller's key bytes) and the marshalled
value.  A file is only a cache: it is read only from a directory and file
owned by the current user and writable by nobody else
(:func:`elfkit._support.files.read_private`), and a key that differs by one byte, a
length or checksum that does not match, or a payload marshal cannot read
makes it ignored, as if missing; writing is best effort and never raises, and
nothing is written where it would not be read back (a directory that is not private).

The checksum is zlib's CRC-32 of the payload (computed in C in one pass: a
2 MB translation is checked in ~1-2 ms, where reading the payload as one big
number modulo two primes took ~20 ms).  It guards against damage -- a
changed byte always changes it, and so do two changed bits this close
together -- while trust rests on the file being private, as it does for
``__pycache__``.

Where: :func:`cache_dir` ``("elfkit")`` is ``$ELFKIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/elfkit``, else ``~/.cache/elfkit``, and None (nothing read
or written) when ``ELFKIT_NO_CACHE`` is set to anything but ``0``; likewise
``("vmrt")`` with ``VMRT_CACHE_DIR`` and ``VMRT_NO_CACHE``.  Each directory
is kept under a size bound (least recently used entries deleted, see
:mod:`elfkit._support.cachebound`): a read marks an entry used, a write
may prune.
"""
from __future__ import annotations

import marshal
import os
import sys
from zlib import crc32

from . import cachebound
from .files import CACHE_MAX_SIZE, read_private, user_cache_dir, write_private

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

__all__ = ["cache_dir", "checksum", "code_entry", "compile_cached", "load", "note_written",
           "store"]

_MAGIC = b"ELFKITC2"
_HEAD = len(_MAGIC) + 4 + 8 + 12         # magic, key length, payload length, checksum
#: what a value marshalled by this Python can be read back by
_PYTHON = (f"{sys.implementation.cache_tag}\0{sys.version}\0marshal {marshal.version}\0"
           f"{sys.hash_info.modulus}\0").encode()


def cache_dir(tool: str) -> str | None:
    """``tool``'s cache directory (``"elfkit"`` or ``"vmrt"``), or None when
    ``<TOOL>_NO_CACHE`` turns its cache off."""
    upper = tool.upper()
    if os.environ.get(f"{upper}_NO_CACHE", "") not in ("", "0"):
        return None
    return user_cache_dir(f"{upper}_CACHE_DIR", tool)


def checksum(data: bytes | memoryview) -> int:
    """A checksum of ``data``: its CRC-32 (its length is kept beside it)."""
    return crc32(data)


def load(where: str | None, name: str, key: bytes, max_size: int = CACHE_MAX_SIZE) -> Any:
    """The value :func:`store` kept as ``name`` in ``where`` under ``key``, or
    None (cache off, no such file, or a file that is not exactly that: also
    a symbolic link, a FIFO, a device or a file over ``max_size`` bytes,
    none of which is waited for or read)."""
    if where is None:
        return None
    blob = read_private(where, name, max_size, cachebound.touch)
    if blob is None or len(blob) < _HEAD or blob[:len(_MAGIC)] != _MAGIC:
        return None
    view = memoryview(blob)
    pos = len(_MAGIC)
    key_len = int.from_bytes(view[pos:pos + 4], "little")
    payload_len = int.from_bytes(view[pos + 4:pos + 12], "little")
    if len(blob) != _HEAD + key_len + payload_len or key_len != len(_PYTHON) + len(key):
        return None
    if view[_HEAD:_HEAD + key_len] != _PYTHON + key:
        return None
    payload = view[_HEAD + key_len:]
    if int.from_bytes(view[pos + 12:_HEAD], "little") != checksum(payload):
        return None
    try:
        return marshal.loads(payload)
    except (ValueError, EOFError, TypeError):      # pragma: no cover - checksum passed
        return None


def store(where: str | None, name: str, key: bytes, value: Any) -> None:
    """Keep ``value`` as ``name`` in ``where`` under ``key`` (best effort:
    nothing happens when ``where`` is None, for a value marshal cannot write,
    or when the file cannot be written)."""
    if where is None:
        return
    try:
        payload = marshal.dumps(value)
    except ValueError:
        return
    full_key = _PYTHON + key
    head = (_MAGIC + len(full_key).to_bytes(4, "little") + len(payload).to_bytes(8, "little")
            + checksum(payload).to_bytes(12, "little"))
    data = head + full_key + payload
    if write_private(where, name, data):
        note_written(where, len(data))


def note_written(where: str, nbytes: int) -> None:
    """``nbytes`` were written to cache directory ``where``: keep it under its
    bound (``$VMRT_CACHE_MAX_BYTES`` for vmrt's, ``$ELFKIT_CACHE_MAX_BYTES``
    for elfkit's; see :mod:`elfkit._support.cachebound`)."""
    if where == cache_dir("vmrt"):
        limit = cachebound.max_bytes("VMRT_CACHE_MAX_BYTES", cachebound.DEFAULT_MAX_VMRT)
    else:
        limit = cachebound.max_bytes("ELFKIT_CACHE_MAX_BYTES")
    cachebound.written(where, nbytes, limit)


def code_entry(source: str, filename: str) -> tuple[str, bytes]:
    """``(file name, key)`` under which :func:`compile_cached` keeps the code
    of ``source``: the key is ``filename`` and the whole source."""
    key = f"{filename}\0{source}".encode()
    return f"code-{checksum(key):023x}.bin", key


def compile_cached(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, the code object kept in elfkit's
    cache (see :func:`code_entry`) so that the next process compiling the same
    text reads it instead."""
    name, key = code_entry(source, filename)
    where = cache_dir("elfkit")
    code = load(where, name, key)
    if type(code) is not type(compile_cached.__code__) or code.co_filename != filename:
        code = compile(source, filename, "exec")
        store(where, name, key, code)
    return code
