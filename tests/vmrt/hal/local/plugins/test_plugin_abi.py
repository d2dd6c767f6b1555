"""Struct layouts of the plugin and executable-library ABIs for 32- and
64-bit targets (offsets from IREE's headers, checked with offsetof on real
compilers), and the import thunks (disassembled with capstone)."""
from __future__ import annotations

import struct

import pytest

from vmrt.hal.local import library_abi as abi


def test_library_struct_sizes():
    l64, l32 = abi.layout(8), abi.layout(4)
    assert (l64.library_header_size, l32.library_header_size) == (24, 16)
    assert (l64.library_v0_size, l32.library_v0_size) == (128, 64)
    assert (l64.env_size, l32.env_size) == (96, 80)
    assert (l64.ds_size, l32.ds_size) == (48, 36)
    assert (l64.ws_size, l32.ws_size) == (32, 24)
    assert l64.attrs_size == l32.attrs_size == 64


def test_library_header_offsets():
    for word, name_off, feat_off, san_off in ((8, 8, 16, 20), (4, 4, 8, 12)):
        lay = abi.layout(word)
        raw = bytearray(lay.library_header_size)
        struct.pack_into("<I", raw, 0, 6)
        struct.pack_into("<Q" if word == 8 else "<I", raw, name_off, 0x1234)
        struct.pack_into("<I", raw, feat_off, 5)
        struct.pack_into("<i", raw, san_off, 3)
        h = lay.library_header(bytes(raw))
        assert (h.version, h.name_ptr, h.features, h.sanitizer) == (6, 0x1234, 5, 3)


def test_library_v0_offsets():
    # 64-bit: imports.count @8, symbols @16, exports.count @24, ptrs @32,
    # attrs @40, names @64, constants.count @104; 32-bit: @4 @8 @12 @16 @20 @32 @52
    for word, offs in ((8, dict(import_count=8, import_symbols=16, export_count=24,
                                 export_ptrs=32, export_attrs=40, export_names=64,
                                 constant_count=104, source_files=120)),
                       (4, dict(import_count=4, import_symbols=8, export_count=12,
                                export_ptrs=16, export_attrs=20, export_names=32,
                                constant_count=52, source_files=60))):
        lay = abi.layout(word)
        for field, off in offs.items():
            raw = bytearray(lay.library_v0_size)
            struct.pack_into("<I", raw, off, 0xABCD)
            assert getattr(lay.library_v0(bytes(raw)), field) == 0xABCD, (word, field)


def test_dispatch_attrs():
    raw = struct.pack("<QHBBIIHH", 1, 2, 3, 4, 8, 4, 2, 1) + bytes(40)
    a = abi.layout(8).dispatch_attrs(raw)
    assert (a.flags, a.local_memory_pages, a.constant_count, a.binding_count) == (1, 2, 3, 4)
    assert a.workgroup_size == (8, 4, 2) and a.parameter_count == 1
    assert a.local_memory_size == 2 * 4096


def test_dispatch_state_offsets():
    for word, (c_off, b_off, l_off) in ((8, (24, 32, 40)), (4, (24, 28, 32))):
        lay = abi.layout(word)
        raw = lay.dispatch_state((1, 2, 3), 4, (5, 6, 7), 8, 9, 0x1111, 0x2222, 0x3333)
        assert struct.unpack_from("<IIHHIIHBB", raw) == (1, 2, 3, 4, 5, 6, 7, 8, 9)
        w = "<Q" if word == 8 else "<I"
        assert struct.unpack_from(w, raw, c_off)[0] == 0x1111
        assert struct.unpack_from(w, raw, b_off)[0] == 0x2222
        assert struct.unpack_from(w, raw, l_off)[0] == 0x3333


def test_workgroup_state_offsets():
    for word, (mem_off, size_off) in ((8, (16, 24)), (4, (16, 20))):
        lay = abi.layout(word)
        raw = lay.workgroup_state(1, 2, 3, 9, 0xBEEF, 4096)
        assert struct.unpack_from("<IIHHI", raw) == (1, 2, 3, 0, 9)
        w = "<Q" if word == 8 else "<I"
        assert struct.unpack_from(w, raw, mem_off)[0] == 0xBEEF
        assert struct.unpack_from("<I", raw, size_off)[0] == 4096


