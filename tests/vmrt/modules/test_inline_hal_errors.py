"""Bad input to the inline HAL ends in vmrt's own error with the status code
iree-run-module reports for the same program (a format no loader takes,
bytes that are not an ELF, a function id out of range, a binding past its
buffer, a buffer view of the wrong shape or type), and the modules' exports
called directly behave as IREE's do (allocation alignment, storage aliasing,
range checks, ``hal.cpu`` queries against ``iree-cpuinfo``)."""
from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from tests.vmrt.iree_tools import require_tool
from tests.vmrt.modules.inline_testutil import iree_cli, loader_driver, status, vmrt_cli
from tests.vmrt.modules.inline_testutil import run_args as _args
from vmrt import Buffer, HalError, StatusCode, VmError
from vmrt.hal.buffer import HalBuffer
from vmrt.vm.native_module import NativeState

ADD_INPUTS = ["4xf32=1,2,3,4", "4xf32=10,20,30,40"]


def _same_failure(iree_run_module: str, args: list[str]) -> tuple[str, str]:
    """Both tools fail with exit code 1; returns both status lines."""
    want, got = iree_cli(iree_run_module, args), vmrt_cli("run", args)
    assert want[0] == 1 and got[0] == 1, (want[2], got[2])
    assert got[1] == want[1]          # the same stdout (EXEC @fn, nothing more)
    return status(want[2]), status(got[2])


def _patched(vmfb: Path, tmp_path: Path, old: bytes, new: bytes) -> Path:
    data = vmfb.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    out = tmp_path / vmfb.name
    out.write_bytes(data.replace(old, new))
    return out


def test_unsupported_format_fails_in_init_like_iree(inline, iree_run_module, tmp_path):
    """No loader takes the format: the program's ``__init`` fails UNAVAILABLE."""
    vmfb = _patched(inline("inline_elementwise", "dynamic"), tmp_path, b"embedded-elf-x86_64",
                    b"embedded-elf-x86_99")
    want, got = _same_failure(iree_run_module, _args(vmfb, "add", ADD_INPUTS))
    assert got == want == ("UNAVAILABLE; none of the executable binaries in the module are "
                           "supported by the runtime")


@pytest.mark.parametrize(("offset", "new", "code"), [
    (0, b"\x7fELG", "FAILED_PRECONDITION"),                 # not an ELF
    (32, b"\xff" * 8, "INVALID_ARGUMENT"),                  # program headers past the end
])
def test_bad_executable_bytes_fail_like_iree(inline, iree_run_module, tmp_path, offset, new,
                                             code):
    vmfb = inline("inline_elementwise", "dynamic")
    data = vmfb.read_bytes()
    at = data.index(b"\x7fELF\x02\x01\x01") + offset
    bad = tmp_path / "bad.vmfb"
    bad.write_bytes(data[:at] + new + data[at + len(new):])
    want, got = _same_failure(iree_run_module, _args(bad, "add", ADD_INPUTS))
    assert want.split(";")[0] == got.split(";")[0] == code
    assert "hal_loader.executable.load" in vmrt_cli("run", _args(bad, "add", ADD_INPUTS))[2]


@pytest.mark.parametrize(("inputs", "want_status"), [
    (["4xf32=1,2,3,4", "3xf32=1,2,3"], "INVALID_ARGUMENT; input1 shape dimension 0 mismatch"),
    (["4xi8=1,2,3,4", "4xf32=1,2,3,4"], "INVALID_ARGUMENT; input0 element type mismatch"),
    (["2x2xf32=1", "4xf32=1,2,3,4"], "INVALID_ARGUMENT; input0 shape rank mismatch"),
])
@pytest.mark.parametrize("model", ["static", "dynamic"])
def test_wrong_buffer_views_fail_like_iree(inline, iree_run_module, model, inputs, want_status):
    want, got = _same_failure(iree_run_module, _args(inline("inline_elementwise", model), "add",
                                                     inputs))
    assert got == want and got.startswith(want_status)


# -- hal_loader driven directly by a hand-written VM module ------------------------------
@pytest.fixture(scope="module")
def driver(inline, tmp_path_factory):
    """``drive.dispatch(entry, size)`` over the elementwise library (4 exports)."""
    src = tmp_path_factory.mktemp("driver") / "drive.mlir"
    src.write_text(loader_driver(inline.library("inline_elementwise"), "embedded-elf-x86_64"))
    return inline.compile(src, ["--compile-mode=vm"], "drive")


def test_driver_dispatch_matches_iree(driver, iree_run_module):
    """A good dispatch over ``vm.buffer.alloc`` buffers (unaligned host memory
    vmrt stages): the same output."""
    args = [f"--module={driver}", "--function=dispatch", "--input=0", "--input=16"]
    want = iree_cli(iree_run_module, args)
    assert want[0] == 0, want[2]
    assert vmrt_cli("run", args)[:2] == want[:2]


@pytest.mark.parametrize(("entry", "size", "prefix"), [
    (7, 16, "OUT_OF_RANGE; function id 7 out of range (count: 4)"),
    (-1, 16, "OUT_OF_RANGE; function id 18446744073709551615 out of range (count: 4)"),
    (0, 8, "OUT_OF_RANGE; out-of-bounds access detected (offset=0, length=16, alignment=1, "
           "buffer length=8)"),
])
def test_bad_dispatch_fails_like_iree(driver, iree_run_module, entry, size, prefix):
    args = [f"--module={driver}", "--function=dispatch", f"--input={entry}", f"--input={size}"]
    want, got = _same_failure(iree_run_module, args)
    assert want.startswith(prefix) and got.startswith(prefix), (want, got)


