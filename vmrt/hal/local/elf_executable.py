"""ELF executables: dispatch libraries compiled by IREE for CPUs (llvm-cpu);
IREE's ``embedded_elf_loader`` and ``system_library_loader`` with the
executable library's query.

An executable is a bare-metal ELF (what ``iree-compile ...
--iree-hal-dump-executable-binaries-to=DIR`` writes) exporting
``iree_hal_executable_library_query``.  :meth:`ElfExecutable.load` maps it with
:func:`elfkit.load` (natively, or emulated for another CPU), calls the query
with version 6, reads the library's header, export table, dispatch
attributes, names and import table from its memory with the layout of its
word size, resolves the imports through a :class:`~vmrt.hal.local.plugins.manager.PluginManager`
and fills in the environment (import functions, contexts and the import
thunk).  :meth:`ElfExecutable.dispatch` runs every workgroup of a grid over
numpy arrays: the walk is :mod:`vmrt.hal.local.dispatch`'s, which works on
any executable library (:class:`~vmrt.hal.local.local_executable.LocalExecutable`);
this file only loads and describes one.  ``Executable`` is this class's
older, public name (``vmrt.Executable``).

    with vmrt.PluginManager() as mgr:
        mgr.register("standalone.sos")
        exe = vmrt.Executable.load("module_dispatch_0_embedded_elf_x86_64.so", plugins=mgr)
        out = np.zeros(130, np.float32)
        exe.dispatch("tiled_mul", (3, 1, 1), bindings=[a, b, out], constants=[130, 0])

An emulated executable is placed in the plugin manager's machine for its
architecture, the same machine its embedded plugins live in: import calls go
dispatch code -> import thunk -> plugin entirely inside the emulated CPU.
"""
from __future__ import annotations

import os
import struct
import threading
from collections.abc import Sequence
from functools import partial

import elfkit
from elfkit import fatelf

from ...errors import ExecutableError, StatusCode, VmError
from ...files import MAX_MODULE_SIZE, read_input
from ...vm.lifecycle import Closeable
from . import dispatch_args as dargs
from . import fpu_state
from . import library_abi as abi
from .dispatch import dispatch_library
from .export_symbols import name_exports
from .exports import ExportInfo, ImportInfo, find_export
from .guest import GuestMemory, import_thunk, machine_lock
from .library_query import query_library
from .plugins.manager import PluginManager
from .plugins.plugin import ImportSlots
from .plugins.system import host_libraries, system_library_bytes
from .prepared import NativeDispatch, prepare_native, run_prepared
from .soft_float import soft_float_for

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .emulated_workers import EmulatedWorkers

_MAX_EXPORTS = 1 << 16
_MAX_IMPORTS = 1 << 16


def library_arch(data: bytes, arch: Any = None, backend: str = "auto") -> str:
    """The CPU of the ELF (or chosen FatELF slice) ``data`` is for: ``arch``
    if given, else the host's slice when there is one, else (unless
    ``backend`` is "native") the first slice elfkit can run."""
    try:
        rec, _view = fatelf.select(data, arch, fallback=backend != "native")
    except elfkit.ElfkitError as e:
        raise ExecutableError(f"{e}", StatusCode.INVALID_ARGUMENT) from e
    if rec.arch is None:
        raise ExecutableError("the executable is for an architecture elfkit does not know",
                              StatusCode.UNAVAILABLE)
    return rec.arch


def _arch_name(data: bytes, arch: Any, backend: str) -> str | None:
    """The CPU name ``arch`` (a name or an elfkit Arch) stands for, else the
    one :func:`library_arch` picks; None when it cannot tell (the load then
    says why)."""
    if arch is not None:
        return arch if isinstance(arch, str) else getattr(arch, "name", None)
    try:
        return library_arch(data, None, backend)
    except ExecutableError:
        return None


