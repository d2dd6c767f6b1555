"""``vmrt.load``: programs compiled by the pip iree-compile (llvm-cpu for the
local device, host-only, a foreign CPU, one needing an executable plugin)
called as Python functions; every result is compared with the pip
``iree.runtime`` package (the oracle) on the same ``.vmfb`` (for a foreign
CPU: on the x86_64 build of the same source)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import PROGRAMS as HAL_PROGRAMS
from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, REPO, require_tool
from tests.vmrt.vmrt_testutil import PROGRAMS as VM_PROGRAMS

CACHE = REPO / "build" / "vmrt_load"
HOST_ONLY = ["--iree-execution-model=host-only"]

SCALARS = """
func.func @add_i32(%a: i32, %b: i32) -> i32 {
  %0 = arith.addi %a, %b : i32
  return %0 : i32
}
func.func @mix(%a: f32, %b: i64, %c: i32) -> (f32, i64, i32) {
  %0 = arith.mulf %a, %a : f32
  %1 = arith.muli %b, %b : i64
  %2 = arith.subi %c, %c : i32
  %3 = arith.addi %2, %c : i32
  return %0, %1, %3 : f32, i64, i32
}
func.func @fma(%a: f32, %b: f32, %c: f32) -> f32 {
  %0 = arith.mulf %a, %b : f32
  %1 = arith.addf %0, %c : f32
  return %1 : f32
}
func.func @sink(%a: i32) {
  return
}
"""


# ------------------------------------------------------------------ helpers ---
class Compiler:
    """iree-compile with a cache under build/vmrt_load/<hash>/ keyed by the
    source, the flags and the compiler version."""

    def __init__(self, exe: str):
        self.exe = exe
        self.version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                      timeout=60).stdout

    def __call__(self, source: Path | str, flags: list[str], name: str) -> Path:
        text = source.read_text() if isinstance(source, Path) else source
        h = hashlib.sha256("\0".join([text, " ".join(flags), self.version]).encode())
        out = CACHE / h.hexdigest()[:16] / f"{name}.vmfb"
        if not out.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)
            src = out.with_suffix(".mlir")
            src.write_text(text)
            tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
            proc = subprocess.run([self.exe, str(src), *flags, "-o", str(tmp)],
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise RuntimeError(f"iree-compile {name} failed:\n{proc.stderr[-3000:]}")
            os.replace(tmp, out)
        return out

    def cpu(self, source: Path | str, arch: str = "x86_64", name: str = "prog") -> Path:
        return self(source, ["--iree-hal-target-device=local",
                             "--iree-hal-local-target-device-backends=llvm-cpu",
                             *IREE_TARGET_FLAGS[arch]], f"{name}-{arch}")

    def host(self, source: Path | str, name: str = "prog") -> Path:
        return self(source, HOST_ONLY, f"{name}-host")


@pytest.fixture(scope="module")
def iree_compile() -> Compiler:
    return Compiler(require_tool("iree-compile", "iree-base-compiler"))


@pytest.fixture(scope="module")
def ir():
    return pytest.importorskip("iree.runtime")


def host_value(v):
    """An iree.runtime result as plain host values (DeviceArray -> ndarray)."""
    if isinstance(v, tuple):
        return tuple(host_value(x) for x in v)
    if hasattr(v, "to_host"):
        return np.asarray(v.to_host())
    return v


def oracle(ir, vmfb: Path, fn: str, *args, scalars: bool = False):
    """iree.runtime's result; ``scalars``: numpy scalars as Python numbers
    (iree.runtime would pass them as 0-d tensors; vmrt.load converts them
    per the function's signature)."""
    if scalars:
        args = tuple(a.item() if isinstance(a, np.generic) else a for a in args)
    m = ir.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")
    return host_value(getattr(m, fn)(*args))


_ORACLE_SCRIPT = """
import json, sys
import numpy as np
import iree.runtime as ir
vmfb, fn, plugins, npz, out = sys.argv[1:]
ir.flags.parse_flags(*[f"--executable_plugin={p}" for p in json.loads(plugins)])
args = np.load(npz)
m = ir.load_vm_flatbuffer_file(vmfb, driver="local-sync")
r = getattr(m, fn)(*[args[f"a{i}"] for i in range(len(args.files))])
np.save(out, np.asarray(r.to_host()))
"""


def oracle_with_plugins(tmp_path: Path, vmfb: Path, fn: str, plugins: list, *arrays):
    """iree.runtime with ``--executable_plugin`` flags, in a fresh process
    (the runtime reads the flag once, when it first creates its driver)."""
    npz, out = tmp_path / "args.npz", tmp_path / "out.npy"
    np.savez(npz, **{f"a{i}": a for i, a in enumerate(arrays)})
    proc = subprocess.run([sys.executable, "-c", _ORACLE_SCRIPT, str(vmfb), fn,
                           json.dumps([str(p) for p in plugins]), str(npz), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return np.load(out)


def same(ours, theirs):
    """Equal values, types and (arrays) dtypes and shapes."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
        return
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), type(ours)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
        return
    assert type(ours) is type(theirs), (ours, theirs)
    assert ours == theirs or (ours != ours and theirs != theirs)


def rng_f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------- the local device ---
@pytest.fixture(scope="module")
def elementwise(iree_compile):
    return iree_compile.cpu(HAL_PROGRAMS / "elementwise.mlir", name="elementwise")


def test_elementwise_add_mul(elementwise, ir):
    a, b = rng_f32(8), rng_f32(8, seed=1)
    with vmrt.load(elementwise) as prog:
        assert set(prog.exports) == {"add", "mul_add", "iops", "with_const"}
        same(prog["add"](a, b), oracle(ir, elementwise, "add", a, b))
        same(prog.add(a, b), a + b)
        x, y = rng_f32(37, seed=2), rng_f32(37, seed=3)           # dynamic shape
        same(prog.mul_add(x, y), oracle(ir, elementwise, "mul_add", x, y))
        c = rng_f32(4, seed=4)
        same(prog.with_const(c), oracle(ir, elementwise, "with_const", c))


def test_multiple_results_are_a_tuple(elementwise, ir):
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    b = (np.arange(16, dtype=np.int32) * 3 - 7).reshape(4, 4)
    with vmrt.load(elementwise, device="local-sync") as prog:
        r = prog.iops(a, b)
        assert isinstance(r, tuple) and len(r) == 2
        same(r, oracle(ir, elementwise, "iops", a, b))


def test_arguments_are_not_aliased(elementwise):
    a = np.ones(4, np.float32)
    with vmrt.load(elementwise) as prog:
        r1 = prog.with_const(a)
        a[:] = 10
        r2 = prog.with_const(a)
    np.testing.assert_array_equal(r1, [1, 2, 3, 4])      # results are the caller's copies
    np.testing.assert_array_equal(r2, [10, 20, 30, 40])


def test_an_argument_too_big_to_copy_is_our_error(elementwise):
    """Issue 16: a MemoryError must not escape a public path; a strided view
    of a huge virtual array cannot be copied into a buffer view."""
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (1 << 40,), (0,))
    with vmrt.load(elementwise) as prog:
        with pytest.raises(vmrt.VmError) as e:
            prog.add(huge, huge)
        assert e.value.code == vmrt.StatusCode.RESOURCE_EXHAUSTED
        assert "argument" in str(e.value) and str(huge.nbytes) in str(e.value)
        np.testing.assert_array_equal(prog.add(np.ones(8, np.float32), np.ones(8, np.float32)), 2)


def test_matmul_and_mlp(iree_compile, ir):
    vmfb = iree_compile.cpu(HAL_PROGRAMS / "matmul.mlir", name="matmul")
    a, b = rng_f32(4, 8), rng_f32(8, 3, seed=1)
    with vmrt.load(vmfb) as prog:
        ours = prog.matmul(a, b)
        same(ours, oracle(ir, vmfb, "matmul", a, b))
        np.testing.assert_allclose(ours, a @ b, rtol=1e-5, atol=1e-5)
        x, w, bias = rng_f32(5, 16, seed=2), rng_f32(16, 32, seed=3), rng_f32(32, seed=4)
        same(prog.mlp(x, w, bias), oracle(ir, vmfb, "mlp", x, w, bias))


def test_element_types(iree_compile, ir):
    vmfb = iree_compile.cpu(HAL_PROGRAMS / "types.mlir", name="types")
    i8 = np.arange(-8, 8, dtype=np.int8) * 9
    i64 = np.array([1 << 40, -3, 7], np.int64)
    f16 = np.linspace(-2, 2, 5).astype(np.float16)
    with vmrt.load(vmfb) as prog:
        same(prog.i8add(i8, i8), oracle(ir, vmfb, "i8add", i8, i8))
        same(prog.i64mul(i64, i64), oracle(ir, vmfb, "i64mul", i64, i64))
        same(prog.f16add(f16, f16), oracle(ir, vmfb, "f16add", f16, f16))
        a, b = np.array([1, 5, 3, 0], np.int32), np.array([2, 2, 2, 2], np.int32)
        same(prog.i1cmp(a, b), oracle(ir, vmfb, "i1cmp", a, b))           # bool arrays
        flags = np.array([True, False, True, True])
        same(prog.i1pass(flags), oracle(ir, vmfb, "i1pass", flags))


def test_scalar_results_and_index_arguments(iree_compile, ir):
    vmfb = iree_compile.cpu(HAL_PROGRAMS / "consts.mlir", name="consts")
    with vmrt.load(vmfb) as prog:
        a = np.array([4, 5, 6, 7], np.int32)
        same(prog.scalar_out(a), oracle(ir, vmfb, "scalar_out", a))       # an int
        same(prog.zeros(6), oracle(ir, vmfb, "zeros", 6))                 # index argument
        same(prog.splat(), oracle(ir, vmfb, "splat"))                     # no arguments
        m = rng_f32(16, 32)
        same(prog.reduce(m), oracle(ir, vmfb, "reduce", m))


@pytest.mark.parametrize("kind", ["cpu", "host"])
def test_scalar_functions(iree_compile, ir, kind):
    vmfb = iree_compile.cpu(SCALARS, name="scalars") if kind == "cpu" \
        else iree_compile.host(SCALARS, name="scalars")
    cases = [("add_i32", (2, 3)), ("add_i32", (0x7FFFFFFF, 1)),            # wraps like i32
             ("add_i32", (np.int32(-5), np.int64(9))),
             ("mix", (1.5, 1 << 33, -4)), ("mix", (np.float32(0.1), 3, 2)),
             ("fma", (0.1, 0.2, 0.3)), ("fma", (np.float64(1e30), 1e30, 1.0)),   # inf in f32
             ("sink", (1,))]
    with vmrt.load(vmfb, device=None if kind == "host" else "local-sync") as prog:
        for fn, args in cases:
            same(prog[fn](*args), oracle(ir, vmfb, fn, *args, scalars=True))
        assert prog.sink(7) is None


def test_host_only_buffer_views(iree_compile, ir):
    vmfb = iree_compile.host(VM_PROGRAMS / "hal_views.mlir", name="hal_views")
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    for device in (None, "local-sync"):
        with vmrt.load(vmfb, device=device) as prog:
            same(prog.info(v), oracle(ir, vmfb, "info", v))
            same(prog.sum(v), oracle(ir, vmfb, "sum", v))
            same(prog.fill(v, 7), oracle(ir, vmfb, "fill", v, 7))
            same(prog.mk(v), oracle(ir, vmfb, "mk", v))
    np.testing.assert_array_equal(v, np.arange(6).reshape(2, 3))      # the caller's array untouched


def test_sources_path_bytes_and_module(elementwise):
    a, b = rng_f32(8), rng_f32(8, seed=1)
    from vmrt.modules.hal.provider import PROVIDER
    inst = vmrt.Instance()
    PROVIDER.register_types(inst)          # the program's hal types, as `vmrt run` registers them
    for source in (str(elementwise), elementwise, elementwise.read_bytes(),
                   vmrt.BytecodeModule.load(inst, elementwise)):
        with vmrt.load(source) as prog:
            same(prog.add(a, b), a + b)


# ---------------------------------------------------------- extra modules ---
def test_extra_modules_spec_and_native(iree_compile, ir):
    lib = iree_compile.host(VM_PROGRAMS / "lib.mlir", name="lib")
    app = iree_compile.host((VM_PROGRAMS / "app.mlir").read_text().replace(
        " attributes {vm.version = 2 : i32}", ""), name="app_nover")
    inst = ir.VmInstance()
    ctx = ir.SystemContext(vm_modules=[ir.VmModule.mmap(inst, str(m)) for m in (lib, app)])
    expected = host_value(ctx.modules.app.run(7))
    with vmrt.load(app, modules=[str(lib)], device=None) as prog:
        same(prog.run(7), expected)              # the compiled fallback of the optional import

    class Ext(vmrt.NativeModule):
        name = "ext"

        @vmrt.export("twice", "0i_i")
        def twice(self, state, x):
            return 2 * x

    with vmrt.load(app, modules=[str(lib), Ext()], device=None) as prog:
        b, n, t = prog.run(7)
        assert (b, n, t) == (expected[0], expected[1], 2 * expected[0])
        assert prog.run(1) == (9, 4, 18)         # module state lives as long as the program


# ----------------------------------------------------- executable plugins ---
@pytest.fixture(scope="module")
def standalone_sos(plugins, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("load_sos") / "standalone.sos"
    slices = [str(plugins.path("standalone", a)) for a in ("x86_64", "aarch64")]
    proc = subprocess.run([sys.executable, "-m", "elfkit", "fatelf", "pack", "-o", str(out),
                           *slices], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def test_program_needing_a_plugin(iree_compile, plugins, standalone_sos, tmp_path):
    vmfb = iree_compile.cpu(REPO / "examples" / "simple_mul.mlir", name="simple_mul")
    lhs, rhs = rng_f32(200), rng_f32(200, seed=1)      # several 64-element workgroups
    expected = oracle_with_plugins(tmp_path, vmfb, "mixed_invocation",
                                   [plugins.path("standalone", "x86_64")], lhs, rhs)
    with vmrt.load(vmfb, device="local-sync", executable_plugins=[standalone_sos]) as prog:
        same(prog.mixed_invocation(lhs, rhs), expected)
        np.testing.assert_allclose(prog.plugin_mul(lhs, rhs), lhs * rhs, rtol=1e-6)
    # without the plugin: an unresolved import
    with pytest.raises(vmrt.VmError), vmrt.load(vmfb) as prog:
        prog.mixed_invocation(lhs, rhs)


# ---------------------------------------------------- foreign CPU (emulated) ---
# (the ``emulation`` fixture is tests/vmrt/conftest.py's)
def test_foreign_cpu_program_is_emulated(iree_compile, ir, emulation):
    native = iree_compile.cpu(HAL_PROGRAMS / "matmul.mlir", name="matmul")
    foreign = iree_compile.cpu(HAL_PROGRAMS / "matmul.mlir", "aarch64", name="matmul")
    a, b = rng_f32(4, 8), rng_f32(8, 3, seed=1)
    with vmrt.load(foreign) as prog:
        ours = prog.matmul(a, b)
    np.testing.assert_allclose(ours, oracle(ir, native, "matmul", a, b), rtol=1e-5, atol=1e-6)


def test_foreign_cpu_program_with_plugin(iree_compile, plugins, standalone_sos, emulation,
                                         tmp_path):
    native = iree_compile.cpu(REPO / "examples" / "simple_mul.mlir", name="simple_mul")
    foreign = iree_compile.cpu(REPO / "examples" / "simple_mul.mlir", "aarch64",
                               name="simple_mul")
    lhs, rhs = rng_f32(70), rng_f32(70, seed=1)
    expected = oracle_with_plugins(tmp_path, native, "mixed_invocation",
                                   [plugins.path("standalone", "x86_64")], lhs, rhs)
    with vmrt.load(foreign, executable_plugins=[standalone_sos]) as prog:
        same(prog.mixed_invocation(lhs, rhs), expected)


# ------------------------------------------------------------- the object ---
def test_program_object(elementwise):
    prog = vmrt.load(elementwise)
    assert "add" in prog and "nope" not in prog and 3 not in prog
    assert prog["add"] is prog.add                        # functions are cached
    assert "add" in dir(prog)
    assert isinstance(prog.context, vmrt.Context) and prog.module.name in repr(prog)
    assert prog.add.cconv == "0rr_r" and "tensor<8xf32>" in (prog.add.declaration or "")
    assert "__init" not in prog.exports
    assert not prog.closed
    prog.close()
    prog.close()                                          # idempotent
    assert prog.closed and "closed" in repr(prog)
    with pytest.raises(vmrt.VmError, match="closed"):
        prog.add(np.ones(8, np.float32), np.ones(8, np.float32))


def test_lazy_import():
    code = ("import sys, vmrt; assert 'numpy' not in sys.modules, 'numpy'; "
            "assert 'vmrt.program' not in sys.modules; "
            "assert callable(vmrt.load) and vmrt.Program and vmrt.FunctionNotFoundError")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr


# -------------------------------------------------------------- bad input ---
def test_missing_file(tmp_path):
    with pytest.raises(vmrt.LoadError) as e:
        vmrt.load(tmp_path / "nope.vmfb")
    assert e.value.code == vmrt.StatusCode.NOT_FOUND
    assert "nope.vmfb" in str(e.value)


def test_not_a_program(tmp_path):
    junk = tmp_path / "junk.vmfb"
    junk.write_bytes(b"\0" * 64)
    with pytest.raises(vmrt.LoadError):
        vmrt.load(junk)
    with pytest.raises(vmrt.VmError, match="cannot load a program from a int"):
        vmrt.load(42)
    with pytest.raises(vmrt.VmError, match="cannot use a float as a module"):
        vmrt.load(junk, modules=[1.5])


def test_unknown_function_lists_exports(elementwise):
    with vmrt.load(elementwise) as prog:
        for get in (lambda: prog["nope"], lambda: prog.nope):
            with pytest.raises(vmrt.FunctionNotFoundError) as e:
                get()
            msg = str(e.value)
            assert msg.startswith("NOT_FOUND; ") and "'nope'" in msg
            assert all(name in msg for name in ("add", "mul_add", "iops", "with_const"))
            assert isinstance(e.value, vmrt.VmError)
        assert isinstance(e.value, KeyError) and isinstance(e.value, AttributeError)
        assert not hasattr(prog, "nope") and getattr(prog, "nope", None) is None


def test_wrong_number_of_arguments(elementwise):
    a = np.ones(8, np.float32)
    with vmrt.load(elementwise) as prog:
        with pytest.raises(vmrt.UsageError, match=r"'add' takes 2 arguments but 1 was given"):
            prog.add(a)
        with pytest.raises(vmrt.UsageError, match=r"takes 2 arguments but 3 were given.*"
                                                  r"tensor<8xf32>"):
            prog.add(a, a, a)
        same(prog.add(a, a), a + a)                     # still usable


def test_wrong_argument_kinds(elementwise, iree_compile):
    with vmrt.load(elementwise) as prog:
        with pytest.raises(vmrt.VmError) as e:
            prog.add(np.ones(8, np.float32), 3)        # a number where a tensor is expected
        assert "invoking function 'add'" in str(e.value)
        with pytest.raises(vmrt.VmError) as e:
            prog.add(np.ones(8, np.float32), np.ones(5, np.float32))   # wrong shape
        assert "invoking function 'add'" in str(e.value)
    vmfb = iree_compile.host(SCALARS, name="scalars")
    with vmrt.load(vmfb, device=None) as prog, \
            pytest.raises(vmrt.VmError, match="expected an integer"):
        prog.add_i32("2", 3)


def test_bad_device_and_plugin(elementwise, tmp_path):
    with pytest.raises(vmrt.VmError):
        vmrt.load(elementwise, device="cuda")
    with pytest.raises(vmrt.VmError):
        vmrt.load(elementwise, executable_plugins=[tmp_path / "missing.sos"])


@pytest.mark.parametrize("name,dtype", [("f32", np.float32), ("i8", np.int8),
                                        ("ui16", np.uint16), ("i64", np.int64),
                                        ("f16", np.float16), ("f64", np.float64)])
def test_results_over_memory_come_back_as_copies(name, dtype):
    """A result view made over device memory (``BufferView.over``, what
    ``hal.buffer_view.create`` makes) comes back as a copy of that memory
    seen as its element type: what its ``array`` is, not a view of it."""
    from vmrt.hal.buffer import aligned_memory
    from vmrt.hal.buffer_view import BufferView
    from vmrt.program import to_host
    want = (np.arange(-6, 6) * 3).astype(dtype).reshape(3, 4)
    mem, addr = aligned_memory(want.nbytes)
    mem[:] = want.tobytes()
    view = BufferView.over(mem, name, (3, 4), addr)
    got = to_host(view)
    assert got.dtype == want.dtype and got.shape == (3, 4) and got.flags.owndata
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, view.array)
    mem[:] = bytes(want.nbytes)                     # a copy: the memory changing later
    np.testing.assert_array_equal(got, want)
    scalar = BufferView.over(mem[:want.itemsize], name, (), addr)      # rank 0
    assert to_host(scalar).shape == () and to_host(scalar) == 0


def test_results_of_other_views_keep_their_arrays():
    """Views holding a numpy array (a big-endian one: its bytes are not the
    element type's native ones), i1 and packed i4 come back through the
    view's array."""
    from vmrt.hal.buffer_view import BufferView
    from vmrt.program import to_host
    big = np.arange(5, dtype=">f4")
    got = to_host(BufferView(big))
    np.testing.assert_array_equal(got, big)
    flags = to_host(BufferView(np.array([1, 0, 1], np.int8), "i1"))
    assert flags.dtype == np.bool_ and flags.tolist() == [True, False, True]
    i4 = np.array([-8, 7, 3, -1, 0], np.int8)
    np.testing.assert_array_equal(to_host(BufferView(i4, "i4")), i4)
