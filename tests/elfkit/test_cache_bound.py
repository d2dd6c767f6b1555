"""The on-disk caches stay under their size bound: least recently used
entries go first, reads mark entries used, a read never scans the
directory, and nothing but cache entries is ever deleted."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elfkit._support import cachebound, codecache

KEY = b"test key"


def _dir(tmp_path, name="cache"):
    d = tmp_path / name
    d.mkdir(mode=0o700)
    return str(d)


def _entry(where: str, i: int, size: int = 1000, mtime: int | None = None) -> str:
    """Store entry ``code-<i>.bin`` of about ``size`` bytes, modified at ``mtime``."""
    name = f"code-{i:08x}.bin"
    codecache.store(where, name, KEY, b"x" * size + i.to_bytes(4, "little"))
    if mtime is not None:
        os.utime(os.path.join(where, name), (mtime, mtime))
    return name


def _sizes(where: str) -> int:
    return sum(_usage(where, n) for n in os.listdir(where) if re.fullmatch(cachebound.ENTRY, n))


def _names(where: str) -> list[str]:
    """The directory's files but the bound's own note."""
    return [n for n in os.listdir(where) if n != cachebound.NOTE]


def _usage(where: str, name: str) -> int:
    return cachebound.usage(os.lstat(os.path.join(where, name)))


def test_prune_keeps_the_newest_under_the_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(10 << 20))   # no pruning while filling
    where = _dir(tmp_path)
    names = [_entry(where, i, mtime=1_000_000 + i) for i in range(40)]
    size = _usage(where, names[0])
    left = cachebound.prune(where, 10 * size)
    kept = sorted(n for n in _names(where))
    assert left == _sizes(where) <= 10 * size * 3 // 4
    assert kept == names[-len(kept):] and len(kept) == 10 * 3 // 4     # the newest 7
    assert cachebound.prune(where, 10 * size) == left                  # under: nothing goes


def test_a_write_past_the_bound_prunes(tmp_path, monkeypatch):
    where = _dir(tmp_path)
    monkeypatch.setenv("ELFKIT_CACHE_DIR", where)
    limit = 8 * _usage(where, _entry(where, 1000, mtime=1))
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(limit))
    for i in range(100):                    # ~1 KB each, oldest first
        name = _entry(where, i)
        os.utime(os.path.join(where, name), (1_000_000 + i, 1_000_000 + i))
        assert _sizes(where) <= limit + _usage(where, name)     # one write past it at most
    assert _sizes(where) <= limit
    assert f"code-{99:08x}.bin" in _names(where)
    assert f"code-{0:08x}.bin" not in _names(where)
    assert codecache.load(where, f"code-{99:08x}.bin", KEY) == b"x" * 1000 + (99).to_bytes(4,
                                                                                           "little")


def test_a_read_marks_an_entry_used(tmp_path, monkeypatch):
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(10 << 20))
    where = _dir(tmp_path)
    names = [_entry(where, i, mtime=1_000_000 + i) for i in range(8)]
    assert codecache.load(where, names[0], KEY) is not None   # the oldest, read now
    size = _usage(where, names[0])
    cachebound.prune(where, 4 * size)
    assert sorted(_names(where)) == sorted([names[0], *names[-2:]])


def test_reads_never_scan_the_directory(tmp_path, monkeypatch):
    where = _dir(tmp_path)
    monkeypatch.setenv("ELFKIT_CACHE_DIR", where)
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(10 << 20))
    scans: list[str] = []
    real = os.scandir

    def counting(path="."):
        scans.append(str(path))
        return real(path)
    monkeypatch.setattr(os, "scandir", counting)
    names = [_entry(where, i, mtime=1_000_000) for i in range(50)]
    assert len(scans) == 1                  # the process's first write there
    for _ in range(20):
        for n in names:
            assert codecache.load(where, n, KEY) is not None
    code = codecache.compile_cached("x = 1\n", "<bound test>")
    assert codecache.compile_cached("x = 1\n", "<bound test>") is not code   # read back
    assert len(scans) == 1


def test_only_cache_entries_are_deleted(tmp_path, monkeypatch):
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(10 << 20))
    where = _dir(tmp_path)
    old = (1_000, 1_000)
    keep = {"notes.txt": b"mine", "code-00000001.bin.4242.tmp": b"being written",
            "libfoo.so": b"\x7fELF", "code-00000002.bin.partial": b"?"}
    for name, data in keep.items():
        with open(os.path.join(where, name), "wb") as f:
            f.write(data * 5000)
        os.utime(os.path.join(where, name), old)
    os.mkdir(os.path.join(where, "records-dir.bin"))
    os.symlink(os.path.join(where, "notes.txt"), os.path.join(where, "code-0000000f.bin"))
    damaged = os.path.join(where, "dwarf-sites-0123.bin")
    with open(damaged, "wb") as f:
        f.write(b"not a cache file" * 100)
    assert codecache.load(where, "dwarf-sites-0123.bin", KEY) is None   # ignored, kept
    os.utime(damaged, (2_000, 2_000))       # (and not read since)
    assert codecache.load(where, "code-0000000f.bin", KEY) is None      # a link: ignored
    fresh = [_entry(where, 100 + i, mtime=1_000_000 + i) for i in range(4)]
    size = _usage(where, fresh[0])
    cachebound.prune(where, 2 * size)
    left = set(_names(where))
    assert set(keep) | {"records-dir.bin", "code-0000000f.bin"} <= left
    assert "dwarf-sites-0123.bin" not in left          # a damaged entry ages out
    assert {n for n in left if n.startswith("code-") and n.endswith(".bin")
            and n != "code-0000000f.bin"} == {fresh[-1]}
    assert os.path.exists(os.path.join(where, "notes.txt"))


def test_a_directory_not_private_is_left_alone(tmp_path):
    where = _dir(tmp_path)
    for i in range(5):
        _entry(where, i, mtime=1_000_000 + i)
    os.chmod(where, 0o777)
    try:
        assert cachebound.prune(where, 0) == 0
        assert len(_names(where)) == 5
    finally:
        os.chmod(where, 0o700)


def test_an_entry_gone_meanwhile_is_fine(tmp_path, monkeypatch):
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(10 << 20))
    where = _dir(tmp_path)
    names = [_entry(where, i, mtime=1_000_000 + i) for i in range(6)]
    real_unlink = os.unlink

    def racing(path, *a, **k):              # another process deleted it first
        real_unlink(path, *a, **k)
        real_unlink(path, *a, **k)
    monkeypatch.setattr(os, "unlink", racing)
    size = _usage(where, names[0])
    assert cachebound.prune(where, 2 * size) <= 2 * size
    assert sorted(_names(where)) == names[-1:]


def test_vmrt_has_its_own_bound(tmp_path, monkeypatch):
    vm = _dir(tmp_path, "vmrt")
    ek = _dir(tmp_path, "elfkit")
    monkeypatch.setenv("VMRT_CACHE_DIR", vm)
    monkeypatch.setenv("ELFKIT_CACHE_DIR", ek)
    codecache.store(vm, "f" * 40 + ".vmtc", KEY, b"v" * 1000)
    limit = 4 * _usage(vm, "f" * 40 + ".vmtc")
    os.utime(os.path.join(vm, "f" * 40 + ".vmtc"), (1, 1))
    monkeypatch.setenv("VMRT_CACHE_MAX_BYTES", str(limit))
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", str(10 << 20))
    for i in range(20):
        name = f"{i:040x}.vmtc"
        codecache.store(vm, name, KEY, b"v" * 1000)
        os.utime(os.path.join(vm, name), (1_000_000 + i, 1_000_000 + i))
        _entry(ek, i)
    assert _sizes(vm) <= limit and f"{19:040x}.vmtc" in _names(vm)
    assert len(_names(ek)) == 20


def test_defaults(tmp_path, monkeypatch):
    assert cachebound.DEFAULT_MAX == 32 << 20 and cachebound.DEFAULT_MAX_VMRT == 256 << 20
    assert cachebound.max_bytes("VMRT_CACHE_MAX_BYTES_UNSET", 7) == 7


@pytest.mark.parametrize("value, want", [("", cachebound.DEFAULT_MAX), ("12345", 12345),
                                         ("1_000", 1000), ("lots", cachebound.DEFAULT_MAX),
                                         ("-5", cachebound.DEFAULT_MAX)])
def test_max_bytes(monkeypatch, value, want):
    monkeypatch.setenv("ELFKIT_CACHE_MAX_BYTES", value)
    assert cachebound.max_bytes("ELFKIT_CACHE_MAX_BYTES") == want


REPO = Path(__file__).resolve().parents[2]
#: stores entries code-<i>.bin (i from argv[2:]) in argv[1] in a process of its
#: own, then prints how many times it scanned that directory
_WRITER = """\
import sys
scans = []
sys.addaudithook(lambda event, args: scans.append(1)
                 if event == "os.scandir" and str(args[0]) == sys.argv[1] else None)