def test_environment_offsets():
    l64, l32 = abi.layout(8), abi.layout(4)
    assert (l64.env_import_thunk, l64.env_import_funcs, l64.env_import_contexts,
            l64.env_processor) == (8, 16, 24, 32)
    assert (l32.env_import_thunk, l32.env_import_funcs, l32.env_import_contexts,
            l32.env_processor) == (4, 8, 12, 16)


def test_plugin_structs():
    l64, l32 = abi.layout(8), abi.layout(4)
    # header: version @0, name @8 [4], description @16 [8], features @24 [12], sanitizer @28 [16]
    raw = struct.pack("<I4xQQIi", 1, 0x10, 0x20, 1, 2) + bytes(64)
    h = l64.plugin_header(raw)
    assert (h.version, h.name_ptr, h.description_ptr, h.features, h.sanitizer) == \
        (1, 0x10, 0x20, 1, 2)
    h = l32.plugin_header(struct.pack("<IIIIi", 1, 0x10, 0x20, 1, 2) + bytes(68))
    assert (h.name_ptr, h.description_ptr, h.features, h.sanitizer) == (0x10, 0x20, 1, 2)
    assert (l64.resolve_params_size, l32.resolve_params_size) == (32, 16)
    assert (l64.string_pair_size, l32.string_pair_size) == (32, 16)
    assert l64.string_pair(1, 2, 3, 4) == struct.pack("<4Q", 1, 2, 3, 4)
    assert l32.resolve_params(1, 2, 3, 4) == struct.pack("<4I", 1, 2, 3, 4)


def test_optional_names():
    assert abi.is_optional("?x") and not abi.is_optional("x")
    assert abi.strip_optional("?x") == "x" and abi.strip_optional("x") == "x"


# -- import thunks ---------------------------------------------------------------

_CAPSTONE = {
    "x86_64": ("CS_ARCH_X86", "CS_MODE_64"),
    "i386": ("CS_ARCH_X86", "CS_MODE_32"),
    "aarch64": ("CS_ARCH_ARM64", "CS_MODE_ARM"),
    "arm": ("CS_ARCH_ARM", "CS_MODE_ARM"),
    "riscv64": ("CS_ARCH_RISCV", "CS_MODE_RISCV64"),
    "riscv32": ("CS_ARCH_RISCV", "CS_MODE_RISCV32"),
}

_EXPECTED = {
    "x86_64": ["mov rax, rdi", "mov rdi, rsi", "mov rsi, rdx", "mov rdx, rcx", "jmp rax"],
    "aarch64": ["mov x16, x0", "mov x0, x1", "mov x1, x2", "mov x2, x3", "br x16"],
    "riscv64": ["mv t0, a0", "mv a0, a1", "mv a1, a2", "mv a2, a3", "jr t0"],
    "riscv32": ["mv t0, a0", "mv a0, a1", "mv a1, a2", "mv a2, a3", "jr t0"],
    "arm": ["mov ip, r0", "mov r0, r1", "mov r1, r2", "mov r2, r3", "bx ip"],
    "i386": ["mov eax, dword ptr [esp + 4]", "push dword ptr [esp + 0x10]",
             "push dword ptr [esp + 0x10]", "push dword ptr [esp + 0x10]", "call eax",
             "add esp, 0xc", "ret"],
}


@pytest.mark.parametrize("arch", sorted(_EXPECTED))
def test_thunk_disassembly(arch):
    capstone = pytest.importorskip("capstone")
    a, m = _CAPSTONE[arch]
    if not hasattr(capstone, a):
        a = a.replace("ARM64", "AARCH64")
    md = capstone.Cs(getattr(capstone, a), getattr(capstone, m))
    code = abi.import_thunk_code(arch)
    text = [f"{i.mnemonic} {i.op_str}".strip() for i in md.disasm(code, 0x1000)]
    assert sum(i.size for i in md.disasm(code, 0x1000)) == len(code)
    assert text == _EXPECTED[arch]


def test_unknown_thunk():
    with pytest.raises(KeyError):
        abi.import_thunk_code("sparc")