def prefetch_unicorn(arch_name: str, backend: str) -> None:
    """Start opening libunicorn when ``arch_name`` code will be emulated
    (elfkit.exec is imported here: a host-only run needs none of it)."""
    if backend == "native":
        return
    from elfkit.arch import get as get_arch
    from elfkit.exec import choose_backend
    if choose_backend(get_arch(arch_name), backend) == "emulated":
        from elfkit.exec import prefetch_emulator
        prefetch_emulator()


#: the most prepared dispatches an executable keeps (then it starts again)
MAX_PREPARED_KEPT = 4096


class ElfExecutable(Closeable):
    """A loaded dispatch library.  Use :meth:`load`."""

    closed = True   # Closeable: an attribute here, True until loaded

    def __init__(self) -> None:
        self.closed = True
        self._owns_module = True    # False: made with over(), the module's owner closes it
        #: made with over(): what loads the library again for another machine
        self.copy_hook: Any = None
        self._entries: dict[int, Any] = {}          # export ordinal -> dispatch callable
        #: the exports are still to be named (``load(defer_names=True)``)
        self.unnamed = False
        self.defer_names = False
        #: prepare()'s results by (export, grid, constants, bindings, threads):
        #: a command buffer recorded anew each time round a loop (or each call)
        #: runs dispatches prepared before
        self._prepared: dict[tuple[Any, ...], NativeDispatch | None] = {}
        #: per thread, what the dispatch walk keeps between dispatches (native:
        #: a reusable dispatch-state block; see :mod:`vmrt.hal.local.dispatch`)
        self.scratch = threading.local()
        #: emulated, threads > 1: the worker machines (made on first use)
        self.workers: EmulatedWorkers | None = None

    # -- loading ----------------------------------------------------------------
    @classmethod
    def load(cls, source: Any, *, plugins: PluginManager | None = None, arch: Any = None,
             backend: str = "auto", machine: Any = None, name: str | None = None,
             constants: Sequence[int] | None = None,
             processor_data: Sequence[int] | None = None,
             system: bool = False, defer_names: bool = False) -> ElfExecutable:
        """Load a dispatch library from a path, bytes or memoryview (ELF or
        FatELF).  ``plugins`` resolves its imports (and, unless ``machine`` is
        given, provides the machine for its architecture).  ``constants`` are
        executable-level constants (rare); ``processor_data`` the eight u64
        CPU-feature words the environment exposes (zeros by default).
        ``system``: the bytes are a system library (format
        ``system-elf-<arch>``): a shared library whose undefined symbols
        (libm's ``expf``, ``fmaf`` ...) the host's C libraries provide, as
        the platform loader binds them when IREE dlopen()s it; only native
        code can use them (:func:`~vmrt.hal.local.plugins.system.host_libraries`).
        ``defer_names``: name the exports for gdb and perf
        (:func:`name_exports`, which registers the module with gdb again) just
        before the first dispatch instead of now (a HAL device's loads: a
        program's load does not pay for it)."""
        self = cls()
        self.defer_names = defer_names
        self._init(source, plugins, arch, backend, machine, name, constants, processor_data,
                   system)
        return self

    @classmethod
    def over(cls, module: Any, query: int, *, plugins: PluginManager | None = None,
             name: str | None = None, constants: Sequence[int] | None = None,
             processor_data: Sequence[int] | None = None, data: bytes = b"",
             owns_module: bool = False, copy_hook: Any = None) -> ElfExecutable:
        """A dispatch library inside an already-loaded elfkit ``module`` (a
        relocatable object holding IREE static libraries, say): ``query`` is
        the address of its ``*_library_query`` function.  The executable
        has its own environment and imports; closing it leaves ``module``
        open (its owner closes it) unless ``owns_module``.  ``copy_hook(exe)``
        loads it again into a new emulated machine (:meth:`emulated_copy`)."""
        self = cls()
        self.source = module.name
        self.data = data
        self._owns_module = owns_module
        self.copy_hook = copy_hook
        self._attach(module, plugins, name or module.name, query, constants, processor_data)
        return self

    def _init(self, source: Any, plugins: PluginManager | None, arch: Any, backend: str,
              machine: Any, name: str | None, constants: Sequence[int] | None,
              processor_data: Sequence[int] | None, system: bool = False) -> None:
        if isinstance(source, (str, os.PathLike)):
            self.source = os.fspath(source)
            data = read_input(self.source, "executable", MAX_MODULE_SIZE, ExecutableError)
        else:
            self.source = "<memory>"
            data = bytes(source)
        label = name or os.path.basename(self.source)
        if system:
            data = system_library_bytes(data, label)
        #: the library's bytes as loaded (what a dispatch dump writes out)
        self.data = data
        if machine is None and plugins is not None:
            arch_name = library_arch(data, arch, backend)
            prefetch_unicorn(arch_name, backend)   # opens on another thread while this
            load = elfkit.load                      # one imports the loader (first use)
            machine = plugins.machine(arch_name)
            if backend != "auto" and machine.backend != backend:
                raise ExecutableError(
                    f"executable {label}: the plugin manager runs {arch_name} code "
                    f"{machine.backend}, not {backend} (create the manager with "
                    f"backend={backend!r})", StatusCode.INVALID_ARGUMENT)
            arch = arch_name
        else:
            load = elfkit.load
        imports = runtime_imports(data, _arch_name(data, arch, backend))
        host_code = system and _runs_natively(data, arch, backend, machine)
        if host_code:
            for lib in host_libraries(_needed(data)):
                imports.register(lib)
        try:
            self.module = load(data, arch=arch, backend=backend, machine=machine, name=label,
                               imports=imports)
        except elfkit.UnresolvedImportError as e:
            if system and not host_code:
                raise _foreign_system_library(data, label, e.names) from None
            raise ExecutableError(f"loading executable {label}: {e}") from e
        except elfkit.ElfkitError as e:
            raise ExecutableError(f"loading executable {label}: {e}") from e
        self._owns_module = True
        self._attach(self.module, plugins, label, None, constants, processor_data)

    def _attach(self, module: Any, plugins: PluginManager | None, label: str,
                query: int | None, constants: Sequence[int] | None,
                processor_data: Sequence[int] | None) -> None:
        self.module = module
        self.machine = self.module.machine
        self.arch = self.module.arch
        self.backend = self.module.backend
        if self.backend == "emulated":
            # dispatch code never reads the FP flags: let unicorn use the host FPU
            self.machine.raise_inexact_flag()
        self.plugins = plugins
        self._mem = GuestMemory(self.machine)
        self.closed = False
        try:
            self._query(label, query, constants, processor_data)
        except BaseException:
            try:
                self.close()
            except VmError:
                pass        # (a finaliser faulted) the query's error is the one to report
            raise

    def _query(self, label: str, query_addr: int | None, constants: Sequence[int] | None,
               processor_data: Sequence[int] | None) -> None:
        mem, lay = self._mem, self._mem.layout
        if query_addr is None:
            query_addr = self._find_query(label)
        self.env = mem.alloc(lay.env_size, 16)
        pd = list(processor_data or [])[:abi.PROCESSOR_DATA_WORDS]
        pd += [0] * (abi.PROCESSOR_DATA_WORDS - len(pd))
        mem.write(self.env + lay.env_processor, struct.pack("<8Q", *pd))
        self.processor_data = tuple(pd)
        try:
            # a HAL device's load (defer_names) is registered with gdb before its
            # first dispatch, with its exports named: not for the query too
            lib, hdr = query_library(mem, query_addr, self.env, label,
                                     register=not self.defer_names)
            self.version = hdr.version
            self.name = mem.cstr(hdr.name_ptr) or label
            self.features = hdr.features
            self.sanitizer = hdr.sanitizer
            if hdr.version != abi.LIBRARY_VERSION:
                raise ExecutableError(f"executable {label}: library version {hdr.version}, "
                                      f"expected {abi.LIBRARY_VERSION}",
                                      StatusCode.FAILED_PRECONDITION)
            if hdr.sanitizer != abi.Sanitizer.NONE:
                raise ExecutableError(
                    f"executable '{self.name}' requires sanitizer "
                    f"{abi.Sanitizer.describe(hdr.sanitizer)}, which vmrt does not provide",
                    StatusCode.UNAVAILABLE)
            self._library = lib
            self._read_exports(lib)
            if self.defer_names:
                self.unnamed = True         # named by entry(), before the first dispatch
            else:
                name_exports(self.module, self.exports)
            self._bind_constants(lib, constants)
            self._resolve_imports(lib)
        except elfkit.ElfkitError as e:
            raise ExecutableError(f"executable {label}: {e}", StatusCode.INTERNAL) from e

    def _find_query(self, label: str) -> int:
        """The library query: ``iree_hal_executable_library_query``, else the
        one ``<name>_library_query`` a static library object exports."""
        try:
            return self.module.symbol(abi.LIBRARY_QUERY_NAME)
        except elfkit.ElfkitError:
            pass
        static = sorted(n for n in self.module.exports if n.endswith(abi.STATIC_QUERY_SUFFIX))
        if len(static) == 1:
            return int(self.module.exports[static[0]])
        more = f" (it exports {len(static)} static library queries: {', '.join(static)})" \
            if static else ""
        raise ExecutableError(f"executable {label} does not export "
                              f"'{abi.LIBRARY_QUERY_NAME}'{more}", StatusCode.NOT_FOUND)

    def _read_exports(self, lib: abi.LibraryV0) -> None:
        mem, lay = self._mem, self._mem.layout
        n = lib.export_count
        if n > _MAX_EXPORTS:
            raise ExecutableError(f"executable '{self.name}' claims {n} exports")
        if n and not lib.export_ptrs:
            raise ExecutableError(f"executable '{self.name}': {n} exports but no function table")
        ptrs = mem.words(lib.export_ptrs, n)
        names = mem.cstrs(mem.words(lib.export_names, n)) if lib.export_names else [""] * n
        size = lay.attrs_size
        table = mem.read(lib.export_attrs, n * size) if lib.export_attrs and n else b""
        exports: list[ExportInfo] = []
        if table:       # each export's iree_hal_executable_dispatch_attrs_v0_t, in one pass
            page = abi.LOCAL_MEMORY_PAGE_SIZE
            for i, (flags, pages, constants, bindings, sx, sy, sz, params) in enumerate(
                    struct.iter_unpack(lay.attrs_fmt, table)):
                nm = names[i]
                if bindings > abi.MAX_BINDING_COUNT or constants > abi.MAX_CONSTANT_COUNT:
                    raise ExecutableError(
                        f"executable '{self.name}' export {i} ({nm or '?'}): "
                        f"{bindings} bindings / {constants} constants exceed the "
                        f"limits ({abi.MAX_BINDING_COUNT}/{abi.MAX_CONSTANT_COUNT})",
                        StatusCode.OUT_OF_RANGE)
                exports.append(ExportInfo(i, nm or str(i), ptrs[i], flags, bindings, constants,
                                          (sx, sy, sz), pages * page, params))
        else:
            exports = [ExportInfo(i, names[i] or str(i), ptrs[i], 0, 0, 0, (1, 1, 1), 0, 0,
                                  has_attrs=False) for i in range(n)]
        self.exports = exports
        self._by_name = {e.name: e for e in exports}

    def _bind_constants(self, lib: abi.LibraryV0, constants: Sequence[int] | None) -> None:
        need = lib.constant_count
        given = list(constants or [])
        self.constants = tuple(given)
        if need != len(given):
            raise ExecutableError(f"executable '{self.name}' needs {need} executable constant(s), "
                                  f"{len(given)} given", StatusCode.INVALID_ARGUMENT)
        if need:
            addr = self._mem.alloc_bytes(dargs.u32_words(given, "executable constants"), 4)
            self._mem.write_words(self.env, [addr])

    def _resolve_imports(self, lib: abi.LibraryV0) -> None:
        mem, lay = self._mem, self._mem.layout
        n = lib.import_count
        if n > _MAX_IMPORTS:
            raise ExecutableError(f"executable '{self.name}' claims {n} imports")
        self.imports: list[ImportInfo] = []
        if n == 0:
            return
        if not lib.import_symbols:
            raise ExecutableError(f"executable '{self.name}': {n} imports but no symbol table")
        names = [mem.cstr(p) for p in mem.words(lib.import_symbols, n)]
        slots = ImportSlots(mem, names, names_ptr=lib.import_symbols)
        if self.plugins is None:
            required = [x for x in names if not abi.is_optional(x)]
            if required:
                from ...errors import ImportResolutionError
                raise ImportResolutionError(
                    f"executable '{self.name}' is missing {len(required)} required import(s): "
                    f"{', '.join(required)} (no plugin manager was given: "
                    f"Executable.load(..., plugins=manager))", required, [],
                    StatusCode.UNAVAILABLE)
        else:
            self.import_resolution = self.plugins.resolve_slots(
                slots, what=f"executable '{self.name}'")
        fns, ctxs = slots.functions(), slots.contexts()
        self.imports = [ImportInfo(nm, abi.is_optional(nm), f, c, p)
                        for nm, f, c, p in zip(names, fns, ctxs, slots.providers)]
        mem.write_words(self.env + lay.env_import_thunk,
                        [import_thunk(self.machine), slots.functions_ptr, slots.contexts_ptr])

    def emulated_copy(self) -> ElfExecutable:
        """This library loaded again into a new emulated machine (one worker
        of a parallel emulated dispatch), with the same constants and
        processor data."""
        if self.copy_hook is not None:
            copy: ElfExecutable = self.copy_hook(self)
            return copy
        return type(self).load(self.data, arch=self.arch, backend="emulated", name=self.name,
                               constants=self.constants, processor_data=self.processor_data)

    # -- queries --------------------------------------------------------------------
    def export(self, which: str | int | ExportInfo) -> ExportInfo:
        """An export by name (with or without a leading '@') or ordinal."""
        return find_export(self.name, self.exports, self._by_name, which)

    def describe(self) -> str:
        lines = [f"executable '{self.name}' ({self.arch.name}, {self.backend}, "
                 f"library version {self.version})"]
        lines.append(f"  exports ({len(self.exports)}):")
        lines += [f"    {e.describe()}" for e in self.exports]
        lines.append(f"  imports ({len(self.imports)}):")
        for i in self.imports:
            state = f"-> {i.provider}" if i.function else "unresolved (optional)"
            lines.append(f"    {i.name} {state}")
        return "\n".join(lines)

    # -- dispatch (the walk lives in vmrt.hal.local.dispatch) ------------------------
    def dispatch(self, export: str | int | ExportInfo, workgroup_count: Any = (1, 1, 1),
                 bindings: Sequence[Any] = (), constants: Sequence[Any] = (), *,
                 workgroup_size: Sequence[int] | None = None, threads: int = 1,
                 processor_id: int = 0, deadline: float | None = None) -> list[Any]:
        """Run every workgroup of ``workgroup_count`` (an int or an (x, y, z)
        tuple) of ``export`` over ``bindings`` (C-contiguous numpy arrays or
        :class:`vmrt.hal.buffer.HostBytes` ranges, in binding order; what the
        code writes lands in them) with ``constants``
        (ints are stored as u32, floats as f32 bits).  ``threads`` > 1 runs
        independent workgroups on several host threads (an emulated
        executable on one machine per thread: see ``emulated_workers``).
        ``deadline`` (``time.monotonic()`` seconds) stops the dispatch with
        DEADLINE_EXCEEDED: an emulated one inside a workgroup, a native one
        between workgroups.  Inside
        :func:`vmrt.hal.dispatch_observer.workgroup_probe` only chosen
        workgroups run, and an emulated dispatch records its stores.
        Returns ``bindings``.  Thread-safe: an emulated executable runs one
        dispatch at a time per machine (:func:`~vmrt.hal.local.guest.machine_lock`:
        its staged bindings and worker machines are the machine's); native ones
        over HostBytes on one thread run the prepared form (:func:`run_prepared`)."""
        if self.backend == "native":
            if threads == 1 and processor_id == 0 and workgroup_size is None and \
                    run_prepared(self, export, workgroup_count, bindings, constants, deadline):
                return list(bindings)
            return dispatch_library(self, export, workgroup_count, bindings, constants,
                                    workgroup_size=workgroup_size, threads=threads,
                                    processor_id=processor_id, deadline=deadline)
        with machine_lock(self.machine):
            return dispatch_library(self, export, workgroup_count, bindings, constants,
                                    workgroup_size=workgroup_size, threads=threads,
                                    processor_id=processor_id, deadline=deadline)

    def prepare(self, export: str | int | ExportInfo, workgroup_count: Any,
                constants: Sequence[int], binding_count: int, *,
                threads: int = 1) -> NativeDispatch | None:
        """``dispatch(export, workgroup_count, <binding_count bindings>,
        constants, threads=threads)`` checked once, to run many times over
        changing bindings (:class:`NativeDispatch`); None when that does not
        apply (an emulated executable, local memory, more than 4096
        workgroups, arguments dispatch() rejects): call dispatch() then."""
        if self.closed or self.backend != "native":
            return None
        if not isinstance(export, (int, str)):
            return prepare_native(self, export, workgroup_count, constants, binding_count,
                                  threads)
        try:
            grid = (workgroup_count,) if isinstance(workgroup_count, int) else \
                tuple(workgroup_count)
            key = (export, grid, tuple(constants), binding_count, threads)
            return self._prepared[key]
        except KeyError:
            pass
        except TypeError:       # odd arguments: prepare_native reports them
            return prepare_native(self, export, workgroup_count, constants, binding_count,
                                  threads)
        prepared = prepare_native(self, export, workgroup_count, constants, binding_count,
                                  threads)
        if len(self._prepared) >= MAX_PREPARED_KEPT:
            self._prepared.clear()
        self._prepared[key] = prepared
        return prepared

    @property
    def layout(self) -> abi.Layout:
        """The struct layouts of this executable's word size."""
        return self._mem.layout

    def entry(self, exp: ExportInfo) -> Any:
        """The callable of an export's dispatch function (made once): pointers
        are passed as word-sized integers (the same registers; a native call
        converts them in C instead of per argument in Python).  An emulated
        call enters it with denormals flushed to zero, as IREE runs
        dispatches (:mod:`~vmrt.hal.local.fpu_state`)."""
        fn = self._entries.get(exp.ordinal)
        if fn is None:
            if self.unnamed:
                self.unnamed = False
                if self.backend == "emulated":  # named when a report, a profile or gdb needs it
                    self.machine.name_later(self.module, partial(name_exports, self.module,
                                                                 self.exports))
                else:
                    name_exports(self.module, self.exports)
            fn = self._entries[exp.ordinal] = fpu_state.dispatch_entry(
                self.machine, exp.function, self._mem.word)
        return fn

    def workgroup_records(self, wc: tuple[int, int, int], indices: Any, processor_id: int,
                          local_memory: int, local_size: int) -> bytes:
        """Workgroup states for linear workgroup ``indices`` (x fastest), packed
        one after another."""
        return self._mem.layout.workgroup_records(wc, indices, processor_id, local_memory,
                                                  local_size)

    # -- lifetime ---------------------------------------------------------------------
    def check_open(self) -> None:
        if self.closed:
            raise ExecutableError(f"executable '{getattr(self, 'name', '?')}' is closed")

    def _close(self) -> None:
        self.closed = True
        if self.workers is not None:
            self.workers.close()
        self._mem.free_all()
        if not self._owns_module:
            return
        try:
            self.module.close()
        except elfkit.ElfkitError as e:       # its finalisers faulted, say
            raise ExecutableError(f"closing executable '{getattr(self, 'name', '?')}': "
                                  f"{e}") from e

    def __repr__(self) -> str:
        if not hasattr(self, "module"):
            return "<vmrt.Executable (not loaded)>"
        return (f"<vmrt.Executable '{getattr(self, 'name', '?')}' {self.arch.name} {self.backend} "
                f"exports={[e.name for e in getattr(self, 'exports', [])]}>")


