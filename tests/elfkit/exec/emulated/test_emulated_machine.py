"""EmulatedMachine tested directly (no loader): small C functions compiled
per architecture with zig, their PT_LOAD segments placed with reserve /
write / protect, then called with expected values computed in Python.

The same matrix runs on all six architectures.
"""
from __future__ import annotations

import io
import math
import struct
import subprocess
import sys
import threading
import time

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("unicorn")
pytest.importorskip("capstone")
from elftools.elf.elffile import ELFFile  # noqa: E402

import elfkit.arch as A  # noqa: E402
from elfkit.errors import (  # noqa: E402
    BackendError,
    CallTimeout,
    EmulationFault,
    ExecutionError,
    InvalidArgumentError,
    MemoryAccessError,
    SignatureError,
)
from elfkit.exec.base import PROT_EXEC, PROT_READ, PROT_WRITE  # noqa: E402
from elfkit.toolchain import compile_plugin  # noqa: E402

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]

SOURCE = r"""
#include <stdint.h>
int32_t add_i32(int32_t a, int32_t b) { return a + b; }
int64_t add_i64(int64_t a, int64_t b) { return a + b; }
uint32_t ret_u32(void) { return 0xFFFFFFF0u; }
int8_t neg_i8(int8_t x) { return (int8_t)-x; }
uint16_t u16_id(uint16_t x) { return x; }
uint64_t u64_id(uint64_t x) { return x; }
int32_t is_neg_u32(uint32_t x) { return (int32_t)x < 0; }
void *ptr_id(void *p) { return p; }
double add_f64(double a, double b) { return a + b; }
float mul_f32(float a, float b) { return a * b; }
double f32_to_f64(float a) { return a; }
double mixed(int32_t a, double b, float c, int64_t d, float e, double f) {
    return a + b * 2.0 + c * 3.0f + (double)(int32_t)(d >> 32) * 4294967296.0 + (double)(uint32_t)d
         + e * 5.0f + f * 6.0;
}
int64_t many_i(int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4, int64_t a5,
               int64_t a6, int64_t a7, int64_t a8, int64_t a9) {
    return a0 + 2*a1 + 3*a2 + 4*a3 + 5*a4 + 6*a5 + 7*a6 + 8*a7 + 9*a8 + 10*a9;
}
int32_t many_small(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f, int8_t g,
                   uint8_t h, int16_t i, uint16_t j) {
    return a + 2*b + 3*c + 4*d + 5*e + 6*(int32_t)f + 7*g + 8*h + 9*i + 10*j;
}
double many_f(double f0, double f1, double f2, double f3, double f4, double f5, double f6,
              double f7, double f8, double f9, double f10) {
    return f0 + 2*f1 + 3*f2 + 4*f3 + 5*f4 + 6*f5 + 7*f6 + 8*f7 + 9*f8 + 10*f9 + 11*f10;
}
float many_f32(float f0, float f1, float f2, float f3, float f4, float f5, float f6, float f7,
               float f8, float f9, float f10, float f11, float f12, float f13, float f14, float f15,
               float f16, float f17) {
    return f0 + 2*f1 + 3*f2 + 4*f3 + 5*f4 + 6*f5 + 7*f6 + 8*f7 + 9*f8 + 10*f9 + 11*f10 + 12*f11
         + 13*f12 + 14*f13 + 15*f14 + 16*f15 + 17*f16 + 18*f17;
}
double many_mixed(int32_t i0, double d0, int64_t l0, float f0, int32_t i1, double d1, int64_t l1,
                  float f1, int32_t i2, double d2, int64_t l2, float f2, int32_t i3, double d3,
                  int64_t l3, float f3, int32_t i4, double d4, int64_t l4, float f4) {
    int64_t li = l0 + 2*l1 + 3*l2 + 4*l3 + 5*l4;
    return i0 + 2.0*i1 + 3.0*i2 + 4.0*i3 + 5.0*i4 + 0.5*d0 + 0.25*d1 + 0.125*d2 + 2*d3 + 4*d4
         + f0 + 3.0f*f1 + 5.0f*f2 + 7.0f*f3 + 9.0f*f4 + (double)(int32_t)li;
}
float backfill(float a, double b, float c, double d, float e) { return a + 2*b + 3*c + 4*d + 5*e; }
int64_t pair_i64(int32_t a, int64_t b, int32_t c, int64_t d) { return a + 3*b + 5*c + 7*d; }
int64_t split_i64(int32_t a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f, int32_t g,
                  int64_t h, int32_t i) { return a + b + c + d + e + f + g + 2*h + 3*i; }
double split_f64(int32_t a, int32_t b, int32_t c, int32_t d, int32_t e, int32_t f, int32_t g,
                 double d0, double d1, double d2, double d3, double d4, double d5, double d6,
                 double d7, double d8, double d9) {
    return a + b + c + d + e + f + g + d0 + 2*d1 + 3*d2 + 4*d3 + 5*d4 + 6*d5 + 7*d6 + 8*d7 + 9*d8
         + 10*d9;
}
void scale(float *x, int32_t n, float k) { for (int32_t i = 0; i < n; i++) x[i] *= k; }
int64_t sum_i32(const int32_t *p, int32_t n) {
    int64_t s = 0; for (int32_t i = 0; i < n; i++) s += p[i]; return s;
}
void fill_u8(uint8_t *p, int32_t n, uint8_t v) { for (int32_t i = 0; i < n; i++) p[i] = (uint8_t)(v + i); }
int32_t read_at(const int32_t *p, int32_t i) { return p[i]; }
void write_at(int32_t *p, int32_t i, int32_t v) { p[i] = v; }

typedef int32_t (*cb_ii)(int32_t, int32_t);
int32_t apply_ii(cb_ii f, int32_t a, int32_t b) { return f(a, b) + 1; }
typedef double (*cb_dd)(double, int32_t, float);
double apply_dd(cb_dd f, double x) { return f(x, 3, 2.5f) * 2.0; }
typedef int64_t (*cb_many)(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, double, float, double);
int64_t apply_many(cb_many f) { return f(1, 2, 3, 4, 5, 6, 7, 8, -9, 0.5, 1.5f, -2.25); }
typedef float (*cb_f)(float);
float apply_f(cb_f f, float x) { return f(x) + 1.0f; }
typedef double (*cb_d)(double);
double apply_d(cb_d f, double x) { return f(x) + 1.0; }
typedef int64_t (*cb_i64)(int32_t, int64_t);
int64_t apply_i64(cb_i64 f) { return f(7, 0x123456789LL) + 1; }
typedef int32_t (*cb_chain)(int32_t);
int32_t apply_chain(cb_chain f, int32_t x) { return f(x) * 2; }
typedef void (*cb_v)(void);
int32_t apply_void(cb_v f, int32_t x) { f(); return x; }
int32_t loop_cb(cb_ii f, int32_t n) { int32_t s = 0; for (int32_t i = 0; i < n; i++) s += f(i, 1); return s; }

void nop(void) {}
void spin(void) { for (;;) { __asm__ volatile(""); } }
int32_t count_to(int32_t n) { volatile int32_t i = 0; while (i < n) i++; return i; }
void wild_write(void) { *(volatile int32_t *)0xdead0000 = 1; }
__attribute__((noinline)) int32_t deref(const int32_t *p) { return *(volatile const int32_t *)p + 1; }
int32_t calls_deref(const int32_t *p) { return deref(p) * 2; }
int32_t recurse(int32_t n) { volatile char buf[64]; buf[0] = (char)n; return n ? recurse(n - 1) + buf[0] : 0; }
void trap(void) { __builtin_trap(); }
void write_code(void) { *(volatile uint32_t *)(void *)&nop = 0; }
#if defined(__x86_64__) || defined(__i386__)
int32_t div_i32(int32_t a, int32_t b) { return a / b; }
#endif
"""

