"""Environment switches read at every native load, cheaply.

``os.environ.get`` costs about half a microsecond (key encoding and value
decoding in Python); the C library's ``getenv`` through ctypes a fifth of
that.  It sees the same values: every change made through ``os.environ``
(``monkeypatch.setenv`` included) is passed on by CPython with ``putenv``
or ``unsetenv``.
"""
from __future__ import annotations

import ctypes
import os

_getenv = None
try:
    _getenv = ctypes.CDLL(None).getenv
    _getenv.restype = ctypes.c_char_p
    _getenv.argtypes = (ctypes.c_char_p,)
except (OSError, AttributeError):      # no C library to ask: os.environ answers
    _getenv = None

_keys: dict[str, bytes] = {}


def getenv(name: str) -> str | None:
    """The value of environment variable ``name`` now (None when unset)."""
    if _getenv is None:
        return os.environ.get(name)
    key = _keys.get(name)
    if key is None:
        key = _keys[name] = os.fsencode(name)
    v = _getenv(key)
    return None if v is None else os.fsdecode(v)
