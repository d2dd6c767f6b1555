"""The device hal module in process: contexts, provider selection, device
queries, fences, command buffers, executables and bad input (always a
vmrt.VmError, never a traceback)."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import run_args, vmrt_run
from vmrt.errors import StatusCode, VmError
from vmrt.hal.buffer import HalBuffer, aligned_bytes, aligned_memory, buffer_at, new_buffer
from vmrt.hal.buffer_view import BufferView
from vmrt.hal.command_buffer import CommandBuffer
from vmrt.hal.local.device import Device
from vmrt.hal.objects import Fence
from vmrt.modules.hal.inline import HalModule
from vmrt.modules.hal.module import HalDeviceModule
from vmrt.modules.hal.provider import PROVIDER, needs_device
from vmrt.tools.module_specs import RunOptions


def _context(vmfb, plugins=(), devices=("local-sync",)):
    inst = vmrt.Instance()
    hal = HalDeviceModule(inst, devices, [str(p) for p in plugins])
    prog = vmrt.BytecodeModule.load(inst, vmfb)
    return vmrt.Context(inst, [hal, prog]), hal


def test_reused_command_buffer_in_process(hal_compile):
    """The compiler memoizes `add`'s command buffer: the second call replays it
    with a new binding table."""
    ctx, hal = _context(hal_compile("elementwise.mlir"))
    with ctx:
        for k in range(3):
            a = np.arange(8, dtype=np.float32) * (k + 1)
            b = np.full(8, 0.5, np.float32)
            (out,) = ctx.invoke("module.add", [BufferView(a), BufferView(b)])
            np.testing.assert_array_equal(out.array, a + b)
        dev = ctx.state_of(hal).devices[0]
        assert [e.backend for e in dev.loader.executables] == ["native"]


def test_misaligned_input_is_staged(hal_compile):
    """A caller's array that is not 64-byte aligned is staged through an
    aligned copy for the dispatch; the caller's data is unchanged."""
    base = np.zeros(1001 + 1, np.float32)
    a = base[1:]                        # 4-byte offset from an aligned start
    a[:] = np.arange(1001, dtype=np.float32)
    keep = a.copy()
    b = np.full(1001, 2.0, np.float32)
    ctx, _ = _context(hal_compile("elementwise.mlir"))
    with ctx:
        (out,) = ctx.invoke("module.mul_add", [BufferView(a), BufferView(b)])
    np.testing.assert_array_equal(out.array, keep * 2 + keep)
    np.testing.assert_array_equal(a, keep)


def test_plugin_program_in_process_emulated(hal_compile, hal_sos, emulation):
    ctx, hal = _context(hal_compile("simple_mul.mlir", "aarch64"), [hal_sos])
    with ctx:
        a = np.linspace(-1, 1, 130, dtype=np.float32)
        b = np.linspace(3, 4, 130, dtype=np.float32)
        (out,) = ctx.invoke("simple_mul.mixed_invocation", [BufferView(a), BufferView(b)])
        np.testing.assert_array_equal(out.array, a * b + b)
        dev = ctx.state_of(hal).devices[0]
        (exe,) = dev.loader.executables
        assert (exe.arch.name, exe.backend) == ("aarch64", "emulated")


def test_provider_picks_the_module(hal_compile, compile_host_only):
    inst = vmrt.Instance()
    PROVIDER.register_types(inst)
    host = vmrt.BytecodeModule.load(inst, compile_host_only)
    dev = vmrt.BytecodeModule.load(inst, hal_compile("elementwise.mlir"))
    assert not needs_device([host]) and needs_device([dev])
    pick = lambda **kw: type(PROVIDER.create(vmrt.Instance(), RunOptions(**kw)))  # noqa: E731
    assert pick(extra={"modules": (host,)}) is HalModule
    assert pick(extra={"modules": (dev,)}) is HalDeviceModule
    assert pick(devices=["local-sync"], extra={"modules": (host,)}) is HalDeviceModule


