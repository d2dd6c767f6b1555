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
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from plugins import PluginSet, build_plugins  # noqa: E402


@pytest.fixture(scope="session")
def plugins() -> PluginSet:
    return build_plugins()


@pytest.fixture(scope="session")
def system_plugin(plugins: PluginSet) -> Path:
    if plugins.system_plugin is None:
        pytest.skip("no host C compiler: system_plugin.so was not built")
    return plugins.system_plugin
