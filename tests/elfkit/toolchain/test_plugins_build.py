"""The plugin build: every plugin for every architecture is the binary the
loader tests expect.

Checked with pyelftools (and, for x86_64 on an x86_64 Linux host, with the
system dynamic loader through ctypes), never with elfkit itself, so a loader
bug cannot hide a build problem or the other way round.
"""
from __future__ import annotations

import ctypes
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSegment
from elftools.elf.elffile import ELFFile

from tests.plugins import (
    ARCHES,
    CMAKE_DIR,
    IMPORTS_HOST_FUNCTIONS,
    MACHINE,
    NAMES,
    PLUGINS,
    REPO,
    WORD,
    bss_sum_after_fill,
    f32,
    i32,
    recurse_ref,
)

# Relocation type numbers from each psABI (pyelftools has no RISC-V table).
RELOC_NUMBERS: dict[str, dict[str, int]] = {
    "x86_64": {"R_X86_64_64": 1, "R_X86_64_PC32": 2, "R_X86_64_GLOB_DAT": 6,
               "R_X86_64_JUMP_SLOT": 7, "R_X86_64_RELATIVE": 8, "R_X86_64_PC64": 24,
               "R_X86_64_IRELATIVE": 37},
    "aarch64": {"R_AARCH64_ABS64": 257, "R_AARCH64_GLOB_DAT": 1025,
                "R_AARCH64_JUMP_SLOT": 1026, "R_AARCH64_RELATIVE": 1027,
                "R_AARCH64_IRELATIVE": 1032},
    "riscv64": {"R_RISCV_32": 1, "R_RISCV_64": 2, "R_RISCV_RELATIVE": 3,
                "R_RISCV_JUMP_SLOT": 5, "R_RISCV_IRELATIVE": 58},
    "arm": {"R_ARM_ABS32": 2, "R_ARM_GLOB_DAT": 21, "R_ARM_JUMP_SLOT": 22,
            "R_ARM_RELATIVE": 23, "R_ARM_IRELATIVE": 160},
    "i386": {"R_386_32": 1, "R_386_PC32": 2, "R_386_GLOB_DAT": 6, "R_386_JUMP_SLOT": 7,
             "R_386_RELATIVE": 8, "R_386_IRELATIVE": 42},
    "riscv32": {"R_RISCV_32": 1, "R_RISCV_RELATIVE": 3, "R_RISCV_JUMP_SLOT": 5,
                "R_RISCV_IRELATIVE": 58},
}
RELOC_NAMES = {a: {v: k for k, v in t.items()} for a, t in RELOC_NUMBERS.items()}

# Per arch: the word-sized absolute relocation, and how a GOT slot of a
# preemptible symbol is relocated (RISC-V has no GLOB_DAT: it uses the
# absolute word relocation).
ABS = {"x86_64": "R_X86_64_64", "aarch64": "R_AARCH64_ABS64", "riscv64": "R_RISCV_64",
       "arm": "R_ARM_ABS32", "i386": "R_386_32", "riscv32": "R_RISCV_32"}
PREFIX = {"x86_64": "R_X86_64_", "aarch64": "R_AARCH64_", "riscv64": "R_RISCV_",
          "arm": "R_ARM_", "i386": "R_386_", "riscv32": "R_RISCV_"}


def got(arch: str) -> str:
    return ABS[arch] if arch.startswith("riscv") else PREFIX[arch] + "GLOB_DAT"


def _relocs_expected(arch: str, pcrel: bool = False) -> set[str]:
    p = PREFIX[arch]
    s = {p + "RELATIVE", ABS[arch], got(arch), p + "JUMP_SLOT", p + "IRELATIVE"}
    if not pcrel:
        return s
    if arch == "x86_64":
        s.add("R_X86_64_PC64")
    if arch == "i386":
        s.add("R_386_PC32")
    return s


#: plugin -> arch -> relocation type names that must appear (exactly these).
EXPECTED_RELOCS: dict[str, dict[str, set[str]]] = {
    "standalone": {a: {PREFIX[a] + "RELATIVE"} for a in ARCHES},
    "kernels": {a: set() for a in ARCHES},
    "relocs": {a: _relocs_expected(a) for a in ARCHES},
    "relocs_gnu": {a: _relocs_expected(a) for a in ARCHES},
    "relocs_relr": {a: _relocs_expected(a) - {PREFIX[a] + "RELATIVE"} for a in ARCHES},
    "relocs_pcrel": {a: _relocs_expected(a, pcrel=True) for a in ARCHES},
    "imports": {a: {PREFIX[a] + "RELATIVE", ABS[a], got(a), PREFIX[a] + "JUMP_SLOT"}
                for a in ARCHES},
}

