"""The wheel (issue 16): `pip wheel .` ships elfkit's CMake package and the
plugin ABI header, and an elfkit installed from it builds, packs and loads a
plugin of a project of its own, with nothing from this checkout.

One module-scoped set-up does what a user does, in a temporary directory
outside the repository:

1. build the wheel from a copy of the project's files (so the checkout gets
   no build/ or *.egg-info, and nothing stale from an earlier build/lib can
   slip into the wheel);
2. make a fresh venv and install the wheel into it with ``--no-deps``; the
   venv sees the dependencies (ziglang, numpy, unicorn, ...) through a .pth
   file naming this interpreter's site directories, minus any that holds an
   ``elfkit`` (the repository, an editable install's path);
3. with that venv's bin/ first on PATH (an "activated" venv), configure a
   project that says ``find_package(elfkit CONFIG REQUIRED)`` before
   ``project()`` and ``elfkit_add_plugin(... ARCHS x86_64 aarch64)``, with
   ``-Delfkit_DIR=$(python -m elfkit --cmake-dir)``, and build it;
4. load the packed ``.sos`` with the venv's elfkit and call an export on both
   CPUs: natively on the host's, emulated on the other.

Offline: the wheel is built with ``--no-build-isolation`` when this
interpreter has setuptools >= 64 and either ``wheel`` or setuptools >= 70.1
(``pip install -e '.[test]'`` installs them); otherwise pip builds it in an
isolated environment, which needs PyPI.  Marked slow (about 6 s with zig's
cache warm from the rest of the suite, more on a cold one; only two CPUs are
built), but part of the normal run.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from elfkit._version import __version__
from elfkit.toolchain import find_tool
from elfkit.toolchain.tools import HOST_FLAG_VARIABLES
from tests.plugins import REPO

pytestmark = pytest.mark.slow

#: What the wheel must hold besides the Python code (paths inside the wheel).
SHIPPED = (
    "elfkit/share/cmake/elfkit/elfkitConfig.cmake",
    "elfkit/share/cmake/elfkit/elfkitConfigVersion.cmake",
    "elfkit/share/cmake/elfkit/ElfkitPlugin.cmake",
    "elfkit/share/cmake/elfkit/ElfkitArchs.cmake",
    "elfkit/share/cmake/elfkit/ElfkitToolchain.cmake",
    "elfkit/share/cmake/elfkit/multiarch.cmake",
    *(f"elfkit/share/cmake/elfkit/{a}.cmake"
      for a in ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")),
    "elfkit/include/elfkit_plugin.h",
    "elfkit/py.typed",
    "vmrt/py.typed",
)

#: The user's project: find_package before project() picks elfkit's toolchain.
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
find_package(elfkit {version} CONFIG REQUIRED)
project(hello LANGUAGES C)
elfkit_add_plugin(hello SOURCES hello.c ARCHS x86_64 aarch64 LINK_FLAGS --no-undefined)
file(WRITE "${{CMAKE_BINARY_DIR}}/elfkit_found.txt"
     "${{elfkit_VERSION}}\\n${{elfkit_INCLUDE_DIR}}\\n${{elfkit_CMAKE_DIR}}\\n"
     "${{CMAKE_TOOLCHAIN_FILE}}\\n")
"""

HELLO_C = """\
#include <stdint.h>
#include "elfkit_plugin.h"   /* from the installed package, via elfkit_add_plugin */

ELFKIT_PLUGIN_EXPORT int64_t scale_add(int64_t a, int64_t b) { return 3 * a + b; }
ELFKIT_PLUGIN_EXPORT uint32_t abi_version(void) { return ELFKIT_PLUGIN_VERSION_LATEST; }
"""