def _build(arch_name: str, tmp, source: str = SOURCE, visibility: str = "hidden") -> bytes:
    src = tmp / "k.c"
    src.write_text(source)
    so = tmp / f"k_{arch_name}.so"
    # -g: DWARF for the file:line in fault reports
    compile_plugin(src, arch_name, so, cflags=["-g", f"-fvisibility={visibility}"],
                   ldflags=["--no-undefined"])
    return so.read_bytes()


@pytest.fixture(scope="session")
def kernel_bytes(tmp_path_factory):
    cache: dict[str, bytes] = {}

    def get(arch: str) -> bytes:
        if arch not in cache:
            cache[arch] = _build(arch, tmp_path_factory.mktemp(f"emk_{arch}"))
        return cache[arch]
    return get


class Image:
    """Just enough of a loader: PT_LOAD segments, .symtab functions."""

    def __init__(self, m, data: bytes):
        e = ELFFile(io.BytesIO(data))
        segs = [s for s in e.iter_segments() if s["p_type"] == "PT_LOAD"]
        span = max(s["p_vaddr"] + s["p_memsz"] for s in segs)
        align = max(s["p_align"] for s in segs)
        self.size = (span + 4095) & ~4095
        self.base = base = m.reserve(self.size, align)
        prots: dict[int, int] = {}
        for s in segs:
            m.write(base + s["p_vaddr"], s.data())
            f = s["p_flags"]
            prot = (PROT_READ if f & 4 else 0) | (PROT_WRITE if f & 2 else 0) | (PROT_EXEC if f & 1 else 0)
            for pg in range(s["p_vaddr"] & ~4095, (s["p_vaddr"] + s["p_memsz"] + 4095) & ~4095, 4096):
                prots[pg] = prots.get(pg, 0) | prot
        for pg, prot in prots.items():
            m.protect(base + pg, 4096, prot)
        self.funcs: dict[str, tuple[int, int]] = {}
        for sym in e.get_section_by_name(".symtab").iter_symbols():
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_shndx"] != "SHN_UNDEF":
                self.funcs[sym.name] = (base + sym["st_value"], sym["st_size"])
        self.closed = False
        m.attach(self)
        if b".debug_line" in data:
            m.add_debug_info(base, data, base, base + self.size)

    def __getitem__(self, name: str) -> int:
        return self.funcs[name][0]

    def symbolize(self, addr: int) -> str:
        for n, (a, sz) in self.funcs.items():
            if a <= addr < a + max(sz, 1):
                return n if addr == a else f"{n}+{addr - a:#x}"
        return ""


@pytest.fixture(params=ARCHES)
def arch(request) -> str:
    return request.param


@pytest.fixture
def env(arch, kernel_bytes):
    from elfkit.exec.emulated import EmulatedMachine
    m = EmulatedMachine(arch)
    img = Image(m, kernel_bytes(arch))
    yield m, img
    m.close()


def call(m, img, name, sig, *args, **kw):
    return m.call(img[name], sig, args, **kw)


# ----------------------------------------------------------------- integers
def test_integers(env):
    m, k = env
    assert call(m, k, "add_i32", "i32(i32,i32)", 2, -5) == -3
    assert call(m, k, "add_i32", "i32(i32,i32)", 0x7FFFFFFF, 1) == -0x80000000
    assert call(m, k, "add_i64", "i64(i64,i64)", 1 << 40, -3) == (1 << 40) - 3
    assert call(m, k, "add_i64", "i64(i64,i64)", -(1 << 62), -(1 << 62)) == -(1 << 63)
    assert call(m, k, "ret_u32", "u32()") == 0xFFFFFFF0
    assert call(m, k, "ret_u32", "i32()") == -16
    assert call(m, k, "neg_i8", "i8(i8)", 5) == -5
    assert call(m, k, "neg_i8", "i8(i8)", -128) == -128
    assert call(m, k, "u16_id", "u16(u16)", 0xFFFF) == 0xFFFF
    assert call(m, k, "u16_id", "u16(u16)", -1) == 0xFFFF           # wraps like C
    assert call(m, k, "u64_id", "u64(u64)", (1 << 64) - 2) == (1 << 64) - 2
    assert call(m, k, "u64_id", "i64(i64)", -2) == -2
    assert call(m, k, "is_neg_u32", "i32(u32)", 0x80000000) == 1
    assert call(m, k, "is_neg_u32", "i32(u32)", 5) == 0
    word = A.get(m.arch).word
    assert call(m, k, "ptr_id", "ptr(ptr)", 0x12345678) == 0x12345678
    assert call(m, k, "ptr_id", "ptr(ptr)", None) == 0
    assert call(m, k, "ptr_id", "ptr(ptr)", -1) == (1 << (8 * word)) - 1


