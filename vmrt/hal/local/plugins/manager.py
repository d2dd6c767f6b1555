"""The plugin manager: registration order kept, imports resolved newest first.

:class:`PluginManager` keeps plugins in registration order and resolves
imports newest first: a later, more specialised plugin overrides an earlier
one, and whatever it does not know falls through to older plugins.

Plugin specs (``PluginManager.register("...")``, ``vmrt run --executable_plugin``)::

    path/to/plugin.sos            embedded (FatELF: the slice for the machine)
    embedded:path/to/plugin.so    embedded
    system:path/to/plugin.so      system library (dlopen)
    path/to/plugin.so             system library when it is an ELF for this
                                  host, else embedded (IREE always dlopens)
    spec?key=value&key2=value2    parameters passed to the plugin's load()
                                  (vmrt's extension; %XX escapes allowed)
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence

import elfkit
from elfkit import fatelf
from elfkit.arch import host
from elfkit.support import DataRecord

from ....errors import ImportResolutionError, PluginError, StatusCode, VmError
from ....files import MAX_MODULE_SIZE, read_input
from ....vm.lifecycle import Closeable
from .. import library_abi as abi
from ..guest import GuestMemory, code_name
from .plugin import ExecutablePlugin, ImportSlots, normalize_params

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# ---------------------------------------------------------------------------
# Lazily instantiated embedded plugins (one instance per machine)
# ---------------------------------------------------------------------------

class _EmbeddedSource:
    """An embedded plugin registered by spec: the bytes are kept, and the
    plugin is loaded into each machine that needs it (the slice of a FatELF
    matching that machine's architecture)."""

    kind = "embedded"

    def __init__(self, manager: PluginManager, data: bytes, params: dict[str, str], label: str):
        self.manager = manager
        self.data = data
        self.params = params
        self.source = label
        self.instances: list[ExecutablePlugin] = []
        self.arches = _slice_arches(data)

    @property
    def name(self) -> str:
        return self.instances[0].name if self.instances else os.path.basename(self.source)

    @property
    def closed(self) -> bool:
        return bool(self.instances) and all(p.closed for p in self.instances)

    @property
    def label(self) -> str:
        if self.instances:
            return f"plugin '{self.instances[0].name}' (embedded from {self.source})"
        return f"plugin from {self.source}"

    def instance_for(self, machine: Any) -> tuple[ExecutablePlugin | None, str | None]:
        for p in self.instances:
            if p.available_for(machine) is None:
                return p, None
        if machine.arch.name not in self.arches:
            return None, (f"{self.source} has no {machine.arch.name} code "
                          f"(it has: {', '.join(self.arches) or 'nothing loadable'})")
        p = ExecutablePlugin.load(self.data, self.params, arch=machine.arch.name,
                                  machine=machine, label=self.source)
        self.instances.append(p)
        return p, None

    def close(self) -> None:
        for p in reversed(self.instances):
            p.close()


def _identify(data: bytes) -> fatelf.Identity | None:
    """What the file is, or None when it is neither ELF nor FatELF (loading
    it then fails with elfkit's own message)."""
    try:
        return fatelf.identify(data)
    except elfkit.FatElfError:
        return None


def _slice_arches(data: bytes) -> list[str]:
    """The architectures elfkit can load from a plugin file: every known
    slice of a FatELF, the one of a plain ELF."""
    ident = _identify(data)
    return [] if ident is None else [a for a in ident.arches if a]


# ---------------------------------------------------------------------------
# Spec parsing
# ---------------------------------------------------------------------------

class PluginSpec(DataRecord, frozen=True):
    """A parsed ``--executable_plugin`` value."""

    path: str
    kind: str                       # "embedded", "system" or "auto"
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, spec: str) -> PluginSpec:
        kind = "auto"
        for prefix in ("embedded:", "system:"):
            if spec.startswith(prefix):
                kind, spec = prefix[:-1], spec[len(prefix):]
                break
        params: list[tuple[str, str]] = []
        path = spec
        if "?" in spec and not os.path.exists(spec):
            import urllib.parse  # only for a spec with parameters (start-up)
            path, query = spec.split("?", 1)
            for item in query.split("&"):
                if not item:
                    continue
                k, _, v = item.partition("=")
                params.append((urllib.parse.unquote(k), urllib.parse.unquote(v)))
        if kind == "auto" and path.endswith(".sos"):
            kind = "embedded"
        return cls(path, kind, tuple(params))


