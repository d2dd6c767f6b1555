"""The device ``hal`` module: runs programs compiled for the ``local`` HAL
device with the ``llvm-cpu`` backend (``iree-compile
--iree-hal-target-device=local --iree-hal-local-target-device-backends=llvm-cpu``).

It extends the host-only :class:`vmrt.modules.hal.inline.HalModule` with what such programs
import: devices (``--device=local-sync`` / ``local-task``, queues synchronous
here), device queries, allocators, queue operations, fences, files over
memory, command buffers and executables.  ``hal.executable.create`` loads the
ELF dispatch library the compiler embedded in the module's rodata through
:class:`vmrt.hal.local.executable.ExecutableLoader` (imports resolved by the
``--executable_plugin`` plugins, newest first), natively when it is built for
this host and emulated otherwise — so a program compiled for aarch64 runs
on x86_64, which iree-run-module refuses.  The imports implemented are the
exports below, each with the cconv the pip compiler (3.13) emits; any other
``hal.*`` import fails to link with an error naming it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from elfkit.support import field

from ...errors import HalError, StatusCode, VmError
from ...hal.buffer import HalBuffer, buffer_range, byte_view, new_buffer
from ...hal.buffer_view import BufferView
from ...hal.command_buffer import CommandBuffer, fill_range
from ...hal.local.device import Device
from ...hal.objects import ALL_TYPES, Allocator, Fence, HalExecutable, HalFile, check_waits
from ...hal.statistics import DeviceStatistics
from ...vm.buffer import Buffer
from ...vm.instance import Instance
from ...vm.module import Function
from ...vm.native_module import NativeState, export
from .fast import FAST
from .inline import DebugSink, HalModule, assert_buffer_view, subspan
from .inline import need as _need
from .task import TaskTopology

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

VERSION = 7     # the programs of iree-compile 3.13 require hal >= 7


def _text(buf: Any) -> str:
    if buf is None:
        return ""
    return bytes(_need(buf, Buffer, "string buffer").data).decode("utf-8", "replace")


def _vm_bytes(buf: Any, offset: int, length: int, what: str) -> Any:
    """A byte memoryview of a ``vm.buffer`` range (zero-copy; read-only for rodata)."""
    data = _need(buf, Buffer, what).data
    size = len(data)
    if length == -1:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise HalError(f"{what}: range [{offset}, {offset + length}) is out of bounds of a "
                      f"{size}-byte buffer", StatusCode.OUT_OF_RANGE)
    return byte_view(data)[offset:offset + length]


class HalState(NativeState):
    """The ``hal`` module's state in one context (IREE's
    ``iree_hal_module_state_t``): the devices, the statistics they count into,
    and the context's own copies of imported module constants."""

    #: the context, whose limits (replaced per invocation) bound every dispatch
    context: Any = None
    devices: list[Device] = field(default_factory=list)
    #: shared by the devices when the context collects statistics
    statistics: DeviceStatistics | None = None
    #: (rodata vm.buffer id, offset, length) -> (the buffer, this context's copy)
    imported: dict[tuple[int, int, int], tuple[Buffer, HalBuffer]] = \
        field(default_factory=dict)