def test_many_int_args_use_the_stack(env):
    m, k = env
    assert call(m, k, "many_i", "i64(" + ",".join(["i64"] * 10) + ")", *range(1, 11)) == \
        sum((i + 1) * (i + 1) for i in range(10))
    vals = [-1, 200, -300, 60000, -7, 0xFFFFFFFF, 127, 255, -32768, 65535]
    sig = "i32(i8,u8,i16,u16,i32,u32,i8,u8,i16,u16)"
    exp = sum((i + 1) * v for i, v in enumerate([-1, 200, -300, 60000, -7, -1, 127, 255, -32768, 65535]))
    assert call(m, k, "many_small", sig, *vals) == exp


def test_i64_register_pairs_and_splits(env):
    m, k = env
    assert call(m, k, "pair_i64", "i64(i32,i64,i32,i64)", 1, 1 << 33, -2, 5) == 1 + 3 * (1 << 33) - 10 + 35
    assert call(m, k, "pair_i64", "i64(i32,i64,i32,i64)", -1, -(1 << 40), 3, -(1 << 50)) == \
        -1 - 3 * (1 << 40) + 15 - 7 * (1 << 50)
    assert call(m, k, "split_i64", "i64(i32,i32,i32,i32,i32,i32,i32,i64,i32)",
                1, 2, 3, 4, 5, 6, 7, (1 << 35) + 1, 4) == 28 + 2 * ((1 << 35) + 1) + 12


# ------------------------------------------------------------------- floats
def test_floats(env):
    m, k = env
    assert call(m, k, "add_f64", "f64(f64,f64)", 1.5, 2.25) == 3.75
    assert call(m, k, "add_f64", "f64(f64,f64)", 1e300, 1e300) == 2e300
    assert math.isinf(call(m, k, "add_f64", "f64(f64,f64)", 1e308, 1e308))
    assert math.isnan(call(m, k, "add_f64", "f64(f64,f64)", math.nan, 1.0))
    assert call(m, k, "add_f64", "f64(f64,f64)", 0.1, 0.2) == 0.1 + 0.2      # no x87 excess precision
    assert call(m, k, "add_f64", "f64(f64,f64)", 3, 4) == 7.0                 # ints accepted
    assert call(m, k, "mul_f32", "f32(f32,f32)", 1.5, 3.0) == 4.5
    f = np.float32(0.1)
    assert call(m, k, "mul_f32", "f32(f32,f32)", 0.1, 3.0) == float(f * np.float32(3.0))
    assert call(m, k, "f32_to_f64", "f64(f32)", 0.1) == float(np.float32(0.1))
    for _ in range(12):   # x87 stack must not fill up on i386
        assert call(m, k, "add_f64", "f64(f64,f64)", 1.0, 1.0) == 2.0


def test_mixed_and_many_float_args(env):
    m, k = env
    assert call(m, k, "mixed", "f64(i32,f64,f32,i64,f32,f64)", 1, 2.0, 3.0, (5 << 32) + 7, 4.0, 0.5) \
        == 1 + 4 + 9 + (5 << 32) + 7 + 20 + 3
    vals = [i + 0.5 for i in range(11)]
    assert call(m, k, "many_f", "f64(" + ",".join(["f64"] * 11) + ")", *vals) == \
        sum((i + 1) * v for i, v in enumerate(vals))
    vals = [float(i) for i in range(18)]
    assert call(m, k, "many_f32", "f32(" + ",".join(["f32"] * 18) + ")", *vals) == \
        sum((i + 1) * v for i, v in enumerate(vals))
    assert call(m, k, "backfill", "f32(f32,f64,f32,f64,f32)", 1.0, 2.0, 3.0, 4.0, 5.0) == 55.0
    d = [0.5 + i for i in range(10)]
    assert call(m, k, "split_f64", "f64(i32,i32,i32,i32,i32,i32,i32," + ",".join(["f64"] * 10) + ")",
                1, 2, 3, 4, 5, 6, 7, *d) == 28 + sum((i + 1) * v for i, v in enumerate(d))
    args = []
    for j in range(5):
        args += [j + 1, 0.5 * (j + 1), (j + 1) * 1000, 1.5 * (j + 1)]
    sig = "f64(" + ",".join(["i32", "f64", "i64", "f32"] * 5) + ")"
    i_ = [a for a in args[0::4]]
    d_ = args[1::4]
    l_ = args[2::4]
    f_ = args[3::4]
    exp = (i_[0] + 2.0 * i_[1] + 3.0 * i_[2] + 4.0 * i_[3] + 5.0 * i_[4] + 0.5 * d_[0] + 0.25 * d_[1]
           + 0.125 * d_[2] + 2 * d_[3] + 4 * d_[4] + f_[0] + 3 * f_[1] + 5 * f_[2] + 7 * f_[3] + 9 * f_[4]
           + (l_[0] + 2 * l_[1] + 3 * l_[2] + 4 * l_[3] + 5 * l_[4]))
    assert call(m, k, "many_mixed", sig, *args) == pytest.approx(exp, rel=1e-12)


def test_function_fast_path(env):
    m, k = env
    add = m.function(k["add_i32"], "i32(i32,i32)")
    assert add(40, 2) == 42
    assert [add(i, i) for i in range(50)] == [2 * i for i in range(50)]
    f = m.function(k["mixed"], "f64(i32,f64,f32,i64,f32,f64)")
    assert f(1, 2.0, 3.0, 7, 4.0, 0.5) == 1 + 4 + 9 + 7 + 20 + 3
    nop = m.function(k["nop"], "void()")
    assert nop() is None
    with pytest.raises(SignatureError):
        add(1)
    with pytest.raises(SignatureError):
        add(1, "x")
    with pytest.raises(SignatureError):
        m.call(k["add_f64"], "f64(f64,f64)", (1.0, object()))


