"""Fixtures of the dispatch-tool tests (``--compare_with``,
``--dump_dispatches``, ``--check_races``).

* ``chain_inputs`` (session): random inputs of data/chain.mlir's ``chain``
  as arrays and as ``--input=@a.npy`` / ``@b.npy`` flags.
* ``cpu_bug_sos`` (session): tests/vmrt/hal/local/plugins/data/variant_plugin.c built
  for x86_64 (correct: out = lhs * rhs) and for riscv64 with a planted bug
  (out = lhs * rhs * 1.5), packed into one .sos: a plugin that miscomputes
  on one CPU only.

``hal_compile`` (tests/vmrt/conftest.py) compiles the programs of ``data/``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.vmrt.hal.local.plugins.conftest import Variants

#: the factor the riscv64 build of the cpu_bug plugin multiplies by
CPU_BUG_FACTOR = 1.5


@pytest.fixture(scope="session")
def chain_inputs(tmp_path_factory):
    import numpy as np
    d = tmp_path_factory.mktemp("chain_inputs")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    return a, b, [f"--input=@{d / 'a.npy'}", f"--input=@{d / 'b.npy'}"]


@pytest.fixture(scope="session")
def cpu_bug_sos(sos) -> Path:
    try:
        import ziglang  # noqa: F401
    except ImportError:
        pytest.skip("the ziglang package is not installed (pip install -e '.[test]')")
    v = Variants()
    return sos([v.path("x86_64"), v.path("riscv64", factor=CPU_BUG_FACTOR)], "cpu_bug.sos")
