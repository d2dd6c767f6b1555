"""Conformance: small models (an MNIST-like MLP, an LSTM cell in a while loop)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program


@pytest.mark.parametrize("path,arch", cases("models"))
def test_program(path, arch, emulation):
    check_program(path, arch)
