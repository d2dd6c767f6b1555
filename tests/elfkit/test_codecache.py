"""elfkit._support.codecache: values kept under a key in private files; anything but
exactly what ``store`` wrote for that key (damaged, another key, writable by
others, cache turned off) is ignored; ``compile_cached`` compiles once."""
from __future__ import annotations

import builtins
import marshal
import os

import pytest

from elfkit._support import codecache

VALUE = {"code": compile("y = x * 3\n", "<value>", "exec"), "rows": [(1, "a"), (2, "b")],
         "blob": bytes(range(256)) * 40}


@pytest.fixture
def where(tmp_path, monkeypatch):
    path = tmp_path / "elfkit-cache"
    monkeypatch.setenv("ELFKIT_CACHE_DIR", str(path))
    monkeypatch.delenv("ELFKIT_NO_CACHE", raising=False)
    return path


def _same(a, b) -> bool:
    return marshal.dumps(a) == marshal.dumps(b)


def test_a_stored_value_is_read_back_under_its_key_only(where):
    codecache.store(str(where), "v.bin", b"key one", VALUE)
    assert _same(codecache.load(str(where), "v.bin", b"key one"), VALUE)
    assert codecache.load(str(where), "v.bin", b"key two") is None
    assert codecache.load(str(where), "v.bin", b"key on") is None
    assert codecache.load(str(where), "other.bin", b"key one") is None
    assert (where / "v.bin").stat().st_mode & 0o077 == 0
    assert where.stat().st_mode & 0o077 == 0