#: plugin -> (type-name template, symbol) pairs that must be present; "{got}",
#: "{abs}" and "{p}" are filled per arch.
EXPECTED_SYMBOL_RELOCS: dict[str, set[tuple[str, str]]] = {
    "relocs": {("{got}", "g_counter"), ("{abs}", "g_counter"), ("{abs}", "exported_twice"),
               ("{p}JUMP_SLOT", "exported_twice")},
    "imports": {("{p}JUMP_SLOT", "host_add"), ("{p}JUMP_SLOT", "host_log"),
                ("{p}JUMP_SLOT", "host_scale"), ("{p}JUMP_SLOT", "host_optional"),
                ("{got}", "host_optional"), ("{abs}", "host_add")},
}

CASES = [(n, a) for n in NAMES for a in ARCHES]
CASE_IDS = [f"{n}-{a}" for n, a in CASES]


def _open(path: Path) -> ELFFile:
    return ELFFile(open(path, "rb"))


def _dynamic(elf: ELFFile) -> DynamicSegment:
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_DYNAMIC":
            return seg
    raise AssertionError("no PT_DYNAMIC")


def _tags(elf: ELFFile) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tag in _dynamic(elf).iter_tags():
        out.setdefault(tag.entry.d_tag, []).append(tag.entry.d_val)
    return out


def _relocations(elf: ELFFile) -> tuple[list[tuple[str, str]], int]:
    """(type name, symbol name) of every REL/RELA/JMPREL entry, found through
    the dynamic segment as a loader would; plus the number of RELR addresses."""
    arch = _arch_of(elf)
    dyn = _dynamic(elf)
    symtab = dyn  # DynamicSegment resolves symbols by index itself
    out: list[tuple[str, str]] = []
    relr = 0
    for kind, table in dyn.get_relocation_tables().items():
        if kind == "RELR":
            relr += sum(1 for _ in table.iter_relocations())
            continue
        for rel in table.iter_relocations():
            rtype = rel["r_info_type"]
            name = RELOC_NAMES[arch].get(rtype, f"<unknown type {rtype}>")
            sym = ""
            if rel["r_info_sym"]:
                sym = symtab.get_symbol(rel["r_info_sym"]).name
            out.append((name, sym))
    return out, relr


def _arch_of(elf: ELFFile) -> str:
    m, bits = elf["e_machine"], elf.elfclass
    for arch, (mm, bb) in MACHINE.items():
        if mm == m and bb == bits:
            return arch
    raise AssertionError(f"unexpected machine {m}/{bits}")


def _dynsyms(elf: ELFFile):
    return list(_dynamic(elf).iter_symbols())[1:]


# --------------------------------------------------------------------------


def test_catalogue_matches_cmake_project():
    text = (REPO / "plugin_src" / "CMakeLists.txt").read_text()
    for name, spec in PLUGINS.items():
        assert f"elfkit_add_plugin({name} " in text, name
        for src in spec.sources:
            assert (REPO / "plugin_src" / src).is_file()


def test_fixture_api(plugins):
    assert plugins.arches == ARCHES
    assert set(plugins.names) == set(PLUGINS)
    assert "standalone" in plugins.names
    p = plugins.path("standalone", "riscv64")
    assert p.is_file() and p.name == "standalone.so"
    with pytest.raises(KeyError):
        plugins.path("nope", "x86_64")
    with pytest.raises(KeyError):
        plugins.path("kernels", "mips")


