"""Executables compiled by iree-compile (llvm-cpu), dispatched by vmrt on
numpy arrays and compared with numpy: natively (x86_64) and emulated (the
other five CPUs), with and without imports from plugins."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.errors import DispatchError, ExecutableError, ImportResolutionError
from vmrt.hal.dispatch_observer import workgroup_probe
from vmrt.hal.local import library_abi as abi
from vmrt.hal.local.executable import Executable
from vmrt.hal.local.plugins.manager import PluginManager

ARCHES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")
EMULATED = ARCHES[1:]


def index(n: int) -> list[int]:
    """An index push constant: two u32 words, low first."""
    return [n & 0xFFFFFFFF, n >> 32]


def need_backend(arch, request):
    if arch != "x86_64":
        request.getfixturevalue("emulation")


def assert_axpy(out, alpha, x, y):
    """out == alpha * x + y, rounded once (fused multiply-add, as aarch64 and
    riscv code does) or twice (separate multiply and add) per element."""
    alpha = np.float32(alpha)
    unfused = alpha * x + y
    fused = (np.float64(alpha) * x.astype(np.float64) + y).astype(np.float32)
    ok = (out == unfused) | (out == fused)
    assert ok.all(), f"mismatch at {np.flatnonzero(~ok)[:5]}: {out[~ok][:5]} vs {unfused[~ok][:5]}"


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# -- plain generated code ------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHES)
def test_codegen_metadata(iree, arch, request):
    need_backend(arch, request)
    with Executable.load(iree.compile("codegen", arch).library) as exe:
        assert exe.arch.name == arch
        assert exe.backend == ("native" if arch == "x86_64" else "emulated")
        assert exe.version == 6 and exe.name == "kernels"
        saxpy = exe.export("saxpy")
        assert (saxpy.binding_count, saxpy.constant_count) == (3, 3)
        grid = exe.export("@grid2d")
        assert (grid.binding_count, grid.constant_count) == (2, 4)
        assert exe.export(grid.ordinal) is grid
        assert exe.imports == []
        text = exe.describe()
        assert "@saxpy" in text and "bindings=3" in text


@pytest.mark.parametrize("arch", ARCHES)
def test_saxpy(iree, arch, request, rng):
    need_backend(arch, request)
    n = 100                                   # 4 workgroups of 32, the last partial
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    alpha = np.float32(2.5)
    with Executable.load(iree.compile("codegen", arch).library) as exe:
        r = exe.dispatch("saxpy", (4, 1, 1), [x, y, out], [float(alpha), *index(n)])
    assert r[2] is out
    assert_axpy(out, alpha, x, y)


@pytest.mark.parametrize("arch", ARCHES)
def test_grid2d(iree, arch, request, rng):
    need_backend(arch, request)
    rows, cols = 9, 21                        # grid (3, 3, 1), partial tiles both ways
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros_like(a)
    with Executable.load(iree.compile("codegen", arch).library) as exe:
        exe.dispatch("grid2d", (3, 3, 1), [a, out], [*index(rows), *index(cols)])
    r, c = np.indices((rows, cols))
    f32 = np.float32
    stepwise = (a * f32(2) + (r * 100).astype(f32)) + c.astype(f32)
    # i386 without SSE keeps x87 intermediates: one rounding at the end
    once = (a.astype(np.float64) * 2 + r * 100 + c).astype(f32)
    ok = (out == stepwise) | ((out == once) if arch == "i386" else False)
    assert ok.all(), (np.flatnonzero(~ok), out[~ok], stepwise[~ok])


def test_partial_grid_only_touches_its_workgroups(iree, rng):
    rows, cols = 8, 16
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros_like(a)
    with Executable.load(iree.compile("codegen", "x86_64").library) as exe:
        exe.dispatch("grid2d", (1, 2, 1), [a, out], [*index(rows), *index(cols)])
    r, c = np.indices((rows, cols))
    f32 = np.float32
    want = np.where(c < 8, (a * f32(2) + (r * 100).astype(f32)) + c.astype(f32), f32(0))
    np.testing.assert_array_equal(out, want)


def test_threads(iree, rng):
    n = 32 * 200
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    with Executable.load(iree.compile("codegen", "x86_64").library) as exe:
        for threads in (1, 2, 3):
            out = np.zeros(n, np.float32)
            exe.dispatch("saxpy", 200, [x, y, out], [0.5, *index(n)], threads=threads)
            np.testing.assert_array_equal(out, np.float32(0.5) * x + y)


def test_bytes_source_and_fatelf(iree, sos, rng):
    libs = [iree.compile("codegen", a).library for a in ("x86_64", "aarch64")]
    fat = sos(libs, "codegen.sos")
    with Executable.load(fat) as exe:            # the host slice
        assert exe.arch.name == "x86_64" and exe.backend == "native"
    with Executable.load(libs[0].read_bytes()) as exe:
        x = np.ones(32, np.float32)
        out = np.zeros(32, np.float32)
        exe.dispatch("saxpy", 1, [x, x, out], [3.0, *index(32)])
        assert (out == 4).all()


# -- dispatch errors -----------------------------------------------------------

@pytest.fixture
def codegen_exe(iree):
    with Executable.load(iree.compile("codegen", "x86_64").library) as exe:
        yield exe


def test_wrong_binding_count(codegen_exe):
    x = np.zeros(32, np.float32)
    with pytest.raises(DispatchError) as e:
        codegen_exe.dispatch("saxpy", 1, [x, x], [1.0, *index(32)])
    assert "'saxpy'" in str(e.value) and "3 binding(s), 2 given" in str(e.value)
    assert e.value.code == vmrt.StatusCode.INVALID_ARGUMENT


def test_wrong_constant_count(codegen_exe):
    x = np.zeros(32, np.float32)
    with pytest.raises(DispatchError) as e:
        codegen_exe.dispatch("saxpy", 1, [x, x, x], [1.0])
    assert "3 constant(s), 1 given" in str(e.value)


@pytest.mark.parametrize("binding,needle", [
    ([0.0] * 32, "numpy array"),
    (np.zeros((32, 2), np.float32)[:, 0], "C-contiguous"),
    (np.zeros(0, np.float32), "empty"),
])
def test_bad_bindings(codegen_exe, binding, needle):
    x = np.zeros(32, np.float32)
    with pytest.raises(DispatchError) as e:
        codegen_exe.dispatch("saxpy", 1, [x, binding, x], [1.0, *index(32)])
    assert needle in str(e.value) and "binding 1" in str(e.value)


def test_bad_constants_and_grid(codegen_exe):
    x = np.zeros(32, np.float32)
    with pytest.raises(DispatchError):
        codegen_exe.dispatch("saxpy", 1, [x, x, x], [1.0, 1 << 40, 0])
    with pytest.raises(DispatchError):
        codegen_exe.dispatch("saxpy", (1, 1, 1 << 17), [x, x, x], [1.0, *index(32)])
    with pytest.raises(DispatchError):
        codegen_exe.dispatch("saxpy", (1, 1, 1, 1), [x, x, x], [1.0, *index(32)])
    # an empty grid does nothing
    codegen_exe.dispatch("saxpy", (0, 1, 1), [x, x, x], [1.0, *index(32)])


def test_unknown_export(codegen_exe):
    with pytest.raises(DispatchError) as e:
        codegen_exe.dispatch("nope", 1)
    assert e.value.code == vmrt.StatusCode.NOT_FOUND and "saxpy" in str(e.value)
    with pytest.raises(DispatchError):
        codegen_exe.export(7)


def test_closed(iree):
    exe = Executable.load(iree.compile("codegen", "x86_64").library)
    exe.close()
    exe.close()
    with pytest.raises(ExecutableError):
        exe.dispatch("saxpy", 1)


def test_version_mismatch(iree, monkeypatch):
    # the compiled query answers exactly version 6 and NULL otherwise
    monkeypatch.setattr(abi, "LIBRARY_VERSION", 5)
    with pytest.raises(ExecutableError) as e:
        Executable.load(iree.compile("codegen", "x86_64").library)
    assert e.value.code == vmrt.StatusCode.FAILED_PRECONDITION
    assert "00000005" in str(e.value)


def test_not_an_executable(plugins):
    with pytest.raises(ExecutableError) as e:
        Executable.load(plugins.path("kernels", "x86_64"))
    assert "iree_hal_executable_library_query" in str(e.value)


# -- imports through plugins (the custom dispatch sample) -----------------------

def mul_inputs(n, rng):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    return a, b, np.zeros(n, np.float32)


@pytest.mark.parametrize("arch", ARCHES)
def test_simple_mul_with_standalone_plugin(iree, standalone_sos_all, arch, request, rng):
    """The sample's workflow: an executable importing simple_mul_workgroup,
    the standalone plugin from a .sos; emulated executables share the
    plugin's machine so the import call stays in guest code."""
    need_backend(arch, request)
    with PluginManager() as mgr:
        mgr.register(standalone_sos_all)
        exe = Executable.load(iree.compile("simple_mul", arch).library, plugins=mgr)
        assert exe.machine is mgr.machine(arch)
        imports = {i.name: i for i in exe.imports}
        assert list(imports) == ["?vmrt_optional_probe", "simple_mul_workgroup"]  # sorted
        assert imports["simple_mul_workgroup"].provider == "sample_standalone"
        assert imports["simple_mul_workgroup"].function != 0
        assert imports["?vmrt_optional_probe"].optional
        assert imports["?vmrt_optional_probe"].function == 0
        n = 130                                       # 3 workgroups of 64
        a, b, out = mul_inputs(n, rng)
        exe.dispatch("tiled_mul", (3, 1, 1), [a, b, out], index(n))
        np.testing.assert_array_equal(out, a * b)
        exe.close()