def test_host_only_program_with_device_flag(compile_host_only):
    """A host-only program runs the same with --device (the device module is
    a superset of the host-only one)."""
    args = [f"--module={compile_host_only}", "--function=sum", "--input=2x3xf32=1 2 3 4 5 6.5"]
    plain = vmrt_run(args)
    with_device = vmrt_run(["--device=local-sync", *args])
    assert plain.rc == 0 and (plain.rc, plain.stdout) == (with_device.rc, with_device.stdout)


def test_device_queries():
    d = Device("local-sync")
    assert d.query_i64("hal.device.id", "local*") == 1
    assert d.query_i64("hal.device.id", "local-sync") == 1
    assert d.query_i64("hal.device.id", "cuda*") == 0
    assert d.query_i64("hal.executable.format", "embedded-elf-x86_64") == 1
    assert d.query_i64("hal.executable.format", "embedded-elf-arm_64") == 1   # emulated
    assert d.query_i64("hal.executable.format", "vmvx-bytecode-fb") == 1
    assert d.query_i64("hal.executable.format", "spirv-fb") == 0
    assert d.query_i64("hal.device", "concurrency") == 1
    assert d.query_i64("hal.nonsense", "key") is None
    assert Device("local-task://").identifier == "local-task"
    with pytest.raises(VmError) as e:
        Device("cuda")
    assert e.value.code == StatusCode.NOT_FOUND and "cuda" in str(e.value)


def test_unknown_device_on_the_command_line(hal_compile):
    r = vmrt_run(run_args(hal_compile("elementwise.mlir"), "add", ["8xf32=1", "8xf32=2"],
                          device="vulkan"))
    assert r.rc == 1 and r.stdout == ""
    assert r.status.startswith("NOT_FOUND; no HAL driver 'vulkan' is available in vmrt")


def test_unsupported_import_names_it(hal_compile, both):
    ref, got = both(run_args(hal_compile("unsupported.mlir"), "main"))
    assert ref.rc == 1          # IREE links it and fails on the null channel
    assert got.rc == 1 and got.stdout == ""
    assert got.status == ("NOT_FOUND; function 'channel.rank_and_count' not exported by module "
                          "'hal' (required for import 'hal.channel.rank_and_count')")
    assert "Traceback" not in got.stderr


def test_fences():
    hal = HalDeviceModule()
    assert hal.fence_await(None, -1, 0, [Fence(0), None]) == 0
    assert hal.fence_await(None, -1, 0, [Fence()]) == StatusCode.DEADLINE_EXCEEDED
    assert hal.fence_await(None, -1, 0, [Fence(0), Fence(10)]) == 10
    assert hal.fence_join(None, 0, []) is None
    assert hal.fence_join(None, 0, [Fence(0), Fence(0)]).status == 0
    assert hal.fence_join(None, 0, [Fence(0), Fence()]).status is None
    assert hal.fence_join(None, 0, [Fence(0), Fence(13)]).status == 13
    f = Fence()
    assert hal.fence_query(None, f) == StatusCode.DEFERRED
    hal.fence_signal(None, f)
    assert hal.fence_query(None, f) == 0
    with pytest.raises(VmError) as e:
        hal.queue_barrier(None, Device("local-sync"), -1, Fence(), Fence(), 0)
    assert e.value.code == StatusCode.DEADLINE_EXCEEDED


