"""The test suite writes nothing under ``$HOME``: tests/conftest.py points
elfkit's and vmrt's caches at a directory of the session's own and the
caches of the tools the tests run (zig, pip, matplotlib) under build/cache/,
before any test module imports elfkit.

Test modules that fill every cache of ours (records, emulated callers, DWARF
sites, the gdb JIT helper, vmrt's translations and entry points) run again in
a child pytest whose ``HOME`` is an empty directory and whose environment has
none of those variables (the child's conftest must set them); the directory
must stay empty.  (Before conftest set ``ELFKIT_CACHE_DIR``, these modules
left records, callers, DWARF sites and the helper in ``~/.cache/elfkit``.)"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

SAMPLE = ["tests/vmrt/hal/test_mmap_constants.py",      # native + emulated runs, iree tools
          "tests/elfkit/exec/test_jit_debug.py",         # the gdb JIT helper, symfiles
          "tests/vmrt/tools/test_cli.py"]                # vmrt's command line, entry points

CACHE_VARIABLES = ("ELFKIT_CACHE_DIR", "VMRT_CACHE_DIR", "XDG_CACHE_HOME", "MPLCONFIGDIR",
                   "ELFKIT_NO_CACHE", "VMRT_NO_CACHE")


def test_the_suite_writes_nothing_under_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARIABLES}
    env["HOME"] = str(home)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *SAMPLE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert written == [], f"the tests wrote under $HOME: {written[:20]}"
