"""The direct walk of ``.debug_info`` (elfkit.exec.dwarf_scan) finds the same
address sites and subprograms as pyelftools' DIE walk, for DWARF 4 and 5,
32- and 64-bit plugins, optimised or not; damaged DWARF raises ScanError."""
from __future__ import annotations

import io
import random

import pytest
from elftools.elf.elffile import ELFFile

from elfkit.exec.dwarf_reloc import find_sites_pyelftools, info_sites
from elfkit.exec.dwarf_scan import ScanError, scan_info
from elfkit.toolchain import compile_plugin

SOURCE = """\
#include <stdint.h>
#define EXPORT __attribute__((visibility("default")))
int32_t g_total = 5;
static int32_t g_table[4] = {1, 2, 3, 4};
struct pair { int32_t a; double b; };
static __attribute__((noinline)) int32_t helper(int32_t x) {
  static int32_t calls;
  calls++;
  int32_t y = x * 3 + g_table[x & 3];
  g_total += y;
  return y;
}
EXPORT double mix(struct pair *p, int32_t n) {
  double acc = 0;
  for (int32_t i = 0; i < n; i++) acc += p[i].b * helper(p[i].a);
  return acc;
}
EXPORT int32_t outer(int32_t n) {
  int32_t acc = 0;
  for (int32_t i = 0; i < n; i++) acc += helper(i);
  return acc;
}
"""


def _sections(data: bytes) -> tuple[bytes, bytes]:
    f = ELFFile(io.BytesIO(data))
    return f.get_section_by_name(".debug_info").data(), f.get_section_by_name(".debug_abbrev").data()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    where = tmp_path_factory.mktemp("dwarf-scan")
    (where / "d.c").write_text(SOURCE)

    def build(arch: str, version: str, opt: str) -> bytes:
        out = where / f"d-{arch}-{version}{opt}.so"
        return compile_plugin(where / "d.c", arch, out,
                              cflags=[f"-gdwarf-{version}", opt]).read_bytes()
    return build


@pytest.mark.parametrize("arch", ["x86_64", "i386", "aarch64"])
@pytest.mark.parametrize("version", ["4", "5"])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_the_walk_finds_what_pyelftools_finds(built, arch, version, opt):
    data = built(arch, version, opt)
    want = find_sites_pyelftools(data)
    if version == "4":      # DWARF 5 names addresses by index (DW_FORM_addrx): no sites
        assert want[1] and want[2]
    assert scan_info(*_sections(data)) == want
    # through the entry point the loader uses, given the raw sections
    info, abbrev = _sections(data)
    assert info_sites(data, None, {".debug_info": info, ".debug_abbrev": abbrev}) == want


def test_damaged_debug_info_raises_scan_error(built):
    info, abbrev = _sections(built("x86_64", "5", "-O0"))
    rnd = random.Random(27)
    for cut in (1, 5, len(info) // 2, len(info) - 1):
        try:
            scan_info(info[:cut], abbrev)
        except ScanError:
            pass
    for _ in range(300):
        bad = bytearray(info)
        for _k in range(rnd.randint(1, 8)):
            bad[rnd.randrange(len(bad))] = rnd.randrange(256)
        try:
            scan_info(bytes(bad), abbrev if rnd.random() < 0.8 else abbrev[: rnd.randrange(
                len(abbrev))])
        except ScanError:
            pass
    with pytest.raises(ScanError):
        scan_info(b"\x10\x00\x00\x00\x01\x00" + bytes(12), abbrev)      # unit version 1
