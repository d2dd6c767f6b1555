"""Executable plugins (the plugin manager is in ``plugin_manager.py``).

A plugin hands out *imports*: functions that compiled dispatch code calls by
name (IREE's executable-plugin ABI, version 1: one exported query function
returning a header and load/unload/resolve).  Three mechanisms:

* **embedded** - a bare-metal ELF (``.so``) or a FatELF (``.sos``) loaded with
  :func:`elfkit.load`, natively or under emulation (:meth:`ExecutablePlugin.load`);
* **system** - a host shared library opened with ``dlopen`` (host only,
  :meth:`ExecutablePlugin.system`);
* **static** - a Python object (or a plain mapping) implementing the resolve
  protocol (:meth:`ExecutablePlugin.static`, see :class:`StaticPlugin`).

"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from elfkit.signature import parse as parse_signature

from .. import library_abi as abi
from ..guest import GuestMemory, code_name, host_allocator, read_cstr, sig, status_code
from ....errors import StatusCode, VmError


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

class PluginError(VmError):
    """A plugin could not be loaded, or failed while resolving."""

    default_code = StatusCode.FAILED_PRECONDITION


class ImportResolutionError(PluginError):
    """Required imports that no registered plugin provides.  ``missing`` lists
    every such name; ``asked`` says which plugins were asked (newest first)
    and what each answered."""

    default_code = StatusCode.NOT_FOUND

    def __init__(self, message: str, missing: Sequence[str], asked: Sequence[str],
                 code: int | None = None):
        super().__init__(message, code)
        self.missing = list(missing)
        self.asked = list(asked)


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


# ---------------------------------------------------------------------------
# Static (Python) plugins
# ---------------------------------------------------------------------------

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


class _MappingPlugin(StaticPlugin):
    def __init__(self, table: Mapping[str, Any], name: str):
        self.table = dict(table)
        self.name = name

    def resolve(self, names: Sequence[str]) -> Mapping[str, Any]:
        return {n: self.table[n] for n in names if n in self.table}


# ---------------------------------------------------------------------------
# ExecutablePlugin
# ---------------------------------------------------------------------------

@dataclass
class _Resolved:
    status: int
    resolution: int
    provided: list[str] = field(default_factory=list)


class ExecutablePlugin:
    """One loaded plugin.  Create with :meth:`load` (embedded ELF/FatELF),
    :meth:`system` (host shared library) or :meth:`static` (Python object);
    ``close()`` calls the plugin's ``unload`` and releases it."""

    kind: str = ""

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
             label: str | None = None) -> "ExecutablePlugin":
        """An embedded plugin from a path, bytes or memoryview (ELF or FatELF),
        loaded natively or emulated (``backend``) or into ``machine``."""
        return _EmbeddedPlugin(source, _params(params), arch=arch, backend=backend,
                               machine=machine, label=label)

    @classmethod
    def system(cls, path: "str | os.PathLike[str]",
               params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
               *, machine: Any = None) -> "ExecutablePlugin":
        """A host shared library plugin (``dlopen``); ``machine`` is a native
        machine whose heap backs the host allocator (a private one by default)."""
        return _SystemPlugin(os.fspath(path), _params(params), machine=machine)

    @classmethod
    def static(cls, obj: Any, params: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
               *, name: str | None = None) -> "ExecutablePlugin":
        """A plugin implemented in Python (see :class:`StaticPlugin`)."""
        return _StaticPluginWrapper(obj, _params(params), name=name)

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

    def resolve_slots(self, slots: ImportSlots) -> _Resolved:
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

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> "ExecutablePlugin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<vmrt.ExecutablePlugin {self.label}{' closed' if self.closed else ''}>"

    # -- shared checks ----------------------------------------------------------
    def _check_header(self) -> None:
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


def _params(params: Any) -> dict[str, str]:
    if params is None:
        return {}
    items = params.items() if isinstance(params, Mapping) else params
    out: dict[str, str] = {}
    for k, v in items:
        out[str(k)] = str(v)
    return out


# ---------------------------------------------------------------------------
# ABI-level plugin (embedded and system share the calling sequence)
# ---------------------------------------------------------------------------

