"""Conformance: small elementwise programs (a smoke test of the harness)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program


@pytest.mark.parametrize("path,arch", cases("basic"))
def test_program(path, arch, emulation):
    check_program(path, arch)
