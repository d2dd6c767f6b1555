"""Relocated bytes of every test plugin on every architecture, checked against
values computed independently from pyelftools' view of the file (which reads
section headers, not the dynamic segment the loader uses)."""
from __future__ import annotations

import io

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection, RelrRelocationSection

import elfkit
from elfkit.exec.memory import MemoryMachine

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]

# type number -> how the value is computed, per e_machine (psABI formulas)
RELATIVE = {62: {8}, 183: {1027}, 243: {3}, 40: {23}, 3: {8}}
SYMBOL_ONLY = {62: {6, 7}, 243: {5}, 40: {21, 22}, 3: {6, 7}}          # S
SYMBOL_PLUS_ADDEND = {62: {1}, 183: {257, 1025, 1026}, 243: {1, 2}, 40: {2}, 3: {1}}  # S + A
PC_RELATIVE = {62: {2, 24}, 3: {2}, 40: {3}}                            # S + A - P
NONE = {0}
IRELATIVE = {62: {37}, 183: {1032}, 243: {58}, 40: {160}, 3: {42}}     # needs code to run


def _relocations(elf: ELFFile):
    """(offset, type, symbol index, explicit addend or None, table name) for every dynamic reloc."""
    out = []
    for sec in elf.iter_sections():
        if isinstance(sec, RelrRelocationSection):
            for r in sec.iter_relocations():
                out.append((r["r_offset"], "relr", 0, None, sec.name))
        elif isinstance(sec, RelocationSection) and sec["sh_flags"] & 2:   # SHF_ALLOC: dynamic
            for r in sec.iter_relocations():
                out.append((r["r_offset"], r["r_info_type"], r["r_info_sym"],
                            r["r_addend"] if sec.is_RELA() else None, sec.name))
    return out


def _file_word(data: bytes, elf: ELFFile, vaddr: int, size: int) -> int:
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= vaddr < seg["p_vaddr"] + seg["p_filesz"]:
            off = seg["p_offset"] + vaddr - seg["p_vaddr"]
            return int.from_bytes(data[off:off + size], "little")
    return 0


def _check_plugin(path, arch_name):
    data = path.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    machine_no = elf["e_machine"]
    emach = {"EM_X86_64": 62, "EM_AARCH64": 183, "EM_RISCV": 243, "EM_ARM": 40, "EM_386": 3}[machine_no]
    w = elf.elfclass // 8
    dynsym = elf.get_section_by_name(".dynsym")
    undefined = [s.name for s in dynsym.iter_symbols() if s["st_shndx"] == "SHN_UNDEF" and s.name]
    fake = {name: 0x7000_0000 + 0x40 * i for i, name in enumerate(undefined)}
    m = elfkit.load(data, imports=dict(fake), machine=MemoryMachine(elfkit.arch.get(arch_name)),
                    init=False)
    try:
        bias = m.base
        checked = 0
        mask = (1 << (8 * w)) - 1
        for off, rtype, symidx, addend, table in _relocations(elf):
            place = bias + off
            if rtype == "relr" or rtype in RELATIVE.get(emach, ()):
                size = w
                a = addend if addend is not None else _file_word(data, elf, off, w)
                want = (bias + a) & mask
            elif rtype in NONE:
                continue
            elif rtype in IRELATIVE.get(emach, ()):
                # a memory-only machine cannot call the resolver: it records it
                assert m._image.unapplied
                continue
            else:
                sym = dynsym.get_symbol(symidx)
                if sym["st_shndx"] == "SHN_UNDEF":
                    s_val = fake.get(sym.name, 0)
                else:
                    s_val = bias + sym["st_value"]
                size = 8 if (emach == 62 and rtype in (1, 24, 6, 7)) or (emach == 183) or \
                    (emach == 243 and rtype == 2) or (emach == 243 and rtype == 5 and w == 8) else 4
                a = addend if addend is not None else _file_word(data, elf, off, size)
                if rtype in SYMBOL_ONLY.get(emach, ()):
                    want = s_val
                elif rtype in SYMBOL_PLUS_ADDEND.get(emach, ()):
                    want = s_val + a
                elif rtype in PC_RELATIVE.get(emach, ()):
                    want = s_val + a - place
                else:
                    pytest.fail(f"{path.name}: relocation type {rtype} in {table} has no independent "
                                f"formula in this test")
                want &= (1 << (8 * size)) - 1
            got = int.from_bytes(m.read(place, size), "little")
            assert got == want, (f"{path.name} {arch_name}: {table} type {rtype} at {off:#x}: "
                                 f"got {got:#x}, want {want:#x}")
            checked += 1
        return checked
    finally:
        m.close()


@pytest.mark.parametrize("arch", ARCHES)
def test_relocated_bytes_match_independent_computation(plugins, arch):
    total = 0
    for name in plugins.names:
        path = plugins.path(name, arch)
        total += _check_plugin(path, arch)
    assert total > 0


@pytest.mark.parametrize("arch", ARCHES)
def test_protections_after_load(plugins, arch):
    """Text is R-X, RELRO is read-only, writable data stays RW, nothing is W+X."""
    from elfkit.exec.base import PROT_EXEC, PROT_READ, PROT_WRITE
    path = plugins.path("standalone", arch)
    data = path.read_bytes()
    elf = ELFFile(io.BytesIO(data))
    mm = MemoryMachine(elfkit.arch.get(arch))
    m = elfkit.load(data, machine=mm, init=False)
    relro = [(s["p_vaddr"], s["p_vaddr"] + s["p_memsz"]) for s in elf.iter_segments()
             if s["p_type"] == "PT_GNU_RELRO"]
    for seg in elf.iter_segments():
        if seg["p_type"] != "PT_LOAD" or not seg["p_memsz"]:
            continue
        probe = seg["p_vaddr"] + seg["p_memsz"] - 1      # the segment's last byte
        prot = mm.prot_at(m.base + probe)
        flags = seg["p_flags"]
        in_relro = any(a <= probe < b for a, b in relro)
        assert bool(prot & PROT_EXEC) == bool(flags & 1)
        assert bool(prot & PROT_WRITE) == (bool(flags & 2) and not in_relro)
        assert prot & PROT_READ
        assert not (prot & PROT_WRITE and prot & PROT_EXEC)
    m.close()


def test_relr_and_hash_variants_load_alike(plugins):
    """The sysv, gnu-only and DT_RELR link variants give the same exports."""
    variants = ["relocs", "relocs_gnu", "relocs_relr"]
    for arch in ARCHES:
        seen = None
        for v in variants:
            m = elfkit.load(plugins.path(v, arch), machine=MemoryMachine(elfkit.arch.get(arch)),
                            imports={n: 0x1000 for n in _undefined(plugins.path(v, arch))},
                            init=False)
            names = set(m.exports)
            m.close()
            seen = names if seen is None else seen
            assert names == seen, f"{v} on {arch} exports differ"


def _undefined(path):
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    return [s.name for s in elf.get_section_by_name(".dynsym").iter_symbols()
            if s["st_shndx"] == "SHN_UNDEF" and s.name]
