"""Fixtures for the vmrt tests: compile MLIR with the pip iree-compile (once
per session), run programs with the pip iree-run-module (the oracle) and with
vmrt (in process).  Helpers live in vmrt_testutil.py."""
from __future__ import annotations

import shutil

import pytest

from vmrt_testutil import Compiler, iree_run, vmrt_run


@pytest.fixture(scope="session")
def compile_mlir(tmp_path_factory):
    if shutil.which("iree-compile") is None:
        pytest.skip("iree-compile not installed")
    return Compiler(tmp_path_factory.mktemp("vmfb"))


@pytest.fixture(scope="session")
def iree():
    if shutil.which("iree-run-module") is None:
        pytest.skip("iree-run-module not installed")
    return iree_run


@pytest.fixture
def vmrt():
    return vmrt_run
