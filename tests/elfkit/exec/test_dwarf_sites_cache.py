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


def _debug_sections(elf: bytes) -> dict[str, bytes]:
    from elfkit.exec.symfile import read_sections
    return {s.name: elf[s.offset:s.offset + s.size] for s in read_sections(memoryview(elf))
            if s.name.startswith(".debug_")}


def _low_pcs(elf: bytes) -> list[tuple[int, int]]:
    """(offset in .debug_info, linked value) of each subprogram's low PC (pyelftools)."""
    import io

    from elftools.elf.elffile import ELFFile
    dwarf = ELFFile(io.BytesIO(elf)).get_dwarf_info(relocate_dwarf_sections=False)
    return [(die.attributes["DW_AT_low_pc"].offset, die.attributes["DW_AT_low_pc"].value)
            for cu in dwarf.iter_CUs() for die in cu.iter_DIEs()
            if die.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in die.attributes]


@pytest.mark.parametrize("bulk", [False, True])
def test_moved_dwarf_from_kept_sites_is_the_same(elf, tmp_path, monkeypatch, bulk):
    """The sites of every section are kept per content (dwarf-moves-*.bin):
    a second load at another base reads them back and moves the same bytes
    as a walk without cache; with numpy (bulk) or without."""
    import numpy  # noqa: F401 - the bulk path runs only once numpy is imported

    from elfkit.exec import dwarf_reloc
    monkeypatch.setattr(dwarf_reloc, "BULK", 1 if bulk else 1 << 30)
    secs = _debug_sections(elf)
    cache = tmp_path / "cache"
    for bias in (0x7F12_3456_0000, 0x5000, -0x1000):
        want_funcs: dict[int, int] = {}
        want = dwarf_reloc.relocate_dwarf(elf, secs, bias, want_funcs, None, True)
        got_funcs: dict[int, int] = {}
        got = dwarf_reloc.relocate_dwarf(elf, secs, bias, got_funcs, str(cache), True)
        assert got == want and got_funcs == want_funcs and got_funcs
        assert len(list(cache.glob("dwarf-moves-*.bin"))) == 1
        lows = _low_pcs(elf)
        assert lows
        for off, linked in lows:      # each function's address moved by the bias
            assert int.from_bytes(got[".debug_info"][off:off + 8], "little") == \
                (linked + bias) % (1 << 64)
        assert got[".debug_line"] != secs[".debug_line"]          # DW_LNE_set_address moved


def test_damaged_kept_moves_are_found_again(elf, tmp_path):
    from elfkit.exec import dwarf_reloc
    secs = _debug_sections(elf)
    want = dwarf_reloc.relocate_dwarf(elf, secs, 0x1000, None, None, True)
    cache = tmp_path / "cache"
    name, key = dwarf_reloc.moves_entry(secs)
    for bad in ((8, {".debug_info": "x"}, {}), (8, {".debug_nope": []}, {}), ("8", {}, {}),
                (8, {".debug_info": [(1.5, 8)]}, {})):
        codecache.store(str(cache), name, key, bad)
        assert dwarf_reloc.relocate_dwarf(elf, secs, 0x1000, None, str(cache), True) == want
