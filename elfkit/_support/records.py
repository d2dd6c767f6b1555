"""Records: dataclass-like classes that cost almost nothing to create.

A record lists its fields as annotations, as a dataclass does::

    from elfkit._support.records import DataRecord, field

    class Point(DataRecord, frozen=True, slots=True):
        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list, repr=False, compare=False)

It behaves like ``@dataclass(frozen=True, slots=True)``: ``Point(1)``,
``Point(x=1, y=2)``, the repr ``Point(x=1, y=0)``, equality by value between
instances of the same class, a hash when frozen (none when not), assignment
refused with :class:`FrozenInstanceError` when frozen, fields stored in
``__slots__`` when ``slots=True``, pickling, ``__match_args__`` and
:func:`replace`.  mypy checks the constructors (``dataclass_transform``).

What it saves is the cost of ``@dataclass`` at import: ``dataclasses``
imports :mod:`inspect` and :mod:`ast` and ``exec()``\\ s several generated
functions for every class, on every start of the program.  A record's class
creation only reads its annotations; ``__init__``, ``__repr__``, ``__eq__``
and ``__hash__`` are made on their first use, and classes never instantiated
in a run cost nothing more.  ``__init__`` is the code a dataclass generates
(so instances are as fast), compiled once per shape (field count, which
fields have a default factory, frozen or not) and renamed for each class;
the others are closures over the class's field names.  The compiled shapes
are kept in elfkit's cache directory (``$ELFKIT_CACHE_DIR``, else
``~/.cache/elfkit``; none with ``ELFKIT_NO_CACHE=1``; see
:mod:`elfkit._support.codecache`), so the next start of the program compiles none.

Not supported (not needed here): ``init=False``, ``kw_only``, ``order``,
``eq=False``, ``InitVar``; a recursive repr is not guarded.
"""
from __future__ import annotations

import atexit
import os
import sys
from operator import attrgetter
from types import FunctionType

from . import codecache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeVar, overload

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
else:
    def dataclass_transform(**_options):   # typing's is for type checkers only
        return lambda obj: obj

_CACHE_PREFIX = f"records-{sys.implementation.cache_tag}-{sys.version_info.micro}"

__all__ = ["MISSING", "DataRecord", "Field", "FrozenInstanceError", "field", "fields",
           "replace"]


class FrozenInstanceError(AttributeError):
    """Assignment to (or deletion of) a field of a frozen record."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: "no default" (a field's default or default factory)
MISSING: Any = _Missing()
#: the parameter default that means "call the field's default factory"
_HAS_FACTORY: Any = _Missing()


class Field:
    """What :func:`field` returns: a field's default and options."""

    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default: Any, default_factory: Any, repr: bool, compare: bool) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


if TYPE_CHECKING:
    @overload
    def field(*, default: T, repr: bool = True, compare: bool = True) -> T: ...

    @overload
    def field(*, default_factory: Callable[[], T], repr: bool = True,
              compare: bool = True) -> T: ...

    @overload
    def field(*, repr: bool = True, compare: bool = True) -> Any: ...


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,
          compare: bool = True) -> Any:
    """A field's default (``default`` or ``default_factory``, called for each
    instance) and whether it shows in the repr and takes part in ``==`` and
    the hash."""
    return Field(default, default_factory, repr, compare)


# A field as the class keeps it: (name, default, default factory, repr, compare).
if TYPE_CHECKING:
    _Spec = tuple[Any, ...]  # of (str, Any, Any, bool, bool)


