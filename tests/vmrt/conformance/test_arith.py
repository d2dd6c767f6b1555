"""Conformance: the arith family (programs/arith/*.mlir, written by gen_arith.py)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program_isolated

# each program runs in a child process: an emulator crash (see test_linalg.py)
# fails one case instead of the session


@pytest.mark.parametrize("path,arch", cases("arith"))
def test_program(path, arch, emulation):
    check_program_isolated(path, arch)
