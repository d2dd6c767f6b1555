"""``EmulatedMachine.raise_inexact_flag``: guest code sees the sticky inexact
flag raised in every call, and float results stay exactly what IEEE float32
arithmetic gives (checked against numpy, one operation at a time)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("unicorn")

import elfkit
from elfkit.toolchain import compile_plugin

SOURCE = r"""
#include <stdint.h>
uint64_t fp_flags(void) {
    uint64_t v;
#if defined(__aarch64__)
    __asm__ volatile("mrs %0, fpsr" : "=r"(v));
#else
    __asm__ volatile("frflags %0" : "=r"(v));
#endif
    return v;
}
void products(const float *a, const float *b, float *out, int32_t n) {
    for (int32_t i = 0; i < n; i++) out[i] = a[i] * b[i] + a[i];
}
"""
INEXACT = {"aarch64": 1 << 4, "riscv64": 1}


@pytest.fixture(scope="module", params=sorted(INEXACT))
def library(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"inexact_{request.param}")
    (tmp / "f.c").write_text(SOURCE)
    compile_plugin(tmp / "f.c", request.param, tmp / "f.so",
                   cflags=["-O1", "-ffp-contract=off", "-fvisibility=default"])
    return tmp / "f.so"


@pytest.fixture
def plugin(library):
    with elfkit.load(library, backend="emulated") as mod:      # a fresh machine each test
        yield mod


def _products(plugin, a, b):
    out = np.zeros_like(a)
    plugin.function("products", "void(ptr,ptr,ptr,i32)")(a, b, out, len(a))
    return out


def test_every_call_sees_the_flag_once_raised(plugin):
    m = plugin.machine
    bit = INEXACT[m.arch.name]
    assert m.inexact_flag is None
    assert plugin.function("fp_flags", "u64()")() == 0
    # arithmetic that stays exact raises no flag in a plain machine
    whole = np.arange(1, 9, dtype=np.float32)
    _products(plugin, whole, whole)
    assert plugin.function("fp_flags", "u64()")() == 0
    m.raise_inexact_flag()
    assert m.inexact_flag is not None and m.inexact_flag[1] == bit
    for _ in range(2):
        assert plugin.function("fp_flags", "u64()")() == bit


def test_results_are_plain_ieee_float32_either_way(plugin):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(257) * 1e3).astype(np.float32)
    b = rng.standard_normal(257).astype(np.float32)
    a[:6] = [1e-40, -0.0, np.inf, 3e38, 1.5e-38, 2.0]     # subnormal, -0, inf, overflow, tiny
    b[:6] = [0.5, 3.0, 2.0, 10.0, 1e-3, 4.0]
    with np.errstate(all="ignore"):
        expected = a * b + a                   # numpy: float32 multiply, then float32 add
    before = _products(plugin, a, b)
    assert plugin.machine.inexact_flag is None
    plugin.machine.raise_inexact_flag()
    after = _products(plugin, a, b)
    assert before.tobytes() == expected.tobytes()
    assert after.tobytes() == expected.tobytes()


def test_a_no_op_where_unicorn_keeps_the_flag_anyway():
    from elfkit.exec.emulated import EmulatedMachine
    with EmulatedMachine("x86_64") as m:
        m.raise_inexact_flag()
        assert m.inexact_flag is None
