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
from ...hal.buffer import HalBuffer, new_buffer
from ...hal.command_buffer import BufferRef, CommandBuffer, Dispatch
from ...hal.local.device import Device
from ...hal.objects import Fence, HalExecutable
from ...vm.buffer import Buffer
from ...vm.native_module import native_error

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

Caller = Callable[..., "tuple[Any, ...]"]

#: allocations the fast path makes itself (larger ones take the checked path)
FAST_ALLOCATION = 1 << 20


def fence_create(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any, flags: int) -> tuple[Any, ...]:
        if device.__class__ is Device:
            return (Fence(),)
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
        if device.__class__ is not Device or wait is not None or \
                signal.__class__ is not Fence or not 0 <= size <= FAST_ALLOCATION \
                or device.statistics is not None:      # counted by the export
            return slow(device, affinity, wait, signal, pool, memory_type, usage, size, flags)
        buf = new_buffer(size, "hal.device.queue.alloca")
        if signal.status is None:       # Fence.signal()
            signal.status = 0
        return (buf,)
    return call


def queue_execute_indirect(state: Any, slow: Caller, where: str, note: str) -> Caller:
    def call(device: Any, affinity: int, wait: Any, signal: Any, cb: Any, flags: int,
             table: list[Any]) -> tuple[Any, ...]:
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
    recorded on a local-sync device, an executable, buffers or slots within
    the binding capacity; anything else (and local-task, which checks a
    dispatch's local memory) takes the export."""
    def call(cb: Any, executable: Any, ordinal: int, x: int, y: int, z: int, flags: int,
             constants: list[int], bindings: list[Any]) -> tuple[Any, ...]:
        if cb.__class__ is not CommandBuffer or cb.finalized or \
                executable.__class__ is not HalExecutable or \
                getattr(cb.device, "identifier", "local-task") == "local-task":
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
        try:
            executable.exe.export(ordinal)     # a bad ordinal fails at record time
        except VmError:
            return slow(cb, executable, ordinal, x, y, z, flags, constants, bindings)
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
    "command_buffer.execution_barrier": execution_barrier,
    "command_buffer.dispatch": command_buffer_dispatch,
    "executable.lookup.function": lookup_function,
}

__all__ = ["FAST", "FAST_ALLOCATION"]