@pytest.mark.parametrize("name,arch", CASES, ids=CASE_IDS)
def test_elf_identity(plugins, name, arch):
    with _open(plugins.path(name, arch)) as elf:
        machine, bits = MACHINE[arch]
        assert elf["e_machine"] == machine
        assert elf.elfclass == bits
        assert elf.little_endian
        assert elf["e_type"] == "ET_DYN"
        # lld marks objects with STT_GNU_IFUNC symbols as ELFOSABI_GNU (3).
        osabi = "ELFOSABI_LINUX" if name.startswith("relocs") else "ELFOSABI_SYSV"
        assert elf["e_ident"]["EI_OSABI"] == osabi
        ptypes = [s["p_type"] for s in elf.iter_segments()]
        assert "PT_TLS" not in ptypes
        assert "PT_INTERP" not in ptypes
        assert ptypes.count("PT_DYNAMIC") == 1
        flags = elf["e_flags"]
        if arch == "arm":
            assert flags & 0xFF000000 == 0x05000000, hex(flags)  # EABI version 5
            assert flags & 0x400, hex(flags)                     # EF_ARM_ABI_FLOAT_HARD
        if arch.startswith("riscv"):
            assert flags & 0x6 == 0x4, hex(flags)               # double-float ABI
            assert flags & 0x1, hex(flags)                      # RVC
        tags = _tags(elf)
        assert "DT_NEEDED" not in tags
        assert "DT_TEXTREL" not in tags
        assert not (tags.get("DT_FLAGS", [0])[0] & 0x4)          # DF_TEXTREL
        assert tags.get("DT_FLAGS", [0])[0] & 0x8                # DF_BIND_NOW (-z now)
        assert "PT_GNU_RELRO" in ptypes
        for sym in _dynsyms(elf):
            assert sym["st_info"]["type"] != "STT_TLS", sym.name


@pytest.mark.parametrize("name,arch", CASES, ids=CASE_IDS)
def test_hash_and_relr_tables(plugins, name, arch):
    spec = PLUGINS[name]
    with _open(plugins.path(name, arch)) as elf:
        tags = _tags(elf)
        assert ("DT_HASH" in tags) == (spec.hash_style in ("sysv", "both"))
        assert ("DT_GNU_HASH" in tags) == (spec.hash_style in ("gnu", "both"))
        assert ("DT_RELR" in tags) == spec.relr
        if spec.relr:
            assert tags["DT_RELRENT"] == [WORD[arch]]


@pytest.mark.parametrize("name,arch", CASES, ids=CASE_IDS)
def test_relocation_types(plugins, name, arch):
    with _open(plugins.path(name, arch)) as elf:
        relocs, relr = _relocations(elf)
    present = {t for t, _ in relocs}
    assert present == EXPECTED_RELOCS[name][arch], (
        f"{name}/{arch}: missing {sorted(EXPECTED_RELOCS[name][arch] - present)}, "
        f"unexpected {sorted(present - EXPECTED_RELOCS[name][arch])}")
    fill = {"got": got(arch), "abs": ABS[arch], "p": PREFIX[arch]}
    base = name.split("_")[0] if name.startswith("relocs") else name
    for tmpl, sym in EXPECTED_SYMBOL_RELOCS.get(base, ()):
        assert (tmpl.format(**fill), sym) in relocs, (tmpl.format(**fill), sym)
    if name == "relocs_pcrel" and arch in ("x86_64", "i386"):
        assert (PREFIX[arch] + ("PC64" if arch == "x86_64" else "PC32"), "g_counter") in relocs
    if PLUGINS[name].relr:
        # 4 ops + greeting + 70 squares + 3 sparse + 2 init + 1 fini
        assert relr == 81
    else:
        assert relr == 0


def test_every_arch_covers_the_relocation_kinds(plugins):
    """The union over all plugins, per arch: what loader tests can exercise."""
    for arch in ARCHES:
        seen: set[str] = set()
        for name in NAMES:
            with _open(plugins.path(name, arch)) as elf:
                seen |= {t for t, _ in _relocations(elf)[0]}
        p = PREFIX[arch]
        need = {p + "RELATIVE", ABS[arch], got(arch), p + "JUMP_SLOT", p + "IRELATIVE"}
        need |= {"x86_64": {"R_X86_64_PC64"}, "i386": {"R_386_PC32"}}.get(arch, set())
        assert need <= seen, (arch, sorted(need - seen))


@pytest.mark.parametrize("name,arch", CASES, ids=CASE_IDS)
def test_exports_and_imports(plugins, name, arch):
    spec = PLUGINS[name]
    with _open(plugins.path(name, arch)) as elf:
        syms = _dynsyms(elf)
    defined = {s.name: s for s in syms if s["st_shndx"] != "SHN_UNDEF"}
    undefined = {s.name: s["st_info"]["bind"] for s in syms if s["st_shndx"] == "SHN_UNDEF"}
    expected = spec.exports_for(arch)
    assert set(defined) == set(expected), (
        f"missing {sorted(set(expected) - set(defined))}, "
        f"unexpected {sorted(set(defined) - set(expected))}")
    for sym_name, exp in expected.items():
        s = defined[sym_name]
        assert s["st_info"]["bind"] == "STB_GLOBAL", sym_name
        assert s["st_other"]["visibility"] == "STV_DEFAULT", sym_name
        want = "STT_OBJECT" if exp.signature == "data" else "STT_FUNC"
        assert s["st_info"]["type"] == want, sym_name
    assert undefined == {**{n: "STB_GLOBAL" for n in spec.imports},
                         **{n: "STB_WEAK" for n in spec.weak_imports}}