# ---------------------------------------------------------------- pointers
def test_numpy_arrays_copied_in_and_out(env):
    m, k = env
    x = np.arange(10, dtype=np.float32)
    assert call(m, k, "scale", "void(ptr,i32,f32)", x, 10, 2.0) is None
    assert x.tolist() == [2.0 * i for i in range(10)]
    a = np.arange(1000, dtype=np.int32)
    assert call(m, k, "sum_i32", "i64(ptr,i32)", a, 1000) == 499500
    b = np.zeros(300, dtype=np.uint8)
    call(m, k, "fill_u8", "void(ptr,i32,u8)", b, 300, 7)
    assert b.tolist() == [(7 + i) & 0xFF for i in range(300)]
    # a strided view: copied to a contiguous buffer and written back
    big = np.zeros(20, dtype=np.float32)
    view = big[::2]
    view[:] = 1.0
    call(m, k, "scale", "void(ptr,i32,f32)", view, 10, 3.0)
    assert big[::2].tolist() == [3.0] * 10 and big[1::2].tolist() == [0.0] * 10
    # bytearray / bytes
    ba = bytearray(16)
    call(m, k, "fill_u8", "void(ptr,i32,u8)", ba, 16, 1)
    assert list(ba) == list(range(1, 17))
    assert call(m, k, "sum_i32", "i64(ptr,i32)", struct.pack("<4i", 1, 2, 3, -4), 4) == 2
    # after the call a big buffer is unmapped; small ones lived in the argument
    # arena, which is zeroed: nothing of the host's data stays reachable
    big = np.ones(100_000, dtype=np.int32)
    p = call(m, k, "ptr_id", "ptr(ptr)", big)
    with pytest.raises(MemoryAccessError):
        m.read(p, 4)
    p = call(m, k, "ptr_id", "ptr(ptr)", a)
    assert m.read(p, 4000) == bytes(4000)
    p = call(m, k, "ptr_id", "ptr(ptr)", a[:3].copy())
    assert m.read(p, 12) == bytes(12)


def test_numpy_zero_copy(env):
    m, k = env
    from elfkit.exec.emulated import page_aligned_empty
    x = page_aligned_empty(1000, np.float32)        # not a page multiple: mapped via its block
    x[:] = np.arange(1000)
    call(m, k, "scale", "void(ptr,i32,f32)", x, 1000, 0.5)
    assert x[999] == 499.5 and x[1] == 0.5
    y = page_aligned_empty((1024,), np.int32)       # exactly one page
    y[:] = 1
    assert call(m, k, "sum_i32", "i64(ptr,i32)", y, 1024) == 1024
    call(m, k, "write_at", "void(ptr,i32,i32)", y, 5, -9)
    assert y[5] == -9
    sub = x[10:20]                                  # a view inside the block
    call(m, k, "scale", "void(ptr,i32,f32)", sub, 10, 2.0)
    assert x[10] == 10.0 and x[19] == 19.0 and x[20] == 10.0
    # after the call the mapping is closed: a pointer kept by the plugin faults
    p = call(m, k, "ptr_id", "ptr(ptr)", y)
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "read_at", "i32(ptr,i32)", p, 0)
    assert "earlier call" in str(ei.value)
    assert call(m, k, "read_at", "i32(ptr,i32)", y, 5) == -9          # re-opened
    # many different arrays: the cache of closed mappings is bounded
    arrays = [page_aligned_empty(1024, np.int32) for _ in range(40)]
    for i, arr in enumerate(arrays):
        arr[:] = i
        assert call(m, k, "sum_i32", "i64(ptr,i32)", arr, 1024) == 1024 * i
    assert m.cached_mappings <= 16
    # the same array twice in one call (both uses see the same memory)
    ro = np.arange(8, dtype=np.int32)
    ro.setflags(write=False)
    assert call(m, k, "sum_i32", "i64(ptr,i32)", ro, 8) == 28
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "write_at", "void(ptr,i32,i32)", ro, 0, 1)
    assert ei.value.access == "write"
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 1) == 2


def test_alloc_read_write(env):
    m, k = env
    p = m.alloc(64)
    assert p % 16 == 0 and m.read(p, 64) == bytes(64)
    m.write(p, struct.pack("<4i", 5, 6, 7, 8))
    assert call(m, k, "sum_i32", "i64(ptr,i32)", p, 4) == 26
    call(m, k, "write_at", "void(ptr,i32,i32)", p, 2, 100)
    assert struct.unpack("<4i", m.read(p, 16)) == (5, 6, 100, 8)
    q = m.alloc(100, 256)
    assert q % 256 == 0 and q != p
    big = m.alloc(1 << 20)
    m.write(big + (1 << 20) - 4, b"\x01\x02\x03\x04")
    m.free(p)
    m.free(q)
    m.free(big)
    with pytest.raises(MemoryAccessError):
        m.free(p)
    p2 = m.alloc(64)
    assert m.read(p2, 64) == bytes(64)          # re-used memory is zeroed
    with pytest.raises(MemoryAccessError):
        m.read(0x10, 4)


# ---------------------------------------------------------------- callbacks
def test_callbacks(env):
    m, k = env
    seen = []

    def mul(a, b):
        seen.append((a, b))
        return a * b
    cb = m.callback(mul, "i32(i32,i32)", "mul")
    assert call(m, k, "apply_ii", "i32(ptr,i32,i32)", cb, 6, -7) == -41
    assert seen == [(6, -7)]
    cb = m.callback(lambda x, i, f: x + i + f, "f64(f64,i32,f32)", "dd")
    assert call(m, k, "apply_dd", "f64(ptr,f64)", cb, 1.25) == (1.25 + 3 + 2.5) * 2
    got = []

    def many(*a):
        got.extend(a)
        return -5
    cb = m.callback(many, "i64(i64,i64,i64,i64,i64,i64,i64,i64,i64,f64,f32,f64)", "many")
    assert call(m, k, "apply_many", "i64(ptr)", cb) == -5
    assert got == [1, 2, 3, 4, 5, 6, 7, 8, -9, 0.5, 1.5, -2.25]
    cb = m.callback(lambda x: x * 2, "f32(f32)", "f")
    assert call(m, k, "apply_f", "f32(ptr,f32)", cb, 1.5) == 4.0
    cb = m.callback(lambda x: x / 3, "f64(f64)", "d")
    assert call(m, k, "apply_d", "f64(ptr,f64)", cb, 1.0) == 1.0 / 3 + 1.0
    cb = m.callback(lambda a, b: a + b, "i64(i32,i64)", "i64cb")
    assert call(m, k, "apply_i64", "i64(ptr)", cb) == 7 + 0x123456789 + 1
    hits = []
    cb = m.callback(lambda: hits.append(1), "void()", "v")
    assert call(m, k, "apply_void", "i32(ptr,i32)", cb, 9) == 9 and hits == [1]
    cb = m.callback(lambda i, one: i * one, "i32(i32,i32)", "loop")
    assert call(m, k, "loop_cb", "i32(ptr,i32)", cb, 100) == 4950
    assert m.symbolize(cb) == "<callback loop>"


