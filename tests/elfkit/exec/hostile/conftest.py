"""The hostile plugin (``hostile.c`` here), built for all six CPUs with
``elfkit.toolchain.compile_plugin`` once per test run (cached under
``build/hostile/``; rebuilt when the source changes).

``hostile(arch)`` returns the path of the ``.so`` (``provider(arch)`` that of
``provider.c``, a module exporting ``host_add``); ``run_child(code)`` runs
Python code in a child process (for reproducers that used to kill the whole
process with a signal) and returns the ``CompletedProcess``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugins import ARCHES, REPO

HERE = Path(__file__).resolve().parent
OUT = REPO / "build" / "hostile"


@pytest.fixture(scope="session")
def hostile():
    try:
        import ziglang  # noqa: F401
    except ImportError:
        pytest.skip("the ziglang package is not installed (pip install -e '.[test]')")
    from elfkit.toolchain import compile_plugin
    paths = {a: compile_plugin(HERE / "hostile.c", a, OUT / a / "hostile.so",
                               cflags=["-fvisibility=default"]) for a in ARCHES}
    return paths.__getitem__


@pytest.fixture(scope="session")
def provider(hostile):
    """``provider.c`` (exports ``host_add(a, b) = 10*a + b``) for each CPU."""
    from elfkit.toolchain import compile_plugin
    paths = {a: compile_plugin(HERE / "provider.c", a, OUT / a / "provider.so",
                               cflags=["-fvisibility=default"]) for a in ARCHES}
    return paths.__getitem__


@pytest.fixture
def run_child():
    def run(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=REPO,
                              # a shell's background job inherits SIGINT ignored: undo that
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return run


@pytest.fixture(params=ARCHES)
def m(request, hostile):
    """The hostile plugin loaded emulated, on each CPU."""
    import elfkit
    imports = {"host_add": (lambda a, b: a + b, "i32(i32,i32)")}
    with elfkit.load(hostile(request.param), backend="emulated", imports=imports) as mod:
        yield mod
