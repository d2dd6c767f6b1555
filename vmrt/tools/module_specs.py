"""Module loading for ``vmrt run``: ``--module`` specs, dynamic Python
modules, static-module providers and dependency resolution (iree-run-module's
conventions; see docs/custom-modules.md for the differences).  Function inputs and
outputs live in function_io.py."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence

from elfkit.support import DataRecord, field

from ..errors import LinkError, LoadError, StatusCode, VmError
from ..hal.buffer_view import BUFFER_VIEW_TYPE
from ..vm.context import Context
from ..vm.instance import Instance
from ..vm.module import DependencyFlags, Module
from .providers import (
    BUILTIN,
    ProviderInstance,
    ProviderTable,
    builtin_provider,
    entry_points_of_group,
    load_entry_point,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

DYNAMIC_NATIVE_EXTS = frozenset({"so", "sos", "dll", "dylib"})


class RunOptions(DataRecord):
    """Flags that module providers (e.g. a HAL module) may need."""
    devices: list[str] = field(default_factory=list)
    executable_plugins: list[str] = field(default_factory=list)
    #: ``--static_library`` objects (paths, or bytes through the API)
    static_libraries: list[Any] = field(default_factory=list)
    #: ``--module_mode``: "preload" (module data is writable memory, as IREE
    #: reads the file into) or "mmap" (read-only, as IREE maps the file)
    module_mode: str = "preload"
    extra: dict[str, Any] = field(default_factory=dict)
    #: how executables run: "auto" (natively for this CPU, else emulated) or "emulated"
    backend: str = "auto"
    #: ``--gdb=PORT``: the emulated executables serve gdb on 127.0.0.1:PORT
    gdb: int | None = None
    #: ``--parameters=[SCOPE=]FILE`` values (or, from Python, what
    #: :func:`vmrt.modules.io_parameters.build_indexes` takes)
    parameters: list[Any] = field(default_factory=list)
    #: ``--parameter_mode``: "file" (files mapped) or "preload" (read whole)
    parameter_mode: str = "file"


class ContextSettings(DataRecord):
    """What ``vmrt run`` and ``vmrt test`` read from their shared flags to
    set up a context: ``--module`` specs, providers' options (``--device``,
    ``--executable_plugin``), ``--instruction_budget`` and ``--timeout``."""
    modules: list[str]
    options: RunOptions
    budget: int | None = None
    timeout: float | None = None
    #: ``--trace_execution`` / ``--print_statistics``
    trace_execution: bool = False
    print_statistics: bool = False


def context_settings(flags: Any) -> ContextSettings:
    """:class:`ContextSettings` from parsed flags (``vmrt.tools.flags.Flags``)."""
    from ..errors import UsageError
    mode = flags.values.get("module_mode", "preload")
    if mode not in ("preload", "mmap"):
        raise UsageError(f"unrecognized --module_mode= value '{mode}'")
    parameter_mode = flags.values.get("parameter_mode", "file")
    if parameter_mode not in ("file", "preload"):
        raise UsageError(f"unrecognized --parameter_mode= value '{parameter_mode}'")
    budget = flags.count("instruction_budget")
    timeout = flags.seconds("timeout")
    specs = list(flags.lists["module"])
    if not specs:
        raise UsageError("no --module= specified")
    from .files import MAX_MODULE_SIZE, check_input, check_plugin_specs
    check_plugin_specs(list(flags.lists["executable_plugin"]))
    static = list(flags.lists["static_library"]) if "static_library" in flags.lists else []
    for path in static:
        check_input(path, "static library", MAX_MODULE_SIZE)
    gdb = flags.count("gdb")
    if gdb is not None and gdb > 0xFFFF:
        raise UsageError(f"flag --gdb expects a TCP port (0-65535), got '{flags.values['gdb']}'")
    return ContextSettings(specs, RunOptions(
        static_libraries=static,
        devices=list(flags.lists["device"]),
        executable_plugins=list(flags.lists["executable_plugin"]), module_mode=mode,
        backend="auto" if gdb is None else "emulated", gdb=gdb,
        parameters=list(flags.lists.get("parameters", ())), parameter_mode=parameter_mode),
        budget, timeout, "trace_execution" in flags.bools, "print_statistics" in flags.bools)


def as_list(value: Any, single: tuple[type, ...]) -> list[Any]:
    """An argument of :func:`vmrt.load` or ``run_tests`` that takes one item
    (an instance of ``single``) or several, as a list (None: empty)."""
    if value is None:
        return []
    if isinstance(value, single):
        return [value]
    return list(value)


def static_library_list(value: Any) -> list[Any]:
    """``static_libraries=`` of :func:`vmrt.load` and ``run_tests``: one or
    several paths or bytes objects, as a list (paths as strings)."""
    from ..errors import UsageError
    if value is None:
        return []
    items = [value] if isinstance(value, (str, os.PathLike, bytes, bytearray, memoryview)) \
        else list(value)
    out: list[Any] = []
    for v in items:
        if isinstance(v, (str, os.PathLike)):
            out.append(os.fspath(v))
        elif isinstance(v, (bytes, bytearray, memoryview)):
            out.append(bytes(v))
        else:
            raise UsageError(f"static_libraries: expected paths or bytes, got "
                             f"{type(v).__name__}")
    return out


def builtin_providers() -> list[Any]:
    """vmrt's built-in providers (imported now): the ``hal`` module (host-only
    or device), the inline HAL's ``hal_inline`` and ``hal_loader``, the
    ``vmvx`` module, the ``check`` module (its imports are optional: a
    program runs without it, its expectations are then skipped) and
    ``io_parameters`` (over the run's ``--parameters``).  A run imports each
    only when needed (:class:`~vmrt.tools.providers.ProviderTable`)."""
    return [builtin_provider(name) for name in BUILTIN]


def entry_point_providers() -> list[Any]:
    """Providers published in the ``vmrt.modules`` entry-point group (imported
    now), vmrt's own (the samples) first so that any other package's provider
    of the same name replaces them."""
    return [load_entry_point(ep) for ep in entry_points_of_group()]


def all_providers(extra: Iterable[Any] = ()) -> dict[str, Any]:
    """name -> provider; later sources override earlier ones
    (built-in < entry points < explicitly passed)."""
    table: dict[str, Any] = {}
    for p in [*builtin_providers(), *entry_point_providers(), *extra]:
        table[p.name] = p
    return table


# ----------------------------------------------------------- module specs ---
class ModuleSpec(DataRecord, frozen=True, slots=True):
    path: str
    export: str
    params: tuple[tuple[str, str], ...]

    @property
    def kind(self) -> str:
        if self.path == "-":
            return "stdin"
        ext = os.path.basename(self.path).rpartition(".")[2].lower() \
            if "." in os.path.basename(self.path) else ""
        if ext == "py":
            return "python"
        if ext in DYNAMIC_NATIVE_EXTS:
            return "native"
        return "bytecode"


def split_params(text: str) -> tuple[tuple[str, str], ...]:
    text = text.strip()
    if text.startswith("&"):
        text = text[1:]
    if text.endswith("&"):
        text = text[:-1]
    text = text.strip()
    if not text:
        return ()
    out = []
    for piece in text.split("&"):
        k, _, v = piece.partition("=")
        out.append((k, v))
    return tuple(out)


def parse_module_spec(value: str) -> ModuleSpec:
    """``PATH[@EXPORT][?PARAMS]``; as a vmrt extension ``PATH?PARAMS`` is
    accepted too for Python/native dynamic modules."""
    path, at, rest = value.partition("@")
    export, _, params = rest.partition("?")
    if not at and "?" in path:
        base, _, maybe = path.partition("?")
        if ModuleSpec(base, "", ()).kind in ("python", "native"):
            path, params = base, maybe
    return ModuleSpec(path, export, split_params(params))


def load_python_module(instance: Instance, spec: ModuleSpec) -> Module:
    """Import ``spec.path`` and call ``create_fn(instance, params)``."""
    fn_name = spec.export or "create_module"
    path = spec.path
    if not os.path.isfile(path):
        raise LoadError(f"failed to load dynamic module (file not found): '{path}'",
                        StatusCode.NOT_FOUND)
    mod_name = "_vmrt_dynamic_" + re.sub(r"\W", "_", os.path.abspath(path))
    import importlib.util  # only for Python module files (start-up time)
    try:
        pyspec = importlib.util.spec_from_file_location(mod_name, path)
        if pyspec is None or pyspec.loader is None:
            raise ImportError("not a Python source file")
        pymod = importlib.util.module_from_spec(pyspec)
        sys.modules[mod_name] = pymod
        pyspec.loader.exec_module(pymod)
    except VmError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the user's module file
        raise LoadError(f"failed to load dynamic module: {type(e).__name__}: {e}",
                        StatusCode.NOT_FOUND) from None
    create = getattr(pymod, fn_name, None)
    if not callable(create):
        raise LoadError(f"symbol '{fn_name}' not found in library", StatusCode.NOT_FOUND)
    try:
        module = create(instance, dict(spec.params))
    except VmError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the user's create function
        raise LoadError(f"{fn_name} failed: {type(e).__name__}: {e}", StatusCode.INTERNAL) from None
    if not isinstance(module, Module):
        raise LoadError(f"{fn_name} returned {type(module).__name__}, not a vmrt.Module",
                        StatusCode.INTERNAL)
    return module


def load_module_spec(instance: Instance, spec: ModuleSpec, stdin: Any = None) -> Module:
    from ..bytecode.module import BytecodeModule
    from .files import MAX_MODULE_SIZE, read_input
    kind = spec.kind
    try:
        if kind == "python":
            return load_python_module(instance, spec)
        if kind == "native":
            raise LoadError("native dynamic libraries are not supported by vmrt; write the module "
                          "in Python and pass it as FILE.py@create_fn", StatusCode.UNIMPLEMENTED)
        if kind == "stdin":
            data = (stdin or sys.stdin.buffer).read()
            return BytecodeModule(instance, data, source="-")
        data = read_input(spec.path, "module file", MAX_MODULE_SIZE, LoadError)   # no FIFOs
        return BytecodeModule(instance, data, source=spec.path)
    except VmError as e:
        what = "dynamic" if kind in ("python", "native") else "bytecode"
        e.annotate(f"loading {what} module at '{spec.path}'")
        raise


def _load_user_module(instance: Instance, item: Any, stdin: Any) -> Module:
    if isinstance(item, str):
        return load_module_spec(instance, parse_module_spec(item), stdin)
    from ..bytecode.module import BytecodeModule
    from .files import MAX_MODULE_SIZE, read_input
    try:
        if isinstance(item, os.PathLike):   # bounded; a FIFO or device is refused
            path = os.fspath(item)
            return BytecodeModule(instance, read_input(path, "module file", MAX_MODULE_SIZE,
                                                       LoadError), source=path)
        return BytecodeModule.load(instance, item)
    except VmError as e:
        where = "<memory>" if isinstance(item, (bytes, bytearray, memoryview)) \
            else os.fspath(item)
        e.annotate(f"loading bytecode module at '{where}'")
        raise


def _is_bytecode(item: Any) -> bool:
    if isinstance(item, str):
        return parse_module_spec(item).kind in ("bytecode", "stdin")
    return not isinstance(item, Module)


def load_user_modules(instance: Instance, specs: Sequence[Any], providers: ProviderTable,
                      stdin: Any = None) -> list[Module]:
    """Load the ``--module`` values in order.  An item may also be a module
    already loaded (used as is) or bytecode as a path object or bytes (a
    path object is never parsed as a spec: ``@`` and ``?`` stay literal).
    Before each bytecode module the providers' types are registered (IREE's
    REGISTER_TYPES hook), except for providers whose module was given
    explicitly (its own types win); the types of a provider not imported yet
    are registered when a type lookup first misses (:class:`ProviderInstance`)."""
    user: list[Module] = []
    for item in specs:
        if _is_bytecode(item):
            providers.due(instance, {m.name for m in user})
        if isinstance(item, Module):
            user.append(item)
        elif isinstance(item, (str, os.PathLike, bytes, bytearray, memoryview)):
            user.append(_load_user_module(instance, item, stdin))
        else:
            raise VmError(f"cannot use a {type(item).__name__} as a module (expected a "
                          "vmrt.Module, a module spec string, a path or bytes)",
                          StatusCode.INVALID_ARGUMENT)
    return user


def resolve_modules(instance: Instance, user_modules: Sequence[Module],
                    providers: ProviderTable, options: RunOptions) -> list[Module]:
    """Insert provider-made modules for dependencies not already present.
    Providers see the user modules as ``options.extra["modules"]`` (the
    ``hal`` provider picks its device module when a program needs it)."""
    options.extra.setdefault("modules", tuple(user_modules))
    resolved: list[Module] = []
    for m in user_modules:
        for dep in m.dependencies():
            if any(r.name == dep.name for r in resolved):
                continue
            prov = providers.get(dep.name)
            if prov is None:
                if dep.flags & DependencyFlags.OPTIONAL:
                    continue
                raise LinkError(
                    f"required module '{dep.name}' not available in the build (modules must be "
                    "registered in order with dependent modules following those they depend "
                    f"upon)", StatusCode.NOT_FOUND).annotate(
                        f"resolving dependencies for '{m.name}'")
            try:
                resolved.append(_create(prov, instance, options))
            except VmError as e:
                e.annotate(f"resolving dependencies for '{m.name}'")
                raise
        resolved.append(m)
    return resolved


def _create(prov: Any, instance: Instance, options: RunOptions) -> Module:
    return prov.create(instance, options)


class LoadedModules(DataRecord):
    """The user modules loaded on a fresh instance, with the provider table
    that resolves their dependencies (what :func:`new_context` needs to make
    any number of contexts over them, as iree-check-module does per test)."""
    instance: Instance
    user: list[Module]
    providers: ProviderTable


def load_modules(user: Sequence[Any], providers: Iterable[Any] = (), *,
                 stdin: Any = None) -> LoadedModules:
    """A fresh instance and the ``user`` modules loaded in order (the last is
    the main one), provider types registered before each bytecode module."""
    table = ProviderTable(providers)
    instance = ProviderInstance(table)
    instance.register_type(BUFFER_VIEW_TYPE)
    try:
        loaded = load_user_modules(instance, user, table, stdin)
    except VmError as e:
        e.annotate("loading modules and dependencies")
        raise
    return LoadedModules(instance, loaded, table)


def new_context(loaded: LoadedModules, options: RunOptions, *, budget: int | None = None,
                timeout: float | None = None, trace: Any = None,
                statistics: bool = False) -> Context:
    """A context over ``loaded.user`` with fresh provider modules (``hal``
    with ``options``' devices and plugins ...) inserted for their
    dependencies; ``trace`` / ``statistics`` as for :class:`vmrt.Context`."""
    try:
        modules = resolve_modules(loaded.instance, loaded.user, loaded.providers, options)
        return Context(loaded.instance, modules, budget=budget, timeout=timeout, trace=trace,
                       statistics=statistics)
    except VmError as e:
        e.annotate("creating VM context")
        raise


def create_context(user: Sequence[Any], options: RunOptions, providers: Iterable[Any] = (),
                   *, stdin: Any = None, budget: int | None = None,
                   timeout: float | None = None, trace: Any = None,
                   statistics: bool = False) -> tuple[Context, list[Module]]:
    """What ``vmrt run`` and :func:`vmrt.load` share: :func:`load_modules`
    then :func:`new_context`.  Returns the context and the user modules."""
    loaded = load_modules(user, providers, stdin=stdin)
    if options.gdb is not None:
        # the emulated machine that runs the executables stops at its first
        # instruction and waits for gdb (elfkit's gdb stub)
        from elfkit.exec import request_gdb
        request_gdb(options.gdb)
    ctx = new_context(loaded, options, budget=budget, timeout=timeout, trace=trace,
                      statistics=statistics)
    return ctx, loaded.user