def test_callback_errors_propagate(env):
    m, k = env

    class Boom(Exception):
        pass

    def bad(a, b):
        raise Boom("from python")
    cb = m.callback(bad, "i32(i32,i32)", "bad")
    with pytest.raises(Boom):
        call(m, k, "apply_ii", "i32(ptr,i32,i32)", cb, 1, 2)
    cb = m.callback(lambda a, b: None, "i32(i32,i32)", "none")
    with pytest.raises(SignatureError, match="returned None"):
        call(m, k, "apply_ii", "i32(ptr,i32,i32)", cb, 1, 2)
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3


def test_nested_call_from_callback(env):
    m, k = env
    add = m.function(k["add_i32"], "i32(i32,i32)")
    cb = m.callback(lambda a, b: add(a, b) * 10, "i32(i32,i32)", "nested")
    assert call(m, k, "apply_ii", "i32(ptr,i32,i32)", cb, 3, 4) == 71
    cb2 = m.callback(lambda x: call(m, k, "apply_ii", "i32(ptr,i32,i32)", cb, x, 1), "i32(i32)", "deep")
    assert call(m, k, "apply_chain", "i32(ptr,i32)", cb2, 5) == ((5 + 1) * 10 + 1) * 2


# ---------------------------------------------------------------- limits
def test_timeout_and_usable_afterwards(env):
    m, k = env
    t0 = time.monotonic()
    with pytest.raises(CallTimeout, match="timed out"):
        call(m, k, "spin", "void()", timeout=0.05)
    took = time.monotonic() - t0
    assert 0.04 <= took < 1.0
    assert call(m, k, "add_i32", "i32(i32,i32)", 20, 22) == 42
    assert call(m, k, "count_to", "i32(i32)", 1000, timeout=5) == 1000
    assert call(m, k, "add_f64", "f64(f64,f64)", 0.5, 0.25) == 0.75


def test_instruction_budget(env):
    m, k = env
    with pytest.raises(CallTimeout, match="instruction budget"):
        call(m, k, "count_to", "i32(i32)", 10 ** 7, budget=10000)
    assert call(m, k, "count_to", "i32(i32)", 50, budget=100000) == 50
    with pytest.raises(CallTimeout):
        call(m, k, "spin", "void()", budget=5000)
    # code translated before a budgeted call is counted too
    with pytest.raises(CallTimeout, match="timed out"):
        call(m, k, "spin", "void()", timeout=0.02)
    with pytest.raises(CallTimeout, match="budget"):
        call(m, k, "spin", "void()", budget=5000)
    assert call(m, k, "count_to", "i32(i32)", 10) == 10
    with pytest.raises(CallTimeout, match="budget"):
        call(m, k, "count_to", "i32(i32)", 10 ** 7, budget=1000)
    m.set_limits(instruction_budget=20000)
    with pytest.raises(CallTimeout):
        call(m, k, "spin", "void()")
    m.set_limits()
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3
    m.instruction_budget = 3000
    with pytest.raises(CallTimeout):
        m.function(k["spin"], "void()")()
    m.instruction_budget = None
    m.timeout = 0.02
    with pytest.raises(CallTimeout, match="timed out"):
        m.function(k["spin"], "void()")()
    m.timeout = None
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3


def test_a_budget_of_zero_runs_nothing_and_bounds_are_checked(env):
    """issue 29: 0 meant no limit to elfkit and an exhausted budget to vmrt;
    now 0 lets no instruction run everywhere (None is no limit), and a
    budget of 2^70 or a string is refused."""
    m, k = env
    with pytest.raises(CallTimeout, match="instruction budget of 0"):
        call(m, k, "add_i32", "i32(i32,i32)", 1, 2, budget=0)
    m.instruction_budget = 0
    with pytest.raises(CallTimeout, match="instruction budget of 0"):
        m.function(k["add_i32"], "i32(i32,i32)")(1, 2)
    m.instruction_budget = None
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3
    for bad in (1 << 70, -1):
        with pytest.raises(SignatureError, match="budget"):
            call(m, k, "add_i32", "i32(i32,i32)", 1, 2, budget=bad)
        with pytest.raises(SignatureError, match="budget"):
            m.instruction_budget = bad
    with pytest.raises(InvalidArgumentError, match="budget"):
        call(m, k, "add_i32", "i32(i32,i32)", 1, 2, budget="x")
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3


def test_cancel_from_another_thread(env):
    m, k = env
    result = {}

    def run():
        try:
            call(m, k, "spin", "void()")
        except BaseException as e:  # noqa: BLE001
            result["e"] = e
    th = threading.Thread(target=run)
    th.start()
    for _ in range(400):              # cancel() is False until the call is running
        if m.cancel() is True:
            break
        time.sleep(0.005)
    else:
        pytest.fail("the call never started")
    th.join(5)
    assert not th.is_alive()
    assert isinstance(result.get("e"), CallTimeout) and "cancelled" in str(result["e"])
    assert m.cancel() is False
    assert call(m, k, "add_i32", "i32(i32,i32)", 2, 2) == 4


# ---------------------------------------------------------------- faults
def test_fault_report_wild_write(env):
    m, k = env
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "wild_write", "void()")
    f = ei.value
    text = str(f)
    assert f.arch == m.arch.name
    assert f.symbol.startswith("wild_write")
    assert f.address == 0xDEAD0000 and f.access == "write"
    assert "write to unmapped memory at 0xdead0000" in text.splitlines()[0]
    assert "wild_write" in text.splitlines()[0]
    assert "=>" in text and "registers:" in text
    assert f.disassembly and f.registers
    assert f.source is not None and "k.c:" in f.source
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3


def test_fault_backtrace_through_callers(env):
    m, k = env
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "calls_deref", "i32(ptr)", 0x40)
    f = ei.value
    assert f.symbol.startswith("deref")
    assert "null-pointer" in str(f)
    names = [s for _a, s in f.backtrace]
    assert names[0].startswith("deref")
    assert any(s.startswith("calls_deref") for s in names[1:]), str(f)


