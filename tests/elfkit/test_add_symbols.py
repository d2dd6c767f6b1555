"""``Module.add_symbols``: naming the functions of a stripped plugin.

The plugin below hides its functions the way an IREE dispatch library
does: they are static, and an exported table hands out their addresses.
It is linked three times from the same objects: with ``-g`` as is (the
reference, read with pyelftools), with ``-g`` and ``--discard-all`` (no
local symbols, DWARF kept) and with ``--strip-all`` (nothing but the
dynamic symbols).  Sizes ``add_symbols`` finds are compared with the
reference's DWARF, or with the gap to the next function / the end of the
executable segment computed from pyelftools' view of the file; the names
then show in ``symbolize``, in the symfile gdb reads (registered again, not
twice) and in perf's map.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit.exec import jit_debug
from elfkit.toolchain import compile_plugin
from tests.elfkit.exec.debug_testutil import dwarf_functions

pytestmark = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                                reason="native tests run on an x86_64 host")

ARCH = "x86_64"
SOURCE = """\
#include <stdint.h>
#define EXPORT __attribute__((visibility("default")))
static __attribute__((noinline)) int64_t k_twice(int64_t x) { return 2 * x + 1; }
static __attribute__((noinline)) int64_t k_poly(int64_t x) {
  int64_t acc = 0;
  for (int64_t i = 0; i < x; i++) acc = acc * 3 + i;
  return acc;
}
static __attribute__((noinline)) int64_t k_last(int64_t x) { return x - 7; }
typedef int64_t (*kernel_fn)(int64_t);
static kernel_fn const table[3] = {k_twice, k_poly, k_last};
EXPORT void *kernel_address(int32_t i) { return (void *)table[i]; }
EXPORT int64_t run_kernel(int32_t i, int64_t x) { return table[i](x); }
"""
KERNELS = ["k_twice", "k_poly", "k_last"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("stripped")
    src = d / "kernels.c"
    src.write_text(SOURCE)
    return {
        "reference": compile_plugin(src, ARCH, d / "ref.so", cflags=["-g"]),
        "dwarf": compile_plugin(src, ARCH, d / "dwarf.so", cflags=["-g"],
                                ldflags=["--discard-all"]),
        "bare": compile_plugin(src, ARCH, d / "bare.so", ldflags=["--strip-all"]),
    }


def _elf(path: Path) -> ELFFile:
    return ELFFile(io.BytesIO(path.read_bytes()))


def _symtab_functions(path: Path) -> dict[str, tuple[int, int]]:
    sec = _elf(path).get_section_by_name(".symtab")
    if sec is None:
        return {}
    return {s.name: (s["st_value"], s["st_size"]) for s in sec.iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"}


def _addresses(m: elfkit.Module) -> list[int]:
    return [m.call("kernel_address", i, restype="ptr") for i in range(len(KERNELS))]


def test_the_stripped_builds_hide_the_kernels(builds):
    for name in ("dwarf", "bare"):
        assert not set(KERNELS) & set(_symtab_functions(builds[name])), name
    assert set(KERNELS) <= set(_symtab_functions(builds["reference"]))


def test_sizes_from_dwarf_when_the_symbols_are_gone(builds):
    ref = dwarf_functions(builds["reference"])
    with elfkit.load(builds["dwarf"]) as m:
        addrs = _addresses(m)
        added = m.add_symbols([(a, 0, n) for a, n in zip(addrs, KERNELS)])
        assert [(s.name, s.address - m.base, s.size) for s in added] == \
            [(n, *ref[n]) for n in KERNELS]
        assert m.added_symbols == tuple(added)


def test_sizes_up_to_the_next_function_or_the_end_of_the_code(builds):
    path = builds["bare"]
    e = _elf(path)
    dynfuncs = [s["st_value"] for s in e.get_section_by_name(".dynsym").iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"]
    text = next(seg for seg in e.iter_segments()
                if seg["p_type"] == "PT_LOAD" and seg["p_flags"] & 1)
    code_end = text["p_vaddr"] + text["p_memsz"]
    with elfkit.load(path) as m:
        addrs = [a - m.base for a in _addresses(m)]
        starts = sorted(set(dynfuncs) | set(addrs))
        want = [min([s for s in starts if s > a] + [code_end]) - a for a in addrs]
        added = m.add_symbols([(a + m.base, None, n) for a, n in zip(addrs, KERNELS)])
        assert [s.size for s in added] == want
        # a size given is kept; names show in symbolize
        again = m.add_symbols([(m.base + addrs[0], 3, "k_twice_head")])
        assert again[0].size == 3
        assert m.symbolize(m.base + addrs[1] + 2) == "k_poly+0x2"
        assert m.call("run_kernel", 1, 4, restype="i64") == ((1 * 3) + 2) * 3 + 3   # 18
        assert m.call("run_kernel", 2, 10, restype="i64") == 3


def test_symbols_in_the_symfile_gdb_reads(builds):
    ok, why = jit_debug.available()
    if not ok:
        pytest.skip(f"gdb JIT registration unavailable: {why}")
    jit = jit_debug.interface()
    assert jit is not None
    with elfkit.load(builds["bare"]) as m:
        jit_debug.register_pending()        # no debugger: registered on demand
        count = len(jit.entries())
        addrs = _addresses(m)
        added = m.add_symbols([(a, 0, n) for a, n in zip(addrs, KERNELS)])
        assert len(jit.entries()) == count                   # registered again, not twice
        syms = _elf_bytes(jit.entries()[0]).get_section_by_name(".symtab")
        for s in added:
            sym = syms.get_symbol_by_name(s.name)[0]
            assert (sym["st_value"], sym["st_size"]) == (s.address, s.size)
            assert sym["st_info"]["type"] == "STT_FUNC"
        assert syms.get_symbol_by_name("run_kernel")[0]["st_value"] == m.exports["run_kernel"]
        count = len(jit.entries())
    assert len(jit.entries()) == count - 1                   # unregistered on close


def _elf_bytes(data: bytes) -> ELFFile:
    return ELFFile(io.BytesIO(data))


CHILD = """\
import os, sys, elfkit
with elfkit.load(sys.argv[1]) as m:
    addrs = [m.call("kernel_address", i, restype="ptr") for i in range(3)]
    m.add_symbols([(a, 0, n) for a, n in zip(addrs, ["k_twice", "k_poly", "k_last"])])
    print(os.getpid(), *addrs)