def test_imports_catalogue():
    spec = PLUGINS["imports"]
    assert set(IMPORTS_HOST_FUNCTIONS) == set(spec.imports) | set(spec.weak_imports)


@pytest.mark.parametrize("arch", ARCHES)
def test_standalone_plugin_is_self_contained(plugins, arch):
    with _open(plugins.path("standalone", arch)) as elf:
        syms = _dynsyms(elf)
        assert [s.name for s in syms if s["st_shndx"] != "SHN_UNDEF"] == [
            "iree_hal_executable_plugin_query"]
        assert not [s.name for s in syms if s["st_shndx"] == "SHN_UNDEF"]
        # No writable data besides what the relocations need (RELRO).
        assert "DT_JMPREL" not in _tags(elf)


@pytest.mark.parametrize("arch", ARCHES)
def test_kernels_has_a_large_bss(plugins, arch):
    with _open(plugins.path("kernels", arch)) as elf:
        zero_fill = max(s["p_memsz"] - s["p_filesz"]
                        for s in elf.iter_segments() if s["p_type"] == "PT_LOAD")
    assert zero_fill >= 1 << 20


@pytest.mark.parametrize("arch", ARCHES)
def test_initialisers_and_finalisers(plugins, arch):
    w = WORD[arch]
    for name in ("relocs", "relocs_gnu", "relocs_relr", "relocs_pcrel"):
        with _open(plugins.path(name, arch)) as elf:
            tags = _tags(elf)
        assert "DT_INIT" in tags and "DT_FINI" in tags, name
        assert tags["DT_INIT_ARRAYSZ"] == [2 * w], name
        assert tags["DT_FINI_ARRAYSZ"] == [w], name
    with _open(plugins.path("imports", arch)) as elf:
        tags = _tags(elf)
    assert tags["DT_INIT_ARRAYSZ"] == [w] and tags["DT_FINI_ARRAYSZ"] == [w]


# --------------------------------------------------------------------------
# x86_64 binaries through the system dynamic loader: an independent check of
# the catalogue's reference formulas and of the plugin ABI code.

native_x86_64 = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")),
    reason="needs an x86_64 Linux host")


