"""vmrt.modules.hal.fast: the per-dispatch hal imports take a short path only
for ordinary arguments and hand everything else to the checked export."""
from __future__ import annotations

import types

import numpy as np
import pytest

import vmrt
from tests.vmrt.modules.hal.fast_testutil import Slow
from vmrt.hal.buffer import HalBuffer
from vmrt.hal.command_buffer import BufferRef, CommandBuffer, Dispatch
from vmrt.hal.local.device import Device
from vmrt.hal.objects import Fence, HalExecutable
from vmrt.modules.hal.fast import (
    FAST_ALLOCATION,
    command_buffer_dispatch,
    execution_barrier,
    fence_await,
    fence_create,
    lookup_function,
    queue_alloca,
    queue_execute_indirect,
)


def test_fence_create(device):
    slow = Slow()
    call = fence_create(None, slow, "where", "note")
    (f,) = call(device, 0)
    assert isinstance(f, Fence) and f.status is None and not slow.calls
    assert call(None, 0) == ("slow",) and slow.calls == [[None, 0]]


def test_fence_await():
    slow = Slow()
    call = fence_await(None, slow, "where", "note")
    done, pending, failed = Fence(0), Fence(), Fence(5)
    assert call(-1, 0, [done, done]) == (0,) and not slow.calls
    for odd in (pending, failed, None):
        assert call(-1, 0, [done, odd]) == ("slow",)
    assert len(slow.calls) == 3


def test_queue_alloca(device):
    slow = Slow()
    call = queue_alloca(None, slow, "where", "note")
    signal = Fence()
    (buf,) = call(device, -1, None, signal, 0, 48, 3075, 100, 0)
    assert isinstance(buf, HalBuffer) and len(buf) == 100 and buf.address % 64 == 0
    assert signal.status == 0 and not any(buf.bytes) and not slow.calls
    (buf,) = call(device, -1, Fence(0), signal, 0, 48, 3075, 100, 0)     # a signalled wait
    assert len(buf) == 100 and not slow.calls
    for args in ([device, -1, Fence(), Fence(), 0, 48, 3075, 100, 0],        # a pending wait
                 [device, -1, None, None, 0, 48, 3075, 100, 0],              # no signal
                 [device, -1, None, Fence(), 0, 48, 3075, FAST_ALLOCATION + 1, 0],
                 [device, -1, None, Fence(), 0, 48, 3075, -1, 0]):
        assert call(*args) == ("slow",) and slow.calls[-1] == args
    assert len(slow.calls) == 4


def test_queue_execute_indirect_hands_odd_arguments_to_the_checked_path(device):
    slow = Slow()
    call = queue_execute_indirect(None, slow, "where", "note")
    buf = HalBuffer(np.zeros(64, np.uint8))
    for args in ([device, -1, Fence(), Fence(), None, 0, []],                # pending wait
                 [device, -1, Fence(0), Fence(), None, 0, []],               # no command buffer
                 [device, -1, None, Fence(), None, 0, [(buf, 0, 64)]]):
        assert call(*args) == ("slow",) and slow.calls[-1] == args
    assert len(slow.calls) == 3


def test_execution_barrier(device):
    slow = Slow()
    call = execution_barrier(None, slow, "where", "note")
    assert call(CommandBuffer(device, 0, 0, 0), 1, 2, 0) == () and not slow.calls
    assert call(None, 1, 2, 0) == ("slow",) and slow.calls == [[None, 1, 2, 0]]


class _Exe:
    """An executable with exports 0 and 1 (what the fast caller asks of one)."""

    def export(self, which):
        if which not in (0, 1):
            raise vmrt.VmError(f"no export {which}")
        return which


def test_command_buffer_dispatch_records_what_the_export_records(device):
    slow = Slow()
    call = command_buffer_dispatch(None, slow, "where", "note")
    cb = CommandBuffer(device, 0, 0, 2)
    exe = HalExecutable(_Exe(), "embedded-elf-x86_64")
    buf = HalBuffer(np.zeros(64, np.uint8))
    assert call(cb, exe, 1, 4, 1, -1, 0, [7, -1], [(0, 1, None, 0, 16),
                                                 (0, 0, buf, 8, 32)]) == ()
    assert not slow.calls
    assert cb.commands == [Dispatch(exe, 1, (4, 1, 0xFFFFFFFF), (7, 0xFFFFFFFF),
                                    (BufferRef(1, None, 0, 16), BufferRef(0, buf, 8, 32)))]
    odd = [[cb, exe, 2, 1, 1, 1, 0, [], []],                       # no such export
           [cb, exe, 0, 1, 1, 1, 0, [], [(0, 2, None, 0, 16)]],    # slot past the capacity
           [cb, exe, 0, 1, 1, 1, 0, [], [(0, 0, "buffer", 0, 16)]],
           [cb, None, 0, 1, 1, 1, 0, [], []],
           [None, exe, 0, 1, 1, 1, 0, [], []]]
    for args in odd:
        assert call(*args) == ("slow",) and slow.calls[-1] == args
    cb.finalize()
    assert call(cb, exe, 0, 1, 1, 1, 0, [], []) == ("slow",)
    assert len(cb.commands) == 1 and len(slow.calls) == len(odd) + 1


class _LocalMemoryExe(_Exe):
    """Export 1 asks for local memory (which local-task checks at record time)."""

    def export(self, which):
        info = super().export(which)
        return types.SimpleNamespace(ordinal=info, local_memory_size=4096 if info else 0)


def test_command_buffer_dispatch_is_short_on_local_task_unless_local_memory():
    slow = Slow()
    call = command_buffer_dispatch(None, slow, "where", "note")
    task = Device("local-task")
    try:
        cb = CommandBuffer(task, 0, 0, 0)
        exe = HalExecutable(_LocalMemoryExe(), "embedded-elf-x86_64")
        assert call(cb, exe, 0, 1, 1, 1, 0, [], []) == () and not slow.calls
        assert call(cb, exe, 1, 1, 1, 1, 0, [], []) == ("slow",) and len(slow.calls) == 1
        assert len(cb.commands) == 1
    finally:
        task.close()


def test_lookup_function_is_kept_for_read_only_names():
    from vmrt.vm.buffer import Buffer
    slow = Slow()
    call = lookup_function(None, slow, "where", "note")
    exe = HalExecutable(_Exe(), "embedded-elf-x86_64")
    name, mutable = Buffer(b"f", readonly=True), Buffer(bytearray(b"f"), readonly=False)
    assert call(exe, name) == call(exe, name) == ("slow",) and len(slow.calls) == 1
    assert call(exe, mutable) == call(exe, mutable) == ("slow",) and len(slow.calls) == 3


def test_failed_dispatch_fails_the_fence_and_names_the_import(hal_compile):
    """A deadline passing between workgroups of a native dispatch: the error
    carries the same annotations as through the generic caller."""
    vmfb = hal_compile("slow_matmul.mlir", "x86_64")
    a = np.ones((1024, 1024), np.float32)
    with vmrt.load(vmfb, timeout=0.05) as prog, pytest.raises(vmrt.BudgetExceeded) as e:
        prog.mm(a, a)
    text = str(e.value)
    assert text.startswith("DEADLINE_EXCEEDED; ")
    assert ("; while invoking native function hal.device.queue.execute.indirect; "
            "while calling import; at ") in text