"""


def test_added_symbols_go_to_the_perf_map(builds):
    ref = dwarf_functions(builds["reference"])
    env = {**os.environ, "ELFKIT_PERF_MAP": "1",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(builds["dwarf"])],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    pid, *addrs = map(int, proc.stdout.split())
    mapfile = Path(f"/tmp/perf-{pid}.map")
    try:
        lines = mapfile.read_text().splitlines()
    finally:
        mapfile.unlink(missing_ok=True)
    assert lines[-3:] == [f"{a:x} {ref[n][1]:x} {n}" for a, n in zip(addrs, KERNELS)]


def test_bad_symbols_are_refused(builds):
    with elfkit.load(builds["bare"]) as m:
        start, end = m.address_range
        a = _addresses(m)[0]
        data = m.exports["kernel_address"]
        for bad in ([(end + 16, 4, "far")], [(a, 4)], [(a, 4, "")], [(a, -1, "neg")],
                    [("0x10", 4, "str")], [(end - 2, 8, "overhang")]):
            with pytest.raises(elfkit.InvalidArgumentError, match="add_symbols"):
                m.add_symbols(bad)
        rodata = next(s for s in _elf(builds["bare"]).iter_segments()
                      if s["p_type"] == "PT_LOAD" and not s["p_flags"] & 1)
        with pytest.raises(elfkit.InvalidArgumentError, match="no executable segment"):
            m.add_symbols([(m.base + rodata["p_vaddr"], 0, "table")])
        # a refused batch adds nothing, not even its good entries
        with pytest.raises(elfkit.InvalidArgumentError):
            m.add_symbols([(a, 0, "good"), (end + 16, 0, "bad")])
        assert m.added_symbols == ()
        assert start <= data < end
    with pytest.raises(elfkit.ModuleClosedError):
        m.add_symbols([(a, 0, "late")])


def test_a_plugin_with_symbols_keeps_its_own(builds):
    ref = _symtab_functions(builds["reference"])
    with elfkit.load(builds["reference"]) as m:
        addrs = _addresses(m)
        assert m.add_symbols([(addrs[0], 0, "k_twice")]) == []       # already named there
        alias = m.add_symbols([(addrs[1], 0, "poly_alias")])
        assert [(s.address - m.base, s.size) for s in alias] == [ref["k_poly"]]
        assert m.added_symbols == tuple(alias)