def _fn(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


@native_x86_64
def test_kernels_match_reference_natively(plugins):
    c = ctypes
    lib = c.CDLL(str(plugins.path("kernels", "x86_64")))
    ex = PLUGINS["kernels"].exports
    assert _fn(lib, "add_i32", c.c_int32, c.c_int32, c.c_int32)(2**31 - 1, 5) == \
        ex["add_i32"].ref(2**31 - 1, 5)
    assert _fn(lib, "add_i64", c.c_int64, c.c_int64, c.c_int64)(2**63 - 1, 2) == \
        ex["add_i64"].ref(2**63 - 1, 2)
    assert _fn(lib, "mul_u64", c.c_uint64, c.c_uint64, c.c_uint64)(2**40 + 3, 2**30 + 7) == \
        ex["mul_u64"].ref(2**40 + 3, 2**30 + 7)
    ints = [3, -7, 11, 2**31 - 1, -(2**31), 5, 6, 7, 8, 9]
    assert _fn(lib, "many_i32", c.c_int64, *[c.c_int32] * 10)(*ints) == \
        ex["many_i32"].ref(*ints)
    big = [2**62 + k for k in range(10)]
    assert _fn(lib, "many_i64", c.c_int64, *[c.c_int64] * 10)(*big) == ex["many_i64"].ref(*big)
    args = (0.1, 0.2, 0.3)
    assert _fn(lib, "muladd_f64", c.c_double, *[c.c_double] * 3)(*args) == \
        ex["muladd_f64"].ref(*args)
    assert _fn(lib, "scale_f32", c.c_float, c.c_float, c.c_float)(1.1, 3.3) == \
        ex["scale_f32"].ref(1.1, 3.3)
    assert _fn(lib, "mix_if", c.c_double, c.c_int32, c.c_double, c.c_int32, c.c_float)(
        -3, 0.7, 9, 1.3) == ex["mix_if"].ref(-3, 0.7, 9, 1.3)
    fd = (1.5, 0.1, 2.25, -0.3, 0.2)
    assert _fn(lib, "mix_fd", c.c_double, c.c_float, c.c_double, c.c_float, c.c_double,
               c.c_float)(*fd) == ex["mix_fd"].ref(*fd)
    ds = [0.1 * (k + 1) for k in range(10)]
    assert _fn(lib, "many_f64", c.c_double, *[c.c_double] * 10)(*ds) == ex["many_f64"].ref(*ds)
    fs = [f32(0.3 * (k + 1)) for k in range(10)]
    assert _fn(lib, "many_f32", c.c_float, *[c.c_float] * 10)(*fs) == ex["many_f32"].ref(*fs)
    mixed = []
    for k in range(10):
        mixed += [k - 4, 0.01 * k]
    assert _fn(lib, "many_mixed", c.c_double, *[c.c_int32, c.c_double] * 10)(*mixed) == \
        ex["many_mixed"].ref(*mixed)
    arr = (c.c_int32 * 5)(1, -2, 3, 2**31 - 1, 2**31 - 1)
    assert _fn(lib, "sum_i32", c.c_int64, c.c_void_p, c.c_int64)(c.addressof(arr), 5) == \
        ex["sum_i32"].ref(list(arr), 5)
    a = (c.c_double * 4)(0.1, 0.2, 0.3, 0.4)
    b = (c.c_double * 4)(1.5, 2.5, -3.5, 4.5)
    assert _fn(lib, "dot_f64", c.c_double, c.c_void_p, c.c_void_p, c.c_int64)(
        c.addressof(a), c.addressof(b), 4) == ex["dot_f64"].ref(list(a), list(b), 4)
    out = (c.c_int32 * 4)()
    _fn(lib, "iota_i32", None, c.c_void_p, c.c_int64, c.c_int32)(c.addressof(out), 4, 2**31 - 2)
    assert list(out) == [i32(2**31 - 2 + i) for i in range(4)]
    fa, fb, fo = (c.c_float * 3)(0.1, 0.2, 0.3), (c.c_float * 3)(1, 2, 3), (c.c_float * 3)()
    _fn(lib, "add_f32", None, c.c_void_p, c.c_void_p, c.c_void_p, c.c_int64)(
        c.addressof(fo), c.addressof(fa), c.addressof(fb), 3)
    assert list(fo) == [f32(f32(x) + f32(y)) for x, y in zip(fa, fb)]
    din, dout = (c.c_double * 3)(0.1, 0.2, 0.3), (c.c_double * 3)()
    _fn(lib, "scale_f64", None, c.c_void_p, c.c_void_p, c.c_double, c.c_int64)(
        c.addressof(dout), c.addressof(din), 3.7, 3)
    assert list(dout) == [x * 3.7 for x in din]
    assert _fn(lib, "bss_size", c.c_uint32)() == ex["bss_size"].ref()
    assert _fn(lib, "bss_sum", c.c_uint64)() == 0
    _fn(lib, "bss_fill", None, c.c_uint32)(7)
    assert _fn(lib, "bss_sum", c.c_uint64)() == bss_sum_after_fill(7)
    assert _fn(lib, "bss_get", c.c_uint32, c.c_uint32)(300) == (7 + 300) & 0xFF
    assert _fn(lib, "spin", c.c_uint64, c.c_uint64)(1000) == 1000
    assert _fn(lib, "recurse", c.c_uint64, c.c_uint64)(1000) == recurse_ref(1000)
    word = c.c_uint32(0)
    _fn(lib, "write_u32", None, c.c_void_p, c.c_uint32)(c.addressof(word), 0xCAFE)
    assert word.value == 0xCAFE
    assert _fn(lib, "read_u32", c.c_uint32, c.c_void_p)(c.addressof(word)) == 0xCAFE
    buf = (c.c_uint8 * 8)()
    _fn(lib, "fill_u8", None, c.c_void_p, c.c_int64, c.c_uint32)(c.addressof(buf), 6, 0x1AB)
    assert list(buf) == [0xAB] * 6 + [0, 0]


@native_x86_64
@pytest.mark.parametrize("name", ["relocs", "relocs_gnu", "relocs_relr"])
def test_relocs_match_reference_natively(plugins, name):
    c = ctypes
    lib = c.CDLL(str(plugins.path(name, "x86_64")))
    ex = PLUGINS[name].exports
    for fname in ("exported_twice", "twice_plus_one", "call_fn_ptr"):
        assert _fn(lib, fname, c.c_int32, c.c_int32)(2**30 + 5) == ex[fname].ref(2**30 + 5)
    for i in range(6):
        assert _fn(lib, "call_op", c.c_int32, c.c_uint32, c.c_int32, c.c_int32)(i, 70000, -9) \
            == ex["call_op"].ref(i, 70000, -9)
    for fname in ("greeting_len", "sum_square_ptrs", "init_log"):
        assert _fn(lib, fname, c.c_int64)() == ex[fname].ref(), fname
    assert _fn(lib, "square_at", c.c_int32, c.c_uint32)(75) == ex["square_at"].ref(75)
    for i in range(3):
        assert _fn(lib, "sparse_len", c.c_uint32, c.c_uint32)(i) == ex["sparse_len"].ref(i)
    assert _fn(lib, "call_ifunc", c.c_int32, c.c_int32)(-5) == ex["call_ifunc"].ref(-5)
    assert _fn(lib, "ifunc_resolved", c.c_uint32)() == 1
    counter = c.c_int32.in_dll(lib, "g_counter")
    assert _fn(lib, "get_counter", c.c_int32)() == 41 == counter.value
    assert _fn(lib, "bump_counter", c.c_int32)() == 42 == counter.value
    assert _fn(lib, "read_counter_ptr", c.c_int32)() == 42
    assert _fn(lib, "counter_address", c.c_void_p)() == c.addressof(counter)
    assert _fn(lib, "fini_log", c.c_uint32)() == 0


def _query_standalone(path: Path):
    """Load with the system loader and walk the plugin ABI by hand."""
    c = ctypes

    class Header(c.Structure):
        _fields_ = (("version", c.c_uint32), ("name", c.c_char_p),
                    ("description", c.c_char_p), ("features", c.c_uint32),
                    ("sanitizer", c.c_int32), ("reserved", c.c_uint64 * 8))

    class ResolveParams(c.Structure):
        _fields_ = (("count", c.c_size_t), ("symbol_names", c.POINTER(c.c_char_p)),
                    ("out_fn_ptrs", c.POINTER(c.c_void_p)),
                    ("out_fn_contexts", c.POINTER(c.c_void_p)))

    Resolve = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.POINTER(ResolveParams),
                          c.POINTER(c.c_uint32))
    Load = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.c_size_t, c.c_void_p, c.POINTER(c.c_void_p))
    Unload = c.CFUNCTYPE(None, c.c_void_p)

    class V0(c.Structure):
        _fields_ = (("header", c.POINTER(Header)), ("load", Load), ("unload", Unload),
                    ("resolve", Resolve))

    assert c.sizeof(Header) == 96 and c.sizeof(V0) == 32 and c.sizeof(ResolveParams) == 32
    lib = c.CDLL(str(path))
    query = _fn(lib, "iree_hal_executable_plugin_query", c.POINTER(V0), c.c_uint32, c.c_void_p)
    return lib, query, ResolveParams


