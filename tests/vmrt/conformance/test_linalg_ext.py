"""Conformance: iree_linalg_ext ops (sort, scatter, gather, top-k, scan) and multi-result reductions."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program


@pytest.mark.parametrize("path,arch", cases("linalg_ext"))
def test_program(path, arch, emulation):
    check_program(path, arch)
