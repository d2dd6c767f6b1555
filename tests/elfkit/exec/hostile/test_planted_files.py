"""Files others plant where elfkit reads or writes (issue 29, items 2-4).

* The gdb JIT helper library is loaded only from a private directory, only
  as a regular file of ours holding the bytes recorded at build time: a
  planted library's constructor never runs, a damaged one (flipped bytes,
  half truncated -- SIGBUS when mapped --, another library, a directory, a
  symlink) is built again.
* ``/tmp/perf-PID.map`` is never written through a planted link, into
  another user's file or a FIFO (the load goes on, with a warning), and a
  plugin reloaded at the same address adds no line twice.
* A cache entry replaced by a FIFO, a symlink to one, or a 64 GiB sparse
  file is a miss: the next start neither hangs nor exhausts memory.

Each case runs in a child process (its own PID, its own helper state) with
``ELFKIT_CACHE_DIR``/``VMRT_CACHE_DIR``/``TMPDIR`` pointed into tmp_path.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import elfkit
from elfkit._support import codecache
from tests.plugins import REPO

native = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                            reason="native tests run on an x86_64 host")
root_only = pytest.mark.skipif(os.getuid() != 0,
                               reason="needs root to give a file to another user (uid 65534)")
TIMEOUT = 120

EVIL_C = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE *f = fopen(MARK, "w");
  if (f) { fputs("the planted library ran", f); fclose(f); }
}
"""