@native_x86_64
def test_standalone_plugin_abi_natively(plugins):
    c = ctypes
    lib, query, ResolveParams = _query_standalone(plugins.path("standalone", "x86_64"))
    assert query(2, None)       # a newer host still gets the v0.1 interface
    assert not query(0, None)   # nothing at or below version 0
    v0 = query(1, None).contents
    h = v0.header.contents
    assert (h.version, h.name, h.features, h.sanitizer) == (1, b"sample_standalone", 1, 0)
    assert list(h.reserved) == [0] * 8
    self_ = c.c_void_p(1234)
    assert v0.load(None, 0, None, c.byref(self_)) is None and self_.value is None

    def resolve(names, prefilled=None):
        n = len(names)
        arr = (c.c_char_p * n)(*names)
        fns = (c.c_void_p * n)(*(prefilled or [None] * n))
        ctxs = (c.c_void_p * n)(*([0xBAD] * n))
        params = ResolveParams(n, arr, fns, ctxs)
        res = c.c_uint32(0xFFFF)
        status = v0.resolve(None, c.byref(params), c.byref(res))
        return status or 0, res.value, list(fns), list(ctxs)

    st, res, fns, ctxs = resolve([b"?absent", b"simple_mul_workgroup"])
    assert (st, res) == (0, 1) and fns[0] is None and fns[1] and ctxs[1] is None
    st, res, fns, _ = resolve([b"?simple_mul_workgroup"])
    assert (st, res) == (0, 0) and fns[0]
    st, res, fns, _ = resolve([b"simple_mul_workgroup", b"zzz_required"])
    assert st == 5 and res == 0 and fns[0] and fns[1] is None
    st, res, fns, ctxs = resolve([b"simple_mul_workgroup"], prefilled=[0x1000])
    assert (st, res, fns, ctxs) == (0, 0, [0x1000], [0xBAD])

    # Call the import with the sample's params struct.
    _, _, fns, _ = resolve([b"simple_mul_workgroup"])
    Import = c.CFUNCTYPE(c.c_int, c.c_void_p, c.c_void_p, c.c_void_p)
    a = (c.c_float * 6)(9, 9, 1.5, 2, 3, 4)
    b = (c.c_float * 5)(9, 10, 20, 30, 40)
    out = (c.c_float * 6)(-1, -1, -1, -1, -1, -1)

    class Params(c.Structure):
        _fields_ = (("b0", c.c_void_p), ("o0", c.c_size_t), ("b1", c.c_void_p),
                    ("o1", c.c_size_t), ("b2", c.c_void_p), ("o2", c.c_size_t),
                    ("size", c.c_size_t), ("tid", c.c_size_t),
                    ("processor_id", c.c_uint32), ("processor_data", c.c_void_p))

    assert c.sizeof(Params) == 80
    p = Params(c.addressof(a), 2, c.addressof(b), 1, c.addressof(out), 1, 4, 0, 0, None)
    assert Import(fns[0])(c.addressof(p), None, None) == 0
    assert list(out) == [-1, 1.5 * 10, 2 * 20, 3 * 30, 4 * 40, -1]
    v0.unload(None)


