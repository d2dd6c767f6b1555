"""``vm.list``: a growable list with value, ref or variant storage.

Storage mode comes from the element type: a value type name (``"i32"`` …)
stores bare Python numbers; a :class:`RefType` stores refs of that type;
``None`` (``!vm.opaque``, i.e. ``list<?>``) stores variants — a value is
kept as a ``(type_name, number)`` pair, a ref as the object itself.
"""
from __future__ import annotations

import struct

from ..errors import InvocationError, StatusCode
from .types import LIST_TYPE, RefObject, RefType, type_of

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_MAX_LIST = 1 << 24


def _to_i32(v: int) -> int:
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def _convert(value: Any, src: str, dst: str) -> Any:
    """Convert a stored value of type ``src`` to the requested ``dst``."""
    if src == dst:
        return value
    if dst in ("f32", "f64"):
        if src in ("f32", "f64"):
            return value if dst == "f64" else struct.unpack("<f", struct.pack("<f", value))[0]
        return float(value)
    if src in ("f32", "f64"):
        value = int(value)
    if dst == "i32":
        return _to_i32(value)
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


class VmList(RefObject):
    __slots__ = ("element_type", "items")
    vm_type = LIST_TYPE

    def __init__(self, element_type: str | RefType | None = None, items: list[Any] | None = None):
        self.element_type = element_type
        self.items: list[Any] = list(items or [])

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        et = self.element_type
        name = "?" if et is None else (et if isinstance(et, str) else et.name)
        return f"VmList<{name}>({self.items!r})"

    @property
    def is_variant(self) -> bool:
        return self.element_type is None

    def resize(self, n: int) -> None:
        if n < 0 or n > _MAX_LIST:
            raise InvocationError(f"invalid list size {n}", StatusCode.OUT_OF_RANGE)
        items = self.items
        if n < len(items):
            del items[n:]
        else:
            et = self.element_type
            fill = (0.0 if et in ("f32", "f64") else 0) if isinstance(et, str) else None
            items.extend([fill] * (n - len(items)))

    def _check(self, i: int) -> None:
        if i < 0 or i >= len(self.items):
            raise InvocationError(f"index {i & 0xFFFFFFFF} out of bounds ({len(self.items)})",
                          StatusCode.OUT_OF_RANGE)

    def get_value(self, i: int, kind: str) -> Any:
        self._check(i)
        v = self.items[i]
        et = self.element_type
        if isinstance(et, str):
            return _convert(v, et, kind)
        if et is None and isinstance(v, tuple):
            return _convert(v[1], v[0], kind)
        raise InvocationError(f"variant at index {i} is not a value "
                              "type", StatusCode.FAILED_PRECONDITION)

    def set_value(self, i: int, kind: str, value: Any) -> None:
        self._check(i)
        et = self.element_type
        if isinstance(et, str):
            self.items[i] = _convert(value, kind, et)
        elif et is None:
            self.items[i] = (kind, value)
        else:
            raise InvocationError("list does not store values", StatusCode.FAILED_PRECONDITION)

    def get_ref(self, i: int, want: RefType | None) -> Any:
        self._check(i)
        v = self.items[i]
        if v is None or isinstance(v, (tuple, int, float)):
            return None
        if want is not None and type_of(v) is not want:
            return None    # IREE semantics: a type mismatch yields null
        return v

    def set_ref(self, i: int, value: Any) -> None:
        self._check(i)
        et = self.element_type
        if isinstance(et, str):
            raise InvocationError("list does not store refs", StatusCode.FAILED_PRECONDITION)
        if isinstance(et, RefType) and value is not None and type_of(value) is not et:
            raise InvocationError("source ref type mismatch", StatusCode.INVALID_ARGUMENT)
        self.items[i] = value

    # Python-side convenience
    def to_python(self) -> list[Any]:
        out = []
        for v in self.items:
            out.append(v[1] if isinstance(v, tuple) else v)
        return out