def test_emulated_import_calls_stay_in_guest(iree, standalone_sos_all, emulation, rng):
    """No Python callback runs during an emulated dispatch whose import is a
    guest plugin (the thunk and the plugin are guest code)."""
    with PluginManager() as mgr:
        mgr.register(standalone_sos_all)
        exe = Executable.load(iree.compile("simple_mul", "aarch64").library, plugins=mgr)
        machine = exe.machine
        calls = []
        original = machine.callback

        def spy(fn, sig, name=""):
            return original(lambda *a: (calls.append(name), fn(*a))[1], sig, name)
        machine.callback = spy
        a, b, out = mul_inputs(64, rng)
        exe.dispatch("tiled_mul", 1, [a, b, out], index(64))
        assert calls == []
        np.testing.assert_array_equal(out, a * b)
        # the import thunk is aarch64 code in the same machine
        from vmrt.hal.local.guest import import_thunk
        thunk = import_thunk(machine)
        assert machine.read(thunk, len(abi.import_thunk_code("aarch64"))) == \
            abi.import_thunk_code("aarch64")
        exe.close()


@pytest.mark.parametrize("arch", ARCHES)
def test_python_plugin_imports(iree, arch, request, rng):
    """A static Python plugin can serve imports too (a callback per machine,
    reached through the guest's import thunk)."""
    need_backend(arch, request)
    seen = []

    def mul3(call):
        b0, o0, b1, o1, b2, o2, size, tid = call.words(8)
        word = call.word_size
        pid = call.u32(8 * word)
        seen.append((tid, size, pid))
        x = call.array(b0 + 4 * o0, np.float32, size)
        y = call.array(b1 + 4 * o1, np.float32, size)
        call.store(b2 + 4 * o2, x * y * np.float32(3))
    with PluginManager() as mgr:
        mgr.register({"simple_mul_workgroup": mul3})
        exe = Executable.load(iree.compile("simple_mul", arch).library, plugins=mgr)
        a, b, out = mul_inputs(100, rng)
        exe.dispatch("tiled_mul", 2, [a, b, out], index(100), processor_id=5)
        np.testing.assert_array_equal(out, a * b * np.float32(3))
        assert sorted(seen) == [(0, 64, 5), (1, 36, 5)]
        exe.close()