class _AbiPlugin(ExecutablePlugin):
    """Runs the v0 sequence: query(1) -> check header -> load -> resolve* -> unload."""

    def _init_abi(self, query: Callable[[int, int], Any], read: Callable[[int, int], bytes],
                  fn: Callable[[int, str], Callable[..., Any]]) -> None:
        """``query`` calls the exported query; ``read`` reads plugin memory;
        ``fn(address, signature)`` makes a callable for a plugin function."""
        mem = self._mem
        lay = mem.layout
        self._read = read
        v0_ptr = int(query(abi.PLUGIN_VERSION_LATEST, 0) or 0)
        if not v0_ptr:
            raise PluginError(f"plugin {self.source} does not support this version of the "
                              f"runtime ({abi.PLUGIN_VERSION_LATEST:08X}): its query returned NULL",
                              StatusCode.FAILED_PRECONDITION)
        header_ptr, load, unload, resolve = lay.plugin_v0(read(v0_ptr, lay.plugin_v0_size))
        if not header_ptr:
            raise PluginError(f"plugin {self.source}: query returned a table with a NULL header")
        h = lay.plugin_header(read(header_ptr, lay.plugin_header_size))
        self.version, self.features, self.sanitizer = h.version, h.features, h.sanitizer
        self.name = read_cstr(read, h.name_ptr) or "(unnamed)"
        self.description = read_cstr(read, h.description_ptr)
        self._check_header()
        if not load or not resolve:
            raise PluginError(f"{self.label}: its v0 table has no "
                              f"{'load' if not load else 'resolve'} function")
        w = "u64" if mem.word == 8 else "u32"
        self._load_fn = fn(load, f"ptr(ptr,{w},ptr,ptr)")
        self._unload_fn = fn(unload, "void(ptr)") if unload else None
        self._resolve_fn = fn(resolve, "ptr(ptr,ptr,ptr)")
        # load(environment, param_count, params, &self)
        alloc = host_allocator(self._alloc_machine)
        env = mem.alloc_words([alloc.self_ptr, alloc.ctl])
        pairs = b""
        for k, v in self.params.items():
            kb, vb = k.encode(), v.encode()
            pairs += lay.string_pair(mem.alloc_bytes(kb or b"\0", 1), len(kb),
                                     mem.alloc_bytes(vb or b"\0", 1), len(vb))
        params_ptr = mem.alloc_bytes(pairs, mem.word) if pairs else 0
        out_self = mem.alloc(mem.word, mem.word)
        st = status_code(self._load_fn(env, len(self.params), params_ptr, out_self))
        self.self_ptr = mem.word_at(out_self)
        if st:
            raise PluginError(f"{self.label}: load() failed with {code_name(st)}", st)
        self._loaded = True

    def resolve_slots(self, slots: ImportSlots) -> _Resolved:
        if self.closed:
            raise PluginError(f"{self.label} is closed")
        if slots.count == 0:
            return _Resolved(0, 0)
        mem = slots.mem
        before = slots.functions()
        params = mem.alloc_bytes(mem.layout.resolve_params(
            slots.count, slots.names_ptr, slots.functions_ptr, slots.contexts_ptr), mem.word)
        out = mem.alloc(4, 4)
        st = status_code(self._resolve_fn(self.self_ptr, params, out))
        resolution = struct.unpack("<I", mem.read(out, 4))[0]
        after = slots.functions()
        provided = [n for n, b, a in zip(slots.names, before, after) if a and not b]
        return _Resolved(st, resolution, provided)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if getattr(self, "_loaded", False) and self._unload_fn is not None:
                self._unload_fn(self.self_ptr)
        finally:
            self._release()

    def _release(self) -> None:
        self._mem.free_all()


