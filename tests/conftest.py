"""Shared fixtures.

``plugins`` (session): every sample/test plugin built for all six
architectures, once per session and cached across sessions under
build/plugins/<hash>/ (see tests/plugins.py for the catalogue):

    def test_something(plugins):
        so = plugins.path("kernels", "aarch64")      # pathlib.Path of the .so
        plugins.names, plugins.arches                # what exists
        plugins.spec("kernels").exports["add_i32"]   # signature + reference formula

``system_plugin`` (session): the host build of plugin_src/system_plugin.c
(skips the test when there is no host C compiler).

``sos`` (session): packs FatELF files with the ``elfkit fatelf pack``
command line: ``sos([path, ...], "name.sos") -> Path``.
``standalone_sos`` (session): the standalone plugin for x86_64, aarch64 and
riscv64 in one .sos (what IREE's sample builds).

Caches: the suite writes nothing under ``$HOME``.  ``ELFKIT_CACHE_DIR`` and
``VMRT_CACHE_DIR`` point at a directory of the session's own (set when this
file is imported, before any test module imports elfkit: records, emulated
callers, DWARF sites, the gdb JIT helper, vmrt's translations and entry
points start empty and are removed at the end).  ``XDG_CACHE_HOME`` and
``MPLCONFIGDIR`` point under ``build/cache/``, kept across sessions: the
caches of the tools the tests run (zig's compiler cache, pip, matplotlib's
font cache), which are slow to refill and hold nothing of ours.
tests/test_home_isolation.py checks it.

Plugins other than the catalogue are built with
``elfkit.toolchain.compile_plugin`` (the project's one builder).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# set before tests.plugins (and every test module) imports elfkit
_SESSION_CACHES = tempfile.mkdtemp(prefix="elfkit-test-caches-")
_KEPT_CACHES = Path(__file__).resolve().parent.parent / "build" / "cache"
_CACHE_ENV = {"ELFKIT_CACHE_DIR": os.path.join(_SESSION_CACHES, "elfkit"),
              "VMRT_CACHE_DIR": os.path.join(_SESSION_CACHES, "vmrt"),
              "XDG_CACHE_HOME": str(_KEPT_CACHES),
              "MPLCONFIGDIR": str(_KEPT_CACHES / "matplotlib")}
_OLD_ENV = {k: os.environ.get(k) for k in _CACHE_ENV}
os.environ.update(_CACHE_ENV)

# Ctrl-C as a user's terminal delivers it: a suite started in the background of
# a non-interactive shell (``cmd &``) inherits SIGINT *ignored*, and Python then
# installs no KeyboardInterrupt handler, in this process or in the programs the
# tests start (an ignored signal stays ignored across exec; a handled one is
# reset to the default).  The tests of Ctrl-C semantics need the default.
import signal  # noqa: E402

from tests.plugins import PluginSet, build_plugins  # noqa: E402 - after the environment

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_unconfigure(config):
    shutil.rmtree(_SESSION_CACHES, ignore_errors=True)
    for k, v in _OLD_ENV.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def plugins() -> PluginSet:
    return build_plugins()


@pytest.fixture(scope="session")
def system_plugin(plugins: PluginSet) -> Path:
    if plugins.system_plugin is None:
        pytest.skip("no host C compiler: system_plugin.so was not built")
    return plugins.system_plugin


class Packer:
    """Packs FatELF files through the CLI, into one session directory."""

    def __init__(self, root: Path):
        self.root = root
        self.count = 0

    def __call__(self, inputs: list[Path], name: str | None = None) -> Path:
        self.count += 1
        out = self.root / (name or f"pack{self.count}.sos")
        proc = subprocess.run([sys.executable, "-m", "elfkit", "fatelf", "pack", "-o", str(out),
                               *map(str, inputs)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return out


@pytest.fixture(scope="session")
def sos(tmp_path_factory) -> Packer:
    return Packer(tmp_path_factory.mktemp("sos"))


@pytest.fixture(scope="session")
def standalone_sos(plugins: PluginSet, sos: Packer) -> Path:
    """Our standalone plugin for x86_64, aarch64 and riscv64 in one .sos (the
    IREE sample's CMake builds the same three)."""
    return sos([plugins.path("standalone", a) for a in ("x86_64", "aarch64", "riscv64")],
               "standalone_plugin.sos")
