"""elfkit/exec/capstone_lib.py (capstone's library through ctypes) against the
``capstone`` package itself: every instruction of every test plugin's code, of
each architecture (ARM also as Thumb), and of random bytes, decodes to the same
address, size, mnemonic, operands and bytes, and a direct branch or call to
the same immediate; ``elfkit disasm`` does not import the package."""
from __future__ import annotations

import random

import capstone
import pytest

from elfkit.arch import get as get_arch
from elfkit.exec.capstone_lib import Decoder, decoder
from elfkit.tools.elf_sections import ElfFile
from tests.plugins import ARCHES, NAMES
from tests.startup_imports import imports_of

BRANCHES = {capstone.CS_GRP_JUMP, capstone.CS_GRP_CALL, capstone.CS_GRP_BRANCH_RELATIVE}


def _package(arch: str, thumb: bool, code: bytes, addr: int) -> list[tuple]:
    """What the capstone package decodes (its own classes and constants)."""
    a = get_arch(arch)
    mode = 0
    for m in a.cs_mode:
        mode |= getattr(capstone, m)
    if thumb:
        mode = (mode & ~capstone.CS_MODE_ARM) | capstone.CS_MODE_THUMB
    md = capstone.Cs(getattr(capstone, a.cs_arch), mode)
    md.detail = True
    out = []
    for ins in md.disasm(code, addr):
        imm = None
        ops = ins.operands
        if set(ins.groups) & BRANCHES and ops and ops[-1].type == capstone.CS_OP_IMM:
            imm = ops[-1].imm
        out.append((ins.address, ins.size, ins.mnemonic, ins.op_str, bytes(ins.bytes), imm))
    return out


def _ours(arch: str, thumb: bool, code: bytes, addr: int, detail: bool = True) -> list[tuple]:
    a = get_arch(arch)
    d = decoder(a.cs_arch, tuple(a.cs_mode), thumb, detail)
    assert isinstance(d, Decoder)       # capstone 5.0's library, read through ctypes
    return d.decode(code, addr)


def _cases(arch: str) -> list[bool]:
    return [False, True] if arch == "arm" else [False]


@pytest.mark.parametrize("arch", ARCHES)
def test_every_plugin_decodes_as_the_package_decodes_it(plugins, arch):
    branches = 0
    for name in NAMES:
        ef = ElfFile(plugins.data(name, arch))
        ef.read_tables()
        for _label, addr, code in ef.code_regions():
            for thumb in _cases(arch):
                want = _package(arch, thumb, code, addr)
                assert _ours(arch, thumb, code, addr) == want
                lite = _ours(arch, thumb, code, addr, detail=False)
                assert lite == [w[:5] + (None,) for w in want]
                branches += sum(w[5] is not None for w in want)
    assert branches > 0


@pytest.mark.parametrize("arch", ARCHES)
def test_random_bytes_decode_as_the_package_decodes_them(arch):
    rng = random.Random(f"capstone-{arch}")
    for _ in range(40):
        code = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        addr = rng.randrange(1 << 20) * 4
        for thumb in _cases(arch):
            assert _ours(arch, thumb, code, addr) == _package(arch, thumb, code, addr)


def test_disasm_does_not_import_the_capstone_package(plugins):
    so = str(plugins.path("standalone", "x86_64"))
    out, imported = imports_of("elfkit", "disasm", so, "iree_hal_executable_plugin_query")
    assert "iree_hal_executable_plugin_query" in out
    assert "capstone" not in imported and "inspect" not in imported