def _child(code: str, env: dict[str, str], *args: str, stdin: str | None = None,
           timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("ELFKIT_PERF_MAP", "ELFKIT_GDB_JIT")}
    full.update(env)
    full["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=full, timeout=timeout, cwd=REPO, input=stdin)


# -- the gdb JIT helper library ---------------------------------------------------

JIT_CHILD = """\
from elfkit.exec import jit_debug
ok, why = jit_debug.available()
print(ok)
print(jit_debug.helper_library() if ok else why)
"""


@pytest.fixture
def jit(tmp_path):
    """(env, evil library, marker): a cache dir, a temp dir, and a library
    whose constructor writes the marker file."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler for the gdb JIT helper")
    mark = tmp_path / "MARK"
    src = tmp_path / "evil.c"
    src.write_text(EVIL_C.replace("MARK", f'"{mark}"'))
    evil = tmp_path / "evil.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(evil), str(src)], check=True)
    (tmp_path / "tmp").mkdir()
    env = {"ELFKIT_CACHE_DIR": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp")}
    return env, evil, mark


def _jit_child(env: dict[str, str]) -> Path:
    proc = _child(JIT_CHILD, env)
    assert proc.returncode == 0, proc.stderr
    ok, where = proc.stdout.splitlines()[:2]
    assert ok == "True", proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    return Path(where)


def _forge(lib: Path, evil: Path) -> None:
    """Put ``evil`` in place of ``lib`` with a matching checksum record (what
    anyone who can write the directory could do)."""
    data = evil.read_bytes()
    key = lib.name.removeprefix("jit-debug-").removesuffix(".so")
    codecache.store(str(lib.parent), lib.name.removesuffix(".so") + ".sum", key.encode(),
                    (len(data), codecache.checksum(data)))
    lib.unlink()
    shutil.copy(evil, lib)


def _damage(how: str, lib: Path, evil: Path, tmp: Path) -> None:
    data = lib.read_bytes()
    lib.unlink()
    if how == "flipped bytes":
        lib.write_bytes(data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF])
                        + data[len(data) // 2 + 1:])
    elif how == "half truncated":
        lib.write_bytes(data[:len(data) // 2])
    elif how == "another library":
        shutil.copy(evil, lib)
    elif how == "libm":
        shutil.copy("/lib/x86_64-linux-gnu/libm.so.6" if os.path.exists(
            "/lib/x86_64-linux-gnu/libm.so.6") else evil, lib)
    elif how == "a directory":
        lib.mkdir()
    elif how == "a symlink to a good copy":
        good = tmp / "good.so"
        good.write_bytes(data)
        lib.symlink_to(good)
    elif how == "writable by others":
        lib.write_bytes(data)
        lib.chmod(0o666)
    elif how == "another user's file":
        lib.write_bytes(data)
        os.chown(lib, 65534, 65534)


@native
@pytest.mark.parametrize("how", [
    "flipped bytes", "half truncated", "another library", "libm", "a directory",
    "a symlink to a good copy", "writable by others",
    pytest.param("another user's file", marks=root_only)])
def test_a_damaged_helper_is_built_again(jit, tmp_path, how):
    env, evil, mark = jit
    lib = _jit_child(env)
    assert lib.parent == Path(env["ELFKIT_CACHE_DIR"])
    good = lib.read_bytes()
    _damage(how, lib, evil, tmp_path)
    assert _jit_child(env) == lib                  # no SIGBUS, no ValueError: rebuilt
    assert not lib.is_symlink() and lib.is_file()
    assert lib.stat().st_uid == os.getuid() and not lib.stat().st_mode & 0o022
    assert len(lib.read_bytes()) == len(good)
    assert not mark.exists()


def _planted_dir(how: str, where: Path, lib_name: str, good: bytes, evil: Path) -> None:
    target = where
    if how == "a symlink":
        target = where.parent / "elsewhere"
    target.mkdir(parents=True, exist_ok=True)
    lib = target / lib_name
    lib.write_bytes(good)
    _forge(lib, evil)
    if how == "a symlink":
        where.symlink_to(target)
    elif how == "open to others":
        target.chmod(0o777)
    elif how == "another user's":
        os.chown(target, 65534, 65534)


@native
@pytest.mark.parametrize("how", ["open to others", pytest.param("another user's",
                                                                marks=root_only)])
def test_a_cache_dir_others_can_write_is_not_loaded_from(jit, tmp_path, how):
    env, evil, mark = jit
    good_lib = _jit_child(env)
    good = good_lib.read_bytes()
    cache = Path(env["ELFKIT_CACHE_DIR"])
    shutil.rmtree(cache)
    _planted_dir(how, cache, good_lib.name, good, evil)
    lib = _jit_child(env)
    assert lib.parent != cache
    assert not mark.exists()
    assert (cache / good_lib.name).read_bytes() == evil.read_bytes()    # left alone


@native
@pytest.mark.parametrize("how", ["open to others", "a symlink",
                                 pytest.param("another user's", marks=root_only)])
def test_a_foreign_temp_fallback_is_not_trusted(jit, tmp_path, how):
    env, evil, mark = jit
    good = _jit_child(env).read_bytes()
    name = _jit_child(env).name
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    env = {**env, "ELFKIT_CACHE_DIR": str(blocker / "cache")}   # cannot be created
    shared = Path(env["TMPDIR"]) / f"elfkit-{os.getuid()}"
    _planted_dir(how, shared, name, good, evil)
    lib = _jit_child(env)
    assert lib.parent != shared and lib.parent.parent == Path(env["TMPDIR"])
    assert not lib.parent.exists()                  # the private directory is gone at exit
    assert not mark.exists()


# -- /tmp/perf-PID.map -------------------------------------------------------------

PERF_CHILD = """\
import os, sys, elfkit
print(os.getpid(), flush=True)
sys.stdin.readline()
bases = set()
for _ in range(int(sys.argv[2])):
    with elfkit.load(sys.argv[1]) as m:
        bases.add(m.base)
print(len(bases))
"""


def _perf_child(plugin: Path, reloads: int, plant) -> tuple[subprocess.CompletedProcess, Path]:
    full = {k: v for k, v in os.environ.items() if k != "ELFKIT_PERF_MAP"}
    full.update(ELFKIT_PERF_MAP="1", ELFKIT_GDB_JIT="0",
                PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", PERF_CHILD, str(plugin), str(reloads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=full, cwd=REPO)
    try:
        pid = int(proc.stdout.readline())           # type: ignore[union-attr]
        mapfile = Path(f"/tmp/perf-{pid}.map")
        plant(mapfile)
        out, err = proc.communicate("\n", timeout=TIMEOUT)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), mapfile


def _cleanup(path: Path) -> None:
    if os.path.lexists(path):
        path.unlink()


@native
@pytest.mark.parametrize("kind", ["symlink", "hard link", "dangling symlink", "fifo",
                                  pytest.param("another user's file", marks=root_only)])
def test_a_planted_perf_map_is_not_written(plugins, tmp_path, kind):
    precious = tmp_path / "precious"
    precious.write_text("precious\n")
    dangling = tmp_path / "created-through-the-link"

    planted: list[Path] = []

    def plant(mapfile: Path) -> None:
        planted.append(mapfile)
        if kind == "symlink":
            mapfile.symlink_to(precious)
        elif kind == "hard link":
            os.link(precious, mapfile)
        elif kind == "dangling symlink":
            mapfile.symlink_to(dangling)
        elif kind == "fifo":
            os.mkfifo(mapfile)
        else:
            mapfile.write_bytes(b"")
            os.chown(mapfile, 65534, 65534)
    try:
        proc, mapfile = _perf_child(plugins.path("kernels", "x86_64"), 1, plant)
        assert proc.returncode == 0, proc.stderr     # the load went on (no hang on the FIFO)
        assert "perf map" in proc.stderr and "not writing" in proc.stderr, proc.stderr
        assert precious.read_text() == "precious\n"
        assert not dangling.exists()
        if kind == "another user's file":
            assert mapfile.read_bytes() == b""
    finally:
        for path in planted:
            _cleanup(path)


@native
def test_reloads_write_each_perf_map_line_once(plugins):
    proc, mapfile = _perf_child(plugins.path("kernels", "x86_64"), 200, lambda _p: None)
    try:
        assert proc.returncode == 0, proc.stderr
        lines = mapfile.read_text().splitlines()
    finally:
        _cleanup(mapfile)
    bases = int(proc.stdout.split()[-1])
    assert len(lines) == len(set(lines))
    per_load = len({line.split(" ", 2)[2] for line in lines})
    assert len(lines) <= per_load * bases < 200 * per_load


# -- cache entries --------------------------------------------------------------------

CACHE_CHILD = """\
import sys, elfkit
from elfkit.exec.dwarf_reloc import info_sites
from elfkit._support import codecache
from vmrt.tools.entry_points import entry_points
from vmrt.bytecode import transcache
data = open(sys.argv[1], "rb").read()
m = elfkit.load(data, backend="emulated")
print(m.call("add_i32", 2, 3))
print(info_sites(data, codecache.cache_dir("elfkit"))[0])
print(len(entry_points("console_scripts")))
key = transcache.cache_key(b"a module", "plain")
if transcache.load(key) is None:     # a module record with an empty function table
    record = (0,) * 11 + ((),) + (0,) * (transcache.RECORD_FIELDS - 12)
    tid = transcache.store(key, record, [1], [], transcache.cache_dir())
    transcache.store_code(key, tid, {0: compile("x = 1", "m", "exec")}, transcache.cache_dir())
print("done")
"""


def _plant_entry(path: Path, kind: str, tmp: Path) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink to a fifo":
        fifo = tmp / f"fifo-{path.parent.name}-{path.name}"
        os.mkfifo(fifo)
        path.symlink_to(fifo)
    elif kind == "64 GiB sparse file":
        with open(path, "wb") as fh:
            fh.truncate(64 << 30)
    elif kind == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "symlink to a fifo", "64 GiB sparse file",
                                  "symlink to /dev/zero"])
def test_planted_cache_entries_are_misses(plugins, tmp_path, kind):
    pytest.importorskip("unicorn")
    env = {"ELFKIT_CACHE_DIR": str(tmp_path / "elfkit"), "VMRT_CACHE_DIR": str(tmp_path / "vmrt")}
    plugin = str(plugins.path("kernels", "aarch64"))
    first = _child(CACHE_CHILD, env, plugin)
    assert first.returncode == 0, first.stderr
    entries = sorted(p for d in ("elfkit", "vmrt") for p in (tmp_path / d).iterdir())
    names = {p.name.split("-")[0] if "-" in p.name else p.suffix for p in entries}
    assert {"records", "code", "dwarf", "entry", ".vmtc"} <= names, names
    for p in entries:
        _plant_entry(p, kind, tmp_path)
    again = _child(CACHE_CHILD, env, plugin, timeout=60)   # a hang fails by the timeout
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert "Traceback" not in again.stderr and "MemoryError" not in again.stderr
