"""Conformance: stablehlo programs (dot_general, convolution, reductions, gather/scatter, slices, rng, fft, complex numbers, while loops)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program


@pytest.mark.parametrize("path,arch", cases("stablehlo"))
def test_program(path, arch, emulation):
    check_program(path, arch)
