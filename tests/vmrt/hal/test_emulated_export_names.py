"""The dispatch functions of an emulated library are named only when names
are needed (``EmulatedMachine.name_later``): a program's first dispatch no
longer pays for naming them (DWARF function sizes), a symbolize (fault
reports, profiles, traces) or gdb names them first.  The expected names and
addresses are the library's DWARF subprograms (pyelftools)."""
from __future__ import annotations

import numpy as np
import pytest

import elfkit
from tests.elfkit.exec.debug_testutil import dwarf_functions
from vmrt.hal.local.loader import ExecutableLoader


@pytest.fixture
def lib(iree, emulation):
    """The aarch64 codegen library (saxpy and friends), with DWARF."""
    return iree.compile("codegen", "aarch64").library


def _named(exe) -> dict[str, int]:
    return {s.name: s.address - exe.module.base for s in exe.module.added_symbols}


def _want(lib) -> dict[str, int]:
    return {n: lo for n, (lo, _s) in dwarf_functions(lib).items()}


def _saxpy(exe, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    exe.dispatch("saxpy", (n // 32, 1, 1), [x, np.ones(n, np.float32), out], [2.0, n, 0])
    return x, out


def test_a_dispatch_leaves_the_names_to_the_first_symbolize(lib):
    want = _want(lib)
    with ExecutableLoader() as loader:
        exe = loader.load(lib.read_bytes())
        assert exe.backend == "emulated"
        x, out = _saxpy(exe)
        assert out.tolist() == (2 * x + 1).tolist()
        assert _named(exe) == {}
        saxpy = next(e for e in exe.exports if e.name.startswith("saxpy"))
        assert exe.machine.symbolize(saxpy.function + 4) == f"{saxpy.name}+0x4"
        assert _named(exe) == want
        exe.machine.symbolize(saxpy.function)
        _saxpy(exe)
        assert len(exe.module.added_symbols) == len(want)          # named once


def test_gdb_names_them_when_it_attaches(lib):
    with ExecutableLoader() as loader:
        exe = loader.load(lib.read_bytes())
        _saxpy(exe)
        assert _named(exe) == {}
        stub = exe.machine.debug(0)
        try:
            assert stub is not None and _named(exe) == _want(lib)
        finally:
            exe.machine.debug(None)


def test_a_watched_machine_names_them_at_the_first_dispatch(lib, tmp_path):
    with ExecutableLoader() as loader:
        exe = loader.load(lib.read_bytes())
        exe.machine.trace(tmp_path / "trace.txt")
        try:
            _saxpy(exe)
            assert _named(exe) == _want(lib)
        finally:
            exe.machine.trace(None)
        assert any(name in (tmp_path / "trace.txt").read_text() for name in _want(lib))


def test_a_closed_library_is_never_named(lib):
    with ExecutableLoader() as loader:
        exe = loader.load(lib.read_bytes())
        _saxpy(exe)
        machine, module = exe.machine, exe.module
        exe.close()
        with pytest.raises(elfkit.ElfkitError):
            module.add_symbols([])          # closed: its namer would fail if run
        assert machine.symbolize(0x1234) in ("", "0x1234")
