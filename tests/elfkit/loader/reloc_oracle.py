"""The relocation oracle of the loader tests: every dynamic relocation of a
plugin, read by pyelftools from the section headers (not the dynamic segment
the loader uses), and the value it must produce by its psABI formula."""
from __future__ import annotations

import io

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection, RelrRelocationSection

import elfkit
from elfkit.exec.memory import MemoryMachine

# type number -> how the value is computed, per e_machine (psABI formulas)
RELATIVE = {62: {8}, 183: {1027}, 243: {3}, 40: {23}, 3: {8}}
SYMBOL_ONLY = {62: {6, 7}, 243: {5}, 40: {21, 22}, 3: {6, 7}}          # S
SYMBOL_PLUS_ADDEND = {62: {1}, 183: {257, 1025, 1026}, 243: {1, 2}, 40: {2}, 3: {1}}  # S + A
PC_RELATIVE = {62: {2, 24}, 3: {2}, 40: {3}}                            # S + A - P
NONE = {0}
IRELATIVE = {62: {37}, 183: {1032}, 243: {58}, 40: {160}, 3: {42}}     # needs code to run


def dynamic_relocations(elf: ELFFile):
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


def relative_words(data: bytes) -> list[tuple[int, int, int]]:
    """(place, addend, width) of each RELATIVE relocation, from pyelftools."""
    elf = ELFFile(io.BytesIO(data))
    w = elf.elfclass // 8
    out = []
    for sec in elf.iter_sections():
        if isinstance(sec, RelocationSection):
            for r in sec.iter_relocations():
                # REL: the addend is the word at the place, in the file
                add = r["r_addend"] if r.is_RELA() else _file_word(data, elf, r["r_offset"], w)
                out.append((r["r_offset"], add, w))
    return out


def check_native_reloads(data: bytes, words: list[tuple[int, int, int]]) -> None:
    """Load ``data`` natively four times (load, close, load, close: the
    closed range is reused; then two loads side by side at other bases):
    every word of ``words`` (``relative_words``) is base + addend each time."""
    assert words
    mods = []
    for keep_open in (False, False, True, True):
        m = elfkit.load(data)
        for place, add, w in words:
            got = int.from_bytes(m.read(m.base + place, w), "little")
            assert got == (m.base + add) & ((1 << (8 * w)) - 1)
        assert sum(m.relocation_counts.values()) == len(words)
        mods.append(m)
        if not keep_open:
            m.close()
    assert len({m.base for m in mods}) >= 2
    for m in mods:
        m.close()


def _file_word(data: bytes, elf: ELFFile, vaddr: int, size: int) -> int:
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= vaddr < seg["p_vaddr"] + seg["p_filesz"]:
            off = seg["p_offset"] + vaddr - seg["p_vaddr"]
            return int.from_bytes(data[off:off + size], "little")
    return 0


def check_plugin(path, arch_name) -> int:
    """Load ``path`` on a memory-only machine (imports at fake addresses) and
    check every dynamic relocation's result against the psABI formula;
    returns how many were checked."""
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
        for off, rtype, symidx, addend, table in dynamic_relocations(elf):
            place = bias + off
            if rtype == "relr" or rtype in RELATIVE.get(emach, ()):
                size = w
                a = addend if addend is not None else _file_word(data, elf, off, w)
                want = (bias + a) & mask
            elif rtype in NONE:
                continue
            elif rtype in IRELATIVE.get(emach, ()):
                # a memory-only machine cannot call the resolver: it records it
                assert m.unapplied_relocations
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
