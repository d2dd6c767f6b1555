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

``VMRT_CACHE_DIR`` points at a directory of the session's own (autouse), so the
suite neither reads nor fills the user's translation cache.

Plugins other than the catalogue are built with
``elfkit.toolchain.compile_plugin`` (the project's one builder).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins import PluginSet, build_plugins


@pytest.fixture(scope="session", autouse=True)
def _own_translation_cache(tmp_path_factory):
    old = os.environ.get("VMRT_CACHE_DIR")
    os.environ["VMRT_CACHE_DIR"] = str(tmp_path_factory.mktemp("vmrt-cache"))
    yield
    if old is None:
        os.environ.pop("VMRT_CACHE_DIR", None)
    else:
        os.environ["VMRT_CACHE_DIR"] = old


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
