"""Ref types: type descriptors and the base class of ref-counted VM objects.

A ref in vmrt is a plain Python object whose class (or instance) carries a
``vm_type`` attribute naming its :class:`RefType`; ``None`` is the null ref.
Type identity is the ``RefType`` object, never its name.  Python's garbage
collector owns object lifetime; ``RefType.destroy`` (if given) is invoked by
``Instance.unregister_type`` users, not per object.
"""
from __future__ import annotations

from collections.abc import Callable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class RefType:
    """A registered ref type, e.g. ``RefType("custom.string")``."""

    __slots__ = ("name", "destroy")

    def __init__(self, name: str, destroy: Callable[[Any], None] | None = None):
        if name.startswith("!"):
            name = name[1:]
        self.name = name
        self.destroy = destroy

    def __repr__(self) -> str:
        return f"RefType({self.name!r})"


class RefObject:
    """Convenience base for Python objects passed as VM refs."""

    __slots__ = ()
    vm_type: RefType


def type_of(obj: Any) -> RefType | None:
    """The RefType of a ref value (None for the null ref or non-refs)."""
    if obj is None:
        return None
    return getattr(obj, "vm_type", None)


BUFFER_TYPE = RefType("vm.buffer")
LIST_TYPE = RefType("vm.list")
OPAQUE_TYPE = RefType("vm.opaque")   # the "any ref" type; never registered

VALUE_TYPES = ("i8", "i16", "i32", "i64", "f32", "f64")
