"""Enum classes made at a fraction of the class statement's cost.

``class Code(enum.IntEnum)`` runs :class:`enum.EnumType`'s checks and
bookkeeping for every member (~200 µs for 19 members on CPython 3.11), on
every start of a program that imports it.  The standard library makes its
own enums (``re.RegexFlag``, ``http.HTTPStatus``) through a simpler path that
builds the same class from a plain class body in less than half the time;
:func:`quick_enum` uses it where the Python has it (3.11+) and the class
statement's own way elsewhere::

    from elfkit._support.enums import IntEnumBody, quick_enum

    @quick_enum(enum.IntEnum)
    class Code(IntEnumBody):        # enum.IntEnum to a type checker
        OK = 0
        FAILED = 1

The result is an ``enum.IntEnum`` (members, lookups by value and name,
iteration, aliases, methods, repr, str, format, pickling as the class
statement makes them; tests/elfkit/test_enums.py compares the two).  The
body must not rely on what that simple path leaves out: ``__init_subclass__``
hooks and ``_missing_``/``_ignore_`` tricks (none of elfkit's or vmrt's do).
"""
from __future__ import annotations

import enum

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _C = TypeVar("_C", bound=type)

    # the bases a body names: the enum type itself to a type checker ...
    EnumBody = enum.Enum
    IntEnumBody = enum.IntEnum
    IntFlagBody = enum.IntFlag
else:
    # ... and a plain class at run time (the decorator makes the enum)
    EnumBody = IntEnumBody = IntFlagBody = object

__all__ = ["EnumBody", "IntEnumBody", "IntFlagBody", "by_class_statement", "quick_enum"]

#: the standard library's simple path (CPython 3.11+), or None
_SIMPLE = getattr(enum, "_simple_enum", None)


def quick_enum(etype: type[enum.Enum]) -> Callable[[_C], _C]:
    """A class decorator: the plain class body it is given made an ``etype``
    enum (see the module's docstring)."""
    def convert(body: _C) -> _C:
        if _SIMPLE is not None:
            made: _C = _SIMPLE(etype)(body)
            if body.__doc__ is None:        # (the simple path gives it one)
                made.__doc__ = None
            return made
        return by_class_statement(etype, body)
    return convert


def by_class_statement(etype: type[enum.Enum], body: _C) -> _C:
    """What ``class <body's name>(etype)`` with ``body``'s attributes makes
    (the slow path: Python 3.10, and the reference of the tests)."""
    meta: Any = type(etype)
    ns = meta.__prepare__(body.__name__, (etype,))
    for name, value in body.__dict__.items():
        if name not in ("__dict__", "__weakref__"):
            ns[name] = value
    made: _C = meta(body.__name__, (etype,), ns)
    return made
