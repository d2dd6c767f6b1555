"""Relocated bytes of every test plugin on every architecture, checked against
values computed independently from pyelftools' view of the file (which reads
section headers, not the dynamic segment the loader uses; reloc_oracle.py)."""
from __future__ import annotations

import io

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit.exec.memory import MemoryMachine
from tests.elfkit.loader.reloc_oracle import check_plugin

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]

@pytest.mark.parametrize("arch", ARCHES)
def test_relocated_bytes_match_independent_computation(plugins, arch):
    total = 0
    for name in plugins.names:
        path = plugins.path(name, arch)
        total += check_plugin(path, arch)
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
