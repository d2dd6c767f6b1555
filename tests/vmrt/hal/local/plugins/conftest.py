"""Fixtures for vmrt's plugin and executable tests.

* ``variants`` (session): ``data/variant_plugin.c`` built by
  ``elfkit.toolchain.compile_plugin`` for several CPUs and compile-time
  settings (``variants.path(arch, **defines)``), cached under
  ``build/vmrt_plugins/variants/``.
* ``standalone_sos_all`` (session): the standalone plugin for all six CPUs,
  packed by the ``sos`` fixture of tests/conftest.py (``elfkit fatelf pack``).
* ``manager``: a fresh ``PluginManager``, closed after the test.

The ``iree`` (dispatch libraries compiled by the pip ``iree-compile``),
``iree_run_module`` and ``emulation`` fixtures are in tests/vmrt/conftest.py.
Every binary is produced from text sources; nothing is committed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins import ARCHES, REPO
from tests.vmrt.iree_tools import CACHE, cache_key

DATA = Path(__file__).resolve().parent / "data"


# ---------------------------------------------------------------------------
# variant plugins (built by elfkit.toolchain.compile_plugin)
# ---------------------------------------------------------------------------

class Variants:
    """``path(arch, **defines)``: data/variant_plugin.c built for ``arch``
    with ``-DVARIANT_<NAME>=<value>`` for each keyword (strings are quoted)."""

    def __init__(self) -> None:
        self.src = DATA / "variant_plugin.c"
        self.include = REPO / "elfkit" / "include"

    def path(self, arch: str = "x86_64", **defines: object) -> Path:
        from elfkit.toolchain import compile_plugin
        dflags = {}
        for k, v in sorted(defines.items()):
            val = f'"{v}"' if isinstance(v, str) else (f"{v}f" if isinstance(v, float) else str(v))
            dflags[f"VARIANT_{k.upper()}"] = val
        # one file per variant; compile_plugin rebuilds it when a source or flag changes
        out = CACHE / "variants" / cache_key(repr(sorted(dflags.items()))) / f"variant_{arch}.so"
        return compile_plugin(self.src, arch, out, include_dirs=[self.include], defines=dflags,
                              cflags=["-fno-builtin"], ldflags=["--no-undefined"])


@pytest.fixture(scope="session")
def variants() -> Variants:
    try:
        import ziglang  # noqa: F401
    except ImportError:
        pytest.skip("the ziglang package is not installed (pip install -e '.[test]')")
    return Variants()


@pytest.fixture(scope="session")
def standalone_sos_all(plugins, sos) -> Path:
    """The standalone plugin for all six architectures."""
    return sos([plugins.path("standalone", a) for a in ARCHES], "standalone_all.sos")


@pytest.fixture
def manager():
    import vmrt.hal.local.plugins.manager
    mgr = vmrt.hal.local.plugins.manager.PluginManager()
    yield mgr
    mgr.close()