#: Run by the venv's Python: load the .sos for each CPU and call the exports.
LOAD_SCRIPT = """\
import json, sys
import elfkit
calls = {}
for arch in ("x86_64", "aarch64"):
    with elfkit.load(sys.argv[1], arch=arch) as m:
        calls[arch] = [m.backend, m.function("scale_add", "i64(i64,i64)")(-5, 100),
                       m.function("abi_version", "u32()")()]
print(json.dumps({"elfkit": elfkit.__file__, "calls": calls}))
"""


def _run(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 300) -> str:
    r = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n" \
                              f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def _can_build_offline() -> bool:
    """Whether this interpreter has what setuptools needs to build a wheel."""
    def ver(dist: str) -> tuple[int, ...] | None:
        try:
            return tuple(int(p) for p in metadata.version(dist).split(".")[:2] if p.isdigit())
        except metadata.PackageNotFoundError:
            return None
    st = ver("setuptools")
    return st is not None and st >= (64,) and (st >= (70, 1) or ver("wheel") is not None)


def _copy_project(dest: Path) -> Path:
    """The files the wheel is built from (pyproject.toml's packages and readme)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.sos", "*.egg-info")
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    for pkg in ("elfkit", "vmrt"):
        shutil.copytree(REPO / pkg, dest / pkg, ignore=ignore)
    return dest


def _dependency_dirs() -> list[str]:
    """This interpreter's sys.path directories the venv needs for the
    dependencies: not the standard library, nothing that holds elfkit."""
    import sysconfig
    stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    dirs = []
    for p in sys.path:
        if not p or not os.path.isdir(p) or os.path.realpath(p) in stdlib:
            continue
        if os.path.exists(os.path.join(p, "elfkit", "__init__.py")) or \
                os.path.exists(os.path.join(p, "vmrt", "__init__.py")):
            continue   # the checkout (PYTHONPATH) or a path-style editable install
        if os.path.realpath(p).startswith(os.path.realpath(sys.base_prefix)) and \
                "site-packages" not in p and "dist-packages" not in p:
            continue   # lib-dynload and friends: the venv has its own
        dirs.append(os.path.realpath(p))
    return dirs


class Installed:
    """The wheel and a venv with it installed."""

    def __init__(self, root: Path):
        self.root = root
        self.wheel_dir = root / "wheels"
        src = _copy_project(root / "src")
        cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w",
               str(self.wheel_dir), "--disable-pip-version-check", "-q"]
        if _can_build_offline():
            cmd.append("--no-build-isolation")
        _run(cmd, env=self.clean_env(), cwd=root)
        (self.wheel,) = self.wheel_dir.glob("elfkit-*.whl")

        self.venv = root / "venv"
        _run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)], cwd=root)
        self.bin = self.venv / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bin / ("python.exe" if os.name == "nt" else "python")
        purelib = Path(_run([self.python, "-c",
                             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            env=self.clean_env(), cwd=root).strip())
        (purelib / "_elfkit_test_dependencies.pth").write_text(
            "".join(d + "\n" for d in _dependency_dirs()))
        _run([sys.executable, "-m", "pip", "--python", self.python, "install", "--no-deps",
              "--no-index", "--disable-pip-version-check", "-q", str(self.wheel)],
             env=self.clean_env(), cwd=root)

    def clean_env(self) -> dict[str, str]:
        """The user's environment: no PYTHONPATH (so nothing of this checkout),
        no host compiler flags; with the venv, its bin/ first on PATH."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "ELFKIT_PYTHON", "VIRTUAL_ENV",
                            *HOST_FLAG_VARIABLES)}
        if getattr(self, "bin", None) is not None:
            env["PATH"] = str(self.bin) + os.pathsep + env.get("PATH", "")
            env["VIRTUAL_ENV"] = str(self.venv)
        return env

    def py(self, *args: str, cwd: Path) -> str:
        return _run([self.python, *args], env=self.clean_env(), cwd=cwd)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    assert not root.resolve().is_relative_to(REPO), "the set-up must run outside the repository"
    return Installed(root)


