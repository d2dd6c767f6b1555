"""The native backend: x86_64 test plugins loaded and run on this host."""
from __future__ import annotations

import ctypes
import math
import subprocess
import sys
import threading

import numpy as np
import pytest

import elfkit
from elfkit import Imports

pytestmark = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                                reason="native tests run on an x86_64 host")

ARCH = "x86_64"


@pytest.fixture
def relocs(plugins):
    with elfkit.load(plugins.path("relocs", ARCH)) as m:
        yield m


def test_module_identity(relocs):
    assert relocs.arch.name == "x86_64"
    assert relocs.backend == "native"
    assert relocs.base % 4096 == 0
    assert "get_counter" in relocs.exports
    assert relocs.symbol("get_counter") == relocs.exports["get_counter"]
    with pytest.raises(elfkit.SymbolNotFoundError):
        relocs.symbol("no_such_function")


def test_relocations_through_code(relocs):
    # RELATIVE function-pointer table
    for i, f in enumerate([lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
                           lambda a, b: a ^ b]):
        assert relocs.call("call_op", i, 1234, 77) == f(1234, 77)
    # RELATIVE data pointers (70 consecutive words: one RELR bitmap in the relr variant)
    assert relocs.call("sum_square_ptrs") == sum(k * k for k in range(70))
    assert relocs.call("square_at", 69) == 69 * 69
    assert [relocs.call("sparse_len", i) for i in range(3)] == [5, 4, 5]
    assert relocs.call("greeting_len") == len("hello, plugin")
    # GLOB_DAT / ABS64 against exported data, JUMP_SLOT to an own export
    assert relocs.function("counter_address", "ptr()")() == relocs.exports["g_counter"]
    assert relocs.call("twice_plus_one", 20) == 41
    assert relocs.call("call_fn_ptr", 21) == 42
    g_ptr = int.from_bytes(relocs.read(relocs.exports["g_counter_ptr"], 8), "little")
    assert g_ptr == relocs.exports["g_counter"]
    # IRELATIVE: resolved once at load, through the backend
    assert relocs.call("ifunc_resolved") == 1
    assert relocs.call("call_ifunc", 5) == 16


def test_pc64_relocation(plugins):
    with elfkit.load(plugins.path("relocs_pcrel", ARCH)) as m:
        assert "R_X86_64_PC64" in m.relocation_counts
        want = m.exports["g_counter"] - m.exports["g_pcrel_word"]
        assert m.call("pcrel_value") == want


def test_exported_data_is_shared_with_host(relocs):
    addr = relocs.exports["g_counter"]
    relocs.write(addr, (1000).to_bytes(4, "little"))
    assert relocs.call("get_counter") == 1000
    relocs.call("set_counter", -5)
    assert int.from_bytes(relocs.read(addr, 4), "little", signed=True) == -5


@pytest.mark.parametrize("variant", ["relocs", "relocs_gnu", "relocs_relr"])
def test_link_variants_behave_alike(plugins, variant):
    with elfkit.load(plugins.path(variant, ARCH)) as m:
        assert m.call("sum_square_ptrs") == sum(k * k for k in range(70))
        assert m.call("call_op", 2, 6, 7) == 42
        assert m.symbol("get_counter") == m.exports["get_counter"]


def _has_dt(path, tag):
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        dyn = ELFFile(f).get_section_by_name(".dynamic")
        return any(t.entry.d_tag == tag for t in dyn.iter_tags())


def test_init_and_fini_order(plugins):
    """DT_INIT, then INIT_ARRAY in order; at close FINI_ARRAY in reverse, then DT_FINI."""
    path = plugins.path("relocs", ARCH)
    m = elfkit.load(path)
    want_init = (312 if _has_dt(path, "DT_INIT") else 12)
    assert m.call("init_log", restype="u32") == want_init
    flag = np.zeros(1, dtype=np.uint32)
    m.call("set_fini_flag", flag)
    m.close()
    assert flag[0] == (12 if _has_dt(path, "DT_FINI") else 1)