def _runs_natively(data: bytes, arch: Any, backend: str, machine: Any) -> bool:
    """Whether the library's code will run on the host CPU (in ``machine``,
    else as ``elfkit.load`` would choose)."""
    if machine is not None:
        return bool(machine.backend == "native")
    from elfkit.arch import get as get_arch
    from elfkit.exec import choose_backend
    try:
        return choose_backend(get_arch(library_arch(data, arch, backend)), backend) == "native"
    except elfkit.ElfkitError:
        return False            # elfkit.load reports it


def _needed(data: bytes) -> list[str]:
    """A system library's ``DT_NEEDED`` sonames ([] when it does not parse:
    elfkit.load then says why)."""
    try:
        return list(elfkit.loader.parse(data).needed)
    except elfkit.ElfkitError:
        return []


def _foreign_system_library(data: bytes, label: str, names: Sequence[str]) -> ExecutableError:
    """The error for a system library whose code is emulated: its undefined
    libc/libm symbols are the host platform's to bind, and vmrt does not
    emulate a C library for another CPU."""
    try:
        arch = library_arch(data, None, "emulated")
    except ExecutableError:
        arch = "another CPU"
    from elfkit.arch import host
    shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    if arch == getattr(host(), "name", None):
        why = ("its code is emulated here (an emulated backend, or --gdb) and the host's "
               "libc/libm cannot serve emulated code; run it natively")
    else:
        why = (f"its code would be emulated here, and vmrt does not emulate another CPU's "
               f"libc/libm (a host system library only runs on its own CPU); run it on an "
               f"{arch} host")
    return ExecutableError(
        f"system library {label} ({arch}) needs the platform C library for {shown}: {why}, "
        f"or compile with --iree-llvmcpu-link-embedded=true", StatusCode.UNAVAILABLE)


def _unwind_personality(*_args: Any) -> int:
    # Only reached when unwinding through dispatch code, which never happens:
    # report "failure" (_URC_FAILURE = 9) like a runtime without unwinder.
    return 9


def runtime_imports(data: bytes | None = None, arch: str | None = None) -> Any:
    """Symbols compiled dispatch code may reference without calling: the ARM
    EHABI personality routines named by .ARM.exidx entries (armv7a
    executables reference __aeabi_unwind_cpp_pr0).  Given the library's
    bytes and CPU, also compiler-rt's soft-float helpers where that CPU's
    ABI passes doubles in integer registers (a static library's object
    leaves them to the host linker: :mod:`~vmrt.hal.local.soft_float`)."""
    imports = elfkit.Imports({f"__aeabi_unwind_cpp_pr{i}": (_unwind_personality,
                                                            "i32(i32,ptr,ptr)")
                              for i in range(3)})
    if data is not None and arch is not None:
        helpers = soft_float_for(data, arch)
        if helpers is not None:
            imports.register(helpers)
    return imports


#: the older, public name of :class:`ElfExecutable` (``vmrt.Executable``)
Executable = ElfExecutable

__all__ = ["ElfExecutable", "Executable", "library_arch", "query_library", "runtime_imports"]
