"""The vmvx module's kernels against numpy, the vmvx executable loader, the
device's format query, the custom-module sample compiled for vmvx, and the
static ``vmvx`` module for a vmvx executable run on its own."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.local.vmvx.vmvx_testutil import (
    REPO,
    compile_vmvx,
    iree_run,
    needs_iree,
    vmrt_run,
)
from vmrt.errors import VmError
from vmrt.hal.local.device import Device
from vmrt.hal.local.loader import ExecutableLoader, supports_format
from vmrt.hal.local.vmvx import VmvxModule
from vmrt.hal.local.vmvx_executable import VmvxExecutable, buffer_over

F32, S8S8S32, I32I32 = 0x01, 0x02, 0x03


def call(name, *args):
    inst = vmrt.Instance()
    mod = VmvxModule(inst)
    with vmrt.Context(inst, [mod]) as ctx:
        return ctx.invoke(f"vmvx.{name}", list(args))


def buf(a):
    return buffer_over(np.ascontiguousarray(a))


def test_exports_have_the_compilers_cconvs():
    cc = {e.name: e.cconv for e in VmvxModule().exports}
    assert cc["add.2d.f32"] == "0rIIIrIIIrIIIII_v"
    assert cc["exp.2d.f32"] == cc["copy.2d.x16"] == "0rIIIrIIIII_v"
    assert cc["fill.2d.x32"] == "0irIIII_v"
    assert cc["mmt4d"] == "0rIIrIIrIIIIIiiii_v"
    assert cc["pack"] == "0rIIIrIIIIIIIIIIi_v"
    assert cc["unpack"] == "0rIIIrIIIIIIIIIi_v"
    assert cc["query_tile_sizes.2d"] == "0IIi_II"
    assert len(cc) == 32


def test_binary_over_strided_tiles():
    a = np.arange(12, dtype=np.float32)
    b = np.full(12, 2, np.float32)
    out = np.zeros(12, np.float32)
    # lhs rows of stride 4 (3x2 tile), rhs broadcast row (stride0 0), out transposed
    call("mul.2d.f32", buf(a), 1, 4, 1, buf(b), 0, 0, 1, buffer_over(out), 0, 1, 3, 3, 2)
    want = np.zeros(12, np.float32)
    want.reshape(-1)[[0, 3, 1, 4, 2, 5]] = a.reshape(3, 4)[:, 1:3].reshape(-1) * 2
    np.testing.assert_array_equal(out, want)


def test_integer_ops_wrap_and_refuse_division_by_zero():
    a = np.array([2**31 - 1, -2**31, -7, 7], np.int32)
    b = np.array([1, -1, 2, -2], np.int32)
    out = np.zeros(4, np.int32)
    call("add.2d.i32", buf(a), 0, 4, 1, buf(b), 0, 4, 1, buffer_over(out), 0, 4, 1, 1, 4)
    assert out.tolist() == [-2**31, 2**31 - 1, -5, 5]
    call("divs.2d.i32", buf(a), 0, 4, 1, buf(b), 0, 4, 1, buffer_over(out), 0, 4, 1, 1, 4)
    assert out.tolist() == [2**31 - 1, -2**31, -3, -3]
    with pytest.raises(VmError, match="division by zero"):
        call("divu.2d.i32", buf(a), 0, 4, 1, buf(np.zeros(4, np.int32)), 0, 4, 1,
             buffer_over(out), 0, 4, 1, 1, 4)


def test_out_of_bounds_and_read_only_operands():
    a = np.zeros(4, np.float32)
    with pytest.raises(VmError) as e:
        call("copy.2d.x32", buf(a), 0, 4, 1, buf(a), 0, 4, 1, 2, 4)
    assert e.value.code == vmrt.StatusCode.OUT_OF_RANGE
    with pytest.raises(VmError) as e:
        call("fill.2d.x32", 1, vmrt.Buffer(b"\0" * 16), 0, 4, 1, 4)
    assert e.value.code == vmrt.StatusCode.PERMISSION_DENIED


def test_fill_and_ctlz():
    out = np.zeros(8, np.int32)
    call("fill.2d.x32", -5, buffer_over(out), 1, 4, 2, 3)
    assert out.tolist() == [0, -5, -5, -5, 0, -5, -5, -5]
    x = np.array([0, 1, -1, 0x10000], np.int32)
    call("ctlz.2d.i32", buf(x), 0, 4, 1, buffer_over(out), 0, 4, 1, 1, 4)
    assert out[:4].tolist() == [32, 31, 0, 15]


@pytest.mark.parametrize("flags", [0, 0x100, 0x200, 0x300])
def test_pack_then_unpack_round_trips_with_padding(flags):
    src = np.arange(1, 5 * 7 + 1, dtype=np.int32).reshape(5, 7)
    t0, t1 = 4, 3                                # tiles in the unpacked dims' order
    o0, o1 = 2, 3                                # ceil(5/4), ceil(7/3)
    if flags & 0x200:
        o0, o1 = o1, o0
    p0, p1 = (t1, t0) if flags & 0x100 else (t0, t1)
    packed = np.zeros((o0, o1, p0, p1), np.int32)
    call("pack", buf(src), 0, 7, 1, buffer_over(packed), 0, o1 * p0 * p1, p0 * p1, 5, 7,
         o0, o1, p0, p1, -1, I32I32 | flags)
    full = np.full((8, 9), -1, np.int32)
    full[:5, :7] = src
    tiles = full.reshape(2, 4, 3, 3).transpose(0, 2, 1, 3)       # (O0, O1, T0, T1)
    if flags & 0x200:
        tiles = tiles.transpose(1, 0, 2, 3)
    if flags & 0x100:
        tiles = tiles.transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(packed, tiles)
    back = np.zeros((5, 7), np.int32)
    call("unpack", buf(packed), 0, o1 * p0 * p1, p0 * p1, buffer_over(back), 0, 7, 1,
         o0, o1, p0, p1, 5, 7, I32I32 | flags)
    np.testing.assert_array_equal(back, src)


def test_mmt4d_f32_and_i8_with_accumulate():
    rng = np.random.default_rng(1)
    m, n, k, m0, n0, k0 = 2, 3, 2, 4, 2, 3
    lhs = rng.standard_normal((m, k, m0, k0)).astype(np.float32)
    rhs = rng.standard_normal((n, k, n0, k0)).astype(np.float32)
    out = np.ones((m, n, m0, n0), np.float32)
    call("mmt4d", buf(lhs), 0, k * m0 * k0, buf(rhs), 0, k * n0 * k0, buffer_over(out), 0,
         n * m0 * n0, m, n, k, m0, n0, k0, F32 | 0x100)
    want = 1 + np.einsum("akxz,bkyz->abxy", lhs.astype(np.float64), rhs.astype(np.float64))
    np.testing.assert_allclose(out, want, rtol=1e-5)
    li = rng.integers(-128, 128, (m, k, m0, k0), dtype=np.int8)
    ri = rng.integers(-128, 128, (n, k, n0, k0), dtype=np.int8)
    oi = np.full((m, n, m0, n0), 7, np.int32)
    call("mmt4d", buf(li), 0, k * m0 * k0, buf(ri), 0, k * n0 * k0, buffer_over(oi), 0,
         n * m0 * n0, m, n, k, m0, n0, k0, S8S8S32)
    np.testing.assert_array_equal(oi, np.einsum("akxz,bkyz->abxy", li.astype(np.int32),
                                                ri.astype(np.int32)))


def test_query_tile_sizes_are_the_generic_ones():
    assert call("query_tile_sizes.2d", 8, 16, 0x101) == [8, 4]     # LHS: M0, K0
    assert call("query_tile_sizes.2d", 16, 4, 0x102) == [8, 4]     # RHS: N0, K0
    assert call("query_tile_sizes.2d", 8, 4, 0x103) == [8, 8]      # RESULT: M0, N0


def test_device_supports_the_vmvx_format():
    assert supports_format("vmvx-bytecode-fb")
    dev = Device("local-sync")
    assert dev.query_i64("hal.executable.format", "vmvx-bytecode-fb") == 1
    assert dev.query_i64("hal.executable.format", "vmvx-bytecode-fb2") == 0


@needs_iree
def test_executable_loads_and_dispatches_directly():
    vmfb = compile_vmvx("ops.mlir", "ukernels", dump=True)
    (exe_file,) = (vmfb.parent / "bins").glob("*.vmfb")
    with ExecutableLoader() as loader:
        exe = loader.load(exe_file.read_bytes(), executable_format="vmvx-bytecode-fb")
        assert isinstance(exe, VmvxExecutable)
        e = exe.export(next(x.name for x in exe.exports if x.name.startswith("add_")))
        assert e.binding_count == 3 and "vmvx" in exe.describe()
        a, b = np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32)
        out = np.zeros(4, np.float32)
        views = [x.view(np.uint8) for x in (a, b, out)]
        exe.dispatch(e.ordinal, (1, 1, 1), views, [])
        assert out.tolist() == [0.5, 1.5, 2.5, 3.5]
        with pytest.raises(VmError, match="takes 3 binding"):
            exe.dispatch(e.ordinal, (1, 1, 1), views[:2], [])
        with pytest.raises(VmError, match="no executable-level constants"):
            VmvxExecutable.load(exe_file.read_bytes(), constants=[1])


@needs_iree
def test_vmvx_executable_run_alone_gets_the_static_vmvx_module():
    vmfb = compile_vmvx("ops.mlir", "ukernels", dump=True)
    (exe_file,) = (vmfb.parent / "bins").glob("*.vmfb")
    args = (f"--module={exe_file}", "--function=nope")
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref) == (1, "")
    assert err.startswith("NOT_FOUND; no function `nope` exported by module")


@needs_iree
@pytest.mark.parametrize("fn,rc,expected", [
    ("main", 0, "EXEC @main\nCREATE 5xi8=0 1 2 3 4\nPRINT 5xi8=0 1 2 3 4\n"),
    ("error", 1, "EXEC @error\n"),
])
def test_custom_module_sample_compiled_for_vmvx(fn, rc, expected):
    # the dynamic sample's README compiles its program for vmvx; the C
    # sample's transcript is the oracle (iree-run-module cannot load the
    # Python module)
    vmfb = compile_vmvx("custom_sample.mlir")
    spec = f"{REPO / 'vmrt' / 'samples' / 'custom.py'}@create_tensor_module"
    proc = subprocess.run([sys.executable, "-m", "vmrt", "run", "--device=local-sync",
                           f"--module={spec}", f"--module={vmfb}", f"--function={fn}"],
                          capture_output=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (proc.returncode, proc.stdout.decode()) == (rc, expected)
    if rc:
        assert proc.stderr.decode().startswith("UNKNOWN; Forced failure")