@native_x86_64
def test_system_plugin_natively(system_plugin, capfd):
    c = ctypes
    lib, query, ResolveParams = _query_standalone(system_plugin)
    v0 = query(1, None).contents
    h = v0.header.contents
    assert (h.name, h.features) == (b"sample_system", 0)

    libc = c.CDLL(None)
    malloc = _fn(libc, "malloc", c.c_void_p, c.c_size_t)
    free = _fn(libc, "free", None, c.c_void_p)
    calls = []
    Ctl = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.c_int, c.c_void_p, c.POINTER(c.c_void_p))

    @Ctl
    def ctl(self_, command, params, inout):
        calls.append(command)
        if command == 0:   # MALLOC
            inout[0] = malloc(c.cast(params, c.POINTER(c.c_size_t))[0])
        elif command == 3:  # FREE
            free(inout[0])
        return None

    class Env(c.Structure):
        _fields_ = (("self", c.c_void_p), ("ctl", Ctl))

    env = Env(None, ctl)
    self_ = c.c_void_p()
    assert v0.load(c.addressof(env), 0, None, c.byref(self_)) is None
    assert self_.value and calls == [0]
    names = (c.c_char_p * 1)(b"simple_mul_workgroup")
    fns, ctxs = (c.c_void_p * 1)(), (c.c_void_p * 1)()
    res = c.c_uint32()
    assert v0.resolve(self_, c.byref(ResolveParams(1, names, fns, ctxs)), c.byref(res)) is None
    assert ctxs[0] == self_.value

    class Params(c.Structure):
        _fields_ = (("b0", c.c_void_p), ("o0", c.c_size_t), ("b1", c.c_void_p),
                    ("o1", c.c_size_t), ("b2", c.c_void_p), ("o2", c.c_size_t),
                    ("size", c.c_size_t), ("tid", c.c_size_t),
                    ("processor_id", c.c_uint32), ("processor_data", c.c_void_p))

    a, b, out = (c.c_float * 2)(2, 2), (c.c_float * 2)(4, 4), (c.c_float * 2)()
    pdata = (c.c_uint64 * 8)(0xABC)
    p = Params(c.addressof(a), 0, c.addressof(b), 0, c.addressof(out), 0, 2, 3, 7,
               c.addressof(pdata))
    Import = c.CFUNCTYPE(c.c_int, c.c_void_p, c.c_void_p, c.c_void_p)
    capfd.readouterr()
    assert Import(fns[0])(c.addressof(p), ctxs[0], None) == 0
    assert list(out) == [8, 8]
    v0.unload(self_)
    assert calls == [0, 3]
    assert capfd.readouterr().out == (
        "processor_id=7\nprocessor_data[0]=ABC\nmul[3:0](2 * 4 = 8)\nmul[3:1](2 * 4 = 8)\n")