def test_load_of_unknown_format_fails_like_iree(inline, iree_run_module, tmp_path):
    src = tmp_path / "drive_fmt.mlir"
    src.write_text(loader_driver(inline.library("inline_elementwise"), "embedded-elf-x86_99"))
    vmfb = inline.compile(src, ["--compile-mode=vm"], "drive_fmt")
    want, got = _same_failure(iree_run_module, [f"--module={vmfb}", "--function=dispatch",
                                                "--input=0", "--input=16"])
    assert got == want == ("NOT_FOUND; no executable loader registered for the given executable "
                           "format 'embedded-elf-x86_99'")


# -- the exports, called directly -------------------------------------------------------
@pytest.fixture
def hal_inline():
    from vmrt.modules.hal_inline import HalInlineModule
    return HalInlineModule()


def test_allocate_alignment_and_storage_alias(hal_inline):
    for align in (0, 16, 64, 256, 4096):
        buf, storage = hal_inline.buffer_allocate(None, align, 100)
        assert isinstance(buf, HalBuffer) and len(buf) == 100 == len(storage)
        assert buf.address % max(align, 64) == 0
        storage.store("f32", 3, 2.5)                    # the program's vm.buffer.store
        assert struct.unpack_from("<f", buf.bytes, 12)[0] == 2.5
        assert not storage.readonly
    with pytest.raises(HalError) as e:
        hal_inline.buffer_allocate(None, 48, 16)
    assert e.value.code == StatusCode.INVALID_ARGUMENT


def test_allocate_initialized_subspan_and_wrap(hal_inline):
    src = Buffer(bytes(range(32)))                      # read-only, like rodata
    buf, storage = hal_inline.buffer_allocate_initialized(None, 64, src, 8, 16)
    assert bytes(buf.bytes) == bytes(range(8, 24)) and buf.address % 64 == 0
    with pytest.raises(HalError) as e:
        hal_inline.buffer_allocate_initialized(None, 64, src, 24, 16)
    assert e.value.code == StatusCode.OUT_OF_RANGE
    sub = hal_inline.buffer_subspan(None, buf, 4, 8)
    assert bytes(sub.bytes) == bytes(range(12, 20)) and sub.address == buf.address + 4
    with pytest.raises(HalError) as e:
        hal_inline.buffer_subspan(None, buf, 12, 8)
    assert e.value.code == StatusCode.OUT_OF_RANGE and "invalid subspan" in str(e.value)
    wrapped = hal_inline.buffer_wrap(None, src, 4, 4)
    assert bytes(wrapped.bytes) == bytes(range(4, 8)) and wrapped.read_only
    assert hal_inline.buffer_length(None, hal_inline.buffer_wrap(None, storage, 2, 6)) == 6


def test_cpu_queries_match_iree_cpuinfo(hal_inline):
    """``device.query.i64("hal.cpu", key)`` answers what ``iree-cpuinfo``
    prints for this machine; an unknown key or category is not found."""
    exe = require_tool("iree-cpuinfo", "iree-base-runtime")
    table = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
    rows = [line.split() for line in table.splitlines() if len(line.split()) == 2]
    assert rows
    for key, value in rows:
        got = hal_inline.device_query_i64(None, Buffer(b"hal.cpu"), Buffer(key.encode()))
        assert got == (1, int(value)), key
    assert hal_inline.device_query_i64(None, Buffer(b"hal.cpu"), Buffer(b"nope")) == (0, 0)
    assert hal_inline.device_query_i64(None, Buffer(b"hal.device"), Buffer(b"avx2")) == (0, 0)


def test_loader_dispatch_stages_unaligned_buffers(inline):
    """hal_loader's exports in order, as a program calls them: the ``add``
    dispatch over ``vm.buffer`` bytearrays (not 64-byte aligned) writes its
    sum back into the output buffer; a read-only output stays untouched."""
    from vmrt.modules.hal_loader import HalLoaderModule
    mod = HalLoaderModule()
    state = NativeState(0)
    mod.init_state(state, None)
    try:
        fmt = Buffer(b"embedded-elf-x86_64")
        assert mod.executable_query_support(state, fmt) == 1
        assert mod.executable_query_support(state, Buffer(b"embedded-elf-pdp11")) == 0
        exe = mod.executable_load(state, fmt, Buffer(inline.library("inline_elementwise")), None)
        fid = mod.executable_lookup_function(state, exe, Buffer(b"add_dispatch_0_elementwise_4_f32"))
        a = Buffer(bytearray(struct.pack("<5f", 0, 1, 2, 3, 4)))
        b = Buffer(bytearray(struct.pack("<4f", 10, 20, 30, 40)))
        out = Buffer(bytearray(20))
        mod.executable_dispatch(state, exe, fid, 1, 1, 1, [], [(a, 4, 16), (b, 0, 16),
                                                               (out, 4, 16)])
        assert struct.unpack("<5f", out.data) == (0, 11, 22, 33, 44)
        ro = Buffer(bytes(16))                          # read-only: bound through a copy
        mod.executable_dispatch(state, exe, fid, 1, 1, 1, [], [(a, 4, 16), (b, 0, 16),
                                                               (ro, 0, 16)])
        assert bytes(ro.data) == bytes(16)
        with pytest.raises(VmError) as e:
            mod.executable_lookup_function(state, exe, Buffer(b"nope"))
        assert e.value.code == StatusCode.NOT_FOUND
        with pytest.raises(HalError) as e:
            mod.executable_dispatch(state, exe, fid, 1, 1, 1, [], [(a, 0, 16)] * 33)
        assert e.value.code == StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(HalError) as e:
            mod.executable_load(state, fmt, Buffer(b"\x7fELF"), Buffer(b"\0" * 6))
        assert e.value.code == StatusCode.INVALID_ARGUMENT
    finally:
        mod.free_state(state)
