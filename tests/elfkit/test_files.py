"""elfkit.files.replace_file: an output put in place atomically, whatever was there."""
from __future__ import annotations

import os

import pytest

from elfkit.files import replace_file


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
