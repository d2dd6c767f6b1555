"""Where a plugin's DWARF holds addresses is kept per file in elfkit's cache
(elfkit._support.codecache): read back when private and intact, ignored (found again
from the DWARF) when damaged or writable by others."""
from __future__ import annotations

import os

import pytest

from elfkit._support import codecache
from elfkit.exec.dwarf_reloc import info_sites, sites_entry
from elfkit.toolchain import compile_plugin

SOURCE = """\
#include <stdint.h>
int32_t g_total = 5;
__attribute__((visibility("default"))) int32_t twice(int32_t x) { g_total += x; return 2 * x; }
"""


@pytest.fixture(scope="module")
def elf(tmp_path_factory) -> bytes:
    where = tmp_path_factory.mktemp("dwarf-sites")
    (where / "d.c").write_text(SOURCE)
    return compile_plugin(where / "d.c", "x86_64", where / "d.so",
                          cflags=["-gdwarf-4"]).read_bytes()


def _plant(elf, cache, truth) -> str:
    """A well-formed, wrong answer kept under the entry's name and key."""
    word, sites, funcs = truth
    name, key = sites_entry(elf)
    codecache.store(str(cache), name, key, (word, [(off + 1, size) for off, size in sites],
                                            funcs))
    return name


def test_sites_are_kept_and_read_back(elf, tmp_path):
    truth = info_sites(elf)
    assert truth[1] and truth[2]                         # addresses and functions found
    cache = tmp_path / "cache"
    assert info_sites(elf, str(cache)) == truth
    [entry] = cache.glob("dwarf-sites-*.bin")
    assert entry.stat().st_mode & 0o077 == 0
    assert info_sites(elf, str(cache)) == truth
    # the planted entry sits where info_sites looks: a private one is read (as
    # __pycache__ is), so the tests below, where it is not, can fail
    _plant(elf, cache, truth)
    assert info_sites(elf, str(cache)) != truth


@pytest.mark.parametrize("what", ["file", "directory"])
def test_an_entry_others_can_write_is_not_read(elf, tmp_path, what):
    truth = info_sites(elf)
    cache = tmp_path / "cache"
    name = _plant(elf, cache, truth)
    os.chmod(cache / name if what == "file" else cache, 0o666 if what == "file" else 0o777)
    assert info_sites(elf, str(cache)) == truth


@pytest.mark.parametrize("how", ["truncated", "flipped", "empty", "not sites"])
def test_a_damaged_entry_is_found_again_and_replaced(elf, tmp_path, how):
    truth = info_sites(elf)
    cache = tmp_path / "cache"
    info_sites(elf, str(cache))
    [entry] = cache.glob("dwarf-sites-*.bin")
    blob = entry.read_bytes()
    if how == "not sites":
        name, key = sites_entry(elf)
        codecache.store(str(cache), name, key, (8, "sites", {}))
    else:
        entry.write_bytes({"truncated": blob[:-9], "empty": b"",
                           "flipped": blob[:-9] + bytes([blob[-9] ^ 1]) + blob[-8:]}[how])
    assert info_sites(elf, str(cache)) == truth
    assert entry.read_bytes() == blob
