"""The VM instance: a registry of ref types shared by contexts."""
from __future__ import annotations

from ..errors import StatusCode, TypeRegistryError
from .types import BUFFER_TYPE, LIST_TYPE, RefType

TYPE_CAPACITY_DEFAULT = 32


class Instance:
    """Holds the registered ref types.  ``vm.buffer`` and ``vm.list`` are built in."""

    def __init__(self, type_capacity: int = TYPE_CAPACITY_DEFAULT):
        self.type_capacity = type_capacity
        self._types: list[RefType] = []
        self._counts: dict[int, int] = {}
        self.register_type(BUFFER_TYPE)
        self.register_type(LIST_TYPE)

    @property
    def types(self) -> tuple[RefType, ...]:
        return tuple(self._types)

    def register_type(self, ref_type: RefType) -> RefType:
        """Register ``ref_type``; registering the same object again is counted."""
        key = id(ref_type)
        if key in self._counts:
            self._counts[key] += 1
            return ref_type
        if len(self._types) >= self.type_capacity:
            raise TypeRegistryError(
                f"too many user-defined types registered; new type {ref_type.name} "
                f"would exceed capacity of {self.type_capacity}", StatusCode.RESOURCE_EXHAUSTED)
        self._types.append(ref_type)
        self._counts[key] = 1
        return ref_type

    def unregister_type(self, ref_type: RefType) -> None:
        key = id(ref_type)
        n = self._counts.get(key)
        if n is None:
            return
        if n > 1:
            self._counts[key] = n - 1
            return
        del self._counts[key]
        self._types = [t for t in self._types if t is not ref_type]

    def lookup_type(self, name: str) -> RefType | None:
        """First registered type called ``name`` (a leading ``!`` is ignored)."""
        if name.startswith("!"):
            name = name[1:]
        for t in self._types:
            if t.name == name:
                return t
        return None

    def resolve_type(self, name: str) -> RefType:
        t = self.lookup_type(name)
        if t is None:
            raise TypeRegistryError(f"no type registered with name '{name}'", StatusCode.NOT_FOUND)
        return t