class HalDeviceModule(HalModule[HalState]):
    """``hal`` with devices; its per-context state (:class:`HalState`) holds
    the devices."""

    version = VERSION
    state_class = HalState

    def __init__(self, instance: Instance | None = None, devices: Sequence[str] = (),
                 executable_plugins: Sequence[str] = (), backend: str = "auto",
                 program_arches: Iterable[str] = (), module_mode: str = "preload",
                 debug_sink: DebugSink | None = None, task: TaskTopology | None = None,
                 static_libraries: Sequence[Any] = (), static_arches: Iterable[str] = ()):
        if instance is not None:
            for t in ALL_TYPES:
                instance.register_type(t)
        super().__init__(instance, debug_sink)
        self.device_uris = list(devices) or ["local-task"]
        self.executable_plugins = list(executable_plugins)
        #: ``--static_library`` objects: the devices' static library loader
        self.static_libraries = list(static_libraries)
        self.static_arches = sorted(static_arches)
        self.backend = backend
        #: the CPUs of the program's embedded executables: a plugin with code
        #: for none of them fails when the device is created, as in IREE
        self.program_arches = set(program_arches)
        #: "mmap": imported module data is read-only to transfers (IREE maps
        #: the file read-only); "preload": writable (IREE reads it into memory)
        self.module_mode = module_mode
        #: --task_* flags: worker count and per-worker local memory of local-task
        self.task = task
        self.local_memory_limit = task.local_memory() if task is not None else None
        # fail early on a device URI vmrt cannot provide
        for uri in self.device_uris:
            Device(uri)

    # -- state ---------------------------------------------------------------------
    def init_state(self, state: HalState, context: Any) -> None:
        state.context = context
        timeout = getattr(context, "timeout", None)
        state.devices = [Device(u, self.executable_plugins, self.backend, call_timeout=timeout,
                                static_libraries=self.static_libraries,
                                static_arches=self.static_arches)
                         for u in self.device_uris]
        if self.task is not None:
            for d in state.devices:
                if d.identifier == "local-task":
                    d.dispatch_threads = self.task.workers()
        # Context(statistics=True): the devices count allocations and dispatches
        if getattr(context, "collect_statistics", False):
            state.statistics = DeviceStatistics()
            for d in state.devices:
                d.statistics = state.statistics
        # like IREE, plugins load when the device is created: a bad
        # --executable_plugin fails here even if no executable needs it
        try:
            for d in state.devices:
                if d.plugin_specs:
                    d.loader.plugins.require_arches(self.program_arches)
                if d.static_libraries:
                    _ = d.loader    # IREE queries static libraries when the device is made
        except BaseException:
            self.free_state(state)
            raise

    def free_state(self, state: HalState) -> None:
        for d in state.devices:
            d.close()

    def statistics(self, state: HalState) -> DeviceStatistics | None:
        """The devices' :class:`DeviceStatistics` when the context collects them."""
        return state.statistics

    def converting_caller(self, state: HalState, function: Function, result_codes: str,
                          note: str) -> Callable[..., tuple[Any, ...]] | None:
        """The per-dispatch imports get single-frame callers
        (:mod:`vmrt.modules.hal.fast`) in front of the generic one."""
        generic = super().converting_caller(state, function, result_codes, note)
        make = FAST.get(function.name)
        if generic is None or make is None:
            return generic
        return make(state, generic, f"while invoking native function {self.name}."
                    f"{function.name}", note)

    # -- devices -------------------------------------------------------------------
    @export("devices.count", "0v_i")
    def devices_count(self, state: HalState) -> int:
        return len(state.devices)

    @export("devices.get", "0i_r")
    def devices_get(self, state: HalState, index: int) -> Any:
        if not 0 <= index < len(state.devices):
            raise HalError(f"device index {index} out of bounds ({len(state.devices)} "
                          "device(s) available)", StatusCode.OUT_OF_RANGE)
        return state.devices[index]

    @export("device.allocator", "0r_r")
    def device_allocator(self, state: HalState, device: Any) -> Any:
        return _need(device, Device, "device").allocator

    @export("device.query.i64", "0rrr_iI")
    def device_query_i64(self, state: HalState, device: Any, category: Any,
                         key: Any) -> tuple[int, int]:
        value = _need(device, Device, "device").query_i64(_text(category), _text(key))
        return (0, 0) if value is None else (1, value)

    # -- allocators and buffers ----------------------------------------------------
    @export("allocator.allocate", "0rIiiI_r")
    def allocator_allocate(self, state: HalState, allocator: Any, affinity: int, memory_types: int,
                           usage: int, size: int) -> Any:
        buf = new_buffer(size, "hal.allocator.allocate")
        stats = _need(allocator, Allocator, "allocator").device.statistics
        if stats is not None:
            stats.record_allocation(buf, memory_types)
        return buf

    @export("allocator.import", "0riIiirII_r")
    def allocator_import(self, state: HalState, allocator: Any, try_: int, affinity: int,
                         memory_types: int, usage: int, source: Any, offset: int,
                         length: int) -> Any:
        """Host memory is device memory here.  A mutable ``vm.buffer`` is
        imported zero-copy.  Module rodata is imported as this context's own
        aligned, writable copy, made once per range: a dispatch may write
        into an imported constant in place (sorts, scatters, inserts into a
        constant tensor) and later reads in the same context see it, as in
        IREE, but the module's bytes and every other context stay as loaded.
        With ``module_mode="mmap"`` the copy is read-only, as IREE's mapping
        of the file is: transfers into it fail (PERMISSION_DENIED) and
        dispatches get it as a read-only binding (an emulated store into it
        is PERMISSION_DENIED; a native one can only reach the private copy,
        never the module or the file, so it cannot fault the process)."""
        _need(allocator, Allocator, "allocator")
        view = _vm_bytes(source, offset, length, "hal.allocator.import source")
        if not source.readonly:
            return HalBuffer(view)
        cache = state.imported
        key = (id(source), offset, len(view))
        hit = cache.get(key)
        if hit is None:
            copy = new_buffer(len(view), "hal.allocator.import")
            copy.bytes[:] = view
            if self.module_mode == "mmap":             # read-only from here on
                copy = HalBuffer(copy.bytes, read_only=True, address=copy.address)
            hit = cache[key] = (source, copy)          # the source keeps its id alive
        return hit[1]

    @export("buffer.assert", "0rrrIii_v")
    def buffer_assert(self, state: HalState, buffer: Any, message: Any, allocator: Any,
                      minimum_length: int, memory_types: int, usage: int) -> None:
        buf = buffer if buffer.__class__ is HalBuffer else \
            _need(buffer, HalBuffer, f"{_text(message)} buffer")     # (the message: errors only)
        _need(allocator, Allocator, "allocator")
        if len(buf) < minimum_length:
            raise HalError(f"{_text(message)} buffer byte length {len(buf)} less than expected "
                          f"minimum {minimum_length}", StatusCode.INVALID_ARGUMENT)

    @export("buffer.subspan", "0rII_r")
    def buffer_subspan(self, state: HalState, buffer: Any, offset: int, length: int) -> Any:
        return subspan(_need(buffer, HalBuffer, "buffer"), offset, length, "hal.buffer.subspan")

    @export("buffer_view.assert", "0rriiCID_v")
    def buffer_view_assert(self, state: HalState, view: Any, message: Any, element_type: int,
                           encoding_type: int, shape: list[int]) -> None:
        name = _text(message)
        assert_buffer_view(_need(view, BufferView, f"{name} buffer view"), name, element_type,
                           encoding_type, shape)

    # -- files ---------------------------------------------------------------------
    @export("ex.file.from_memory", "0rIirIIi_r")
    def file_from_memory(self, state: HalState, device: Any, affinity: int, access: int,
                         buffer: Any, offset: int, length: int, flags: int) -> Any:
        _need(device, Device, "device")
        return HalFile(_vm_bytes(buffer, offset, length, "hal.ex.file.from_memory"))

    # -- fences --------------------------------------------------------------------
    @export("fence.create", "0rI_r")
    def fence_create(self, state: HalState, device: Any, flags: int) -> Any:
        if device.__class__ is not Device:
            _need(device, Device, "device")
        return Fence()

    @export("fence.join", "0ICrD_r")
    def fence_join(self, state: HalState, flags: int, fences: list[Any]) -> Any:
        fences = [_need(f, Fence, "fence") for f in fences if f is not None]
        if not fences:
            return None
        failed = [f.status for f in fences if f.status not in (None, 0)]
        if failed:
            return Fence(failed[0])
        return Fence(0 if all(f.status == 0 for f in fences) else None)

    @export("fence.query", "0r_i")
    def fence_query(self, state: HalState, fence: Any) -> int:
        status = _need(fence, Fence, "fence").status
        return int(StatusCode.DEFERRED) if status is None else status

    @export("fence.signal", "0r_v")
    def fence_signal(self, state: HalState, fence: Any) -> None:
        _need(fence, Fence, "fence").signal()

    @export("fence.fail", "0ri_v")
    def fence_fail(self, state: HalState, fence: Any, status: int) -> None:
        _need(fence, Fence, "fence").fail(status & 0x1F)

    @export("fence.await", "0iICrD_i")
    def fence_await(self, state: HalState, timeout_millis: int, flags: int,
                    fences: list[Any]) -> int:
        for f in fences:
            if f is None:
                continue
            if f.__class__ is not Fence:
                _need(f, Fence, "fence")
            status = f.status
            if status is None:
                return int(StatusCode.DEADLINE_EXCEEDED)
            if status:
                return status
        return 0

    # -- queue ---------------------------------------------------------------------
    def _queue(self, device: Any, wait: Any, signal: Any, what: str) -> None:
        """Checks the operands every queue operation shares: a device, a
        signalled wait fence (or none), a signal fence (or none)."""
        if device.__class__ is not Device:
            _need(device, Device, "device")
        if wait is not None:
            if wait.__class__ is not Fence:
                _need(wait, Fence, "wait fence")
            if wait.status != 0:
                check_waits(wait, what)
        if signal is not None and signal.__class__ is not Fence:
            _need(signal, Fence, "signal fence")

    @export("device.queue.alloca", "0rIrrIiiII_r")
    def queue_alloca(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                     pool: int, memory_types: int, usage: int, size: int, flags: int) -> Any:
        if device.__class__ is not Device or wait is not None or \
                (signal is not None and signal.__class__ is not Fence):
            self._queue(device, wait, signal, "hal.device.queue.alloca")
        buf = new_buffer(size, "hal.device.queue.alloca")
        if device.statistics is not None:
            device.statistics.record_allocation(buf, memory_types)
        if signal is not None:
            signal.signal()
        return buf

    @export("device.queue.dealloca", "0rIrrrI_v")
    def queue_dealloca(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                       buffer: Any, flags: int) -> None:
        self._queue(device, wait, signal, "hal.device.queue.dealloca")
        _need(buffer, HalBuffer, "buffer")
        if signal is not None:
            signal.signal()

    @export("device.queue.fill", "0rIrrrIIIiI_v")
    def queue_fill(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                   target: Any, offset: int, length: int, pattern: int, pattern_length: int,
                   flags: int) -> None:
        what = "hal.device.queue.fill"
        self._queue(device, wait, signal, what)
        buf = _need(target, HalBuffer, "target buffer")
        data = buffer_range(buf, offset, length, what)
        if pattern_length not in (1, 2, 4, 8):
            raise HalError(f"{what}: pattern length {pattern_length} must be 1, 2, 4 or 8",
                          StatusCode.INVALID_ARGUMENT)
        raw = (pattern & ((1 << (8 * pattern_length)) - 1)).to_bytes(pattern_length, "little")
        fill_range(buf, offset, len(data), raw, what)
        if signal is not None:
            signal.signal()

    @export("device.queue.update", "0rIrrrIrIII_v")
    def queue_update(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                     source: Any, source_offset: int, target: Any, target_offset: int, length: int,
                     flags: int) -> None:
        what = "hal.device.queue.update"
        self._queue(device, wait, signal, what)
        src = _vm_bytes(source, source_offset, length, f"{what} source")
        self._write(target, target_offset, src, what)
        if signal is not None:
            signal.signal()

    @export("device.queue.copy", "0rIrrrIrIII_v")
    def queue_copy(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                   source: Any, source_offset: int, target: Any, target_offset: int, length: int,
                   flags: int) -> None:
        what = "hal.device.queue.copy"
        self._queue(device, wait, signal, what)
        src = bytes(buffer_range(_need(source, HalBuffer, "source buffer"), source_offset,
                                 length, f"{what} source"))
        self._write(target, target_offset, src, what)
        if signal is not None:
            signal.signal()

    @export("device.queue.read", "0rIrrrIrIII_v")
    def queue_read(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                   source_file: Any, source_offset: int, target: Any, target_offset: int,
                   length: int, flags: int) -> None:
        what = "hal.device.queue.read"
        self._queue(device, wait, signal, what)
        f = _need(source_file, HalFile, "source file")
        if source_offset < 0 or length < 0 or source_offset + length > len(f.data):
            raise HalError(f"{what}: range [{source_offset}, {source_offset + length}) is out "
                          f"of bounds of a {len(f.data)}-byte file", StatusCode.OUT_OF_RANGE)
        self._write(target, target_offset, f.data[source_offset:source_offset + length], what)
        if signal is not None:
            signal.signal()

    @export("device.queue.write", "0rIrrrIrIII_v")
    def queue_write(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                    source: Any, source_offset: int, target_file: Any, target_offset: int,
                    length: int, flags: int) -> None:
        what = "hal.device.queue.write"
        self._queue(device, wait, signal, what)
        f = _need(target_file, HalFile, "target file")
        src = buffer_range(_need(source, HalBuffer, "source buffer"), source_offset, length,
                           f"{what} source")
        if f.data.readonly:
            raise HalError(f"{what}: the file is read-only", StatusCode.PERMISSION_DENIED)
        if target_offset < 0 or target_offset + length > len(f.data):
            raise HalError(f"{what}: range [{target_offset}, {target_offset + length}) is out "
                          f"of bounds of a {len(f.data)}-byte file", StatusCode.OUT_OF_RANGE)
        f.data[target_offset:target_offset + length] = src
        if signal is not None:
            signal.signal()

    @staticmethod
    def _write(target: Any, offset: int, data: Any, what: str) -> None:
        buf = _need(target, HalBuffer, "target buffer")
        buf.writable(what)
        buffer_range(buf, offset, len(data), what)[:] = data

    @export("device.queue.barrier", "0rIrrI_v")
    def queue_barrier(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                      flags: int) -> None:
        self._queue(device, wait, signal, "hal.device.queue.barrier")
        if signal is not None:
            signal.signal()

    @export("device.queue.execute", "0rIrrrI_v")
    def queue_execute(self, state: HalState, device: Any, affinity: int, wait: Any, signal: Any,
                      command_buffer: Any, flags: int) -> None:
        self._submit(state, device, wait, signal, command_buffer, (),
                     "hal.device.queue.execute")

    @export("device.queue.execute.indirect", "0rIrrrICrIID_v")
    def queue_execute_indirect(self, state: HalState, device: Any, affinity: int, wait: Any,
                               signal: Any, command_buffer: Any, flags: int,
                               table: list[tuple[Any, int, int]]) -> None:
        for entry in table:
            buf = entry[0]
            if buf is not None and buf.__class__ is not HalBuffer:
                for i, (buf, _offset, _length) in enumerate(table):
                    if buf is not None and not isinstance(buf, HalBuffer):
                        _need(buf, HalBuffer, f"binding {i}")
                break
        self._submit(state, device, wait, signal, command_buffer, table,
                     "hal.device.queue.execute.indirect")

    def _submit(self, state: HalState, device: Any, wait: Any, signal: Any, command_buffer: Any,
                table: Sequence[Any], what: str) -> None:
        if device.__class__ is not Device or signal.__class__ is not Fence or \
                wait.__class__ is not Fence or wait.status != 0:
            self._queue(device, wait, signal, what)
        if command_buffer is not None:
            cb = command_buffer
            if cb.__class__ is not CommandBuffer:
                cb = _need(command_buffer, CommandBuffer, "command buffer")
            try:
                deadline = state.context.limits.deadline
            except AttributeError:          # called outside a context
                deadline = None
            try:
                cb.execute(table, deadline=deadline)
            except VmError:
                if signal is not None:
                    signal.fail(int(StatusCode.ABORTED))
                raise
        if signal is not None:
            signal.signal()

    @export("device.queue.flush", "0rI_v")
    def queue_flush(self, state: HalState, device: Any, affinity: int) -> None:
        _need(device, Device, "device")

    # -- executables ---------------------------------------------------------------
    @export("executable.create", "0rIrrr_r")
    def executable_create(self, state: HalState, device: Any, affinity: int,
                          executable_format: Any, executable_data: Any, constants: Any) -> Any:
        dev = _need(device, Device, "device")
        fmt = _text(executable_format)
        data = _vm_bytes(executable_data, 0, -1, "executable data")
        consts = None
        if constants is not None:
            raw = _vm_bytes(constants, 0, -1, "executable constants")
            consts = list(raw[:len(raw) // 4 * 4].cast("I"))
        try:
            return dev.load_executable(fmt, data, consts)
        except VmError as e:
            e.annotate(f"creating {fmt} executable")
            raise

    @export("executable.lookup.function", "0rr_I")
    def executable_lookup_function(self, state: HalState, executable: Any, name: Any) -> int:
        exe = _need(executable, HalExecutable, "executable").exe
        return exe.export(_text(name)).ordinal

    # -- command buffers -----------------------------------------------------------
    @export("command_buffer.create", "0riiIi_r")
    def command_buffer_create(self, state: HalState, device: Any, modes: int, categories: int,
                              affinity: int, binding_capacity: int) -> Any:
        return CommandBuffer(_need(device, Device, "device"), modes, categories, binding_capacity)

    @export("command_buffer.finalize", "0r_v")
    def command_buffer_finalize(self, state: HalState, command_buffer: Any) -> None:
        _need(command_buffer, CommandBuffer, "command buffer").finalize()

    @export("command_buffer.begin_debug_group", "0rr_v")
    def command_buffer_begin_debug_group(self, state: HalState, command_buffer: Any,
                                         label: Any) -> None:
        _need(command_buffer, CommandBuffer, "command buffer")

    @export("command_buffer.end_debug_group", "0r_v")
    def command_buffer_end_debug_group(self, state: HalState, command_buffer: Any) -> None:
        _need(command_buffer, CommandBuffer, "command buffer")

    @export("command_buffer.execution_barrier", "0riiI_v")
    def command_buffer_execution_barrier(self, state: HalState, command_buffer: Any,
                                         source_stages: int, target_stages: int,
                                         flags: int) -> None:
        # commands run in order on one thread: every barrier is already satisfied
        _need(command_buffer, CommandBuffer, "command buffer")

    @export("command_buffer.fill_buffer", "0rrIIiIiI_v")
    def command_buffer_fill_buffer(self, state: HalState, command_buffer: Any, target: Any,
                                   target_offset: int, length: int, target_slot: int, pattern: int,
                                   pattern_length: int, flags: int) -> None:
        cb = _need(command_buffer, CommandBuffer, "command buffer")
        cb.fill(cb.ref(target_slot, self._opt_buffer(target), target_offset, length),
                pattern, pattern_length)

    @export("command_buffer.update_buffer", "0rrIrIIiI_v")
    def command_buffer_update_buffer(self, state: HalState, command_buffer: Any, source: Any,
                                     source_offset: int, target: Any, target_offset: int,
                                     length: int, target_slot: int, flags: int) -> None:
        cb = _need(command_buffer, CommandBuffer, "command buffer")
        data = _vm_bytes(source, source_offset, length, "update source").tobytes()
        cb.update(data, cb.ref(target_slot, self._opt_buffer(target), target_offset, length))

    @export("command_buffer.copy_buffer", "0riirIrIII_v")
    def command_buffer_copy_buffer(self, state: HalState, command_buffer: Any, source_slot: int,
                                   target_slot: int, source: Any, source_offset: int, target: Any,
                                   target_offset: int, length: int, flags: int) -> None:
        cb = _need(command_buffer, CommandBuffer, "command buffer")
        cb.copy(cb.ref(source_slot, self._opt_buffer(source), source_offset, length),
                cb.ref(target_slot, self._opt_buffer(target), target_offset, length))

    @export("command_buffer.dispatch", "0rrIiiiICiDCiirIID_v")
    def command_buffer_dispatch(self, state: HalState, command_buffer: Any, executable: Any,
                                ordinal: int, x: int, y: int, z: int, flags: int,
                                constants: list[int],
                                bindings: list[tuple[int, int, Any, int, int]]) -> None:
        cb = _need(command_buffer, CommandBuffer, "command buffer")
        exe = _need(executable, HalExecutable, "executable")
        refs = [cb.ref(slot, self._opt_buffer(buf), offset, length)
                for _reserved, slot, buf, offset, length in bindings]
        wg = tuple(v & 0xFFFFFFFF for v in (x, y, z))
        info = exe.exe.export(ordinal)     # a bad ordinal fails here, at record time
        if self.task is not None and cb.device.identifier == "local-task":
            self.task.check_dispatch(getattr(info, "local_memory_size", 0),
                                     self.local_memory_limit)
        cb.dispatch(exe, ordinal, wg, [c & 0xFFFFFFFF for c in constants], refs)

    @staticmethod
    def _opt_buffer(buf: Any) -> HalBuffer | None:
        return None if buf is None else _need(buf, HalBuffer, "buffer")


__all__ = ["HalDeviceModule", "VERSION"]
