"""Several threads calling one native module, and separate emulated modules
used from separate threads, give correct results."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import elfkit


def _run_threads(fns):
    errors = []

    def wrap(f):
        try:
            f()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in ts)


@pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                    reason="native x86_64")
def test_threads_share_one_native_module(plugins):
    with elfkit.load(plugins.path("kernels", "x86_64")) as m:
        dot = m.function("dot_f64", "f64(ptr,ptr,i64)")
        add = m.function("add_f32", "void(ptr,ptr,ptr,i64)")

        def worker(seed):
            def run():
                rng = np.random.default_rng(seed)
                for _ in range(200):
                    a, b = rng.random(257), rng.random(257)
                    assert dot(a, b, 257) == pytest.approx(float(np.dot(a, b)), rel=1e-12)
                    x, y = rng.random(100).astype(np.float32), rng.random(100).astype(np.float32)
                    out = np.empty_like(x)
                    add(out, x, y, 100)
                    np.testing.assert_array_equal(out, x + y)
            return run
        _run_threads([worker(s) for s in range(4)])


def test_separate_emulated_modules_in_separate_threads(plugins):
    arches = ["aarch64", "riscv64", "arm", "riscv32"]
    mods = [elfkit.load(plugins.path("kernels", a), backend="emulated") for a in arches]
    try:
        def worker(m, seed):
            def run():
                f = m.function("sum_i32", "i64(ptr,i64)")
                g = m.function("add_i64", "i64(i64,i64)")
                rng = np.random.default_rng(seed)
                for _ in range(50):
                    a = rng.integers(-1000, 1000, size=300, dtype=np.int32)
                    assert f(a, len(a)) == int(a.astype(np.int64).sum())
                    x, y = (int(v) for v in rng.integers(-2**40, 2**40, size=2))
                    assert g(x, y) == x + y
            return run
        _run_threads([worker(m, i) for i, m in enumerate(mods)])
    finally:
        for m in mods:
            m.close()