def test_import_failure_names_export_and_code(iree, variants, rng, manager):
    manager.register(str(variants.path("x86_64", import_status=7, name="fails")))
    exe = Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=manager)
    a, b, out = mul_inputs(64, rng)
    with pytest.raises(DispatchError) as e:
        exe.dispatch("tiled_mul", 1, [a, b, out], index(64))
    assert e.value.code == vmrt.StatusCode.INTERNAL
    assert "'tiled_mul'" in str(e.value) and "catastrophic error 7" in str(e.value)
    assert "simple_mul_linked" in str(e.value)
    # the executable, its machine and the process keep working
    ok = Executable.load(iree.compile("codegen", "x86_64").library)
    x = np.ones(32, np.float32)
    out = np.zeros(32, np.float32)
    ok.dispatch("saxpy", 1, [x, x, out], [1.0, *index(32)])
    assert (out == 2).all()
    ok.close()
    exe.close()


def test_python_import_exception(iree, rng, manager):
    def broken(call):
        raise ValueError("kaputt")
    manager.register({"simple_mul_workgroup": broken})
    exe = Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=manager)
    a, b, out = mul_inputs(64, rng)
    with pytest.raises(vmrt.VmError) as e:
        exe.dispatch("tiled_mul", 1, [a, b, out], index(64))
    assert "kaputt" in str(e.value)
    exe.close()


