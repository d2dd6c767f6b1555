"""Conformance: tosa programs (conv2d, matmul, reductions, rescale, table, data movement, argmax)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program


@pytest.mark.parametrize("path,arch", cases("tosa"))
def test_program(path, arch, emulation):
    check_program(path, arch)
