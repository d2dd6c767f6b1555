"""elfkit.exec.unicorn_lib: finding and opening libunicorn, and opening it
ahead of the emulated backend on another thread."""
from __future__ import annotations

import os
import shutil
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
        real = __import__("os").path.realpath(unicorn_lib.prebound_path(path))
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


#: a library defining three of libunicorn's generic QEMU names (which it calls
#: through its PLT while it sets a CPU up): called, they end the process
_DECOY_C = """
#include <unistd.h>
void cpu_reset(void *cpu) { (void)cpu; _exit(97); }
void cpu_class_init(void *c) { (void)c; _exit(97); }
void cpu_common_initfn(void *o) { (void)o; _exit(97); }
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "RTLD_DEEPBIND"),
                    reason="RTLD_DEEPBIND is glibc's")
def test_dlopen_flags_deep_bind_unless_something_is_preloaded(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    flags = unicorn_lib.dlopen_flags()
    assert flags & os.RTLD_DEEPBIND and flags & os.RTLD_LAZY and not flags & os.RTLD_NOW
    monkeypatch.setenv("LD_PRELOAD", "libsomething.so")
    assert not unicorn_lib.dlopen_flags() & os.RTLD_DEEPBIND


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "RTLD_DEEPBIND"),
                    reason="RTLD_DEEPBIND is glibc's")
@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_global_library_with_the_same_names_does_not_take_unicorn_over(tmp_path):
    """A library loaded RTLD_GLOBAL before libunicorn that defines names
    libunicorn exports and calls (``cpu_reset`` ...): the emulator still
    calls its own (deep binding), whether opened directly or by prefetch().
    Preloaded (LD_PRELOAD, interposition wanted), the same library is what
    libunicorn calls: the process ends with the decoy's exit status."""
    src = tmp_path / "decoy.c"
    src.write_text(_DECOY_C)
    decoy = tmp_path / "libdecoy.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(decoy), str(src)], check=True)
    code = textwrap.dedent(f"""
        import ctypes, os, sys
        ctypes.CDLL({str(decoy)!r}, mode=os.RTLD_GLOBAL)
        from elfkit.exec import unicorn_lib
        if sys.argv[1] == "prefetch":
            unicorn_lib.prefetch()
            import threading
            for t in threading.enumerate():
                if t.name == "elfkit-unicorn-prefetch":
                    t.join()
        from elfkit.arch import get
        from elfkit.exec.emulated import EmulatedMachine
        m = EmulatedMachine(get("aarch64"))
        addr = m.alloc(16)
        m.write(addr, b"0123456789abcdef")
        assert m.read(addr, 16) == b"0123456789abcdef"
        m.close()
        print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_BIND_NOW")}
    for how in ("open", "prefetch"):
        out = subprocess.run([sys.executable, "-c", code, how], capture_output=True, text=True,
                             env=env, timeout=120)
        assert (out.returncode, out.stdout.strip()) == (0, "ok"), (how, out.stderr)
    out = subprocess.run([sys.executable, "-c", code, "open"], capture_output=True, text=True,
                         env={**env, "LD_PRELOAD": str(decoy)}, timeout=120)
    assert out.returncode == 97, out.stderr