def test_fault_kinds(env, arch):
    m, k = env
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "recurse", "i32(i32)", 10 ** 6)
    assert "stack" in str(ei.value)
    assert call(m, k, "recurse", "i32(i32)", 10) == sum(range(11))
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "trap", "void()")
    assert "trap" in ei.value.kind or "instruction" in ei.value.kind
    assert ei.value.symbol.startswith("trap")
    with pytest.raises(EmulationFault) as ei:
        call(m, k, "write_code", "void()")
    assert ei.value.kind == "write to read-only memory"
    with pytest.raises(EmulationFault) as ei:
        m.call(0x7000000, "void()", ())
    assert ei.value.access == "fetch"
    if arch in ("x86_64", "i386"):
        assert call(m, k, "div_i32", "i32(i32,i32)", 7, 2) == 3
        with pytest.raises(EmulationFault) as ei:
            call(m, k, "div_i32", "i32(i32,i32)", 7, 0)
        assert "division" in ei.value.kind and ei.value.symbol.startswith("div_i32")
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3


def test_fault_report_survives_failing_line_resolver(env):
    m, k = env

    def broken(addr: int) -> str:
        raise KeyError("no such line table")

    m.add_line_info(0x7000000, 0x7001000, broken)
    with pytest.raises(EmulationFault) as ei:
        m.call(0x7000000, "void()", ())
    assert ei.value.access == "fetch" and ei.value.source is None
    assert "note: line information failed: KeyError" in str(ei.value)


# ---------------------------------------------------------------- tracing
def test_trace_to_file(env, tmp_path):
    m, k = env
    path = tmp_path / "trace.txt"
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3      # translated before tracing
    m.trace(path)
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3
    assert call(m, k, "count_to", "i32(i32)", 3) == 3
    m.trace(None)
    text = path.read_text()
    assert "add_i32" in text and "count_to" in text
    assert text.count("count_to") >= 3                # one block per loop iteration
    n = len(text)
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3
    assert len(path.read_text()) == n                  # off: nothing written


