"""Large relocation tables (the numpy bulk path) on every architecture, in
RELA, REL and DT_RELR form, checked against pyelftools like the test plugins.
numpy is imported here, so tables of ``BULK`` entries and more take the bulk
path; a process without numpy keeps the plain path up to ``BULK_COLD``."""
from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy  # noqa: F401  (loaded: the bulk path from BULK entries on)
import pytest

import elfkit
from elfkit.exec.memory import MemoryMachine
from elfkit.loader import parse
from elfkit.loader.plan import Relative, plan_for
from elfkit.loader.reloc_tables import BULK, BULK_COLD
from elfkit.toolchain import compile_plugin
from tests.elfkit.loader.reloc_oracle import check_native_reloads, check_plugin, relative_words

ARCHES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")


def _build(tmp_path, arch, n, relr=False, unaligned=False, symbolic=True, gap_every=100):
    word = ".quad" if arch in ("x86_64", "aarch64", "riscv64") else ".long"
    align = 3 if word == ".quad" else 2
    src = tmp_path / f"big_{arch}.s"
    # n pointers to a local symbol (RELATIVE), with a gap every 100 words (several RELR runs),
    # and one pointer to an exported symbol (a symbolic relocation) in the middle.
    body = [".data", f".p2align {align}", "local_sym: .zero 16", ".globl exported",
            "exported: .zero 8", *([".byte 0"] if unaligned else []), ".globl table", "table:"]
    for i in range(n):
        body.append(f"{word} local_sym+{i % 7}")
        if i % gap_every == gap_every - 1:
            body.append(f".zero {8 * 70}")
    if symbolic:
        body.append(f"{word} exported")
    src.write_text("\n".join(body) + "\n")
    so = tmp_path / (f"big_{arch}{'_relr' if relr else ''}{'_unaligned' if unaligned else ''}"
                     f"{'' if symbolic else '_relative'}_{gap_every}.so")
    compile_plugin(src, arch, so, ldflags=["-z", "pack-relative-relocs"] if relr else [])
    return so


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("relr", [False, True])
def test_bulk_relocations_match_pyelftools(tmp_path, arch, relr):
    so = _build(tmp_path, arch, 3000, relr)
    elf = parse(so.read_bytes())
    assert max(t.count for t in elf.reloc_tables) >= 256 or relr
    assert check_plugin(so, arch) >= 3000


def test_bulk_errors_name_every_offender(tmp_path):
    so = _build(tmp_path, "x86_64", 1000)
    data = bytearray(so.read_bytes())
    elf = parse(bytes(data))
    t = next(t for t in elf.reloc_tables if t.count >= 256)
    bad = [5, 500, 999]
    for i in bad:
        o = t.file_offset + 24 * i + 8
        struct.pack_into("<Q", data, o, 250)                  # unknown type
    struct.pack_into("<Q", data, t.file_offset + 24 * 7, 0)   # RELATIVE into the ELF header
    with pytest.raises(elfkit.RelocationError) as ei:
        elfkit.load(bytes(data), machine=MemoryMachine(elfkit.arch.get("x86_64")), init=False)
    msg = str(ei.value)
    assert len(ei.value.problems) == 4
    for i in bad:
        assert f"DT_RELA[{i}]" in msg
    assert "DT_RELA[7] at offset 0x0: RELATIVE: the place is not inside a writable segment" in msg


@pytest.mark.parametrize("arch", ARCHES)
def test_bulk_path_handles_unaligned_places(tmp_path, arch):
    """Every pointer of the table one byte off its natural alignment: the
    bulk path reads (REL: the addend is in the place) and writes words at
    unaligned places, and the result still matches pyelftools."""
    so = _build(tmp_path, arch, 1000, unaligned=True)
    elf = parse(so.read_bytes())
    table = next(t for t in elf.reloc_tables if t.count >= 256)
    assert table.bulk
    w = 8 if arch in ("x86_64", "aarch64", "riscv64") else 4
    assert sum(1 for o in table.offsets if o % w) >= 1000     # the places really are unaligned
    assert check_plugin(so, arch) >= 1000


_COLD = """\
import sys
from pathlib import Path
from elfkit.loader import parse
from tests.elfkit.loader.reloc_oracle import check_plugin
so = Path(sys.argv[1])
t = max(parse(so.read_bytes()).reloc_tables, key=lambda t: t.count)
n = check_plugin(so, sys.argv[2])
print(t.count, t.bulk, type(t.offsets).__name__, n, "numpy" in sys.modules)
"""


@pytest.mark.parametrize("arch", ["x86_64", "arm"])
def test_table_below_bulk_cold_loads_without_numpy(tmp_path, arch):
    """In a process that has not imported numpy, a table of 1,000 entries
    (above BULK, below BULK_COLD) is decoded into lists and applied by the
    plain loops, matches pyelftools, and numpy is still not imported."""
    assert BULK < 1000 < BULK_COLD
    so = _build(tmp_path, arch, 1000)
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", _COLD, str(so), arch], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1001", "False", "list", "1001", "False"]
    assert parse(so.read_bytes()).reloc_tables[0].bulk      # numpy loaded here: bulk


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("gap_every", "relr"), [(100, False), (1, False), (100, True)])
def test_relative_only_tables_are_applied_from_the_plan(tmp_path, arch, gap_every, relr):
    """A large table of RELATIVE relocations only (runs of 100 consecutive
    words, or every word on its own; or packed in DT_RELR) is kept in the
    load plan: the first load and the ones through the plan match pyelftools."""
    so = _build(tmp_path, arch, 3000, relr=relr, symbolic=False, gap_every=gap_every)
    data = so.read_bytes()
    tables = parse(data).reloc_tables
    assert (any(t.tag == "DT_RELR" for t in tables) if relr
            else max(t.count for t in tables) >= 3000)
    for _ in range(3):
        assert check_plugin(so, arch) == 3000
    assert isinstance(plan_for(memoryview(data)).relative, Relative)


def test_large_relative_only_plugin_reloads_natively(tmp_path, plugins):
    """Load, close, load again natively (the closed range and its pages are
    reused), and a load beside an open one: every word is base + addend."""
    so = _build(tmp_path, plugins.host_arch, 20000, symbolic=False, gap_every=1000)
    data = so.read_bytes()
    assert so.stat().st_size > 256 << 10       # more than the plan keeps an image of
    check_native_reloads(data, relative_words(data))


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("n", [40, 3000])
def test_words_against_defined_symbols_are_applied_from_the_plan(tmp_path, arch, n):
    """Pointers to a symbol the plugin exports itself (S+A relocations, the
    symbol's address being base + its value), mixed with RELATIVE ones, in
    a small and a large table: kept in the load plan, and every load
    matches pyelftools."""
    word = ".quad" if arch in ("x86_64", "aarch64", "riscv64") else ".long"
    body = [".data", ".p2align 3", "local_sym: .zero 16", ".globl exported",
            "exported: .zero 8", ".globl table", "table:"]
    body += [f"{word} {'exported' if i % 3 else 'local_sym'}+{i % 5}" for i in range(n)]
    src = tmp_path / f"sym_{arch}.s"
    src.write_text("\n".join(body) + "\n")
    so = tmp_path / f"sym_{arch}_{n}.so"
    compile_plugin(src, arch, so)
    data = so.read_bytes()
    for _ in range(3):
        assert check_plugin(so, arch) == n
    rel = plan_for(memoryview(data)).relative
    assert isinstance(rel, Relative)
    assert rel.total == n and len(rel.counts) == 2