def test_missing_imports_without_manager(iree):
    with pytest.raises(ImportResolutionError) as e:
        Executable.load(iree.compile("simple_mul", "x86_64").library)
    assert e.value.missing == ["simple_mul_workgroup"]
    assert e.value.code == vmrt.StatusCode.UNAVAILABLE


def test_missing_imports_with_manager(iree, manager):
    manager.register({"something_else": lambda c: 0}, )
    with pytest.raises(ImportResolutionError) as e:
        Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=manager)
    assert e.value.missing == ["simple_mul_workgroup"]
    assert "static" in str(e.value) and "NOT_FOUND" in str(e.value)
    assert "simple_mul_linked" in str(e.value)


def test_system_plugin_dispatch(iree, system_plugin, capfd, manager):
    manager.register(str(system_plugin))
    exe = Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=manager)
    assert exe.imports[1].provider == "sample_system"
    a = np.full(8, 2, np.float32)
    b = np.full(8, 4, np.float32)
    out = np.zeros(8, np.float32)
    capfd.readouterr()
    exe.dispatch("tiled_mul", 1, [a, b, out], index(8), processor_id=3)
    printed = capfd.readouterr().out.splitlines()
    assert printed == ["processor_id=3", "processor_data[0]=0"] + \
        [f"mul[0:{i}](2 * 4 = 8)" for i in range(8)]
    assert (out == 8).all()
    exe.close()


def test_backend_conflict(iree):
    with PluginManager() as mgr, pytest.raises(ExecutableError):
        Executable.load(iree.compile("codegen", "x86_64").library, plugins=mgr,
                        backend="emulated")


def test_emulated_host_arch(iree, standalone_sos_all, emulation, rng):
    """x86_64 code can be emulated too: manager and executable both emulated."""
    with PluginManager(backend="emulated") as mgr:
        mgr.register(standalone_sos_all)
        exe = Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=mgr)
        assert exe.backend == "emulated"
        a, b, out = mul_inputs(70, rng)
        exe.dispatch("tiled_mul", 2, [a, b, out], index(70))
        np.testing.assert_array_equal(out, a * b)
        exe.close()


# -- what a HAL module uses -------------------------------------------------------

@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_loader_with_buffer_views(iree, standalone_sos, arch, request, rng):
    """ExecutableLoader as a HAL would use it: plugin specs from flags,
    executables from bytes, bindings as uint8 sub-views of bigger buffers
    (offset/length ranges); results land in the parent buffer."""
    need_backend(arch, request)
    from vmrt.hal.local.loader import ExecutableLoader, infer_format
    data = iree.compile("simple_mul", arch).library.read_bytes()
    fmt = infer_format(data)
    assert fmt == {"x86_64": "embedded-elf-x86_64", "aarch64": "embedded-elf-arm_64"}[arch]
    with ExecutableLoader([f"{standalone_sos}"]) as loader:
        assert loader.can_load(fmt)
        exe = loader.load(data)
        n = 100
        a, b, _ = mul_inputs(n, rng)
        heap = np.zeros(4096, np.uint8)              # one device buffer, three ranges
        heap[64:64 + 4 * n] = a.view(np.uint8)
        heap[1024:1024 + 4 * n] = b.view(np.uint8)
        views = [heap[64:64 + 4 * n], heap[1024:1024 + 4 * n], heap[2048:2048 + 4 * n]]
        exe.dispatch(0, 2, views, index(n))
        np.testing.assert_array_equal(heap[2048:2048 + 4 * n].view(np.float32), a * b)
        assert heap[2048 + 4 * n:].sum() == 0        # nothing written past the range
    assert exe.closed