def test_wheel_ships_the_cmake_package_and_the_header(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = [n for n in SHIPPED if n not in names]
    assert not missing, f"not in {installed.wheel.name}: {missing}"
    assert not [n for n in names if n.startswith(("tests/", "plugin_src/", "toolchain/"))]
    # what the wheel holds is what the checkout has
    for n in SHIPPED:
        assert zipfile.ZipFile(installed.wheel).read(n) == (REPO / n).read_bytes(), n


def test_installed_package_reports_its_directories(installed):
    site = installed.venv.resolve()
    where = installed.py("-c", "import elfkit; print(elfkit.__file__)", cwd=installed.root)
    assert Path(where.strip()).resolve().is_relative_to(site), where
    cmake_dir = Path(installed.py("-m", "elfkit", "--cmake-dir", cwd=installed.root).strip())
    include_dir = Path(installed.py("-m", "elfkit", "--include-dir", cwd=installed.root).strip())
    assert cmake_dir.resolve().is_relative_to(site)
    assert (cmake_dir / "elfkitConfig.cmake").is_file()
    assert (include_dir / "elfkit_plugin.h").is_file()
    api = installed.py("-c", "import elfkit.toolchain as t; print(t.cmake_dir()); "
                             "print(t.include_dir())", cwd=installed.root).split()
    assert [Path(p) for p in api] == [cmake_dir, include_dir]


def test_own_project_builds_packs_and_loads_with_the_installed_elfkit(installed, tmp_path):
    proj = tmp_path / "hello"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(CMAKELISTS.format(version=__version__))
    (proj / "hello.c").write_text(HELLO_C)
    bdir = tmp_path / "build"
    cmake, ninja = find_tool("cmake"), find_tool("ninja")
    cmake_dir = installed.py("-m", "elfkit", "--cmake-dir", cwd=proj).strip()
    env = installed.clean_env()
    _run([cmake, "-G", "Ninja", "-S", proj, "-B", bdir, f"-DCMAKE_MAKE_PROGRAM={ninja}",
          f"-Delfkit_DIR={cmake_dir}"], env=env, cwd=proj)
    _run([cmake, "--build", bdir], env=env, cwd=proj)

    found = (bdir / "elfkit_found.txt").read_text().splitlines()
    version, include_dir, found_dir, toolchain = found
    assert version == __version__
    assert Path(found_dir) == Path(cmake_dir)
    assert Path(toolchain) == Path(cmake_dir) / "multiarch.cmake"   # chosen by find_package
    assert Path(include_dir).resolve().is_relative_to(installed.venv.resolve())
    cache = (bdir / "CMakeCache.txt").read_text()
    # the Python on PATH, i.e. the venv's, runs zig and packs
    py = next(ln.split("=", 1)[1] for ln in cache.splitlines()
              if ln.startswith("ELFKIT_PYTHON:"))
    assert Path(py).parent == installed.bin

    plugins = bdir / "plugins"
    assert sorted(p.name for p in plugins.iterdir() if p.is_dir()) == ["aarch64", "x86_64"]
    sos = plugins / "hello.sos"
    listing = _run([installed.bin / "elfkit", "fatelf", "list", sos],
                   env=env, cwd=proj)
    assert "x86_64" in listing and "aarch64" in listing

    out = json.loads(installed.py("-c", LOAD_SCRIPT, str(sos), cwd=proj))
    assert Path(out["elfkit"]).resolve().is_relative_to(installed.venv.resolve())
    host = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                       platform.machine().lower())
    native_ok = sys.platform.startswith("linux")
    for arch, (backend, result, abi) in out["calls"].items():
        assert (result, abi) == (3 * -5 + 100, 1), arch
        assert backend == ("native" if native_ok and arch == host else "emulated"), arch
    if host in out["calls"] and native_ok:
        assert {b for b, _, _ in out["calls"].values()} == {"native", "emulated"}
