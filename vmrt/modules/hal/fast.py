"""Single-frame callers for the ``hal`` imports every dispatch of a compiled
program makes: ``fence.create``, ``device.queue.alloca``,
``device.queue.execute.indirect`` and ``fence.await`` (the compiler emits
this sequence per dispatch, so their call overhead is the per-dispatch
overhead of vmrt), and those a command buffer recorded anew each time round
a loop makes per dispatch: ``executable.lookup.function``,
``command_buffer.dispatch`` and ``command_buffer.execution_barrier``.

Each caller takes the import's arguments and returns its VM results
directly, for the common case only: when an argument is anything but the
expected object in the expected state (a null or foreign ref, a pending or
failed fence, a large allocation, a device collecting statistics), it hands the call to the export's
generic caller (:meth:`vmrt.NativeModule.converting_caller`), which checks
everything and reports errors.  So results and errors are those of the
exports in :mod:`vmrt.modules.hal.module`.
"""
from __future__ import annotations

from collections.abc import Callable

from ...errors import StatusCode, VmError
from ...hal.buffer import HalBuffer, buffer_at, new_buffer
from ...hal.buffer_view import BufferView
from ...hal.command_buffer import BufferRef, CommandBuffer, Copy, Dispatch
from ...hal.element_types import ENCODING_DENSE_ROW_MAJOR, element_type_code
from ...hal.local.device import Device
from ...hal.objects import Allocator, Fence, HalExecutable
from ...vm.buffer import Buffer
from ...vm.native_module import native_error
from .inline import view_over

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

Caller = Callable[..., "tuple[Any, ...]"]

#: allocations the fast path makes itself (larger ones take the checked path)
FAST_ALLOCATION = 1 << 20


#: ``object.__new__``: a pending fence without ``Fence.__init__``'s frame
#: (two fences a dispatch)
_new_object = object.__new__


def fence_create(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any, flags: int) -> tuple[Any, ...]:
        if device.__class__ is Device:
            fence = _new_object(Fence)
            fence.status = None         # Fence(): pending
            return (fence,)
        return slow(device, flags)
    return call