def test_command_buffer_fill_update_copy():
    a, b = new_buffer(16), new_buffer(32)
    cb = CommandBuffer(Device("local-sync"), 0, 3, 2)
    cb.fill(cb.ref(0, None, 4, 8), 0x01020304, 4)
    cb.update(b"\xaa\xbb", cb.ref(1, None, 0, 2))
    cb.copy(cb.ref(0, None, 0, 16), cb.ref(0, b, 16, 16))
    cb.finalize()
    cb.execute([(a, 0, 16), (b, 8, -1)])
    assert a.bytes.tobytes() == bytes(4) + bytes([4, 3, 2, 1]) * 2 + bytes(4)
    assert b.bytes[8:10].tobytes() == b"\xaa\xbb"
    assert b.bytes[16:].tobytes() == a.bytes.tobytes()
    with pytest.raises(VmError) as e:
        cb.execute([(a, 0, 16)])
    assert e.value.code == StatusCode.OUT_OF_RANGE and "slot 1" in str(e.value)
    with pytest.raises(VmError, match="finalized"):
        cb.fill(cb.ref(0, a, 0, 4), 0, 4)
    raw = CommandBuffer(Device("local-sync"), 0, 3, 0)
    with pytest.raises(VmError, match="must be finalized"):
        raw.execute()
    with pytest.raises(VmError, match="binding capacity"):
        raw.ref(0, None, 0, 4)
    bad = CommandBuffer(Device("local-sync"), 0, 3, 0)
    bad.fill(bad.ref(0, a, 0, 64), 0, 4)
    bad.finalize()
    with pytest.raises(VmError) as e:
        bad.execute()
    assert e.value.code == StatusCode.OUT_OF_RANGE


def test_aligned_allocations():
    assert aligned_bytes(0).size == 0
    for n in (1, 63, 4096):
        assert aligned_bytes(n).ctypes.data % 64 == 0 and aligned_bytes(n).size == n
    with pytest.raises(VmError) as e:
        aligned_bytes(1 << 40)
    assert e.value.code == StatusCode.RESOURCE_EXHAUSTED
    # the buffers' own memory: writable memoryviews at the aligned address given
    import ctypes
    for n in (0, 1, 100, 5000, 2 << 20):
        view, addr = aligned_memory(n)
        assert len(view) == n and not view.readonly and addr % 64 == 0
        if n:
            view[n - 1] = 7
            assert ctypes.string_at(addr + n - 1, 1) == b"\x07"
            assert ctypes.addressof(ctypes.c_char.from_buffer(view)) == addr


def test_buffers_made_without_init_match_the_constructor():
    """buffer_at and new_buffer skip HalBuffer.__init__: the buffers they make
    are what the constructor makes (address checked with ctypes and numpy)."""
    import ctypes
    view, addr = aligned_memory(256)
    for address in (addr, None):            # None: looked up
        fast, slow = buffer_at(view, address), HalBuffer(view, address=address)
        assert type(fast) is HalBuffer
        assert (fast.address, fast.read_only, fast.bytes.obj) == \
            (slow.address, slow.read_only, slow.bytes.obj)
        assert fast.address == addr == np.frombuffer(fast.bytes, np.uint8).ctypes.data
    got = buffer_at(bytearray(b"abcd"), None)       # bytes-like: a flat byte view of it
    assert got.bytes.format == "B" and bytes(got.bytes) == b"abcd"
    assert got.address == ctypes.addressof(ctypes.c_char.from_buffer(got.bytes))
    data = b"xyz"
    ro = buffer_at(memoryview(data), None)          # read-only memory: numpy finds it
    assert ro.address == np.frombuffer(data, np.uint8).ctypes.data
    with pytest.raises(VmError) as e:
        ro.writable("test write")
    assert e.value.code == StatusCode.PERMISSION_DENIED
    assert buffer_at(memoryview(b""), None).address == -1
    for n in (0, 1, 64, 1000, 1025, 70000):        # slab and heap paths
        b = new_buffer(n)
        assert type(b) is HalBuffer and len(b) == n and not b.read_only
        assert bytes(b.bytes) == bytes(n)            # zeroed
        if n:
            assert b.address % 64 == 0
            assert b.address == ctypes.addressof(ctypes.c_char.from_buffer(b.bytes))
            b.writable("test")[n - 1] = 9
            assert ctypes.string_at(b.address + n - 1, 1) == b"\x09"


