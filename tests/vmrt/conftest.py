"""Fixtures shared by the vmrt tests (vm, bytecode, hal, plugins, tools,
samples).  Helpers live in vmrt_testutil.py and iree_tools.py.

* ``compile_mlir`` (session): compiles ``programs/*.mlir`` or MLIR text with
  the pip ``iree-compile`` (host-only unless flags are given), once per
  session.
* ``iree`` (session): ``iree_tools.IreeCompiler``: a program of
  ``plugins/data`` (or ``examples/``) compiled for one CPU with its dispatch
  libraries dumped (``iree.compile("simple_mul", "riscv64").library``).
* ``iree_run_module`` (session): the path of the pip ``iree-run-module``.
* ``emulation`` (session): skips when the emulated backend cannot run code.
"""
from __future__ import annotations

import shutil

import pytest

from tests.vmrt.hal.hal_testutil import HalCompiler
from tests.vmrt.iree_tools import IreeCompiler, require_tool
from tests.vmrt.vmrt_testutil import Compiler


@pytest.fixture(scope="session")
def compile_mlir(tmp_path_factory):
    if shutil.which("iree-compile") is None:
        pytest.skip("iree-compile not installed")
    return Compiler(tmp_path_factory.mktemp("vmfb"))


@pytest.fixture(scope="session")
def hal_compile() -> HalCompiler:
    """A program of ``hal/programs`` compiled for the local device, one CPU."""
    return HalCompiler(require_tool("iree-compile", "iree-base-compiler"))


@pytest.fixture(scope="session")
def iree() -> IreeCompiler:
    return IreeCompiler(require_tool("iree-compile", "iree-base-compiler"))


@pytest.fixture(scope="session")
def iree_run_module() -> str:
    return require_tool("iree-run-module", "iree-base-runtime")


@pytest.fixture(scope="session")
def emulation() -> None:
    import elfkit
    from elfkit.exec import create_machine
    try:
        create_machine(elfkit.arch.get("aarch64"), "emulated").close()
    except Exception as e:  # noqa: BLE001 - any failure means: skip, and say why
        pytest.skip(f"the emulated backend is unavailable: {e}")
