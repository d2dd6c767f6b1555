"""What every executable plugin is (the plugin manager is in ``manager.py``).

A plugin hands out *imports*: functions that compiled dispatch code calls by
name (IREE's executable-plugin ABI, version 1: one exported query function
returning a header and load/unload/resolve).  Three mechanisms:

* **embedded** - a bare-metal ELF (``.so``) or a FatELF (``.sos``) loaded with
  :func:`elfkit.load`, natively or under emulation (:meth:`ExecutablePlugin.load`,
  ``embedded.py``);
* **system** - a host shared library opened with ``dlopen`` (host only,
  :meth:`ExecutablePlugin.system`, ``system.py``);
* **static** - a Python object (or a plain mapping) implementing the resolve
  protocol (:meth:`ExecutablePlugin.static`, see :class:`StaticPlugin` in
  ``static.py``).

This file holds the interface they share: :class:`ExecutablePlugin`, the
import slots a resolve fills in and the :class:`ImportCall` a Python import
function receives.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence

from elfkit.support import DataRecord, field

from ....errors import PluginError, StatusCode
from ....vm.lifecycle import Closeable
from .. import library_abi as abi
from ..guest import GuestMemory, code_name

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, ClassVar

# ---------------------------------------------------------------------------
# Import slots: the host's live arrays a resolve writes into
# ---------------------------------------------------------------------------

class ImportSlots:
    """``count`` import names with their function/context slots, in one
    machine's memory (the arrays an executable's environment points to)."""

    def __init__(self, mem: GuestMemory, names: Sequence[str], names_ptr: int | None = None,
                 functions_ptr: int | None = None, contexts_ptr: int | None = None):
        self.mem = mem
        self.machine = mem.machine
        self.names = list(names)
        n = len(self.names)
        self.names_ptr = names_ptr if names_ptr is not None else mem.alloc_words(
            [mem.alloc_cstr(x) for x in self.names])
        self.functions_ptr = functions_ptr if functions_ptr is not None else mem.alloc(
            n * mem.word, mem.word)
        self.contexts_ptr = contexts_ptr if contexts_ptr is not None else mem.alloc(
            n * mem.word, mem.word)
        self.providers: list[str | None] = [None] * n

    @property
    def count(self) -> int:
        return len(self.names)

    def functions(self) -> tuple[int, ...]:
        return self.mem.words(self.functions_ptr, self.count)

    def contexts(self) -> tuple[int, ...]:
        return self.mem.words(self.contexts_ptr, self.count)

    def set(self, i: int, function: int, context: int = 0) -> None:
        w = self.mem.word
        self.mem.write_words(self.functions_ptr + i * w, [function])
        self.mem.write_words(self.contexts_ptr + i * w, [context])

    def missing_required(self) -> list[str]:
        return [n for n, f in zip(self.names, self.functions())
                if not f and not abi.is_optional(n)]

    def missing_optional(self) -> list[str]:
        return [n for n, f in zip(self.names, self.functions()) if not f and abi.is_optional(n)]


class ImportCall:
    """What a Python import function receives: the guest address of the
    params struct, the context, and helpers to read and write guest memory.

    The params struct holds results first, then the call's arguments, then
    the requested extra fields; ``index`` and pointers are one word each
    (:meth:`word`), ``i32``/``f32`` fields are 4 bytes at natural alignment."""

    __slots__ = ("params", "context", "reserved", "machine", "mem")

    def __init__(self, mem: GuestMemory, params: int, context: int, reserved: int):
        self.mem = mem
        self.machine = mem.machine
        self.params = params
        self.context = context
        self.reserved = reserved

    @property
    def word_size(self) -> int:
        return self.mem.word

    def word(self, index: int) -> int:
        """The ``index``-th word-sized field of the params struct."""
        return self.mem.word_at(self.params + index * self.mem.word)

    def words(self, count: int) -> tuple[int, ...]:
        return self.mem.words(self.params, count)

    def u32(self, offset: int) -> int:
        return struct.unpack("<I", self.mem.read(self.params + offset, 4))[0]

    def read(self, addr: int, size: int) -> bytes:
        return self.mem.read(addr, size)

    def write(self, addr: int, data: bytes) -> None:
        self.mem.write(addr, data)

    def array(self, addr: int, dtype: Any, count: int) -> Any:
        """A numpy copy of ``count`` elements at ``addr``."""
        import numpy as np
        dt = np.dtype(dtype)
        return np.frombuffer(self.mem.read(addr, dt.itemsize * count), dtype=dt).copy()

    def store(self, addr: int, values: Any) -> None:
        import numpy as np
        self.mem.write(addr, np.ascontiguousarray(values).tobytes())


# ---------------------------------------------------------------------------
# ExecutablePlugin
# ---------------------------------------------------------------------------

class Resolved(DataRecord):
    """What one plugin's resolve answered: its status, IREE's resolution
    bits and the names it provided."""

    status: int
    resolution: int
    provided: list[str] = field(default_factory=list)


class ExecutablePlugin(Closeable):
    """One loaded plugin.  Create with :meth:`load` (embedded ELF/FatELF),
    :meth:`system` (host shared library) or :meth:`static` (Python object);
    ``close()`` calls the plugin's ``unload`` and releases it."""

    closed = False  # Closeable: an attribute here, set by close()

    kind: str = ""
    #: kind -> class; each plugin kind registers itself when its module is
    #: imported (the ``plugins`` package imports them all)
    kinds: ClassVar[dict[str, Callable[..., ExecutablePlugin]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind:
            ExecutablePlugin.kinds[cls.kind] = cls

    def __init__(self) -> None:
        self.name = "?"
        self.description = ""
        self.version = 0
        self.features = 0
        self.sanitizer = 0
        self.params: dict[str, str] = {}
        self.source = ""
        self.machine: Any = None
        self.closed = False

    # -- constructors -------------------------------------------------------
    @classmethod
    def load(cls, source: Any, params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
             *, arch: Any = None, backend: str = "auto", machine: Any = None,
             label: str | None = None) -> ExecutablePlugin:
        """An embedded plugin from a path, bytes or memoryview (ELF or FatELF),
        loaded natively or emulated (``backend``) or into ``machine``."""
        return cls.kinds["embedded"](source, normalize_params(params), arch=arch,
                                     backend=backend, machine=machine, label=label)

    @classmethod
    def system(cls, path: str | os.PathLike[str],
               params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
               *, machine: Any = None) -> ExecutablePlugin:
        """A host shared library plugin (``dlopen``); ``machine`` is a native
        machine whose heap backs the host allocator (a private one by default)."""
        return cls.kinds["system"](os.fspath(path), normalize_params(params), machine=machine)

    @classmethod
    def static(cls, obj: Any, params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
               *, name: str | None = None) -> ExecutablePlugin:
        """A plugin implemented in Python (see :class:`StaticPlugin`)."""
        return cls.kinds["static"](obj, normalize_params(params), name=name)

    # -- interface ------------------------------------------------------------
    @property
    def label(self) -> str:
        where = self.kind
        if self.machine is not None and self.kind == "embedded":
            where = f"embedded {self.machine.arch.name} {self.machine.backend}"
        src = f" from {self.source}" if self.source else ""
        return f"plugin '{self.name}' ({where}{src})"

    def available_for(self, machine: Any) -> str | None:
        """None if this plugin's functions are callable from code running in
        ``machine``, else the reason why not."""
        raise NotImplementedError

    def resolve_slots(self, slots: ImportSlots) -> Resolved:
        raise NotImplementedError

    def resolve(self, names: Sequence[str], machine: Any = None) -> dict[str, tuple[int, int]]:
        """Convenience: resolve ``names`` (``?``-prefixed = optional) in the
        plugin's own machine (or ``machine``); returns name -> (function,
        context) for the names it provided.  Raises on a hard failure."""
        machine = machine or self.machine
        if machine is None:
            raise PluginError(f"{self.label}: pass the machine the functions are for")
        mem = GuestMemory(machine)
        try:
            slots = ImportSlots(mem, sorted(names))
            r = self.resolve_slots(slots)
            if r.status not in (0, StatusCode.NOT_FOUND):
                raise PluginError(f"{self.label} failed to resolve imports "
                                  f"[{', '.join(slots.names)}]: {code_name(r.status)}", r.status)
            return {n: (f, c) for n, f, c in zip(slots.names, slots.functions(), slots.contexts())
                    if f}
        finally:
            mem.free_all()

    def _close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"<vmrt.ExecutablePlugin {self.label}{' closed' if self.closed else ''}>"

    # -- shared checks ----------------------------------------------------------
    def check_header(self) -> None:
        """Refuse a plugin built with a sanitizer runtime vmrt cannot provide."""
        s = self.sanitizer
        if s == abi.Sanitizer.NONE:
            return
        if s in (abi.Sanitizer.ADDRESS, abi.Sanitizer.THREAD):
            which = "ASAN" if s == abi.Sanitizer.ADDRESS else "TSAN"
            flag = "address" if s == abi.Sanitizer.ADDRESS else "thread"
            raise PluginError(f"plugin '{self.name}' is compiled with {which} support but vmrt "
                              f"does not run plugins with sanitizer runtimes; rebuild it without "
                              f"-fsanitize={flag}", StatusCode.UNAVAILABLE)
        raise PluginError(f"plugin '{self.name}' requires a sanitizer vmrt does not "
                          f"understand: {abi.Sanitizer.describe(s)}", StatusCode.UNAVAILABLE)


def normalize_params(params: Any) -> dict[str, str]:
    """Plugin parameters as a ``str -> str`` dict (from a mapping or pairs)."""
    if params is None:
        return {}
    items = params.items() if isinstance(params, Mapping) else params
    out: dict[str, str] = {}
    for k, v in items:
        out[str(k)] = str(v)
    return out


__all__ = ["ExecutablePlugin", "ImportCall", "ImportSlots", "Resolved", "normalize_params"]