from elfkit._support import codecache
for i in map(int, sys.argv[2:]):
    codecache.store(sys.argv[1], f"code-{i:08x}.bin", b"test key",
                    b"x" * 1000 + i.to_bytes(4, "little"))
print(len(scans))
"""


def _write_apart(where: str, *numbers: int, limit: int = 10 << 20) -> int:
    out = subprocess.run([sys.executable, "-c", _WRITER, where, *map(str, numbers)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO), "ELFKIT_CACHE_DIR": where,
                              "ELFKIT_CACHE_MAX_BYTES": str(limit)})
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def _note(where: str) -> str:
    with open(os.path.join(where, cachebound.NOTE)) as f:
        return f.read()


def test_a_process_reads_the_note_instead_of_scanning(tmp_path):
    """A scan leaves a note; a later process's first write trusts it while it
    is young and whole, and scans when it is missing, old or damaged."""
    where = _dir(tmp_path)
    assert _write_apart(where, *range(50)) == 1         # the first write scans, leaves a note
    assert _write_apart(where, 50, 51) == 0             # the note says there is room
    lines = _note(where).splitlines()
    first, when = lines[0].split()
    assert int(first) == _usage(where, "code-00000000.bin")     # the scan saw its own write
    assert len(lines) == 1 + 49 + 2 and abs(float(when) - time.time()) < 60
    assert sum(map(int, [first, *lines[1:]])) == _sizes(where)  # every write since counted
    for damage in (f"{first} {time.time() - 2 * cachebound.NOTE_TRUST!r}\n",   # too old
                   f"{first} {time.time() + 600!r}\n",                          # future
                   "garbage\n", f"{first} {time.time()!r}\n12",                # torn line
                   None):                                                      # missing
        path = os.path.join(where, cachebound.NOTE)
        os.unlink(path)
        if damage is not None:
            with open(path, "w") as f:
                f.write(damage)
        assert _write_apart(where, 60) == 1, damage
        total = int(_note(where).split()[0])
        assert total == _sizes(where), damage            # the scan's note replaces it


def test_writes_of_many_processes_stay_under_the_bound(tmp_path):
    """Each process writes one entry: the note counts the others' writes, so
    the directory is pruned once they pass the bound (as one process's own)."""
    where = _dir(tmp_path)
    _write_apart(where, 1000)
    limit = 8 * _usage(where, "code-000003e8.bin")
    scans = 0
    for i in range(20):
        scans += _write_apart(where, i, limit=limit)
        assert _sizes(where) <= limit + _usage(where, f"code-{i:08x}.bin")
        time.sleep(0.01)                    # (distinct times: the oldest go first)
    assert 1 <= scans <= 10                 # pruned past the bound, not at every write (5 here)
    assert f"code-{19:08x}.bin" in _names(where)