def fields(obj: Any) -> tuple[str, ...]:
    """The field names of a record class or instance, in ``__init__`` order."""
    return tuple(s[0] for s in obj.__record_fields__)


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with the given fields changed."""
    for spec in obj.__record_fields__:    # type: ignore[attr-defined]
        if spec[0] not in changes:
            changes[spec[0]] = getattr(obj, spec[0])
    return obj.__class__(**changes)


# ---------------------------------------------------------------------------
# methods generated on first use

def _owner(cls: type, name: str, placeholder: object) -> type:
    """The class on whose own dict ``placeholder`` is ``name``."""
    for klass in cls.__mro__:
        if klass.__dict__.get(name) is placeholder:
            return klass
    raise TypeError(f"{cls.__qualname__}: no record class defines {name}")  # pragma: no cover


def _install(cls: type, name: str, fn: Any) -> Any:
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    fn.__module__ = cls.__module__
    type.__setattr__(cls, name, fn)
    return fn


#: ``__init__`` code per shape: (field count, the fields with a default factory, how a
#: field is set (:data:`_PLAIN`, :data:`_FROZEN`, :data:`_FROZEN_SLOTS`), calls
#: ``__post_init__``), compiled once with the placeholder field names
#: :func:`_slot` gives, then renamed for each class (``CodeType.replace``, about a
#: microsecond, where compiling costs 20-80 µs and a vmrt run builds some 40 of them).
#: The shapes compiled are kept on disk at exit (see :func:`_read_shapes`), so a program's
#: next start compiles none.
_INIT_CODE: dict[tuple[int, tuple[int, ...], int, bool], Any] = {}
#: how ``__init__`` sets a field: ``self.f = v``; ``object.__setattr__(self, "f", v)``
#: (frozen); the slot's own setter ``_set_i(self, v)`` (frozen with slots: half the
#: cost, the slot found once per class instead of looked up by name on each set)
_PLAIN, _FROZEN, _FROZEN_SLOTS = 0, 1, 2
#: the cache file's key and directory, once the file has been read (empty: not read yet)
_disk: list[Any] = []
#: the shapes the cache file holds, as read (each checked when first used)
_on_disk: dict[Any, Any] = {}
#: not empty once this process compiled a shape (written at exit)
_unsaved: list[Any] = []


def _slot(i: int) -> str:
    return f"_f{i}_"


def _cache_key() -> bytes:
    """The key of usable shapes: this file's size and time (editing the generator
    below makes the old shapes unreadable; the Python is part of every key)."""
    st = os.stat(__file__)
    return f"elfkit records 1\0{st.st_size}:{st.st_mtime_ns}\0".encode()


def _cache_file(key: bytes) -> str:
    """The cache file's name: one per key, so that two elfkit installations
    (two virtual environments, say) keep their own instead of each finding the
    other's unusable and rewriting it."""
    return f"{_CACHE_PREFIX}-{codecache.checksum(key) & 0xFFFFFFFF:08x}.bin"


def _write_shapes() -> None:
    """Keep the shapes compiled by this process (at exit: once, however many),
    in the directory they were read from."""
    key, where = _disk
    kept = {k: v for k, v in _on_disk.items() if _well_formed(k, v)}
    codecache.store(where, _cache_file(key), key, {**kept, **_INIT_CODE})


def _well_formed(key: Any, code: Any) -> bool:
    return (type(key) is tuple and len(key) == 4 and type(key[0]) is int
            and type(key[1]) is tuple and all(type(i) is int for i in key[1])
            and type(key[2]) is int and key[2] in (_PLAIN, _FROZEN, _FROZEN_SLOTS)
            and type(key[3]) is bool
            and type(code) is type(_slot.__code__) and code.co_argcount == key[0] + 1)


def _read_shapes() -> None:
    """Add the shapes of elfkit's cache file (``records-<python>-<key>.bin`` in
    :func:`elfkit._support.codecache.cache_dir`, ``$ELFKIT_CACHE_DIR`` else
    ``~/.cache/elfkit``) to :data:`_on_disk`, each checked when first used (a
    process uses a few of the dozens kept).  As ``__pycache__`` is, it is
    trusted only when private to the user (owner, permissions); anything else
    (missing, another Python, an older elfkit, damaged, a malformed shape) is ignored."""
    try:
        key = _cache_key()
    except OSError:        # pragma: no cover - a records.py without a file (zip import)
        key = b"-"
    where = codecache.cache_dir("elfkit")
    _disk[:] = [key, where]
    shapes = codecache.load(where, _cache_file(key), key)
    if type(shapes) is dict:
        _on_disk.update(shapes)


def _init_template(n: int, factories: tuple[int, ...], how: int, post_init: bool) -> Any:
    key = (n, factories, how, post_init)
    code = _INIT_CODE.get(key)
    if code is None:
        if not _disk:
            _read_shapes()
        kept = _on_disk.get(key)
        if kept is not None and _well_formed(key, kept):
            code = _INIT_CODE[key] = kept
    if code is None:
        lines = []
        for i in range(n):
            value = (f"_factory_{i}() if {_slot(i)} is _HAS_FACTORY else {_slot(i)}"
                     if i in factories else _slot(i))
            lines.append(f"_set_{i}(self, {value})" if how == _FROZEN_SLOTS else
                         f"_setattr(self, {_slot(i)!r}, {value})" if how == _FROZEN else
                         f"self.{_slot(i)} = {value}")
        if post_init:
            lines.append("self.__post_init__()")
        params = "".join(f", {_slot(i)}" for i in range(n))
        src = f"def __init__(self{params}):\n" + "".join(
            f"    {line}\n" for line in lines or ["pass"])
        scope: dict[str, Any] = {}
        exec(src, scope)        # the dataclass technique, on our own text, once per shape
        code = _INIT_CODE[key] = scope["__init__"].__code__
        if not _unsaved:
            _unsaved.append(key)
            atexit.register(_write_shapes)
    return code