def _damage(path, how: str) -> None:
    blob = path.read_bytes()
    if how == "truncated":
        path.write_bytes(blob[:len(blob) // 2])
    elif how == "flipped":              # one bit of the payload
        path.write_bytes(blob[:-100] + bytes([blob[-100] ^ 0x10]) + blob[-99:])
    elif how == "key-flipped":          # one bit of the stored key
        i = blob.index(b"key one")
        path.write_bytes(blob[:i] + bytes([blob[i] ^ 1]) + blob[i + 1:])
    elif how == "appended":
        path.write_bytes(blob + bytes(8))
    elif how == "garbage":
        path.write_bytes(os.urandom(len(blob)))
    elif how == "empty":
        path.write_bytes(b"")
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["truncated", "flipped", "key-flipped", "appended", "garbage",
                                 "empty"])
def test_a_damaged_file_is_ignored(where, how):
    codecache.store(str(where), "v.bin", b"key one", VALUE)
    _damage(where / "v.bin", how)
    assert codecache.load(str(where), "v.bin", b"key one") is None


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_file_others_can_write_is_not_read(where, what):
    codecache.store(str(where), "v.bin", b"key one", VALUE)
    os.chmod(where / "v.bin" if what == "file" else where, 0o666 if what == "file" else 0o777)
    assert codecache.load(str(where), "v.bin", b"key one") is None


def test_nothing_is_written_where_it_would_not_be_read_back(where):
    """A directory others can write (or another user's) is never read from,
    so nothing is written there either: no file, no size note."""
    where.mkdir(mode=0o700)
    os.chmod(where, 0o777)
    codecache.store(str(where), "v.bin", b"key one", VALUE)
    assert sorted(os.listdir(where)) == []
    os.chmod(where, 0o700)              # private again: written and read back
    codecache.store(str(where), "v.bin", b"key one", VALUE)
    assert _same(codecache.load(str(where), "v.bin", b"key one"), VALUE)


def test_cache_dir_follows_the_environment(where, monkeypatch):
    assert codecache.cache_dir("elfkit") == str(where)
    monkeypatch.setenv("VMRT_CACHE_DIR", str(where / "v"))
    monkeypatch.delenv("VMRT_NO_CACHE", raising=False)
    assert codecache.cache_dir("vmrt") == str(where / "v")
    monkeypatch.setenv("ELFKIT_NO_CACHE", "0")
    assert codecache.cache_dir("elfkit") == str(where)
    monkeypatch.setenv("ELFKIT_NO_CACHE", "1")
    assert codecache.cache_dir("elfkit") is None
    assert codecache.cache_dir("vmrt") == str(where / "v")
    codecache.store(None, "v.bin", b"k", VALUE)          # off: nothing written or read
    assert codecache.load(None, "v.bin", b"k") is None
    assert not where.exists()


def test_unwritable_values_and_directories_are_silent(where, tmp_path):
    codecache.store(str(where), "v.bin", b"k", {"f": lambda: 1})     # marshal refuses
    assert not (where / "v.bin").exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    codecache.store(str(blocker / "sub"), "v.bin", b"k", VALUE)      # cannot make the dir
    assert codecache.load(str(blocker / "sub"), "v.bin", b"k") is None


def _flip(data: bytes, i: int, bit: int) -> bytes:
    return data[:i] + bytes([data[i] ^ bit]) + data[i + 1:]


def test_checksum_sees_changed_bytes():
    data = bytes(range(256)) * 4
    base = codecache.checksum(data)
    for i in range(0, len(data), 3):
        assert codecache.checksum(_flip(data, i, 0x80)) != base
        # two bits 61 bytes apart, one set and one clear
        j = (i + 61) % len(data)
        if (data[i] ^ data[j]) & 1:
            assert codecache.checksum(_flip(_flip(data, i, 1), j, 1)) != base
    assert codecache.checksum(data + b"\0") != base


def _count_compiles(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = builtins.compile

    def counting(source, filename, *args, **kwargs):
        seen.append(filename)
        return real(source, filename, *args, **kwargs)
    monkeypatch.setattr(builtins, "compile", counting)
    return seen


def _run(code) -> int:
    ns: dict = {}
    exec(code, ns)
    return ns["f"](5)


SOURCE = "def f(x):\n    return x * 7 + 1\n"


def test_compile_cached_compiles_once(where, monkeypatch):
    seen = _count_compiles(monkeypatch)
    assert _run(codecache.compile_cached(SOURCE, "<gen a>")) == 36
    assert _run(codecache.compile_cached(SOURCE, "<gen a>")) == 36
    assert seen == ["<gen a>"]
    code = codecache.compile_cached(SOURCE, "<gen b>")         # the filename is keyed too
    assert seen == ["<gen a>", "<gen b>"] and code.co_filename == "<gen b>"
    assert len(list(where.glob("code-*.bin"))) == 2


def _plant(where, source: str, filename: str, other: str) -> None:
    """Compiled ``other`` kept as the code of ``source``."""
    name, key = codecache.code_entry(source, filename)
    codecache.store(str(where), name, key, compile(other, filename, "exec"))


WRONG = "def f(x):\n    return 999\n"


def test_a_planted_private_entry_is_what_compile_cached_reads(where):
    # the planted entry sits exactly where compile_cached looks: a private one is
    # trusted as __pycache__ is (so the tests below, where it is not, can fail)
    _plant(where, SOURCE, "<gen>", WRONG)
    assert _run(codecache.compile_cached(SOURCE, "<gen>")) == 999


@pytest.mark.parametrize("what", ["file", "directory", "other filename", "not code"])
def test_a_planted_entry_is_not_trusted_beyond_a_cache(where, monkeypatch, what):
    name, key = codecache.code_entry(SOURCE, "<gen>")
    if what == "other filename":
        codecache.store(str(where), name, key, compile(WRONG, "<elsewhere>", "exec"))
    elif what == "not code":
        codecache.store(str(where), name, key, ("def f(x): return 999",))
    else:
        _plant(where, SOURCE, "<gen>", WRONG)
        os.chmod(where / name if what == "file" else where, 0o666 if what == "file" else 0o777)
    seen = _count_compiles(monkeypatch)
    assert _run(codecache.compile_cached(SOURCE, "<gen>")) == 36
    assert seen == ["<gen>"]


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty"])
def test_a_damaged_code_entry_is_compiled_again_and_replaced(where, monkeypatch, how):
    codecache.compile_cached(SOURCE, "<gen>")
    [entry] = where.glob("code-*.bin")
    blob = entry.read_bytes()
    entry.write_bytes({"truncated": blob[:-30], "garbage": os.urandom(len(blob)), "empty": b"",
                       "flipped": blob[:-30] + bytes([blob[-30] ^ 4]) + blob[-29:]}[how])
    seen = _count_compiles(monkeypatch)
    assert _run(codecache.compile_cached(SOURCE, "<gen>")) == 36
    assert _run(codecache.compile_cached(SOURCE, "<gen>")) == 36
    assert seen == ["<gen>"]                    # compiled again, then read back
    assert entry.read_bytes() == blob


def test_no_cache_compiles_every_time_and_writes_nothing(where, monkeypatch):
    monkeypatch.setenv("ELFKIT_NO_CACHE", "1")
    seen = _count_compiles(monkeypatch)
    for _ in range(2):
        assert _run(codecache.compile_cached(SOURCE, "<gen>")) == 36
    assert seen == ["<gen>", "<gen>"] and not where.exists()
