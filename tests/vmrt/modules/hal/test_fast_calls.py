"""vmrt.modules.hal.fast, the per-call and per-loop-step imports: a short
path for ordinary arguments that returns what the export returns, and the
checked export for everything else."""
from __future__ import annotations

import numpy as np

from tests.vmrt.modules.hal.fast_testutil import Slow
from vmrt.hal.buffer import HalBuffer, new_buffer
from vmrt.hal.buffer_view import BufferView
from vmrt.hal.command_buffer import BufferRef, CommandBuffer, Copy
from vmrt.hal.objects import Fence
from vmrt.modules.hal import fast
from vmrt.modules.hal.module import HalDeviceModule
from vmrt.vm.buffer import Buffer

F32 = 0x21000020        # IREE's f32 element type code
ROW_MAJOR = 1


def make(name, state=None):
    slow = Slow()
    return fast.FAST[name](state, slow, "where", "note"), slow


def test_every_fast_caller_is_an_export_of_the_device_hal():
    names = {e.name for e in HalDeviceModule(devices=["local-sync"]).exports}
    assert set(fast.FAST) <= names


def test_queue_execute(device):
    call, slow = make("device.queue.execute")
    cb = CommandBuffer(device, 0, 0, 0)
    cb.finalize()
    signal = Fence()
    assert call(device, -1, Fence(0), signal, cb, 0) == () and signal.status == 0
    assert cb.submitted == 1 and not slow.calls
    for args in ([device, -1, Fence(), Fence(), cb, 0],        # pending wait
                 [device, -1, Fence(0), Fence(), None, 0],     # no command buffer
                 [None, -1, Fence(0), Fence(), cb, 0]):
        assert call(*args) == ("slow",) and slow.calls[-1] == args


def test_queue_dealloca(device):
    call, slow = make("device.queue.dealloca")
    buf, signal = new_buffer(16), Fence()
    assert call(device, -1, None, signal, buf, 0) == () and signal.status == 0
    assert call(device, -1, Fence(0), Fence(), buf, 0) == () and not slow.calls
    for args in ([device, -1, Fence(), Fence(), buf, 0],
                 [device, -1, None, Fence(), None, 0],
                 [device, -1, None, None, buf, 0]):
        assert call(*args) == ("slow",) and slow.calls[-1] == args


def test_fence_join():
    call, slow = make("fence.join")
    (f,) = call(0, [Fence(0), Fence(0)])
    assert isinstance(f, Fence) and f.status == 0 and not slow.calls
    for fences in ([], [Fence(0), None], [Fence(0), Fence()], [Fence(3)]):
        assert call(0, fences) == ("slow",)
    assert len(slow.calls) == 4


def test_device_allocator_and_devices_get(device):
    call, slow = make("device.allocator")
    assert call(device) == (device.allocator,) and call(None) == ("slow",)

    class State:
        def __init__(self):
            self.devices = [device]
    call, slow = make("devices.get", State())
    assert call(0) == (device,) and not slow.calls
    assert call(1) == ("slow",) and call(-1) == ("slow",) and len(slow.calls) == 2


def test_buffer_view_buffer():
    call, slow = make("buffer_view.buffer")
    view = BufferView(np.arange(4, dtype=np.float32))
    (buf,) = call(view)
    assert isinstance(buf, HalBuffer) and bytes(buf.bytes) == view.array.tobytes()
    view.backing = backing = new_buffer(32)
    assert call(view) == (backing,) and not slow.calls
    assert call(None) == ("slow",) and call(backing) == ("slow",)


def test_buffer_view_assert():
    call, slow = make("buffer_view.assert")
    view = BufferView(np.zeros((2, 3), np.float32))
    msg = Buffer(b"input0", readonly=True)
    assert call(view, msg, F32, ROW_MAJOR, [2, 3]) == () and not slow.calls
    assert call(view, None, F32, ROW_MAJOR, [2, 3]) == () and not slow.calls
    odd = [[view, msg, F32, ROW_MAJOR, [3, 2]],
           [view, msg, 0x10000020, ROW_MAJOR, [2, 3]],     # i32: the export decides
           [view, msg, F32, 2, [2, 3]],
           [view, "input0", F32, ROW_MAJOR, [2, 3]],
           [None, msg, F32, ROW_MAJOR, [2, 3]]]
    for args in odd:
        assert call(*args) == ("slow",) and slow.calls[-1] == args


def test_buffer_assert(device):
    call, slow = make("buffer.assert")
    buf = new_buffer(64)
    assert call(buf, None, device.allocator, 64, 0, 0) == () and not slow.calls
    for args in ([buf, None, device.allocator, 65, 0, 0],
                 [buf, None, None, 64, 0, 0],
                 [None, None, device.allocator, 0, 0, 0]):
        assert call(*args) == ("slow",) and slow.calls[-1] == args


def test_buffer_view_create_matches_the_export():
    call, slow = make("buffer_view.create")
    module = HalDeviceModule(devices=["local-sync"])
    buf = new_buffer(96)
    buf.bytes[:] = bytes(range(96))
    for offset, length in ((0, 96), (32, 48)):
        (got,) = call(buf, offset, length, F32, ROW_MAJOR, [2, 4])
        want = module.buffer_view_create(None, buf, offset, length, F32, ROW_MAJOR, [2, 4])
        assert got.shape == want.shape == (2, 4) and got.element_type == "f32"
        assert np.array_equal(got.array, want.array) and got.address == want.address
        assert bytes(got.backing.bytes) == bytes(want.backing.bytes)
    assert not slow.calls
    for args in ([buf, 90, 16, F32, ROW_MAJOR, [1]],       # out of the buffer
                 [buf, 0, 16, F32, ROW_MAJOR, [8]],        # larger than its range
                 [buf, 0, 16, F32, ROW_MAJOR, [-1]],
                 [buf, 0, 16, 0x7777, ROW_MAJOR, [1]],     # no such element type
                 [None, 0, 16, F32, ROW_MAJOR, [1]]):
        assert call(*args) == ("slow",) and slow.calls[-1] == args


def test_command_buffer_create_finalize_copy(device):
    create, slow = make("command_buffer.create")
    (cb,) = create(device, 1, 2, -1, 3)
    assert isinstance(cb, CommandBuffer) and (cb.modes, cb.categories, cb.binding_capacity) \
        == (1, 2, 3) and create(None, 1, 2, -1, 3) == ("slow",)
    copy, slow = make("command_buffer.copy_buffer")
    a, b = new_buffer(64), new_buffer(64)
    assert copy(cb, 0, 0, a, 8, b, 16, 32, 0) == () and not slow.calls
    assert cb.commands == [Copy(BufferRef(0, a, 8, 32), BufferRef(0, b, 16, 32))]
    for args in ([cb, 0, 0, None, 0, b, 0, 8, 0], [cb, 0, 0, a, 0, None, 0, 8, 0],
                 [None, 0, 0, a, 0, b, 0, 8, 0]):
        assert copy(*args) == ("slow",) and slow.calls[-1] == args
    finalize, slow = make("command_buffer.finalize")
    assert finalize(cb) == () and cb.finalized
    assert finalize(cb) == ("slow",) and finalize(None) == ("slow",)       # the export reports
    assert copy(cb, 0, 0, a, 8, b, 16, 32, 0) == ("slow",)
