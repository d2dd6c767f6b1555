"""Fixtures for vmrt's plugin and executable tests.

* ``iree`` (session): compiles the MLIR programs in ``data/`` with the pip
  ``iree-compile`` for a given CPU, dumping the dispatch libraries
  (``--iree-hal-dump-executable-binaries-to``); results are cached under
  ``build/vmrt_plugins/<hash>/`` keyed by the source, the flags and the
  compiler version, so a rerun does not recompile.
* ``variants`` (session): ``data/variant_plugin.c`` built by
  ``elfkit.toolchain.compile_plugin`` for several CPUs and compile-time
  settings (``variants.path(arch, **defines)``).
* ``standalone_sos_all`` (session): the standalone plugin for all six CPUs,
  packed by the ``sos`` fixture of tests/conftest.py (``elfkit fatelf pack``).

Every binary is produced here from text sources; nothing is committed.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
EXAMPLES = HERE.parent.parent / "examples"   # the README's sample program lives there
REPO = HERE.parent.parent
CACHE = REPO / "build" / "vmrt_plugins"

ARCHES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")

from iree_tools import IREE_TARGET_FLAGS, require_tool  # noqa: E402

_SUFFIX = {"x86_64": "x86_64", "aarch64": "arm_64", "riscv64": "riscv_64", "arm": "arm_32",
           "i386": "x86_32", "riscv32": "riscv_32"}


def _hash(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _tool_version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except Exception:
        return "?"


class Compiled:
    """One program compiled for one CPU: the .vmfb and the dumped dispatch
    libraries."""

    def __init__(self, vmfb: Path, libraries: list[Path]):
        self.vmfb = vmfb
        self.libraries = libraries

    @property
    def library(self) -> Path:
        assert len(self.libraries) == 1, self.libraries
        return self.libraries[0]


class IreeCompiler:
    def __init__(self, exe: str):
        self.exe = exe
        self.version = _tool_version([exe, "--version"])
        self._memo: dict[tuple[str, str], Compiled] = {}

    def compile(self, program: str, arch: str = "x86_64") -> Compiled:
        key = (program, arch)
        if key in self._memo:
            return self._memo[key]
        src = DATA / f"{program}.mlir"
        if not src.exists():
            src = EXAMPLES / f"{program}.mlir"
        flags = ["--iree-hal-target-device=local",
                 "--iree-hal-local-target-device-backends=llvm-cpu", *IREE_TARGET_FLAGS[arch]]
        out = CACHE / "iree" / _hash(src.read_bytes(), " ".join(flags), self.version) / arch
        if not (out / "complete").is_file():
            # build next to the final place, then rename: concurrent sessions
            # never see (or delete) a half-written directory
            tmp = out.with_name(f"{arch}.tmp-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            (tmp / "bin").mkdir(parents=True)
            proc = subprocess.run(
                [self.exe, str(src), *flags, f"--iree-hal-dump-executable-binaries-to={tmp / 'bin'}",
                 "-o", str(tmp / f"{program}.vmfb")], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise RuntimeError(f"iree-compile {src.name} for {arch} failed:\n{proc.stderr}")
            (tmp / "complete").write_text("ok\n")
            try:
                os.rename(tmp, out)
            except OSError:            # another session finished first
                shutil.rmtree(tmp, ignore_errors=True)
        libs = sorted((out / "bin").glob(f"*_embedded_elf_{_SUFFIX[arch]}.so"))
        c = Compiled(out / f"{program}.vmfb", libs)
        self._memo[key] = c
        return c


@pytest.fixture(scope="session")
def iree() -> IreeCompiler:
    return IreeCompiler(require_tool("iree-compile", "iree-base-compiler"))


@pytest.fixture(scope="session")
def iree_run_module() -> str:
    return require_tool("iree-run-module", "iree-base-runtime")


# ---------------------------------------------------------------------------
# variant plugins (built by elfkit.toolchain.compile_plugin)
# ---------------------------------------------------------------------------

class Variants:
    """``path(arch, **defines)``: data/variant_plugin.c built for ``arch``
    with ``-DVARIANT_<NAME>=<value>`` for each keyword (strings are quoted)."""

    def __init__(self) -> None:
        self.src = DATA / "variant_plugin.c"
        self.include = REPO / "plugin_src" / "include"

    def path(self, arch: str = "x86_64", **defines: object) -> Path:
        from elfkit.toolchain import compile_plugin
        dflags = {}
        for k, v in sorted(defines.items()):
            val = f'"{v}"' if isinstance(v, str) else (f"{v}f" if isinstance(v, float) else str(v))
            dflags[f"VARIANT_{k.upper()}"] = val
        # one file per variant; compile_plugin rebuilds it when a source or flag changes
        out = CACHE / "variants" / _hash(repr(sorted(dflags.items()))) / f"variant_{arch}.so"
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


@pytest.fixture(scope="session")
def emulation() -> None:
    """Skip when the emulated backend cannot run code yet."""
    import elfkit
    from elfkit.exec import create_machine
    try:
        m = create_machine(elfkit.arch.get("aarch64"), "emulated")
        m.close()
    except Exception as e:  # pragma: no cover - depends on the environment
        pytest.skip(f"the emulated backend is unavailable: {e}")


@pytest.fixture
def manager():
    import vmrt.hal.local.plugins.manager
    mgr = vmrt.hal.local.plugins.manager.PluginManager()
    yield mgr
    mgr.close()