def _slot_setter(cls: type, name: str) -> Any:
    """The ``__set__`` of the slot that holds field ``name`` (a member
    descriptor of ``__slots__``, its own or a base's), or None (the field is
    in the instance's dict)."""
    for klass in cls.__mro__:
        got = klass.__dict__.get(name)
        if got is not None:
            return got.__set__ if type(got) is _MEMBER else None
    return None


_MEMBER = type(Field.__dict__["default"])       # a slot's descriptor (member_descriptor)


def _make_init(cls: type) -> Any:
    specs: tuple[_Spec, ...] = cls.__record_fields__    # type: ignore[attr-defined]
    frozen = getattr(cls, "__setattr__", None) is _frozen_setattr
    env: dict[str, Any] = {"_setattr": object.__setattr__, "_HAS_FACTORY": _HAS_FACTORY,
                           "__builtins__": __builtins__}
    how = _PLAIN
    if frozen:
        setters = [_slot_setter(cls, spec[0]) for spec in specs]
        how = _FROZEN if None in setters else _FROZEN_SLOTS
        if how == _FROZEN_SLOTS:
            env.update((f"_set_{i}", setter) for i, setter in enumerate(setters))
    factories, defaults = [], []
    for i, (_name, default, factory, _repr, _compare) in enumerate(specs):
        if factory is not MISSING:
            env[f"_factory_{i}"] = factory
            factories.append(i)
            defaults.append(_HAS_FACTORY)
        elif default is not MISSING:
            defaults.append(default)
    n = len(specs)
    code = _init_template(n, tuple(factories), how, hasattr(cls, "__post_init__"))
    # the placeholders renamed: the parameters (``self``, then one per field: the
    # first names of co_varnames), and where the template has them, the attribute
    # names of ``self.f = v`` (plain) or the name strings given ``_setattr`` (frozen)
    fnames = [spec[0] for spec in specs]
    varnames = code.co_varnames
    change: dict[str, Any] = {"co_varnames": (varnames[0], *fnames, *varnames[n + 1:])}
    if how != _FROZEN_SLOTS:
        names = {_slot(i): name for i, name in enumerate(fnames)}
        if how == _PLAIN:
            change["co_names"] = tuple(names.get(v, v) for v in code.co_names)
        else:
            change["co_consts"] = tuple(names.get(c, c) if c.__class__ is str else c
                                        for c in code.co_consts)
    code = code.replace(**change)
    return _install(cls, "__init__", FunctionType(code, env, "__init__", tuple(defaults) or None))


def _make_repr(cls: type) -> Any:
    shown = tuple(s[0] for s in cls.__record_fields__ if s[3])    # type: ignore[attr-defined]

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"
    return _install(cls, "__repr__", __repr__)


def _compared(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """The values of the fields that take part in ``==`` and the hash, as a tuple."""
    names = [s[0] for s in cls.__record_fields__ if s[4]]    # type: ignore[attr-defined]
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names) if names else lambda obj: ()


def _make_eq(cls: type) -> Any:
    values = _compared(cls)

    def __eq__(self: Any, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented
    return _install(cls, "__eq__", __eq__)


def _make_hash(cls: type) -> Any:
    values = _compared(cls)

    def __hash__(self: Any) -> int:
        return hash(values(self))
    return _install(cls, "__hash__", __hash__)


def _lazy_init(self: Any, *args: Any, **kwargs: Any) -> None:
    _make_init(_owner(type(self), "__init__", _lazy_init))(self, *args, **kwargs)


def _lazy_repr(self: Any) -> str:
    return _make_repr(_owner(type(self), "__repr__", _lazy_repr))(self)


def _lazy_eq(self: Any, other: object) -> Any:
    return _make_eq(_owner(type(self), "__eq__", _lazy_eq))(self, other)


def _lazy_hash(self: Any) -> int:
    return _make_hash(_owner(type(self), "__hash__", _lazy_hash))(self)


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, s[0]) for s in self.__record_fields__]


def _setstate(self: Any, state: list[Any]) -> None:
    for spec, value in zip(self.__record_fields__, state):
        object.__setattr__(self, spec[0], value)