def test_bad_executables_are_vm_errors(hal_compile):
    d = Device("local-sync")
    try:
        with pytest.raises(VmError) as e:       # a vmvx executable is a VM module
            d.load_executable("vmvx-bytecode-fb", b"\0" * 64, None)
        assert e.value.code == StatusCode.INVALID_ARGUMENT
        with pytest.raises(VmError) as e:
            d.load_executable("spirv-fb", b"\0" * 64, None)
        assert e.value.code == StatusCode.NOT_FOUND
        with pytest.raises(VmError):
            d.load_executable("embedded-elf-x86_64", b"\x7fELF" + b"\0" * 60, None)
    finally:
        d.close()


def test_dispatch_with_wrong_bindings_fails_cleanly(hal_compile, hal_sos):
    """A dispatch the executable rejects (too few bindings) is a VmError from
    queue execution, and the signal fence is marked failed."""
    ctx, hal = _context(hal_compile("simple_mul.mlir"), [hal_sos])
    with ctx:
        dev = ctx.state_of(hal).devices[0]
        from vmrt.vm.buffer import Buffer
        exe = hal.executable_create(None, dev, -1, Buffer(b"embedded-elf-x86_64"),
                                    Buffer(_embedded_elf(hal_compile("simple_mul.mlir"))), None)
        ordinal = hal.executable_lookup_function(None, exe, Buffer(b"tiled_mul"))
        cb = hal.command_buffer_create(None, dev, 1, 3, -1, 0)
        buf = new_buffer(32)
        hal.command_buffer_dispatch(None, cb, exe, ordinal, 1, 1, 1, 0, [8, 0],
                                    [(0, 0, buf, 0, 32), (0, 0, buf, 0, 32)])
        hal.command_buffer_finalize(None, cb)
        signal = Fence()
        with pytest.raises(VmError) as e:
            hal.queue_execute(None, dev, -1, None, signal, cb, 0)
        assert "takes 3 binding(s), 2 given" in str(e.value)
        assert signal.status == StatusCode.ABORTED
        with pytest.raises(VmError, match="no export 'nope'"):
            hal.executable_lookup_function(None, exe, Buffer(b"nope"))


def _embedded_elf(vmfb) -> bytes:
    """The dispatch library the compiler embedded in a .vmfb (its rodata)."""
    data = vmfb.read_bytes()
    start = data.index(b"\x7fELF")
    import struct
    shoff, = struct.unpack_from("<Q", data, start + 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, start + 0x3A)
    return data[start:start + shoff + shentsize * shnum]