def test_infer_format_errors(standalone_sos):
    from vmrt.hal.local.loader import infer_format
    assert infer_format(standalone_sos.read_bytes()) == "embedded-fatelf"
    with pytest.raises(ExecutableError):
        infer_format(b"nonsense")


@pytest.mark.parametrize("arch", ["aarch64", "riscv32"])
def test_binding_too_small_emulated(iree, arch, emulation):
    """Under emulation each binding ends at a guard page: a dispatch that
    reads past a binding (the constants promise 64 elements, the arrays hold
    32) is reported against that binding; the executable stays usable."""
    with Executable.load(iree.compile("codegen", arch).library) as exe:
        small = np.ones(32, np.float32)
        big = np.ones(64, np.float32)
        out = np.zeros(64, np.float32)
        with pytest.raises(DispatchError) as e:
            exe.dispatch("saxpy", 2, [small, big, out], [1.0, *index(64)])
        assert e.value.code == vmrt.StatusCode.OUT_OF_RANGE
        assert "binding 0 (128 bytes) was accessed out of bounds at byte offset 128" \
            in str(e.value)
        assert "'saxpy'" in str(e.value) and "workgroup (1, 0, 0)" in str(e.value)
        exe.dispatch("saxpy", 2, [big, big, out], [1.0, *index(64)])
        assert (out == 2).all()


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("alias", ["x", "y"])
def test_saxpy_in_place(iree, arch, alias, request, rng):
    """The output binding aliases an input (an in-place op): the result is
    what the code wrote, not a stale staged copy of the aliasing input."""
    need_backend(arch, request)
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x0, y0 = x.copy(), y.copy()
    alpha = np.float32(1.5)
    out = x if alias == "x" else y
    with Executable.load(iree.compile("codegen", arch).library) as exe:
        exe.dispatch("saxpy", (2, 1, 1), [x, y, out], [float(alpha), *index(n)])
    assert_axpy(out, alpha, x0, y0)


def _bytes(writes, binding):
    """The sorted byte offsets of ``binding`` that ``writes`` stored to."""
    return sorted({off + i for b, off, n in writes if b == binding for i in range(n)})


@pytest.mark.parametrize("alias", [False, True])
def test_emulated_dispatch_records_its_writes(iree, alias, emulation, rng):
    """``workgroup_probe(writes=)`` lists every store into a binding, one of an unchanged
    value too: saxpy's workgroup 1 (of 32 elements) writes out[32:64]."""
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = y if alias else np.zeros(n, np.float32)
    with Executable.load(iree.compile("codegen", "aarch64").library) as exe:
        exe.dispatch("saxpy", (4, 1, 1), [x, y, out], [0.0, *index(n)])  # out = y
        before = out.copy()
        writes: list = []
        with workgroup_probe(order=[1], writes=writes):
            exe.dispatch("saxpy", (4, 1, 1), [x, y, out], [0.0, *index(n)])
    np.testing.assert_array_equal(out, before)       # every store kept the value there
    assert _bytes(writes, 2) == list(range(4 * 32, 4 * 64))
    assert _bytes(writes, 0) == []
    assert _bytes(writes, 1) == (_bytes(writes, 2) if alias else [])


def test_native_dispatch_cannot_record_writes(codegen_exe):
    z = np.zeros(4, np.float32)
    with pytest.raises(DispatchError, match="only an emulated dispatch can record its writes"), \
            workgroup_probe(writes=[]):
        codegen_exe.dispatch("saxpy", (1, 1, 1), [z, z, z], [0.0, *index(4)])


def test_alias_groups():
    from vmrt.hal.local.bindings import alias_groups
    buf = np.zeros(32, np.float32)
    other = np.zeros(4)
    # disjoint subranges of one buffer alias (they are one allocation natively)
    assert alias_groups([buf[:16], buf[16:], other]) == [[0, 1], [2]]
    assert alias_groups([buf[:16], buf[8:24], other]) == [[0, 1], [2]]
    assert alias_groups([buf, other, buf]) == [[0, 2], [1]]
    assert alias_groups([np.zeros(3), np.zeros(3)]) == [[0], [1]]


