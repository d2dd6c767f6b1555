"""Fixtures of the dispatch-tool tests (``--compare_with``,
``--dump_dispatches``, ``--check_races``).

* ``cpu_bug_sos`` (session): tests/vmrt/plugins/data/variant_plugin.c built
  for x86_64 (correct: out = lhs * rhs) and for riscv64 with a planted bug
  (out = lhs * rhs * 1.5), packed into one .sos: a plugin that miscomputes
  on one CPU only.

``hal_compile`` (tests/vmrt/conftest.py) compiles the programs of ``data/``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.vmrt.plugins.conftest import Variants

#: the factor the riscv64 build of the cpu_bug plugin multiplies by
CPU_BUG_FACTOR = 1.5


@pytest.fixture(scope="session")
def cpu_bug_sos(sos) -> Path:
    try:
        import ziglang  # noqa: F401
    except ImportError:
        pytest.skip("the ziglang package is not installed (pip install -e '.[test]')")
    v = Variants()
    return sos([v.path("x86_64"), v.path("riscv64", factor=CPU_BUG_FACTOR)], "cpu_bug.sos")
