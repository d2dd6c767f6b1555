"""The ``hal_loader`` module (IREE's ``iree/modules/hal/loader``): executables
for programs compiled with ``--iree-execution-model=inline-dynamic``.

Such a program's ``__init`` asks whether an executable format is supported
(``executable.query_support``), loads the library the compiler embedded in
its rodata (``executable.load``), and its functions look up entry points by
name (``executable.lookup.function``) and dispatch them synchronously over
``vm.buffer`` ranges (``executable.dispatch``: the storage of
``hal_inline`` buffers).  Executables load through vmrt's
:class:`~vmrt.hal.local.loader.ExecutableLoader` (imports resolved by the
``--executable_plugin`` plugins, newest first): natively when built for this
CPU, emulated otherwise, so an aarch64 or riscv32 program runs on x86_64.
Each dispatch runs as IREE's inline dispatch does: one workgroup after
another on the calling thread, workgroup size 1x1x1, processor 0.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from elfkit.support import field

from ...errors import HalError, StatusCode, VmError
from ...hal.dispatch_observer import current_observer
from ...hal.local.loader import STATIC_FORMAT, ExecutableLoader, supports_format
from ...hal.objects import EXECUTABLE_TYPE, HalExecutable
from ...vm.buffer import Buffer
from ...vm.instance import Instance
from ...vm.native_module import NativeModule, NativeState, export
from ..hal.inline import need
from .bindings import dispatch_bindings, observed, storage_pointers

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

VERSION = 1     # the programs of iree-compile 3.13 require hal_loader >= 1

#: most bindings one dispatch takes (IREE's inline dispatch has room for 32)
MAX_BINDINGS = 32
#: most prepared dispatches a context keeps (then they are made again)
MAX_PREPARED = 256


def _text(buf: Any, what: str) -> str:
    return bytes(need(buf, Buffer, what).data).decode("utf-8", "replace")


class LoaderState(NativeState):
    """The ``hal_loader`` module's state in one context: its executable
    loader (and plugins), closed with the context, and what it prepared."""

    #: the context, whose limits bound every dispatch
    context: Any = None
    loader: ExecutableLoader | None = None
    #: (executable, function id, grid, constants, binding count) -> prepared form
    prepared: dict[Any, Any] | None = field(default_factory=dict)
    #: (executable, read-only name buffer) -> function id
    functions: dict[Any, int] | None = field(default_factory=dict)


class HalLoaderModule(NativeModule[LoaderState]):
    """``hal_loader`` version 1; each context has its own executable loader
    (and plugins), closed with the context."""

    name = "hal_loader"
    version = VERSION
    state_class = LoaderState

    def __init__(self, instance: Instance | None = None, executable_plugins: Sequence[str] = (),
                 backend: str = "auto", program_arches: Iterable[str] = (),
                 static_libraries: Sequence[Any] = (), static_arches: Iterable[str] = ()):
        if instance is not None:
            instance.register_type(EXECUTABLE_TYPE)
        super().__init__()
        self.executable_plugins = list(executable_plugins)
        self.backend = backend
        #: the CPUs of the program's embedded executables: a plugin with code
        #: for none of them fails when the context is created, as in IREE
        self.program_arches = set(program_arches)
        #: ``--static_library`` objects: executables of format ``static`` (IREE's
        #: bare-metal configuration: a static library with the inline HAL)
        self.static_libraries = list(static_libraries)
        self.static_arches = list(static_arches)

    # -- state ---------------------------------------------------------------------
    def init_state(self, state: LoaderState, context: Any) -> None:
        state.context = context
        state.loader = ExecutableLoader(self.executable_plugins, backend=self.backend,
                                        call_timeout=getattr(context, "timeout", None),
                                        static_libraries=self.static_libraries,
                                        static_arches=self.static_arches)
        try:
            # like IREE, plugins load with the module: a bad --executable_plugin
            # fails here even if no executable needs it
            if self.executable_plugins:
                state.loader.plugins.require_arches(self.program_arches)
        except BaseException:
            self.free_state(state)
            raise

    def free_state(self, state: LoaderState) -> None:
        loader = state.loader
        if loader is not None:
            state.prepared = state.functions = None
            loader.close()
            state.loader = None

    # -- executables ---------------------------------------------------------------
    @export("executable.query_support", "0r_i")
    def executable_query_support(self, state: Any, executable_format: Any) -> Any:
        return 1 if self._supports(_text(executable_format, "executable format")) else 0

    def _supports(self, fmt: str) -> bool:
        return supports_format(fmt) or (fmt == STATIC_FORMAT and bool(self.static_libraries))

    @export("executable.load", "0rrr_r")
    def executable_load(self, state: Any, executable_format: Any, executable_data: Any,
                        constants: Any) -> Any:
        fmt = _text(executable_format, "executable format")
        data = need(executable_data, Buffer, "executable data").data
        words = None
        if constants is not None:
            raw = need(constants, Buffer, "executable constants").data
            if len(raw) % 4:
                raise HalError("constant buffer data must contain 4-byte elements but data "
                               f"length is {len(raw)}", StatusCode.INVALID_ARGUMENT)
            view = raw if isinstance(raw, memoryview) else memoryview(raw)
            words = list(view.cast("B").cast("I"))
        if not self._supports(fmt):
            raise HalError(f"no executable loader registered for the given executable format "
                           f"'{fmt}'", StatusCode.NOT_FOUND)
        if fmt.startswith(("embedded-elf-", "system-elf-")) and bytes(data[:4]) != b"\x7fELF":
            raise HalError(f"data provided does not contain the ELF identifier ({fmt} "
                           "executable)", StatusCode.FAILED_PRECONDITION)
        try:
            exe = state.loader.load(data, words, executable_format=fmt)
        except VmError as e:
            e.annotate(f"loading {fmt} executable")
            raise
        return HalExecutable(exe, fmt)

    @export("executable.lookup.function", "0rr_I")
    def executable_lookup_function(self, state: Any, executable: Any, name: Any) -> Any:
        """The export's ordinal.  The compiler looks the name (a rodata
        ``vm.buffer``) up at every call: a read-only name is remembered."""
        cache = getattr(state, "functions", None)
        key = (executable, name)
        if cache is not None and key in cache:
            return cache[key]
        exe = need(executable, HalExecutable, "executable").exe
        ordinal = exe.export(_text(name, "function name")).ordinal
        if cache is not None and name.readonly:
            cache[key] = ordinal
        return ordinal

    @export("executable.dispatch", "0rIiiiCiDCrIID_v")
    def executable_dispatch(self, state: Any, executable: Any, entry_point: Any, x: Any, y: Any,
                            z: Any, constants: Any, bindings: Any) -> Any:
        exe = need(executable, HalExecutable, "executable").exe
        if len(bindings) > MAX_BINDINGS:
            raise HalError(f"too many bindings ({len(bindings)}; at most {MAX_BINDINGS})",
                           StatusCode.RESOURCE_EXHAUSTED)
        if not 0 <= entry_point < len(exe.exports):
            raise HalError(f"function id {entry_point & 0xFFFFFFFFFFFFFFFF} out of range (count: "
                           f"{len(exe.exports)}) in executable '{exe.name}'",
                           StatusCode.OUT_OF_RANGE)
        grid = (x & 0xFFFFFFFF, y & 0xFFFFFFFF, z & 0xFFFFFFFF)
        if 0 in grid:
            return
        try:
            deadline = state.context.limits.deadline
        except AttributeError:          # called outside a context
            deadline = None
        words = [c & 0xFFFFFFFF for c in constants]
        observer = current_observer()
        if observer is not None:        # a dispatch tool (--dump_dispatches ...) runs it
            obs = observed(executable, entry_point, grid, words, bindings, deadline,
                           lambda: self._run(exe, entry_point, grid, words, bindings,
                                             deadline))
            if obs is not None:
                observer(obs)
                return
        prepared = self._prepared(state, executable, entry_point, grid, words, len(bindings))
        if prepared is not None:
            direct = storage_pointers(bindings)
            if direct is not None:
                prepared.run(direct[0], direct[1], deadline)
                return
        self._run(exe, entry_point, grid, words, bindings, deadline)

    @staticmethod
    def _run(exe: Any, entry_point: int, grid: tuple[int, int, int], words: list[int],
             bindings: Any, deadline: float | None) -> None:
        with dispatch_bindings(bindings, "hal_loader.executable.dispatch") as views:
            exe.dispatch(entry_point, grid, views, words, workgroup_size=(1, 1, 1),
                         deadline=deadline)


    @staticmethod
    def _prepared(state: Any, executable: HalExecutable, entry_point: int,
                  grid: tuple[int, int, int], words: list[int], binding_count: int) -> Any:
        """The prepared form of a native dispatch (checked once, then run
        over binding pointers), made at its first use and kept with the
        context; None where there is none (emulated, local memory ...) or
        where the export's workgroup size is not IREE's inline 1x1x1."""
        cache = getattr(state, "prepared", None)
        if cache is None:
            return None
        key = (executable, entry_point, grid, tuple(words), binding_count)
        if key in cache:
            return cache[key]
        exe = executable.exe
        prepared = None
        if tuple(exe.exports[entry_point].workgroup_size) == (1, 1, 1):
            prepared = exe.prepare(entry_point, grid, words, binding_count)
        if len(cache) >= MAX_PREPARED:
            cache.clear()
        cache[key] = prepared
        return prepared


__all__ = ["HalLoaderModule", "MAX_BINDINGS", "MAX_PREPARED", "VERSION"]
