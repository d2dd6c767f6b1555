"""elfkit/tools/elf_sections.py (what ``elfkit disasm`` reads) against
pyelftools on every test plugin, 32- and 64-bit, and on objects laid out as
a load lays them; a file whose tables do not fit is refused with a message;
``disasm`` does not import pyelftools."""
from __future__ import annotations

import io
import struct

import pytest
from elftools.elf.elffile import ELFFile

from elfkit.tools.elf_sections import BadElf, ElfFile
from tests.plugins import ARCHES, NAMES
from tests.startup_imports import imports_of


def _pyelftools(data: bytes) -> tuple[int, int, list, dict, list]:
    ef = ELFFile(io.BytesIO(data))
    regions = [(s.name, s["sh_addr"], s.data()) for s in ef.iter_sections()
               if s["sh_flags"] & 0x4 and s["sh_type"] == "SHT_PROGBITS" and s["sh_size"]]
    segments = [(f"segment @{p['p_vaddr']:#x}", p["p_vaddr"], p.data())
                for p in ef.iter_segments() if p["p_type"] == "PT_LOAD" and p["p_flags"] & 1]
    types = {"STT_NOTYPE": 0, "STT_FUNC": 2}
    syms = {}
    for name in (".symtab", ".dynsym"):
        sec = ef.get_section_by_name(name)
        syms[name] = [] if sec is None else [
            (s.name, types.get(s["st_info"]["type"], -1), s["st_shndx"], s["st_value"],
             s["st_size"]) for s in sec.iter_symbols()]
    return ef.header["e_machine"], ef.elfclass, regions or segments, syms, \
        [s.name for s in ef.iter_sections()]


def _ours(data: bytes) -> tuple[int, int, list, dict, list]:
    ef = ElfFile(data)
    ef.read_tables()
    syms = {name: [(n, t if t in (0, 2) else -1, "SHN_UNDEF" if x == 0 else x, v, z)
                   for n, t, x, v, z in ef.symbols(name)] for name in (".symtab", ".dynsym")}
    return ef.machine, ef.bits, ef.code_regions(), syms, ef.names


@pytest.mark.parametrize("arch", ARCHES)
def test_the_same_as_pyelftools_on_every_plugin(plugins, arch):
    for name in NAMES:
        data = plugins.data(name, arch)
        machine, bits, regions, syms, names = _ours(data)
        p_machine, p_bits, p_regions, p_syms, p_names = _pyelftools(data)
        assert (bits, regions, names) == (p_bits, p_regions, p_names), (name, arch)
        assert machine == struct.unpack_from("<H", data, 18)[0]
        for table in syms:      # pyelftools names well-known section indexes
            assert [s[:2] + s[3:] for s in syms[table]] == \
                [s[:2] + s[3:] for s in p_syms[table]], (name, arch, table)
            assert [s[2] == "SHN_UNDEF" for s in syms[table]] == \
                [s[2] == "SHN_UNDEF" for s in p_syms[table]]


@pytest.mark.parametrize("arch", ["x86_64", "arm", "riscv32"])
def test_the_same_as_pyelftools_on_an_object_as_loaded(arch):
    from elfkit.loader.objimage import object_plan
    from tests.elfkit.loader.objects import build_object
    obj = build_object("kernels.c", arch, extra=("-ffunction-sections",)).read_bytes()
    for data in (obj, bytes(object_plan(memoryview(obj)).elf.data)):
        ours, theirs = _ours(data), _pyelftools(data)
        assert ours[1:3] == theirs[1:3] and ours[4] == theirs[4]
        assert [s[:2] + s[3:] for s in ours[3][".symtab"]] == \
            [s[:2] + s[3:] for s in theirs[3][".symtab"]]


def test_tables_past_the_end_are_refused(plugins):
    data = bytearray(plugins.data("kernels", "x86_64"))
    struct.pack_into("<Q", data, 0x28, len(data) - 8)           # e_shoff
    ef = ElfFile(bytes(data))
    with pytest.raises(BadElf, match="section header 0 at .* past the end of the file"):
        ef.read_tables()
    with pytest.raises(BadElf, match="Magic number does not match"):
        ElfFile(b"\x7fELX" + bytes(60))


def test_disasm_imports_no_pyelftools(plugins):
    so = str(plugins.path("kernels", "x86_64"))
    out, imported = imports_of("elfkit", "disasm", so, "add_i32")
    assert "add_i32" in out and "elftools" not in imported


def test_damaged_headers_are_read_or_refused_never_a_foreign_error(plugins):
    """Bytes of the ELF header, the section headers and the symbol table
    overwritten at random (fixed seed): the tables are read or BadElf."""
    import random
    rng = random.Random(27)
    for arch in ("x86_64", "arm"):
        good = plugins.data("kernels", arch)
        ef = ElfFile(good)
        ef.read_tables()
        shoff = struct.unpack_from("<Q" if ef.bits == 64 else "<I", good,
                                   0x28 if ef.bits == 64 else 0x20)[0]
        spots = [range(16, 64), range(shoff, len(good))]
        for _ in range(300):
            data = bytearray(good)
            for _ in range(rng.randint(1, 4)):
                data[rng.choice(rng.choice(spots))] = rng.randrange(256)
            try:
                ef = ElfFile(bytes(data))
                ef.read_tables()
                ef.code_regions()
                ef.symbols(".symtab")
                ef.symbols(".dynsym")
            except BadElf:
                pass
