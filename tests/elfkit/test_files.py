"""elfkit._support.files: replace_file and replace_dir (an output put in place
atomically, whatever was there) and the copy choices (clone_range on a real
btrfs, filesystem_type against findmnt)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from elfkit._support.files import (
    clone_range,
    filesystem_type,
    offloads_copies,
    replace_dir,
    replace_file,
)
from tests.elfkit.reflink_fs import btrfs_mount, shared_blocks
from tests.startup_imports import REPO


def _tmp(d, data: bytes) -> str:
    p = d / ".out.tmp"
    p.write_bytes(data)
    return str(p)


def test_replaces_an_existing_file_and_a_reader_keeps_the_old_one(tmp_path):
    out = tmp_path / "out.bin"
    out.write_bytes(b"old" * 1000)
    with open(out, "rb") as reader:           # opened before: keeps reading the old file
        tmp = _tmp(tmp_path, b"new")
        replace_file(tmp, str(out))
        assert reader.read() == b"old" * 1000
    assert out.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]   # the old file is gone, no temporary


#: replaces argv[1] by a new file of argv[2] bytes, says whether ctypes (the swap's) was imported
_REPLACE = """\
import os, sys
from elfkit._support.files import replace_file
tmp = sys.argv[1] + '.tmp'
with open(tmp, 'wb') as fh:
    fh.write(b'n' * int(sys.argv[2]))