# --------------------------------------------------------------------------
# The CMake pieces on their own: a per-arch toolchain file, and packing.

def test_per_arch_toolchain_and_pack(plugins, tmp_path):
    """The riscv64.cmake toolchain file builds the same standalone.so as the
    multiarch tree; with `elfkit fatelf pack` available, NAME.sos is packed
    and holds the .so bytes."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if not (cmake and ninja):
        pytest.skip("cmake/ninja not on PATH")
    pack = subprocess.run([sys.executable, "-m", "elfkit", "fatelf", "pack", "--help"],
                          capture_output=True).returncode == 0
    bdir = tmp_path / "b"
    cfg = [cmake, "-G", "Ninja", "-S", str(REPO / "plugin_src"), "-B", str(bdir),
           f"-DCMAKE_MAKE_PROGRAM={ninja}",
           f"-DCMAKE_TOOLCHAIN_FILE={CMAKE_DIR / 'riscv64.cmake'}",
           f"-DELFKIT_PYTHON={sys.executable}", f"-DELFKIT_PACK={'ON' if pack else 'OFF'}"]
    r = subprocess.run(cfg, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([cmake, "--build", str(bdir), "--target", "standalone"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    so = bdir / "plugins" / "riscv64" / "standalone.so"
    assert so.read_bytes() == plugins.path("standalone", "riscv64").read_bytes()
    assert not (bdir / "plugins" / "x86_64").exists()
    if pack:
        sos = (bdir / "plugins" / "standalone.sos").read_bytes()
        assert sos[:4] == bytes.fromhex("fa700e1f")   # FatELF magic 0x1F0E70FA, LE
        off = sos.find(so.read_bytes())
        assert off > 0 and off % 4096 == 0


def _wrapper(path: Path, *argv: str) -> str:
    path.write_text("#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in argv) + ' "$@"\n')
    path.chmod(0o755)
    return str(path)


def test_system_clang_and_lld_override(plugins, tmp_path):
    """-DELFKIT_CLANG=... -DELFKIT_LLD=...: plain clang target flags instead
    of zig's.  Uses a system clang/ld.lld when both exist, otherwise the
    wheel's own clang and lld behind wrapper scripts that stand in for them."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if not (cmake and ninja):
        pytest.skip("cmake/ninja not on PATH")
    clang, lld = shutil.which("clang"), shutil.which("ld.lld")
    if not (clang and lld):
        import ziglang
        zig_include = Path(ziglang.__file__).parent / "lib" / "include"
        clang = _wrapper(tmp_path / "clang", sys.executable, "-m", "ziglang", "clang",
                         "-isystem", str(zig_include))
        lld = _wrapper(tmp_path / "ld.lld", sys.executable, "-m", "ziglang", "ld.lld")
    bdir = tmp_path / "b"
    r = subprocess.run(
        [cmake, "-G", "Ninja", "-S", str(REPO / "plugin_src"), "-B", str(bdir),
         f"-DCMAKE_MAKE_PROGRAM={ninja}",
         f"-DCMAKE_TOOLCHAIN_FILE={CMAKE_DIR / 'multiarch.cmake'}",
         f"-DELFKIT_PYTHON={sys.executable}", "-DELFKIT_PACK=OFF",
         f"-DELFKIT_CLANG={clang}", f"-DELFKIT_LLD={lld}"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([cmake, "--build", str(bdir), "--target", "standalone", "relocs"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ziglang cc" not in (bdir / "build.ninja").read_text()
    for arch in ARCHES:
        with _open(bdir / "plugins" / arch / "relocs.so") as elf:
            assert _arch_of(elf) == arch
            if arch == "arm":
                assert elf["e_flags"] & 0x400
            if arch.startswith("riscv"):
                assert elf["e_flags"] & 0x6 == 0x4
            assert {t for t, _ in _relocations(elf)[0]} == EXPECTED_RELOCS["relocs"][arch]
        with _open(bdir / "plugins" / arch / "standalone.so") as elf:
            assert not [s.name for s in _dynsyms(elf) if s["st_shndx"] == "SHN_UNDEF"]