def fence_await(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(timeout: int, flags: int, fences: list[Any]) -> tuple[Any, ...]:
        for f in fences:
            if f.__class__ is not Fence or f.status != 0:
                return slow(timeout, flags, fences)
        return (0,)
    return call


def queue_alloca(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any, affinity: int, wait: Any, signal: Any, pool: int, memory_type: int,
             usage: int, size: int, flags: int) -> tuple[Any, ...]:
        if device.__class__ is not Device or signal.__class__ is not Fence or \
                (wait is not None and (wait.__class__ is not Fence or wait.status != 0)) or \
                not 0 <= size <= FAST_ALLOCATION or \
                device.statistics is not None:      # counted by the export
            return slow(device, affinity, wait, signal, pool, memory_type, usage, size, flags)
        buf = new_buffer(size, "hal.device.queue.alloca")
        if signal.status is None:       # Fence.signal()
            signal.status = 0
        return (buf,)
    return call


def queue_execute_indirect(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """Run a command buffer over a binding table of buffers and signal the
    fence (failed on an error), as the export's ``_submit`` does."""
    def call(device: Any, affinity: int, wait: Any, signal: Any, cb: Any, flags: int,
             table: Any) -> tuple[Any, ...]:
        if device.__class__ is not Device or wait.__class__ is not Fence or wait.status != 0 \
                or signal.__class__ is not Fence or cb.__class__ is not CommandBuffer:
            return slow(device, affinity, wait, signal, cb, flags, table)
        for entry in table:
            if entry[0].__class__ is not HalBuffer:
                return slow(device, affinity, wait, signal, cb, flags, table)
        try:
            deadline = state.context.limits.deadline
        except AttributeError:          # no context
            deadline = None
        try:
            if deadline is None:        # (a call without keywords is the cheaper one)
                plain = cb.plain        # one batch, nothing to watch: in one call
                if plain is None or cb.device is not device or \
                        device.statistics is not None or not plain(table):
                    cb.execute(table)
                else:
                    cb.submitted += 1
            else:
                cb.execute(table, deadline=deadline)
        except Exception as e:  # noqa: BLE001 - see native_error
            if isinstance(e, VmError):
                signal.fail(int(StatusCode.ABORTED))
            err = native_error(e, where)
            if isinstance(err, VmError):
                err.annotate(note)
            raise err  # noqa: B904 - chained there
        if signal.status is None:       # Fence.signal()
            signal.status = 0
        return ()
    return call


def queue_execute(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """``device.queue.execute``: a command buffer without a binding table."""
    def slow_indirect(device: Any, affinity: int, wait: Any, signal: Any, cb: Any, flags: int,
                      table: Any) -> tuple[Any, ...]:
        return slow(device, affinity, wait, signal, cb, flags)
    indirect = queue_execute_indirect(state, slow_indirect, where, note)

    def call(device: Any, affinity: int, wait: Any, signal: Any, cb: Any,
             flags: int) -> tuple[Any, ...]:
        return indirect(device, affinity, wait, signal, cb, flags, ())
    return call


def queue_dealloca(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any, affinity: int, wait: Any, signal: Any, buffer: Any,
             flags: int) -> tuple[Any, ...]:
        if device.__class__ is not Device or signal.__class__ is not Fence or \
                buffer.__class__ is not HalBuffer or \
                (wait is not None and (wait.__class__ is not Fence or wait.status != 0)):
            return slow(device, affinity, wait, signal, buffer, flags)
        if signal.status is None:       # Fence.signal()
            signal.status = 0
        return ()
    return call


def fence_join(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """Fences that are all signalled join into a signalled fence."""
    def call(flags: int, fences: list[Any]) -> tuple[Any, ...]:
        if not fences:
            return slow(flags, fences)
        for f in fences:
            if f.__class__ is not Fence or f.status != 0:
                return slow(flags, fences)
        return (Fence(0),)
    return call


def device_allocator(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any) -> tuple[Any, ...]:
        if device.__class__ is Device:
            return (device.allocator,)
        return slow(device)
    return call


def buffer_view_buffer(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(view: Any) -> tuple[Any, ...]:
        if view.__class__ is not BufferView:
            return slow(view)
        backing = view.backing
        if backing is not None:
            return (backing,)
        return (buffer_at(view.storage, view.address),)
    return call


def buffer_view_assert(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """A view of exactly the expected type, encoding and shape passes; any
    other (an integer type of the same width included) takes the export,
    which words the error."""
    codes: dict[str, int] = {}      # element type name -> its code

    def call(view: Any, message: Any, element_type: int, encoding_type: int,
             shape: list[int]) -> tuple[Any, ...]:
        if view.__class__ is not BufferView or encoding_type != ENCODING_DENSE_ROW_MAJOR or \
                (message is not None and message.__class__ is not Buffer) or \
                tuple(shape) != view.shape:
            return slow(view, message, element_type, encoding_type, shape)
        code = codes.get(view.element_type)
        if code is None:
            try:
                code = element_type_code(view.element_type)
            except VmError:
                return slow(view, message, element_type, encoding_type, shape)
            if len(codes) < 64:
                codes[view.element_type] = code
        if code != element_type:
            return slow(view, message, element_type, encoding_type, shape)
        return ()
    return call


def buffer_assert(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(buffer: Any, message: Any, allocator: Any, minimum_length: int, memory_types: int,
             usage: int) -> tuple[Any, ...]:
        if buffer.__class__ is not HalBuffer or allocator.__class__ is not Allocator or \
                len(buffer.bytes) < minimum_length:
            return slow(buffer, message, allocator, minimum_length, memory_types, usage)
        return ()
    return call


def buffer_view_create(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """A view over a buffer; any error (the export words it) takes the export."""
    names: dict[int, tuple[str, int]] = {}      # element type code -> (name, bits)

    def call(buf: Any, offset: int, length: int, element_type: int, encoding: int,
             shape: list[int]) -> tuple[Any, ...]:
        if buf.__class__ is HalBuffer:
            try:
                return (view_over(buf, offset, length, element_type, shape, names),)
            except VmError:
                pass
        return slow(buf, offset, length, element_type, encoding, shape)
    return call


def devices_get(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(index: int) -> tuple[Any, ...]:
        devices = state.devices
        if 0 <= index < len(devices):
            return (devices[index],)
        return slow(index)
    return call


def command_buffer_create(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any, modes: int, categories: int, affinity: int,
             binding_capacity: int) -> tuple[Any, ...]:
        if device.__class__ is not Device:
            return slow(device, modes, categories, affinity, binding_capacity)
        return (CommandBuffer(device, modes, categories, binding_capacity),)
    return call


def command_buffer_finalize(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(cb: Any) -> tuple[Any, ...]:
        if cb.__class__ is not CommandBuffer or cb.finalized:
            return slow(cb)
        cb.finalized = True             # CommandBuffer.finalize()
        return ()
    return call


def command_buffer_copy(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """Record a copy between two buffers given directly (no binding slots)."""
    def call(cb: Any, source_slot: int, target_slot: int, source: Any, source_offset: int,
             target: Any, target_offset: int, length: int, flags: int) -> tuple[Any, ...]:
        if cb.__class__ is not CommandBuffer or cb.finalized or \
                source.__class__ is not HalBuffer or target.__class__ is not HalBuffer:
            return slow(cb, source_slot, target_slot, source, source_offset, target,
                        target_offset, length, flags)
        cb.commands.append(Copy(BufferRef(source_slot, source, source_offset, length),
                                BufferRef(target_slot, target, target_offset, length)))
        return ()
    return call


def execution_barrier(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(cb: Any, source_stages: int, target_stages: int, flags: int) -> tuple[Any, ...]:
        if cb.__class__ is CommandBuffer:   # commands run in order: nothing to wait for
            return ()
        return slow(cb, source_stages, target_stages, flags)
    return call


def lookup_function(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """The ordinal of an export named by a read-only ``vm.buffer`` (rodata:
    the same name each time round a loop), kept per (executable, buffer)."""
    seen: dict[tuple[Any, Any], tuple[Any, ...]] = {}

    def call(executable: Any, name: Any) -> tuple[Any, ...]:
        got = seen.get((executable, name))
        if got is not None:
            return got
        got = slow(executable, name)
        if name.__class__ is Buffer and name.readonly and \
                executable.__class__ is HalExecutable and len(seen) < 4096:
            seen[executable, name] = got
        return got
    return call


def command_buffer_dispatch(state: Any, slow: Caller, where: str, note: str) -> Caller:
    """Record a dispatch whose operands are all plain: a command buffer being
    recorded, an executable, an export without local memory (local-task
    checks a dispatch's local memory against its workers'), buffers or slots
    within the binding capacity; anything else takes the export."""
    known: set[tuple[Any, int]] = set()     # (executable, ordinal) of an export it has

    def call(cb: Any, executable: Any, ordinal: int, x: int, y: int, z: int, flags: int,
             constants: list[int], bindings: list[Any]) -> tuple[Any, ...]:
        if cb.__class__ is not CommandBuffer or cb.finalized or \
                executable.__class__ is not HalExecutable:
            return slow(cb, executable, ordinal, x, y, z, flags, constants, bindings)
        refs = []
        cap = cb.binding_capacity
        for _reserved, slot, buf, offset, length in bindings:
            if buf is None:
                if not 0 <= slot < cap:
                    return slow(cb, executable, ordinal, x, y, z, flags, constants, bindings)
            elif buf.__class__ is not HalBuffer:
                return slow(cb, executable, ordinal, x, y, z, flags, constants, bindings)
            refs.append(BufferRef(slot, buf, offset, length))
        if (executable, ordinal) not in known:
            try:
                info = executable.exe.export(ordinal)     # a bad ordinal fails at record time
            except VmError:
                return slow(cb, executable, ordinal, x, y, z, flags, constants, bindings)
            if getattr(info, "local_memory_size", 0):     # checked on local-task
                return slow(cb, executable, ordinal, x, y, z, flags, constants, bindings)
            if len(known) < 4096:
                known.add((executable, ordinal))
        cb.commands.append(Dispatch(executable, ordinal, (x & 0xFFFFFFFF, y & 0xFFFFFFFF,
                                                          z & 0xFFFFFFFF),
                                    tuple([c & 0xFFFFFFFF for c in constants]), tuple(refs)))
        return ()
    return call


#: export name -> maker of its fast caller
FAST: dict[str, Callable[[Any, Caller, str, str], Caller]] = {
    "fence.create": fence_create,
    "fence.await": fence_await,
    "device.queue.alloca": queue_alloca,
    "device.queue.execute.indirect": queue_execute_indirect,
    "device.queue.execute": queue_execute,
    "device.queue.dealloca": queue_dealloca,
    "device.allocator": device_allocator,
    "fence.join": fence_join,
    "buffer_view.buffer": buffer_view_buffer,
    "buffer_view.create": buffer_view_create,
    "devices.get": devices_get,
    "buffer_view.assert": buffer_view_assert,
    "buffer.assert": buffer_assert,
    "command_buffer.create": command_buffer_create,
    "command_buffer.finalize": command_buffer_finalize,
    "command_buffer.copy_buffer": command_buffer_copy,
    "command_buffer.execution_barrier": execution_barrier,
    "command_buffer.dispatch": command_buffer_dispatch,
    "executable.lookup.function": lookup_function,
}

__all__ = ["FAST", "FAST_ALLOCATION"]