def test_trace_write_failure_is_reported(env):
    m, k = env

    class Full(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith("#"):
                return super().write(text)
            raise OSError(28, "No space left on device")

    m.trace(Full())
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3      # the call is not disturbed
    with pytest.raises(ExecutionError, match="No space left"):
        m.trace(None)
    assert call(m, k, "add_i32", "i32(i32,i32)", 1, 2) == 3
    with pytest.raises(SignatureError):
        m.trace(io.StringIO(), mode="verbose")


def test_memory_management(env):
    m, k = env
    a = m.reserve(3 * 4096, 0x10000)
    assert a % 0x10000 == 0
    m.write(a, b"abc")
    assert m.read(a, 3) == b"abc"
    m.protect(a, 4096, PROT_READ)
    with pytest.raises(MemoryAccessError):
        m.protect(a + 1, 4096, PROT_READ)
    with pytest.raises(EmulationFault):
        call(m, k, "write_at", "void(ptr,i32,i32)", a, 0, 1)
    assert call(m, k, "read_at", "i32(ptr,i32)", a + 4096, 0) == 0
    m.release(a, 3 * 4096)
    with pytest.raises(MemoryAccessError):
        m.read(a, 1)
    with pytest.raises(EmulationFault):
        call(m, k, "read_at", "i32(ptr,i32)", a, 0)


def test_memory_limit(arch):
    from elfkit.errors import ElfkitError
    from elfkit.exec.emulated import EmulatedMachine
    with EmulatedMachine(arch, memory_limit=4 << 20) as m:
        m.reserve(1 << 20, 4096)
        with pytest.raises(ElfkitError):
            m.reserve(8 << 20, 4096)


def test_float_abi_from_eflags():
    from elfkit.exec.emulated import EmulatedMachine, float_abi_from_eflags
    assert float_abi_from_eflags("riscv32", 0x5) == "double"
    assert float_abi_from_eflags("riscv32", 0x3) == "single"
    assert float_abi_from_eflags("riscv32", 0x1) == "soft"
    assert float_abi_from_eflags("arm", 0x5000400) == "hard"
    m = EmulatedMachine("riscv32", float_abi="single")
    p = m.plan("f64(f64,f32)")
    assert [pc.reg for pc in p.args[0].pieces] == ["A0", "A1"]
    assert [pc.reg for pc in p.args[1].pieces] == ["FA0"]
    m.float_abi = "soft"
    p = m.plan("f32(f32)")
    assert p.args[0].pieces[0].reg == "A0" and p.ret.pieces[0].reg == "A0"
    m.close()


def test_import_elfkit_is_light():
    code = ("import sys, elfkit, elfkit.exec, elfkit.exec.disasm;"
            "bad=[m for m in ('unicorn','capstone','lief') if m in sys.modules];"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_emulated_machines_run_without_the_unicorn_python_package():
    """elfkit calls libunicorn itself: making and using a machine never
    imports the (slow to import) ``unicorn`` package."""
    code = ("import sys, struct; from elfkit.exec.emulated import EmulatedMachine;"
            "m = EmulatedMachine('aarch64', cpu='A72'); a = m.reserve(4096);"
            "m.write(a, struct.pack('<2I', 0x8B010000, 0xD65F03C0)); m.protect(a, 4096, 5);"
            "print(m.call(a, 'u64(u64,u64)', (40, 2)), m.read_register('PC') != 0,"
            "      [n for n in sys.modules if n.split('.')[0] == 'unicorn'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["42", "True", "[]"]


@pytest.mark.parametrize("arch,reg,value", [
    ("aarch64", "V3", (1 << 127) | 0x1234), ("aarch64", "X5", (1 << 64) - 1),
    ("x86_64", "XMM2", (0xDEAD << 100) | 7), ("x86_64", "FP1", (0x8000_0000_0000_0001, 0x3FFF)),
    ("riscv64", "A0", 0x1234_5678_9ABC_DEF0), ("arm", "R4", 0xFFFF_FFFF)])
def test_registers_of_every_width_round_trip(arch, reg, value):
    from elfkit.exec.emulated import EmulatedMachine
    with EmulatedMachine(arch) as m:
        m.write_register(reg, value)
        assert m.read_register(reg) == value


def test_functions_of_one_signature_call_their_own_address():
    """function() generates a caller once per signature and copies it per
    address: each copy runs its own code and carries its own name."""
    from elfkit.exec.emulated import EmulatedMachine
    with EmulatedMachine("aarch64") as m:
        a = m.reserve(4096)
        # add x0, x0, x1 ; ret | sub x0, x0, x1 ; ret | mul x0, x0, x1 ; ret
        m.write(a, struct.pack("<6I", 0x8B010000, 0xD65F03C0, 0xCB010000, 0xD65F03C0,
                               0x9B017C00, 0xD65F03C0))
        m.protect(a, 4096, PROT_READ | PROT_EXEC)
        add, sub, mul = (m.function(a + 8 * i, "u64(u64,u64)", name=n)
                         for i, n in enumerate(("add", "sub", "mul")))
        assert [f(40, 2) for f in (add, sub, mul, sub, add)] == [42, 38, 80, 38, 42]
        assert [f.__name__ for f in (add, sub, mul)] == ["add", "sub", "mul"]
        assert mul.__doc__ == f"u64(u64,u64) at {a + 16:#x}"


def test_reserve_guarded_faults_one_byte_past_the_end():
    from elfkit.exec.emulated import EmulatedMachine
    with EmulatedMachine("aarch64") as m:
        base = m.reserve_guarded(5000)            # two pages, then the guard page
        m.write(base + 8191, b"\x07")
        code = m.reserve(4096)
        m.write(code, struct.pack("<2I", 0x39400000, 0xD65F03C0))   # ldrb w0, [x0] ; ret
        m.protect(code, 4096, PROT_READ | PROT_EXEC)
        load = m.function(code, "u32(u64)", name="load")
        assert load(base + 8191) == 7
        with pytest.raises(EmulationFault) as e:
            load(base + 8192)
        assert e.value.address == base + 8192
        with pytest.raises(MemoryAccessError):
            m.read(base + 8192, 1)
        m.release(base)
        with pytest.raises(MemoryAccessError):
            m.read(base, 1)


def test_unknown_register_names_are_refused():
    from elfkit.exec.emulated import EmulatedMachine
    with EmulatedMachine("aarch64") as m, pytest.raises(BackendError, match="NOPE"):
        m.read_register("NOPE")


FABI_SOURCE = r"""
float pass_f(float a, float b) { return b; }
double pick(int i, double a, double b) { return i ? a : b; }
typedef double (*cbd)(double, float);
double call_cb(cbd f) { return f(2.5, 0.5f); }
"""


@pytest.mark.parametrize("arch_name,cpu,abi", [
    ("riscv32", "-mcpu=generic_rv32+m+a+c", "soft"),
    ("riscv32", "-mcpu=generic_rv32+m+a+f+c -mabi=ilp32f", "single"),
    ("riscv32", "-mcpu=generic_rv32+m+a+f+d+c", "double"),
    ("riscv64", "-mcpu=generic_rv64+m+a+c", "soft"),
])
def test_riscv_float_abis(tmp_path, arch_name, cpu, abi):
    """The float ABI comes from e_flags (set by attach() for modules that carry
    their ELF, or by hand as here); floats travel in a-registers when soft."""
    from types import SimpleNamespace

    from elfkit.exec.emulated import EmulatedMachine, float_abi_from_eflags
    src = tmp_path / "f.c"
    src.write_text(FABI_SOURCE)
    arch = A.get(arch_name)
    # the CPU flags given last override the arch's default float ABI
    compile_plugin(src, arch, tmp_path / "f.so", cflags=cpu.split(), ldflags=["--no-undefined"])
    data = (tmp_path / "f.so").read_bytes()
    e_flags = ELFFile(io.BytesIO(data))["e_flags"]
    assert float_abi_from_eflags(arch, e_flags) == abi
    with EmulatedMachine(arch_name) as m:
        cb = m.callback(lambda x, y: x * 10 + y, "f64(f64,f32)", "cb")   # generated lazily
        m.attach(SimpleNamespace(elf=SimpleNamespace(e_flags=e_flags, data=b""),
                                 symbolize=lambda a: ""))
        assert m.float_abi == abi
        k = Image(m, data)
        assert m.call(k["pass_f"], "f32(f32,f32)", (1.5, 2.5)) == 2.5
        assert m.call(k["pick"], "f64(i32,f64,f64)", (1, 1.25, 2.5)) == 1.25
        assert m.call(k["pick"], "f64(i32,f64,f64)", (0, 1.25, 2.5)) == 2.5
        assert m.call(k["call_cb"], "f64(ptr)", (cb,)) == 25.5
        # a module with another float ABI in the same machine: each side keeps its own
        other = "double" if abi != "double" else "soft"
        flags = {"soft": 0x1, "single": 0x3, "double": 0x5}[other]
        fake = SimpleNamespace(elf=SimpleNamespace(e_flags=flags, data=b""),
                               address_range=(0x7000000, 0x7001000),
                               symbolize=lambda a: "")
        m.attach(fake)
        assert m.mixed_float_abi
        assert m.call(k["pick"], "f64(i32,f64,f64)", (1, 1.25, 2.5)) == 1.25
        assert m.call(k["call_cb"], "f64(ptr)", (cb,)) == 25.5      # caller's ABI via ra
        assert m.plan("f64(f64)", other).args[0].pieces != m.plan("f64(f64)", abi).args[0].pieces
        m.detach(fake)
        assert not m.mixed_float_abi


def test_self_patching_host_write_invalidates_code(env):
    """A host write into code that already ran is seen by the next call."""
    m, k = env
    f = m.function(k["add_i32"], "i32(i32,i32)")
    assert f(1, 2) == 3
    nop_addr, _ = k.funcs["nop"]
    a = k["add_i32"]
    start = a & ~4095
    m.protect(start, 4096, PROT_READ | PROT_WRITE)
    ret = A.get(m.arch).ret_insn
    if m.arch.name in ("x86_64", "i386"):
        patch = b"\x31\xc0" + ret                 # xor eax, eax ; ret
    elif m.arch.name == "aarch64":
        patch = bytes.fromhex("00008052") + ret   # mov w0, #0 ; ret
    elif m.arch.name == "arm":
        patch = bytes.fromhex("0000a0e3") + ret   # mov r0, #0 ; bx lr
    else:
        patch = struct.pack("<I", 0x00000513) + ret   # addi a0, zero, 0 ; ret
    m.write(a, patch)
    m.protect(start, 4096, PROT_READ | PROT_EXEC)
    assert f(1, 2) == 0


def test_concurrent_calls_from_threads(env):
    m, k = env
    add = m.function(k["add_i32"], "i32(i32,i32)")
    cb = m.callback(lambda a, b: a - b, "i32(i32,i32)", "sub")
    errors = []

    def work(t):
        try:
            for i in range(200):
                assert add(i, t) == i + t
                assert call(m, k, "apply_ii", "i32(ptr,i32,i32)", cb, i, t) == i - t + 1
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


DEBUG_SOURCE = r"""
#include <stdint.h>
int32_t add_i32(int32_t a, int32_t b) { return a + b; }
void wild_write(void) {
    *(volatile int32_t *)0xdead0000 = 1;
}
"""


def test_public_api_fault_has_source_line(arch, tmp_path):
    """A plugin with DWARF .debug_line: the loader attaches it, the machine
    registers its line table, the fault report names file:line."""
    import elfkit
    data = _build(arch, tmp_path, DEBUG_SOURCE, visibility="default")
    with elfkit.load(data, backend="emulated", lazy=True) as mod:   # arm: __aeabi_unwind_cpp_pr0
        with pytest.raises(EmulationFault) as ei:
            mod.call("wild_write", restype="void")
        assert ei.value.source and "k.c:5" in ei.value.source
        assert "k.c:5" in str(ei.value).splitlines()[0]
        assert mod.function("add_i32", "i32(i32,i32)")(2, 3) == 5


def test_closed_machine_refuses_calls(arch, kernel_bytes):
    from elfkit.errors import ModuleClosedError
    from elfkit.exec.emulated import EmulatedMachine
    m = EmulatedMachine(arch)
    k = Image(m, kernel_bytes(arch))
    f = m.function(k["add_i32"], "i32(i32,i32)")
    assert f(1, 2) == 3
    m.close()
    m.close()
    with pytest.raises(ModuleClosedError):
        f(1, 2)
    with pytest.raises(ModuleClosedError):
        m.call(k["add_i32"], "i32(i32,i32)", (1, 2))
    with pytest.raises(ModuleClosedError):
        m.alloc(16)
    # the engine is gone: registers are refused too (not read from freed memory)
    with pytest.raises(ModuleClosedError):
        m.registers()
    with pytest.raises(ModuleClosedError):
        m.read_register(m.arch.cc.pc)
    with pytest.raises(ModuleClosedError):
        m.write_register(m.arch.cc.pc, 0)
    with pytest.raises(ModuleClosedError):
        m.share(m.empty(1024, np.int32))


def test_share_keeps_a_buffer_mapped(env):
    m, k = env
    a = m.empty(1024, np.int32)
    a[:] = 2
    p = m.share(a)
    assert call(m, k, "sum_i32", "i64(ptr,i32)", p, 1024) == 2048
    call(m, k, "write_at", "void(ptr,i32,i32)", p, 3, 100)
    assert a[3] == 100
    assert call(m, k, "sum_i32", "i64(ptr,i32)", a, 1024) == 2046 + 100   # also as an argument
    assert call(m, k, "read_at", "i32(ptr,i32)", p, 3) == 100              # still open
    m.unshare(p)
    with pytest.raises(EmulationFault):
        call(m, k, "read_at", "i32(ptr,i32)", p, 3)
    with pytest.raises(MemoryAccessError):
        m.share(np.zeros(10, np.int32))



def test_share_pages_maps_an_mmap_without_numpy(env):
    """share_pages: whole host pages (an anonymous mmap) mapped zero-copy,
    read-only when asked; anything but whole pages is refused."""
    import ctypes
    import mmap
    import struct
    m, k = env
    mm = mmap.mmap(-1, 4096)
    mm[:4096] = struct.pack("<1024i", *([2] * 1024))
    addr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    p = m.share_pages(mm, addr, 4096)
    assert call(m, k, "sum_i32", "i64(ptr,i32)", p, 1024) == 2048
    call(m, k, "write_at", "void(ptr,i32,i32)", p, 3, 100)
    assert struct.unpack_from("<i", mm, 12) == (100,)
    m.unshare(p)
    ro = m.share_pages(mm, addr, 4096, writable=False)
    assert call(m, k, "read_at", "i32(ptr,i32)", ro, 3) == 100
    with pytest.raises(EmulationFault):
        call(m, k, "write_at", "void(ptr,i32,i32)", ro, 3, 5)
    m.unshare(ro)
    assert struct.unpack_from("<i", mm, 12) == (100,)
    for a, n in ((addr + 64, 4096), (addr, 100), (addr, 0)):
        with pytest.raises(MemoryAccessError):
            m.share_pages(mm, a, n)


_X87_CALL = r'''
import sys
from elfkit.exec.emulated import EmulatedMachine
from elfkit.exec.base import PROT_EXEC, PROT_READ
n = int(sys.argv[1])
# f64 f(void): fld1; fld1; n x fadd %st(1),%st; fstp %st(1); ret  -> 1 + n
code = b"\xd9\xe8" * 2 + b"\xd8\xc1" * n + b"\xdd\xd9" + b"\xc3"
m = EmulatedMachine("i386")
base = m.reserve(16384, 4096)
m.write(base, code)
m.protect(base, 16384, PROT_READ | PROT_EXEC)
print(m.call(base, "f64()"))
'''


@pytest.mark.parametrize("n", [10, 300, 3000])
def test_long_x87_runs_do_not_crash_unicorn(n):
    """unicorn 2.1.4 segfaults translating ~250 x87 instructions in one i386
    block (tests/vmrt/conformance/test_linalg.py); the machine spots such
    code when it becomes executable and runs it with the counter on."""
    from elfkit.exec.disasm import longest_x87_run
    assert longest_x87_run(b"\xd9\xe8" * 2 + b"\xd8\xc1" * n + b"\xc3", 0x1000) == n + 2
    assert longest_x87_run(b"\xd9\xe8" * 50 + b"\xeb\x00" + b"\xd9\xe8" * 40, 0) == 50
    proc = subprocess.run([sys.executable, "-c", _X87_CALL, str(n)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 1 + n
