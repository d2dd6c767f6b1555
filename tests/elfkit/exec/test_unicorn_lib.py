"""elfkit.exec.unicorn_lib: finding and opening libunicorn, and opening it
ahead of the emulated backend on another thread."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from elfkit.exec import unicorn_lib


def test_library_path_is_in_the_unicorn_package():
    path, dirs = unicorn_lib.library_path()
    assert path is not None and os.path.isfile(path)
    assert os.path.dirname(path) in dirs
    assert path.startswith(unicorn_lib.package_dir())
    lib = unicorn_lib.open_library()
    assert lib.uc_version(None, None) >> 24 == 2     # unicorn 2.x, through the handle


def test_a_broken_library_is_an_import_error(tmp_path, monkeypatch):
    name = "libunicorn.so.2" if sys.platform.startswith("linux") else "libunicorn.2.dylib"
    (tmp_path / name).write_bytes(b"not a shared library")
    monkeypatch.setenv("LIBUNICORN_PATH", str(tmp_path))
    assert unicorn_lib.library_path()[0] == str(tmp_path / name)
    with pytest.raises(ImportError, match="cannot load the unicorn library") as e:
        unicorn_lib.open_library()
    assert str(tmp_path / name) in str(e.value)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_prefetch_opens_the_library_on_a_thread():
    """In a fresh process: prefetch() loads libunicorn (it shows in the
    process's mappings) without importing the emulated backend, once."""
    code = textwrap.dedent("""
        import sys, threading
        from elfkit.exec import unicorn_lib
        path, _ = unicorn_lib.library_path()
        real = __import__("os").path.realpath(path)
        def mapped():
            return real in open("/proc/self/maps").read()
        assert not mapped()
        unicorn_lib.prefetch()
        unicorn_lib.prefetch()
        threads = [t for t in threading.enumerate() if t.name == "elfkit-unicorn-prefetch"]
        assert len(threads) <= 1, threads
        for t in threads:
            t.join()
        assert mapped()
        assert "elfkit.exec.emulated" not in sys.modules
        from elfkit.exec.emulated import EmulatedMachine
        from elfkit.arch import get
        EmulatedMachine(get("riscv64")).close()
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k != "LD_BIND_NOW"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