replace_file(tmp, sys.argv[1])
print('ctypes' in sys.modules)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the swap is Linux's renameat2")
def test_only_a_large_file_replaces_an_existing_one_by_a_swap(tmp_path):
    from elfkit._support.files import SWAP_MIN_BYTES
    out = tmp_path / "out.bin"
    for size, swapped in ((SWAP_MIN_BYTES - 1, "False"), (SWAP_MIN_BYTES, "True")):
        out.write_bytes(b"old")
        proc = subprocess.run([sys.executable, "-c", _REPLACE, str(out), str(size)],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == [swapped]
        assert out.read_bytes() == b"n" * size
        assert sorted(os.listdir(tmp_path)) == ["out.bin"]


def test_puts_a_file_where_there_was_none(tmp_path):
    tmp = _tmp(tmp_path, b"data")
    replace_file(tmp, str(tmp_path / "fresh.bin"))
    assert (tmp_path / "fresh.bin").read_bytes() == b"data"
    assert sorted(os.listdir(tmp_path)) == ["fresh.bin"]


def test_replaces_a_symlink_itself_not_its_target(tmp_path):
    target = tmp_path / "target.bin"
    target.write_bytes(b"target")
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    replace_file(_tmp(tmp_path, b"new"), str(link))
    assert not link.is_symlink() and link.read_bytes() == b"new"
    assert target.read_bytes() == b"target"


def test_a_directory_in_the_way_is_an_error_and_stays(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    (d / "keep").write_bytes(b"k")
    tmp = _tmp(tmp_path, b"new")
    with pytest.raises(OSError):
        replace_file(tmp, str(d))
    assert (d / "keep").read_bytes() == b"k" and os.path.isfile(tmp)


def _tree(d, files: dict[str, bytes]):
    d.mkdir()
    for name, data in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    return d


def _contents(d) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_replace_dir_swaps_out_an_existing_tree_whole(tmp_path, monkeypatch):
    """The old tree is deleted only once the new one is in place: while it
    is being deleted, ``path`` already holds the whole new tree."""
    out = _tree(tmp_path / "out", {"a.npy": b"old", "sub/b": b"old b", "only_old": b"x"})
    tmp = _tree(tmp_path / ".out.tmp", {"a.npy": b"new", "sub/b": b"new b"})
    seen = []
    real_rmtree = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        seen.append((str(path), _contents(out)))
        real_rmtree(path, *args, **kwargs)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    replace_dir(str(tmp), str(out))
    assert _contents(out) == {"a.npy": b"new", "sub/b": b"new b"}
    assert sorted(os.listdir(tmp_path)) == ["out"]            # no temporary left
    assert seen == [(str(tmp), {"a.npy": b"new", "sub/b": b"new b"})]


def test_replace_dir_puts_a_tree_where_there_was_none(tmp_path):
    tmp = _tree(tmp_path / ".out.tmp", {"f": b"data"})
    replace_dir(str(tmp), str(tmp_path / "out"))
    assert _contents(tmp_path / "out") == {"f": b"data"}
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_replace_dir_refuses_a_file_or_symlink_in_the_way(tmp_path):
    target = _tree(tmp_path / "target", {"keep": b"k"})
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "file").write_bytes(b"f")
    tmp = _tree(tmp_path / ".out.tmp", {"f": b"data"})
    for name in ("link", "file"):
        with pytest.raises(OSError):
            replace_dir(str(tmp), str(tmp_path / name))
    assert _contents(target) == {"keep": b"k"} and (tmp_path / "file").read_bytes() == b"f"
    assert _contents(tmp) == {"f": b"data"}


# --- clone_range / filesystem_type / offloads_copies -------------------------------------


def _findmnt_type(path) -> str:
    tool = shutil.which("findmnt")
    if not tool:
        pytest.skip("findmnt (util-linux) is not installed")
    return subprocess.run([tool, "-n", "-o", "FSTYPE", "-T", str(path)], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_filesystem_type_agrees_with_findmnt(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x")
    fd = os.open(p, os.O_RDONLY)
    try:
        kind = filesystem_type(fd)
        assert kind == _findmnt_type(p)
        if kind in ("ext4", "xfs", "btrfs", "tmpfs", "overlay"):   # local: no server to copy on
            assert not offloads_copies(fd)
    finally:
        os.close(fd)


def _fds(src_path, dst_path):
    src = os.open(src_path, os.O_RDONLY)
    dst = os.open(dst_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    return src, dst


def test_clone_range_refusals_change_nothing(tmp_path):
    data = os.urandom(3 * 4096 + 5)
    (tmp_path / "src").write_bytes(data)
    src, dst = _fds(tmp_path / "src", tmp_path / "dst")
    r, w = os.pipe()
    try:
        os.write(dst, b"h" * 100)
        assert clone_range(src, 0, dst, len(data)) == 0         # destination not block-aligned
        os.lseek(dst, 0, os.SEEK_SET)
        assert clone_range(src, 10, dst, 4096) == 0             # source not block-aligned
        assert clone_range(src, 0, w, len(data)) == 0           # a pipe cannot hold a clone
        assert os.lseek(dst, 0, os.SEEK_CUR) == 0
        assert (tmp_path / "dst").read_bytes() == b"h" * 100
    finally:
        for fd in (src, dst, r, w):
            os.close(fd)


@pytest.fixture(scope="module")
def btrfs(tmp_path_factory):
    with btrfs_mount(tmp_path_factory.mktemp("reflink")) as mnt:
        yield mnt


def test_clone_range_shares_extents_on_btrfs(btrfs):
    data = os.urandom(64 * 4096 + 123)          # ends mid-block: cloned up to the source's EOF
    (btrfs / "src").write_bytes(data)
    src, dst = _fds(btrfs / "src", btrfs / "dst")
    try:
        os.write(dst, b"H" * 4096)
        assert filesystem_type(dst) == "btrfs" and not offloads_copies(dst)
        assert clone_range(src, 0, dst, len(data)) == len(data)
        assert os.lseek(dst, 0, os.SEEK_CUR) == 4096 + len(data)
        os.write(dst, b"T")                      # the position moved past the clone
    finally:
        os.close(src)
        os.close(dst)
    assert (btrfs / "dst").read_bytes() == b"H" * 4096 + data + b"T"
    assert shared_blocks(btrfs / "dst") >= 64


def test_clone_range_short_of_eof_shares_the_aligned_prefix(btrfs):
    data = os.urandom(10 * 4096)
    (btrfs / "src2").write_bytes(data)
    src, dst = _fds(btrfs / "src2", btrfs / "dst2")
    try:
        n = clone_range(src, 4096, dst, 5 * 4096 + 100)       # not to EOF: 5 whole blocks
        assert n == 5 * 4096
        assert os.lseek(dst, 0, os.SEEK_CUR) == n
    finally:
        os.close(src)
        os.close(dst)
    assert (btrfs / "dst2").read_bytes() == data[4096:6 * 4096]
    assert shared_blocks(btrfs / "dst2") == 5