@pytest.mark.parametrize("arch", ["aarch64", "riscv32"])
def test_aliased_bindings_alias_in_the_guest(arch):
    """Bindings that share host memory share guest memory at the same
    relative offsets: a write through one is seen through the other."""
    from elfkit.arch import get
    from elfkit.exec import create_machine
    from vmrt.hal.local.bindings import StagedBindings
    buf = np.arange(64, dtype=np.float32)
    other = np.ones(8, np.float32)
    arrays = [buf[8:24], other, buf[16:40], buf[60:]]
    machine = create_machine(get(arch), "emulated")
    try:
        staged = StagedBindings(machine, arrays)
        ptrs = staged.stage()
        for i in (2, 3):
            assert ptrs[i] - ptrs[0] == arrays[i].ctypes.data - arrays[0].ctypes.data
        assert ptrs[0] % 64 == 0
        # the guest writes through binding 2; binding 0 sees it, and so does the host
        machine.write(ptrs[2], np.float32([-1, -2]).tobytes())
        assert np.frombuffer(machine.read(ptrs[0] + 32, 8), np.float32).tolist() == [-1, -2]
        staged.copy_back()
        assert buf[16:18].tolist() == [-1, -2] and buf[8:16].tolist() == list(range(8, 16))
        assert (other == 1).all()
        staged.release()
    finally:
        machine.close()


@pytest.mark.parametrize("arch", ["aarch64", "riscv32"])
def test_staged_spans_are_reused_zeroed_and_guarded(arch):
    """A dispatch's guest span is kept for the next dispatch of that size:
    it comes back at the same address, zero outside the new binding's bytes
    (whatever the previous one left there), still followed by a guard page."""
    from elfkit.arch import get
    from elfkit.errors import MemoryAccessError
    from elfkit.exec import create_machine
    from vmrt.hal.local.bindings import StagedBindings
    machine = create_machine(get(arch), "emulated")
    page = machine.arch.page_size
    try:
        first = StagedBindings(machine, [np.full(1000, 7, np.uint8)])
        (p1,) = first.stage()
        base = p1 - (p1 % page)
        machine.write(base, b"\xee" * page)             # dirty the whole span (one page)
        first.release()
        data = np.arange(900, dtype=np.uint8) % 251
        second = StagedBindings(machine, [data])
        (p2,) = second.stage()
        assert p2 - (p2 % page) == base               # the same span again
        span = machine.read(base, page)
        off = p2 - base
        assert span[off:off + 900] == data.tobytes()
        assert span[:off] == bytes(off) and span[off + 900:] == bytes(page - off - 900)
        with pytest.raises(MemoryAccessError):
            machine.read(base + page, 1)                # the guard page
        second.release()
        assert machine.try_read(p2, 1) is None          # kept by the machine, out of reach
    finally:
        machine.close()


def test_staged_spans_give_way_to_the_memory_limit():
    """Idle spans count against the machine's memory limit; a dispatch that
    needs the room gets it back from them."""
    from elfkit.arch import get
    from elfkit.exec import create_machine
    from vmrt.hal.local.bindings import StagedBindings
    machine = create_machine(get("aarch64"), "emulated", memory_limit=12 << 20)
    try:
        big = StagedBindings(machine, [np.ones(5 << 20, np.uint8)])
        big.stage()
        big.release()                                   # kept mapped, idle
        other = np.arange(6 << 20, dtype=np.uint8)
        staged = StagedBindings(machine, [other])
        (ptr,) = staged.stage()
        assert machine.read(ptr, 1 << 20) == other[:1 << 20].tobytes()
        staged.release()
    finally:
        machine.close()


def test_a_machine_with_idle_spans_is_still_collected():
    """Kept binding spans do not keep their machine alive."""
    import gc
    import weakref

    from elfkit.arch import get
    from elfkit.exec import create_machine
    from vmrt.hal.local.bindings import StagedBindings
    machine = create_machine(get("riscv64"), "emulated")
    staged = StagedBindings(machine, [np.ones(100, np.uint8)])
    staged.stage()
    staged.release()                                    # the machine keeps the span
    machine.close()
    ref = weakref.ref(machine)
    del machine, staged
    gc.collect()
    assert ref() is None