# ---------------------------------------------------------------------------
# class creation

def _own_fields(name: str, ns: dict[str, Any], slots: bool) -> list[_Spec]:
    """The fields the class body declares; their defaults leave the namespace
    where a slot or nothing replaces them."""
    out: list[_Spec] = []
    annotations = ns.get("__annotations__")
    if not annotations:
        return out
    get, pop = ns.get, ns.pop
    for fname, ann in annotations.items():
        if ann.__class__ is str and ann.startswith(_CLASSVAR):
            continue
        value = get(fname, MISSING)
        if value.__class__ is Field:
            spec = (fname, value.default, value.default_factory, value.repr, value.compare)
            if value.default is MISSING or slots:
                pop(fname)
            else:
                ns[fname] = value.default
        else:
            if value.__class__ in _MUTABLE:
                raise ValueError(f"{name}.{fname}: mutable default {type(value).__name__} is "
                                 "not allowed: use field(default_factory=...)")
            spec = (fname, value, MISSING, True, True)
            if slots and value is not MISSING:
                pop(fname)
        out.append(spec)
    return out


_CLASSVAR = ("ClassVar", "typing.ClassVar")
_MUTABLE = (list, dict, set)


def _check_frozen(name: str, base: type, frozen: bool) -> None:
    """A record is frozen exactly when the records it extends are (as dataclasses)."""
    if (getattr(base, "__setattr__", None) is _frozen_setattr) != frozen:
        want, have = ("frozen", "non-frozen") if frozen else ("non-frozen", "frozen")
        raise TypeError(f"{name}: cannot inherit {want} record from a {have} one "
                        f"({base.__name__})")


def _all_fields(name: str, bases: tuple[type, ...], own: list[_Spec],
                frozen: bool) -> tuple[tuple[_Spec, ...], set[str]]:
    """The fields of the class (its bases' then its own: a field declared again
    keeps its place) and the names its bases already hold."""
    inherited = [(base, got) for base in bases
                 if (got := getattr(base, "__record_fields__", ()))]
    if not inherited:                   # the common case: extends DataRecord only
        return tuple(own), set()
    specs: dict[str, _Spec] = {}
    for base, got in reversed(inherited):
        _check_frozen(name, base, frozen)
        for spec in got:
            specs[spec[0]] = spec
    held = set(specs)
    for spec in own:
        specs[spec[0]] = spec
    return tuple(specs.values()), held


@dataclass_transform(field_specifiers=(field, Field))
class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], *,
                frozen: bool = False, slots: bool = False) -> _RecordMeta:
        if not bases:                  # DataRecord itself
            return type.__new__(mcls, name, bases, ns)
        own = _own_fields(name, ns, slots)
        all_specs, held = _all_fields(name, bases, own, frozen)
        seen_default = False
        for spec in all_specs:
            if spec[1] is not MISSING or spec[2] is not MISSING:
                seen_default = True
            elif seen_default:
                raise TypeError(f"{name}: non-default argument {spec[0]!r} follows default "
                                "argument")
        ns["__record_fields__"] = all_specs
        ns["__match_args__"] = tuple([s[0] for s in all_specs])
        if slots:
            ns["__slots__"] = tuple([s[0] for s in own if s[0] not in held])
        if "__init__" not in ns:
            ns["__init__"] = _lazy_init
        if "__repr__" not in ns:
            ns["__repr__"] = _lazy_repr
        if "__eq__" not in ns:
            ns["__eq__"] = _lazy_eq
        if "__hash__" not in ns:
            ns["__hash__"] = _lazy_hash if frozen else None
        if frozen:
            if "__setattr__" in ns or "__delattr__" in ns:
                raise TypeError(f"{name}: a frozen record cannot define __setattr__ or "
                                "__delattr__")
            ns["__setattr__"] = _frozen_setattr
            ns["__delattr__"] = _frozen_delattr
            if slots:
                if "__getstate__" not in ns:
                    ns["__getstate__"] = _getstate
                if "__setstate__" not in ns:
                    ns["__setstate__"] = _setstate
        return type.__new__(mcls, name, bases, ns)


class DataRecord(metaclass=_RecordMeta):
    """The base of records: ``class R(DataRecord, frozen=..., slots=...)``
    (both default to False), fields as annotations (see the module's
    docstring)."""

    __slots__ = ()
    __record_fields__: ClassVar[tuple[_Spec, ...]] = ()

    if TYPE_CHECKING:
        def __init_subclass__(cls, *, frozen: bool = False, slots: bool = False) -> None: ...