def _is_host_elf(data: bytes) -> bool:
    h = host()
    ident = _identify(data)
    return (h is not None and ident is not None and ident.kind == "elf"
            and ident.machines[0] == h.machine and ident.word_sizes[0] == h.bits)


# ---------------------------------------------------------------------------
# PluginManager
# ---------------------------------------------------------------------------

class Resolution(DataRecord):
    """The outcome of resolving one batch of imports."""

    names: list[str]
    functions: list[int]
    contexts: list[int]
    providers: list[str | None]      # plugin name per import (None: unresolved optional)
    asked: list[str]                 # what each plugin asked answered, newest first

    def __iter__(self) -> Iterator[tuple[str, int, int, str | None]]:
        return iter(zip(self.names, self.functions, self.contexts, self.providers))


class PluginManager(Closeable):
    """Executable plugins in registration order; imports are resolved newest
    registration first.

        mgr = vmrt.PluginManager()
        mgr.register("standalone.sos")              # embedded; per-arch slices on demand
        mgr.register(MyPythonPlugin())              # static, overrides what it provides
        exe = vmrt.Executable.load("dispatch.so", plugins=mgr)

    The manager owns one machine per architecture (native for the host's,
    emulated for the others, unless ``backend`` says otherwise); executables
    loaded with ``plugins=mgr`` are placed in the same machine as the plugins
    so that import calls stay inside it.
    """

    closed = False  # Closeable: an attribute here, set by close()

    def __init__(self, *, backend: str = "auto", capacity: int | None = None,
                 call_timeout: float | None = None):
        if backend not in ("auto", "native", "emulated"):
            raise PluginError(f"unknown backend {backend!r}", StatusCode.INVALID_ARGUMENT)
        self.backend = backend
        self.capacity = capacity
        #: the default timeout of every call into an emulated machine of this
        #: manager (plugin query/load/resolve, dispatches without their own)
        self.call_timeout = call_timeout
        self._providers: list[Any] = []          # ExecutablePlugin | _EmbeddedSource
        self._machines: dict[str, Any] = {}      # arch name -> machine
        self._owned_machines: list[Any] = []
        self.closed = False

    # -- machines ---------------------------------------------------------------
    def machine(self, arch: Any) -> Any:
        """The manager's machine for ``arch`` (an elfkit arch or its name),
        created on first use."""
        from elfkit import arch as _arch
        a = _arch.get(arch)
        m = self._machines.get(a.name)
        if m is None:
            from elfkit.exec import create_machine
            try:
                m = create_machine(a, self.backend)
            except elfkit.ElfkitError as e:
                raise PluginError(f"cannot create a {self.backend} machine for {a.name}: {e}",
                              StatusCode.UNAVAILABLE) from e
            set_limits = getattr(m, "set_limits", None)     # emulated machines only
            if self.call_timeout is not None and set_limits is not None:
                set_limits(timeout=self.call_timeout)
            self._machines[a.name] = m
            self._owned_machines.append(m)
        return m

    @property
    def machines(self) -> dict[str, Any]:
        return dict(self._machines)

    # -- registration -------------------------------------------------------------
    @property
    def plugins(self) -> list[Any]:
        """Registered providers, oldest first."""
        return list(self._providers)

    def register(self, plugin: Any, params: Mapping[str, str] | None = None, *,
                 arch: Any = None) -> Any:
        """Register a plugin: an :class:`ExecutablePlugin`, a spec string or
        path (see the module doc; parameters from ``?k=v`` and ``params`` are
        merged), or a Python static plugin / mapping.  Embedded plugins are
        loaded at once into the machine for ``arch`` (default: the host's if
        the file has code for it, else its first loadable slice) to report
        errors early, and into other machines when executables need them.
        Returns the registered object."""
        if self.closed:
            raise PluginError("the plugin manager is closed", StatusCode.FAILED_PRECONDITION)
        if self.capacity is not None and len(self._providers) >= self.capacity:
            raise PluginError(f"plugin manager capacity of {self.capacity} reached",
                          StatusCode.RESOURCE_EXHAUSTED)
        if isinstance(plugin, ExecutablePlugin):
            entry: Any = plugin
            if plugin.kind == "embedded" and plugin.machine.arch.name not in self._machines:
                self._machines[plugin.machine.arch.name] = plugin.machine
        elif isinstance(plugin, (str, os.PathLike)):
            entry = self._from_spec(os.fspath(plugin), params, arch)
        else:
            entry = ExecutablePlugin.static(plugin, params)
        self._providers.append(entry)
        return entry

    def require_arches(self, arches: Iterable[str]) -> None:
        """Fail now, like IREE's runtime when it loads an embedded plugin,
        if an embedded plugin has code for none of ``arches`` (the CPUs of
        the program's executables): it could never serve an import."""
        wanted = set(arches)
        if not wanted:
            return
        for entry in self._providers:
            have = getattr(entry, "arches", None)
            if have is not None and not wanted & set(have):
                raise PluginError(
                    f"no ELFs matching the runtime architecture or Linux ABI found in the "
                    f"FatELF; loading plugin from file '{entry.source}' (it has code for "
                    f"{', '.join(have) or 'no known CPU'}; the program's executables are for "
                    f"{', '.join(sorted(wanted))})", StatusCode.INVALID_ARGUMENT)

    def _from_spec(self, text: str, params: Mapping[str, str] | None, arch: Any) -> Any:
        spec = PluginSpec.parse(text)
        merged = dict(spec.params)
        merged.update(normalize_params(params))
        kind = spec.kind
        data: bytes | None = None
        if kind != "system":
            data = read_input(spec.path, "executable plugin", MAX_MODULE_SIZE, PluginError)
            if kind == "auto":
                kind = "system" if _is_host_elf(data) and self.backend != "emulated" \
                    else "embedded"
        if kind == "system":
            native = None
            h = host()
            if h is not None and self.backend != "emulated":
                native = self.machine(h)
            return ExecutablePlugin.system(spec.path, merged, machine=native)
        assert data is not None
        src = _EmbeddedSource(self, data, merged, spec.path)
        if not src.arches:
            raise PluginError(f"loading plugin from file '{spec.path}': not an ELF or FatELF "
                              f"elfkit can load", StatusCode.FAILED_PRECONDITION)
        first = self._default_arch(src.arches, arch)
        src.instance_for(self.machine(first))
        return src

    def _default_arch(self, arches: list[str], arch: Any) -> str:
        from elfkit import arch as _arch
        if arch is not None:
            return _arch.get(arch).name
        h = _arch.host()
        if h is not None and h.name in arches and self.backend != "emulated":
            return h.name
        from elfkit.fatelf import BEST_ORDER
        for name in BEST_ORDER:
            if name in arches:
                return name
        return arches[0]

    # -- resolution ---------------------------------------------------------------
    def resolve_slots(self, slots: ImportSlots, *, what: str = "executable") -> list[str]:
        """Fill ``slots`` newest plugin first (see the module doc); raises
        :class:`ImportResolutionError` listing every missing required import
        and what each plugin answered.  Returns that list of answers."""
        asked: list[str] = []
        if slots.count == 0:
            return asked
        machine = slots.machine
        for entry in reversed(self._providers):
            if isinstance(entry, _EmbeddedSource):
                plugin, why = entry.instance_for(machine)
                if plugin is None:
                    asked.append(f"{entry.label}: skipped, {why}")
                    continue
            else:
                plugin = entry
                why = plugin.available_for(machine)
                if why is not None:
                    asked.append(f"{plugin.label}: skipped, {why}")
                    continue
            r = plugin.resolve_slots(slots)
            for n in r.provided:
                slots.providers[slots.names.index(n)] = plugin.name
            got = f" (provided {', '.join(r.provided)})" if r.provided else ""
            asked.append(f"{plugin.label}: {code_name(r.status)}{got}")
            if r.status == 0:
                if not r.resolution & abi.RESOLUTION_MISSING_OPTIONAL:
                    break
            elif r.status != StatusCode.NOT_FOUND:
                raise PluginError(f"{plugin.label} failed to resolve the imports of {what} "
                                  f"[{', '.join(slots.names)}] with {code_name(r.status)}; "
                                  f"no fallback to older plugins after a hard failure",
                                  r.status)
        missing = slots.missing_required()
        if missing:
            report = self.explain(slots.names, machine, subject=what)
            raise ImportResolutionError(
                f"{what} is missing {len(missing)} required import(s): {', '.join(missing)}\n"
                + (report.format() if self._providers else "no plugins are registered"),
                missing, asked, report=report)
        return asked

    def explain(self, names: Sequence[str], machine: Any, *,
                subject: str = "imports") -> elfkit.ImportReport:
        """Which plugin answers each of ``names`` (``?``-prefixed = optional)
        for code in ``machine``: every plugin is asked for every name, newest
        first, so the report also shows the answers older plugins would have
        given (shadowed) and why a plugin could not serve (skipped)."""
        from elfkit.loader import ProviderNote
        notes: list[ProviderNote] = []
        has: dict[int, set[str]] = {}
        for i, entry in enumerate(reversed(self._providers)):
            label, why, provided = self._ask(entry, names, machine)
            notes.append(ProviderNote(label, why, asked=not why))
            has[i] = provided
        return elfkit.ImportReport.build(
            f"{subject} ({machine.arch.name}, {machine.backend})", notes,
            [(n, abi.is_optional(n)) for n in names], has, optional_outcome="left NULL (optional)")

    def _ask(self, entry: Any, names: Sequence[str], machine: Any) -> tuple[str, str, set[str]]:
        """(label, why it cannot serve or "", the names it provides) of one plugin."""
        if isinstance(entry, _EmbeddedSource):
            plugin, why = entry.instance_for(machine)
            if plugin is None:
                return entry.label, why or "", set()
        else:
            plugin, why = entry, entry.available_for(machine)
            if why is not None:
                return plugin.label, why, set()
        mem = GuestMemory(machine)
        try:
            slots = ImportSlots(mem, list(names))
            r = plugin.resolve_slots(slots)
        except VmError as e:
            return plugin.label, f"resolve failed: {e}", set()
        finally:
            mem.free_all()
        if r.status not in (0, StatusCode.NOT_FOUND):
            return plugin.label, f"resolve failed with {code_name(r.status)}", set()
        return plugin.label, "", set(r.provided) & set(names)

    def resolve(self, names: Sequence[str], machine: Any = None, *,
                arch: Any = None) -> Resolution:
        """Resolve ``names`` for code running in ``machine`` (default: the
        manager's machine for ``arch``, else the host's)."""
        if machine is None:
            machine = self.machine(arch or host())
        mem = GuestMemory(machine)
        try:
            slots = ImportSlots(mem, sorted(names))
            asked = self.resolve_slots(slots, what="the request")
            return Resolution(list(slots.names), list(slots.functions()),
                              list(slots.contexts()), list(slots.providers), asked)
        finally:
            mem.free_all()

    # -- lifetime -------------------------------------------------------------------
    def _close(self) -> None:
        """Unload plugins newest first, then release the machines the manager created."""
        self.closed = True
        errors: list[BaseException] = []
        for entry in reversed(self._providers):
            try:
                entry.close()
            except BaseException as e:  # noqa: BLE001 - keep unloading the others
                errors.append(e)
        self._providers.clear()
        for m in self._owned_machines:
            try:
                m.close()
            except BaseException as e:  # noqa: BLE001 - keep closing the others
                errors.append(e)
        self._owned_machines.clear()
        self._machines.clear()
        if errors:
            raise errors[0]

    def __repr__(self) -> str:
        names = ", ".join(getattr(p, "label", repr(p)) for p in self._providers)
        return f"<vmrt.PluginManager [{names}]>"


def register_plugins(specs: Iterable[str], manager: PluginManager | None = None,
                     **options: Any) -> PluginManager:
    """A manager with one plugin per ``--executable_plugin`` value, registered
    in flag order (so the last flag is asked first)."""
    mgr = manager or PluginManager(**options)
    for spec in specs:
        try:
            mgr.register(spec)
        except VmError as e:
            if manager is None:
                mgr.close()
            e.annotate(f"registering executable plugin '{spec}'")
            raise
    return mgr


__all__ = ["PluginManager", "PluginSpec", "Resolution", "register_plugins"]
