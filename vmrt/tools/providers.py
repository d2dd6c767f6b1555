"""The module providers of a run, each imported when first needed.

A run's providers come from (later wins) vmrt's built-ins, the
``vmrt.modules`` entry points (vmrt's own first) and the providers passed
explicitly.  The names of the built-ins and of the entry points are known
without importing them (an entry point is named after the module it
provides), so a provider's Python code is imported only when a program
depends on its module, or when a program uses a type of the provider's
namespace: a provider's types are registered before each bytecode module
(IREE's REGISTER_TYPES hook), but the types of a provider not imported yet
are registered when the module's loader first looks up a type it lacks
(:class:`ProviderInstance`), those of the providers named like the type's
namespace (``hal`` for ``!hal.buffer_view``) first, then all the others in
the table's order.

The table answers as the eager table (every provider loaded, ``name ->
provider``, later sources replacing earlier ones) does: a name the table
does not hold, or an entry point whose provider turns out to have another
name, loads every provider and builds that table.  A provider that fails to
load is reported as before (:func:`load_entry_point`), when it is needed.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable

from ..errors import LoadError, StatusCode
from ..vm.instance import Instance

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

ENTRY_POINT_GROUP = "vmrt.modules"

#: the distribution vmrt ships in; its own entry points rank lowest
OWN_DISTRIBUTION = "elfkit"

#: vmrt's built-in providers, in registration order: module name -> the
#: Python module whose ``PROVIDER`` it is
BUILTIN = {"hal": "vmrt.modules.hal.provider",
           "hal_inline": "vmrt.modules.hal_inline.provider",
           "hal_loader": "vmrt.modules.hal_loader.provider",
           "vmvx": "vmrt.modules.vmvx",
           "check": "vmrt.modules.check.provider",
           "io_parameters": "vmrt.modules.io_parameters.provider"}


def builtin_provider(name: str) -> Any:
    """The built-in provider of module ``name`` (imported now)."""
    path = BUILTIN[name]
    __import__(path)            # importlib.import_module without importing importlib
    return sys.modules[path].PROVIDER


def entry_points_of_group() -> list[Any]:
    """The entry points of the ``vmrt.modules`` group, vmrt's own (the
    samples) first so that any other package's provider of the same name
    replaces them."""
    from .entry_points import entry_points
    return sorted(entry_points(ENTRY_POINT_GROUP),
                  key=lambda ep: _distribution(ep) != OWN_DISTRIBUTION)


def _distribution(ep: Any) -> str | None:
    return getattr(getattr(ep, "dist", None), "name", None)


def load_entry_point(ep: Any) -> Any:
    """The provider an entry point names; any failure is a :class:`LoadError`
    that says which entry point."""
    try:
        return ep.load()
    except Exception as e:  # noqa: BLE001 - any failure of third-party code: say which entry point
        raise LoadError(f"loading module provider entry point '{ep.name}' "
                        f"({ep.value}): {type(e).__name__}: {e}",
                        StatusCode.UNAVAILABLE) from None


class _Deferred:
    """A provider known by name, not imported yet: a built-in (``source`` is
    its name) or an entry point."""
    __slots__ = ("name", "source", "provider")

    def __init__(self, name: str, source: Any) -> None:
        self.name = name
        self.source = source
        self.provider: Any = None

    def load(self) -> Any:
        if self.provider is None:
            self.provider = builtin_provider(self.source) if isinstance(self.source, str) \
                else load_entry_point(self.source)
        return self.provider


class ProviderTable:
    """name -> provider of one run (see the module's docstring); providers
    not needed are never imported."""

    def __init__(self, extra: Iterable[Any] = ()) -> None:
        self._sources: list[Any] = [_Deferred(n, n) for n in BUILTIN]
        self._sources += [_Deferred(ep.name, ep) for ep in entry_points_of_group()]
        self._sources += list(extra)
        self._table: dict[str, Any] = {}
        for s in self._sources:
            self._table[s.name] = s
        self._complete = not any(isinstance(s, _Deferred) for s in self._sources)
        #: providers whose types are due (a bytecode module was loaded after
        #: them) but not registered yet, in table order
        self._due: dict[str, None] = {}
        self._registered: set[str] = set()

    def names(self) -> list[str]:
        """The module names the table provides (as far as known without
        importing anything)."""
        return list(self._table)

    def get(self, name: str) -> Any:
        """The provider of module ``name``, imported now if need be, or None."""
        slot = self._table.get(name)
        if slot is None:
            if not self._complete:
                self._load_all()
                return self._table.get(name)
            return None
        if isinstance(slot, _Deferred):
            provider = slot.load()
            if getattr(provider, "name", None) != name:
                self._load_all()        # named otherwise: the eager table decides
                return self._table.get(name)
            self._table[name] = provider
            return provider
        return slot

    def _load_all(self) -> None:
        """Every provider loaded, the table rebuilt as the eager one is."""
        table: dict[str, Any] = {}
        for s in self._sources:
            p = s.load() if isinstance(s, _Deferred) else s
            table[p.name] = p
        self._table = table
        self._complete = True

    def due(self, instance: Instance, given: set[str]) -> None:
        """Before a bytecode module: the types of every provider but those
        of ``given`` modules are due; those of providers already imported
        are registered now, the others when a type lookup misses."""
        for name, slot in list(self._table.items()):
            if name in given or name in self._registered:
                continue
            self._registered.add(name)
            if isinstance(slot, _Deferred):
                self._due[name] = None
            else:
                slot.register_types(instance)

    def register_due(self, instance: Instance, type_name: str) -> None:
        """Register the due types that may answer a lookup of ``type_name``:
        those of the provider named like its namespace, else all."""
        space = type_name.lstrip("!").partition(".")[0]
        if space in self._due:
            del self._due[space]
            self._register(instance, space)
            if Instance.lookup_type(instance, type_name) is not None:
                return
        while self._due:
            name = next(iter(self._due))
            del self._due[name]
            self._register(instance, name)

    def _register(self, instance: Instance, name: str) -> None:
        provider = self.get(name)
        if provider is not None:
            provider.register_types(instance)

    def has_due(self) -> bool:
        return bool(self._due)


class ProviderInstance(Instance):
    """The instance of a run: a type it does not hold may be one of a
    provider not imported yet (:meth:`ProviderTable.register_due`)."""

    def __init__(self, providers: ProviderTable) -> None:
        self.providers = providers
        super().__init__()

    def lookup_type(self, name: str) -> Any:
        t = super().lookup_type(name)
        if t is None and self.providers.has_due():
            self.providers.register_due(self, name)
            t = super().lookup_type(name)
        return t