@pytest.fixture(scope="module")
def compile_host_only(tmp_path_factory):
    """tests/vmrt's host-only buffer-view program, compiled host-only."""
    import shutil
    import subprocess

    from tests.vmrt.vmrt_testutil import PROGRAMS
    if shutil.which("iree-compile") is None:
        pytest.skip("iree-compile is not installed")
    out = tmp_path_factory.mktemp("host") / "hal_views.vmfb"
    proc = subprocess.run(["iree-compile", "--iree-execution-model=host-only",
                           str(PROGRAMS / "hal_views.mlir"), "-o",
                           str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def test_queue_transfers_and_files():
    """queue.update/copy/read/write, allocator.allocate/import, buffer.subspan
    (exports called directly, as the VM would)."""
    from vmrt.vm.buffer import Buffer
    hal = HalDeviceModule(devices=["local-sync"])
    dev = Device("local-sync")
    alloc = hal.device_allocator(None, dev)
    a = hal.allocator_allocate(None, alloc, -1, 48, 3075, 16)
    assert a.bytes.tobytes() == bytes(16) and a.address % 64 == 0
    ro = Buffer(bytes(range(32)))
    state = hal.alloc_state(None)          # its own copies of module constants
    hal.free_state(state)                  # (its devices are not used here)
    imported = hal.allocator_import(state, alloc, 1, -1, 48, 3075, ro, 8, 8)
    # module rodata is imported as a writable, aligned copy (a dispatch may
    # write into an imported constant); the vm.buffer itself never changes
    assert imported.bytes.tobytes() == bytes(range(8, 16)) and not imported.bytes.readonly
    assert imported.address % 64 == 0
    imported.bytes[:] = bytes(8)
    assert bytes(ro.data) == bytes(range(32))
    signal = Fence()
    hal.queue_update(None, dev, -1, None, signal, ro, 4, a, 2, 4, 0)
    assert signal.status == 0 and a.bytes[2:6].tolist() == [4, 5, 6, 7]
    b = new_buffer(8)
    hal.queue_copy(None, dev, -1, Fence(0), None, a, 2, b, 0, 4, 0)
    assert b.bytes[:4].tolist() == [4, 5, 6, 7]
    f = hal.file_from_memory(None, dev, -1, 1, ro, 16, 16, 0)
    hal.queue_read(None, dev, -1, None, None, f, 4, b, 0, 8, 0)
    assert b.bytes.tolist() == list(range(20, 28))
    sub = hal.buffer_subspan(None, b, 2, 4)
    assert sub.bytes.tolist() == [22, 23, 24, 25]
    sub.bytes[0] = 99                                    # a view, not a copy
    assert b.bytes[2] == 99
    wf = hal.file_from_memory(None, dev, -1, 2, Buffer(bytearray(8), readonly=False), 0, 8, 0)
    hal.queue_write(None, dev, -1, None, None, b, 0, wf, 0, 8, 0)
    assert wf.data.tolist() == b.bytes.tolist()
    with pytest.raises(VmError) as e:
        hal.queue_write(None, dev, -1, None, None, b, 0, f, 0, 8, 0)
    assert e.value.code == StatusCode.PERMISSION_DENIED
    with pytest.raises(VmError) as e:
        hal.queue_read(None, dev, -1, None, None, f, 10, b, 0, 8, 0)
    assert e.value.code == StatusCode.OUT_OF_RANGE
    hal.queue_update(None, dev, -1, None, None, ro, 0, imported, 0, 4, 0)   # in place
    assert imported.bytes[:4].tolist() == [0, 1, 2, 3] and bytes(ro.data) == bytes(range(32))
    with pytest.raises(VmError) as e:
        hal.buffer_subspan(None, b, 6, 4)
    assert e.value.code == StatusCode.OUT_OF_RANGE
    with pytest.raises(VmError, match="less than expected minimum 64"):
        hal.buffer_assert(None, b, Buffer(b"tensor"), alloc, 64, 16, 3075)
    with pytest.raises(VmError, match="buffer is null"):
        hal.buffer_assert(None, None, Buffer(b"tensor"), alloc, 64, 16, 3075)
    with pytest.raises(VmError, match="expected Fence"):
        hal.fence_await(None, -1, 0, [b])


def test_queue_writes_into_mmap_imported_data_are_refused():
    """With --module_mode=mmap, imported module data is read-only to queue
    transfers too (as to command-buffer transfers), as in IREE."""
    from vmrt.vm.buffer import Buffer
    hal = HalDeviceModule(module_mode="mmap")
    state = hal.alloc_state(None)
    try:
        dev = state.devices[0]
        ro = Buffer(bytes(range(32)))
        imported = hal.allocator_import(state, dev.allocator, 1, -1, 48, 3075, ro, 8, 8)
        with pytest.raises(VmError) as e:
            hal.queue_update(state, dev, -1, None, None, ro, 0, imported, 0, 4, 0)
        assert e.value.code == StatusCode.PERMISSION_DENIED
        assert "buffer allows READ, operation requires READ|WRITE" in str(e.value)
        assert imported.bytes.tobytes() == bytes(range(8, 16))
    finally:
        hal.free_state(state)
