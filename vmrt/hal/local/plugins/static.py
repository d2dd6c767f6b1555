"""Static executable plugins: Python objects (or plain mappings) that
resolve imports to Python callables or guest addresses, the equivalent of
IREE's static plugins."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ....errors import PluginError, StatusCode, VmError
from .. import library_abi as abi
from ..guest import GuestMemory, sig
from .plugin import ExecutablePlugin, ImportCall, ImportSlots, Resolved

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class StaticPlugin:
    """Base class (optional: any object with ``resolve`` works) for plugins
    written in Python, the equivalent of IREE's static plugins.

    ``resolve(names)`` gets the unresolved import names (without the ``?``)
    and returns a mapping from the names it provides to one of:

    * a Python callable ``fn(call: ImportCall) -> int | None`` (0/None = OK);
    * an int, the address of a function already in the executable's machine;
    * a tuple ``(callable_or_address, context)``.

    ``load(params)`` and ``unload()`` are optional.  A plain mapping
    ``{name: value}`` can be registered directly as a static plugin.
    """

    name = "static"
    description = ""

    def load(self, params: Mapping[str, str]) -> None:
        pass

    def resolve(self, names: Sequence[str]) -> Mapping[str, Any]:
        return {}

    def unload(self) -> None:
        pass


class MappingPlugin(StaticPlugin):
    """A plain ``{name: function}`` mapping registered as a static plugin."""

    def __init__(self, table: Mapping[str, Any], name: str):
        self.table = dict(table)
        self.name = name

    def resolve(self, names: Sequence[str]) -> Mapping[str, Any]:
        return {n: self.table[n] for n in names if n in self.table}


class PythonPlugin(ExecutablePlugin):
    """The :class:`ExecutablePlugin` around a :class:`StaticPlugin`-like object."""

    kind = "static"

    def __init__(self, obj: Any, params: dict[str, str], *, name: str | None):
        super().__init__()
        if isinstance(obj, Mapping):
            obj = MappingPlugin(obj, name or "static")
        if not callable(getattr(obj, "resolve", None)):
            raise PluginError(f"{type(obj).__name__} is not a static plugin: it has no "
                              f"resolve(names) method", StatusCode.INVALID_ARGUMENT)
        self.obj = obj
        self.params = params
        self.name = name or getattr(obj, "name", None) or type(obj).__name__
        self.description = getattr(obj, "description", "") or ""
        self.version = abi.PLUGIN_VERSION_LATEST
        self._callbacks: dict[tuple[int, str], int] = {}
        self._machines: list[Any] = []
        load = getattr(obj, "load", None)
        if callable(load):
            try:
                load(dict(params))
            except VmError:
                raise
            except Exception as e:
                raise PluginError(f"{self.label}: load() raised {type(e).__name__}: {e}") from e

    def available_for(self, machine: Any) -> str | None:
        return "closed" if self.closed else None

    def _address(self, machine: Any, name: str, value: Any) -> tuple[int, int]:
        context = 0
        if isinstance(value, tuple):
            value, context = value
        if isinstance(value, int):
            return value, int(context)
        if not callable(value):
            raise PluginError(f"{self.label}: resolve() returned {type(value).__name__} for "
                              f"'{name}' (expected a callable, an address or a tuple)")
        key = (id(machine), name)
        addr = self._callbacks.get(key)
        if addr is None:
            mem = GuestMemory(machine, raw=True)
            fn = value

            def thunk(params: int, ctx: int, reserved: int) -> int:
                r = fn(ImportCall(mem, params or 0, ctx or 0, reserved or 0))
                return int(r or 0)
            addr = machine.callback(thunk, sig(abi.IMPORT_SIGNATURE), f"{self.name}.{name}")
            self._callbacks[key] = addr
            self._machines.append(machine)   # callbacks live as long as the machine
        return addr, int(context)

    def resolve_slots(self, slots: ImportSlots) -> Resolved:
        if self.closed:
            raise PluginError(f"{self.label} is closed")
        fns = slots.functions()
        wanted = [abi.strip_optional(n) for n, f in zip(slots.names, fns) if not f]
        try:
            table = self.obj.resolve(list(wanted)) or {} if wanted else {}
        except VmError:
            raise
        except Exception as e:
            raise PluginError(f"{self.label}: resolve() raised {type(e).__name__}: {e}",
                              StatusCode.INTERNAL) from e
        resolution, missing, provided = 0, False, []
        for i, (n, f) in enumerate(zip(slots.names, fns)):
            if f:
                continue
            bare = abi.strip_optional(n)
            if bare in table and table[bare] is not None:
                addr, ctx = self._address(slots.machine, bare, table[bare])
                slots.set(i, addr, ctx)
                provided.append(n)
            elif abi.is_optional(n):
                resolution |= abi.RESOLUTION_MISSING_OPTIONAL
            else:
                missing = True
        return Resolved(int(StatusCode.NOT_FOUND) if missing else 0, resolution, provided)

    def _close(self) -> None:
        self.closed = True
        unload = getattr(self.obj, "unload", None)
        if callable(unload):
            unload()


__all__ = ["MappingPlugin", "PythonPlugin", "StaticPlugin"]