class _EmbeddedPlugin(_AbiPlugin):
    kind = "embedded"

    def __init__(self, source: Any, params: dict[str, str], *, arch: Any, backend: str,
                 machine: Any, label: str | None):
        super().__init__()
        import elfkit
        self.params = params
        self.source = label or (os.fspath(source) if isinstance(source, (str, os.PathLike))
                                else "<memory>")
        try:
            self.module = elfkit.load(source, arch=arch, backend=backend, machine=machine)
        except elfkit.ElfkitError as e:
            raise PluginError(f"loading plugin from {self.source}: {e}",
                              StatusCode.FAILED_PRECONDITION) from e
        self.machine = self.module.machine
        self._alloc_machine = self.machine
        self._mem = GuestMemory(self.machine)
        try:
            try:
                query_addr = self.module.symbol(abi.PLUGIN_QUERY_NAME)
            except elfkit.ElfkitError:
                raise PluginError(f"plugin {self.source} does not export "
                                  f"'{abi.PLUGIN_QUERY_NAME}'", StatusCode.NOT_FOUND) from None
            m = self.machine
            query = m.function(query_addr, sig("ptr(u32,ptr)"))
            self._init_abi(query, m.read, lambda addr, s: m.function(addr, sig(s)))
        except elfkit.ElfkitError as e:
            self._abandon()
            raise PluginError(f"{self.label}: {e}", StatusCode.INTERNAL) from e
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        self.closed = True
        self._mem.free_all()
        self.module.close()

    def available_for(self, machine: Any) -> str | None:
        if self.closed:
            return "closed"
        if machine is self.machine:
            return None
        if machine.backend == "native" and self.machine.backend == "native":
            return None  # one host address space
        return (f"it lives in another machine ({self.machine.arch.name} {self.machine.backend}); "
                f"load it into the executable's machine")

    def _release(self) -> None:
        super()._release()
        self.module.close()


class _SystemPlugin(_AbiPlugin):
    kind = "system"

    def __init__(self, path: str, params: dict[str, str], *, machine: Any):
        super().__init__()
        self.params = params
        self.source = path
        import elfkit
        try:
            self._lib = elfkit.SystemLibrary(path, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
        except elfkit.ElfkitError as e:
            raise PluginError(f"failed to load dynamic library (possibly not found on any search "
                              f"path): {e}", StatusCode.NOT_FOUND) from None
        qfn = self._lib.address(abi.PLUGIN_QUERY_NAME)
        if not qfn:
            raise PluginError(f"symbol '{abi.PLUGIN_QUERY_NAME}' not found in library {path}",
                              StatusCode.NOT_FOUND)
        if machine is None:
            from elfkit.exec import create_machine
            from elfkit.arch import host
            h = host()
            if h is None:
                raise PluginError("system library plugins need a host elfkit can run natively",
                                  StatusCode.UNAVAILABLE)
            machine = create_machine(h, "native")
            self._own_machine = machine
        elif machine.backend != "native":
            raise PluginError(f"system library plugin {path} cannot use a {machine.backend} "
                              f"machine", StatusCode.INVALID_ARGUMENT)
        self.machine = machine
        self._alloc_machine = machine
        self._mem = GuestMemory(machine)
        query = machine.foreign_function(qfn, parse_signature("ptr(u32,ptr)"))
        try:
            self._init_abi(lambda v, r: query(v, r or None), machine.read_unchecked,
                           self._host_fn)
        except BaseException:
            self.closed = True
            self._mem.free_all()
            raise

    def _host_fn(self, addr: int, signature: str) -> Callable[..., Any]:
        return self.machine.foreign_function(addr, parse_signature(signature))

    def available_for(self, machine: Any) -> str | None:
        if self.closed:
            return "closed"
        if machine.backend != "native":
            return f"a host library cannot serve {machine.backend} {machine.arch.name} code"
        return None

    def _release(self) -> None:
        super()._release()
        own = getattr(self, "_own_machine", None)
        if own is not None:
            own.close()


class _StaticPluginWrapper(ExecutablePlugin):
    kind = "static"

    def __init__(self, obj: Any, params: dict[str, str], *, name: str | None):
        super().__init__()
        if isinstance(obj, Mapping):
            obj = _MappingPlugin(obj, name or "static")
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

    def resolve_slots(self, slots: ImportSlots) -> _Resolved:
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
        return _Resolved(int(StatusCode.NOT_FOUND) if missing else 0, resolution, provided)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        unload = getattr(self.obj, "unload", None)
        if callable(unload):
            unload()


__all__ = ["ExecutablePlugin", "ImportCall", "ImportResolutionError", "ImportSlots", "PluginError",
           "StaticPlugin"]