def test_python_imports_and_newest_first(plugins):
    calls = []
    base = {"host_add": (lambda a, b: a + b, "i32(i32,i32)"),
            "host_log": (lambda c: calls.append(c), "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}
    override = {"host_add": (lambda a, b: 100 * a + b, "i32(i32,i32)")}
    imps = Imports()
    imps.register(base)
    imps.register(override)           # registered later: searched first
    with elfkit.load(plugins.path("imports", ARCH), imports=imps) as m:
        assert calls == [100]          # init ran and called the import
        assert m.call("call_host_add", 2, 3) == 203
        assert m.call("call_host_add_ptr", 2, 3) == 203
        arr = np.arange(5, dtype=np.int32)
        acc = 0
        for v in arr.tolist():
            acc = 100 * acc + v
        assert m.call("sum_via_host", arr, 5) == np.int32(acc)
        assert m.function("call_host_scale", "f64(f64,f32)")(1.5, 4.0) == 6.0
        assert m.call("has_optional") == 0            # weak import missing -> NULL
        assert m.call("call_optional", 3, restype="i32") == -1
        m.call("call_host_log", 7)
    assert calls == [100, 7, 200]      # fini ran at close


def test_weak_import_present(plugins):
    imps = {"host_add": (lambda a, b: a + b, "i32(i32,i32)"),
            "host_log": (lambda c: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)"),
            "host_optional": (lambda x: x * 7, "i32(i32)")}
    with elfkit.load(plugins.path("imports", ARCH), imports=imps) as m:
        assert m.call("has_optional") == 1
        assert m.call("call_optional", 6) == 42


def test_module_as_provider(plugins):
    """host_add provided by another loaded module's export (add_i32 from kernels)."""
    with elfkit.load(plugins.path("kernels", ARCH)) as k:
        imps = Imports({"host_log": (lambda c: None, "void(i32)"),
                        "host_scale": (lambda x, s: x * s, "f64(f64,f32)"),
                        "host_add": k.exports["add_i32"]})
        with elfkit.load(plugins.path("imports", ARCH), imports=imps) as m:
            assert m.call("call_host_add", 40, 2) == 42


def test_system_library_provider(plugins):
    libm = ctypes.CDLL("libm.so.6")
    imps = Imports({"host_add": (lambda a, b: a + b, "i32(i32,i32)"),
                    "host_log": (lambda c: None, "void(i32)")})
    # host_scale(double, float) -> ldexp-like? use libm's 'fmin' is not a match; provide a
    # differently named system symbol through a mapping of addresses instead.
    sysl = elfkit.SystemLibrary(libm)
    imps.register(sysl)                       # has no host_scale: falls through
    imps.register({"host_scale": (lambda x, s: x * s, "f64(f64,f32)")})
    with elfkit.load(plugins.path("imports", ARCH), imports=imps) as m:
        assert m.function("call_host_scale", "f64(f64,f32)")(2.0, 3.0) == 6.0
    assert sysl.address("cos") is not None
    assert sysl.address("no_such_symbol_here") is None


def test_lazy_binding_raises_only_when_called(plugins):
    imps = {"host_log": (lambda c: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}
    with pytest.raises(elfkit.UnresolvedImportError, match="host_add"):
        elfkit.load(plugins.path("imports", ARCH), imports=imps)
    with elfkit.load(plugins.path("imports", ARCH), imports=imps, lazy=True) as m:
        assert m.function("call_host_scale", "f64(f64,f32)")(1.0, 2.0) == 2.0
        with pytest.raises(elfkit.LazyImportError, match="host_add"):
            m.call("call_host_add", 1, 2)


def test_python_exception_in_import_propagates(plugins):
    def boom(a, b):
        raise ValueError("provider failed")
    imps = {"host_add": (boom, "i32(i32,i32)"), "host_log": (lambda c: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}
    with elfkit.load(plugins.path("imports", ARCH), imports=imps) as m:
        with pytest.raises(ValueError, match="provider failed"):
            m.call("call_host_add", 1, 2)
        assert m.function("call_host_scale", "f64(f64,f32)")(1.0, 2.0) == 2.0   # still usable


def test_kernels_int_float_and_arrays(plugins):
    with elfkit.load(plugins.path("kernels", ARCH)) as m:
        assert m.function("add_i32", "i32(i32,i32)")(2**31 - 1, 1) == -2**31
        assert m.function("add_i64", "i64(i64,i64)")(2**62, 2**62) == -2**63
        assert m.function("mul_u64", "u64(u64,u64)")(2**40, 2**30) == (2**70) % 2**64
        assert m.function("muladd_f64", "f64(f64,f64,f64)")(1.5, 2.0, 0.25) == 3.25
        f32 = m.function("scale_f32", "f32(f32,f32)")(1.1, 3.0)
        assert f32 == float(np.float32(np.float32(1.1) * np.float32(3.0)))
        a = np.arange(1000, dtype=np.int32)
        assert m.call("sum_i32", a, len(a)) == int(a.sum())
        x = np.random.default_rng(0).random(257).astype(np.float32)
        y = np.random.default_rng(1).random(257).astype(np.float32)
        out = np.zeros_like(x)
        m.function("add_f32", "void(ptr,ptr,ptr,i64)")(out, x, y, len(x))
        np.testing.assert_array_equal(out, x + y)
        d = np.linspace(0, 1, 33)
        assert math.isclose(m.function("dot_f64", "f64(ptr,ptr,i64)")(d, d, len(d)),
                            float(np.dot(d, d)), rel_tol=1e-12)
        buf = np.zeros(10, dtype=np.int32)
        m.function("iota_i32", "void(ptr,i64,i32)")(buf, 10, -3)
        assert buf.tolist() == list(range(-3, 7))


def test_large_bss_is_zero_and_usable(plugins):
    with elfkit.load(plugins.path("kernels", ARCH)) as m:
        n = m.call("bss_size", restype="u32")
        assert n >= 1 << 18
        assert m.call("bss_sum", restype="u64") == 0
        m.call("bss_fill", 3)
        want = int(((np.arange(n, dtype=np.int64) + 3) & 0xFF).sum())
        assert m.call("bss_sum", restype="u64") == want
        assert m.call("bss_get", 5, restype="u32") == 8


def test_alloc_read_write(plugins):
    with elfkit.load(plugins.path("kernels", ARCH)) as m:
        p = m.alloc(64, align=64)
        assert p % 64 == 0
        m.write(p, bytes(range(64)))
        assert m.read(p, 64) == bytes(range(64))
        assert m.call("read_u32", p, restype="u32") == int.from_bytes(bytes(range(4)), "little")
        with pytest.raises(elfkit.MemoryAccessError):
            m.read(0x10, 4)
        with pytest.raises(elfkit.MemoryAccessError):
            m.write(m.exports["add_i32"], b"\x90")      # text is not writable
        m.free(p)


def test_closed_module_refuses(plugins):
    m = elfkit.load(plugins.path("kernels", ARCH))
    m.close()
    with pytest.raises(elfkit.ModuleClosedError):
        m.call("add_i32", 1, 2)
    m.close()   # idempotent


def test_foreign_arch_native_refused(plugins):
    with pytest.raises(elfkit.BackendError, match="natively"):
        elfkit.load(plugins.path("kernels", "aarch64"), backend="native")


def test_relro_write_faults_in_subprocess(plugins):
    """Writing to RELRO data after load is a real fault natively (checked in a child)."""
    code = f"""
import elfkit, ctypes
m = elfkit.load({str(plugins.path('relocs', ARCH))!r})
addr = m.exports['g_fn_ptr']  # function-pointer data lives in .data.rel.ro? else use GOT
import sys
import threading
from elftools.elf.elffile import ELFFile
f = ELFFile(open({str(plugins.path('relocs', ARCH))!r}, 'rb'))
relro = [s for s in f.iter_segments() if s['p_type'] == 'PT_GNU_RELRO'][0]
target = m.base + relro['p_vaddr']
print('writing', hex(target), flush=True)
ctypes.memmove(target, b'x', 1)
print('survived', flush=True)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "writing" in r.stdout
    assert "survived" not in r.stdout
    assert r.returncode != 0


@pytest.mark.parametrize("pages", [3, 160])
def test_a_reservation_starts_zeroed_after_a_release(pages):
    """Released reservations may be kept for the next one (above 256 KiB
    lazily freed to the kernel meanwhile): it still starts as zeros,
    read/write, as a fresh mapping does."""
    m = elfkit.exec.create_machine(elfkit.arch.get(ARCH), "native")
    size = pages * 4096
    try:
        for _ in range(3):
            base = m.reserve(size, 4096)
            assert m.read(base, size) == bytes(size)
            m.write(base, b"\xa5" * size)
            m.release(base, size)
    finally:
        m.close()


@pytest.mark.parametrize("pages", [40, 300])
def test_a_partly_written_reservation_starts_zeroed_after_a_release(pages):
    """A large kept range is cleared page by page (written pages cleared,
    the others dropped to the kernel): every page starts as zeros again,
    whichever pages the last user wrote."""
    m = elfkit.exec.create_machine(elfkit.arch.get(ARCH), "native")
    size = pages * 4096
    written = [0, 1, 2, 7, pages // 2, pages - 2, pages - 1]
    try:
        for k in range(3):
            base = m.reserve(size, 4096)
            assert m.read(base, size) == bytes(size)
            for i in written[k:]:
                m.write(base + i * 4096 + 17 * k, b"\x5a" * 100)
            m.release(base, size)
    finally:
        m.close()


def test_a_closed_image_is_inaccessible(plugins):
    """Touching a closed module's memory faults (SIGSEGV), also when its
    pages are kept for a later load."""
    code = ("import ctypes, sys, elfkit\n"
            "m = elfkit.load(sys.argv[1]); a = m.exports['get_counter']; m.close()\n"
            "print('closed', flush=True); ctypes.string_at(a, 1); print('read')\n")
    r = subprocess.run([sys.executable, "-c", code, str(plugins.path("relocs", ARCH))],
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["closed"]
    assert r.returncode == -11


def _blocking_imports(entered, go, inner):
    def host_add(a, b):
        inner.append(a + b)
        entered.set()
        go.wait(30)
        return a + b
    return {"host_add": (host_add, "i32(i32,i32)"), "host_log": (lambda c: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}


def test_close_from_inside_a_callback_is_refused(plugins):
    errors, mods = [], []

    def host_add(a, b):
        for attempt in (mods[0].close, mods[0].machine.close):
            try:
                attempt()
            except elfkit.ElfkitError as e:
                errors.append(str(e))
        return a + b
    imps = {"host_add": (host_add, "i32(i32,i32)"), "host_log": (lambda c: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}
    with elfkit.load(plugins.path("imports", ARCH), imports=imps) as m:
        mods.append(m)
        assert not m.machine.in_call()
        assert m.function("call_host_add", "i32(i32,i32)")(2, 3) == 5      # typed callable
        assert m.call("call_host_add", 4, 5) == 9                          # inferred call
        assert not m.closed and m.call("call_host_add", 1, 1) == 2
    assert len(errors) == 6 and all("inside a call" in e for e in errors), errors
    assert m.closed


@pytest.mark.parametrize("how", ["function", "call"])
def test_close_waits_for_a_call_in_another_thread(plugins, how):
    entered, go, inner, results = threading.Event(), threading.Event(), [], []
    m = elfkit.load(plugins.path("imports", ARCH), imports=_blocking_imports(entered, go, inner))
    f = (m.function("call_host_add", "i32(i32,i32)") if how == "function"
         else lambda a, b: m.call("call_host_add", a, b))
    caller = threading.Thread(target=lambda: results.append(f(20, 22)))
    caller.start()
    assert entered.wait(30)
    closer = threading.Thread(target=m.close)
    closer.start()
    closer.join(0.3)
    still_waiting = closer.is_alive()      # the call is still inside the module's code
    go.set()
    caller.join(30)
    closer.join(30)
    assert still_waiting and results == [42] and inner == [42]
    assert m.closed and not closer.is_alive()
    with pytest.raises(elfkit.ModuleClosedError):
        m.function("call_host_add", "i32(i32,i32)")
