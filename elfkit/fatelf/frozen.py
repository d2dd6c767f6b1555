"""``Frozen``: the base of FatELF's small immutable records.

They behave like ``@dataclass(frozen=True, slots=True)`` classes (fields
named by ``__slots__``, equality and hash by value and type, the same repr,
assignment refused, picklable) without importing :mod:`dataclasses`, which
pulls in :mod:`inspect` and :mod:`ast` and would add several milliseconds
to ``elfkit fatelf list``.  A subclass lists its fields in ``__slots__`` in
the order of its ``__init__`` parameters and sets them with ``init``.
"""
from __future__ import annotations

__all__ = ["Frozen", "FrozenError"]


class FrozenError(AttributeError):
    """Raised on assignment to a field of a :class:`Frozen` record."""


class Frozen:
    __slots__: tuple[str, ...] = ()

    def init(self, **values: object) -> None:
        """Set the fields (only from the subclass's ``__init__``)."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def fields(self) -> tuple[object, ...]:
        """The field values, in ``__slots__`` order."""
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenError(f"cannot assign to field {name!r} of {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise FrozenError(f"cannot delete field {name!r} of {type(self).__name__}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({inner})"

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return type(self), self.fields()
