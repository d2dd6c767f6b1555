"""Fixtures for the device-HAL tests (vmrt.modules.hal.module).

* ``hal_compile`` (session): compiles a program for the ``local`` HAL device
  with the llvm-cpu backend for one CPU (``hal_compile("elementwise.mlir",
  "aarch64")``); sources are ``programs/*.mlir``, the plugin program of
  tests/vmrt/hal/local/plugins/data or the programs of tests/vmrt/tools/data; results
  are cached under ``build/vmrt_hal/<hash>/``
  keyed by the source, the flags and the compiler version.
* ``hal_sos`` (session): our standalone plugin for x86_64, aarch64 and
  riscv64 packed by ``elfkit fatelf pack`` (what the IREE sample builds):
  the ``standalone_sos`` fixture of tests/conftest.py.
* ``both``: runs the same flags through the pip ``iree-run-module`` and
  through ``vmrt.tools.main.main`` in process; returns both ``Run`` results.

``iree_run_module`` and ``emulation`` are in tests/vmrt/conftest.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.vmrt.hal.hal_testutil import iree_run, vmrt_run


@pytest.fixture(scope="session")
def hal_sos(standalone_sos) -> Path:
    return standalone_sos


@pytest.fixture
def both(iree_run_module):
    def run(args: list[str], cwd: Path | None = None) -> tuple:
        return iree_run(iree_run_module, args, cwd), vmrt_run(args, cwd)
    return run


@pytest.fixture(scope="module")
def saxpy(iree):
    """(device, hal executable, export ordinal) of the codegen library's saxpy
    on a local-sync device."""
    from vmrt.hal.local.device import Device
    device = Device("local-sync")
    lib = iree.compile("codegen", "x86_64").library
    hexe = device.load_executable("embedded-elf-x86_64", lib.read_bytes(), None)
    yield device, hexe, hexe.exe.export("saxpy").ordinal
    device.close()
