"""Loading relocatable objects (``.o``, ET_REL): the catalogue's kernels and
imports plugins compiled with ``-c`` for every CPU (PIC and not, -O2 and
-O0), called through the same Module API as the shared objects and checked
against the catalogue's reference formulas (tests/plugins.py); host imports,
COMMON symbols, init/fini arrays, veneers to far imports; relocation counts
per type checked against pyelftools' reading of the file."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

import elfkit
from tests.plugins import ARCHES, IMPORTS_HOST_FUNCTIONS, KERNELS_EXPORTS, f32

from .objects import VARIANTS, backend, build_object

PARAMS = [pytest.param(a, pic, opt, id=f"{a}{pic}{opt}") for a in ARCHES
          for pic, opt in VARIANTS]

#: exports of kernels.c called with these arguments, checked against Export.ref
KERNEL_CALLS = {
    "add_i32": [(2**31 - 1, 1), (-5, 3)],
    "add_i64": [(2**63 - 1, 1), (-(2**40), 7)],
    "mul_u64": [(2**40 + 3, 2**30 + 5)],
    "many_i32": [tuple(range(-3, 7))],
    "many_i64": [tuple(2**40 + k for k in range(10))],
    "muladd_f64": [(1.5, -2.25, 0.125)],
    "scale_f32": [(1.1, 3.0)],
    "mix_if": [(3, 0.5, -7, 2.5)],
    "mix_fd": [(1.25, 2.5, -3.75, 4.0, 0.5)],
    "many_f64": [tuple(0.5 * k - 1 for k in range(10))],
    "many_f32": [tuple(f32(0.1 * k) for k in range(10))],
    "many_mixed": [tuple(x for k in range(10) for x in (k - 4, 0.25 * k))],
    "bss_size": [()],
    "spin": [(1000,)],
    "recurse": [(20,)],
}


def _load(path, arch, **kw):
    return elfkit.load(path, backend=kw.pop("backend", backend(arch)), **kw)


@pytest.mark.parametrize("arch,pic,opt", PARAMS)
def test_kernels_object(arch, pic, opt):
    path = build_object("kernels.c", arch, pic, opt)
    be = backend(arch)
    with _load(path, arch, backend=be) as m:
        assert m.arch.name == arch and m.backend == be
        assert set(KERNEL_CALLS) <= set(m.exports)
        for name, calls in KERNEL_CALLS.items():
            spec = KERNELS_EXPORTS[name]
            fn = m.function(name, spec.signature)
            for args in calls:
                assert fn(*args) == spec.ref(*args), (name, args)
        # buffers by pointer
        a = np.arange(1, 9, dtype=np.float64)
        b = np.linspace(-1, 1, 8)
        assert m.function("dot_f64", "f64(ptr,ptr,i64)")(a, b, 8) == \
            KERNELS_EXPORTS["dot_f64"].ref(a, b, 8)
        out = np.zeros(5, dtype=np.int32)
        m.function("iota_i32", "void(ptr,i64,i32)")(out, 5, 2**31 - 2)
        assert out.tolist() == [2**31 - 2, 2**31 - 1, -(2**31), -(2**31) + 1, -(2**31) + 2]
        # .bss is zero and 1 MiB of it is in the image
        assert m.function("bss_sum", "u64()")() == 0
        m.function("bss_fill", "void(u32)")(7)
        assert m.function("bss_sum", "u64()")() == sum((7 + i) & 0xFF for i in range(1 << 20))
        bss = m.function("bss_address", "ptr()")()
        assert m.address_range[0] <= bss and bss + (1 << 20) <= m.address_range[1]


def test_non_pic_x86_64_native_below_2gib():
    """Non-PIC x86_64 code addresses its data with 32-bit absolute
    relocations (R_X86_64_32/32S): the native machine maps the image in the
    low 2 GiB, where a value one past the end of the 1 MiB .bss still fits."""
    if backend("x86_64") != "native":
        pytest.skip("needs an x86_64 host")
    path = build_object("kernels.c", "x86_64", "-fno-PIC", "-O2")
    want = [r for _sec, _i, r in _relocations(path) if r["r_info_type"] in (10, 11)]
    with _load(path, "x86_64") as m:
        assert m.backend == "native"
        counts = m.relocation_counts
        assert counts["R_X86_64_32S"] + counts.get("R_X86_64_32", 0) == len(want) > 0
        lo, hi = m.address_range
        assert lo >= 0x10000 and hi <= 1 << 31
        m.function("bss_fill", "void(u32)")(3)
        assert m.function("bss_sum", "u64()")() == sum((3 + i) & 0xFF for i in range(1 << 20))


def _relocations(path):
    """(relocation section, index, relocation) of every relocation, by pyelftools."""
    with open(path, "rb") as f:
        ef = ELFFile(f)
        return [(sec, i, r) for sec in ef.iter_sections()
                if isinstance(sec, RelocationSection)
                for i, r in enumerate(sec.iter_relocations())]


def host_imports(log, add=lambda a, b: a + b):
    return {"host_add": (add, IMPORTS_HOST_FUNCTIONS["host_add"]),
            "host_log": (log.append, IMPORTS_HOST_FUNCTIONS["host_log"]),
            "host_scale": (lambda x, s: x * s, IMPORTS_HOST_FUNCTIONS["host_scale"])}


@pytest.mark.parametrize("arch,pic,opt", PARAMS)
def test_imports_object(arch, pic, opt):
    path = build_object("imports.c", arch, pic, opt)
    be = backend(arch)
    log: list[int] = []
    imports = elfkit.Imports(host_imports(log))
    # a newer registration is searched first: its host_add wins
    imports.register({"host_add": (lambda a, b: a * 1000 + b,
                                   IMPORTS_HOST_FUNCTIONS["host_add"])})
    m = _load(path, arch, backend=be, imports=imports)
    with m:
        assert log == [100]                    # the .init_array entry ran, imports bound
        add = m.function("call_host_add", "i32(i32,i32)")
        assert add(3, 4) == 3004
        assert m.function("call_host_add_ptr", "i32(i32,i32)")(5, 6) == 5006
        assert m.function("sum_via_host", "i32(ptr,i32)")(
            np.array([1, 2, 3], dtype=np.int32), 3) == ((0 * 1000 + 1) * 1000 + 2) * 1000 + 3
        assert m.function("call_host_scale", "f64(f64,f32)")(2.0, 1.5) == 3.0
        m.function("call_host_log", "void(i32)")(7)
        # host_optional is weak and missing: bound to 0
        assert m.function("has_optional", "i32()")() == 0
        assert m.function("call_optional", "i32(i32)")(9) == -1
        p = m.exports["g_host_add_ptr"]
        assert int.from_bytes(m.read(p, m.arch.word), "little") != 0
    assert log == [100, 7, 200]                # the .fini_array entry ran at close


@pytest.mark.parametrize("arch", ARCHES)
def test_weak_import_bound_when_provided(arch):
    path = build_object("imports.c", arch)
    log: list[int] = []
    host = {**host_imports(log), "host_optional": (lambda x: 3 * x,
                                            IMPORTS_HOST_FUNCTIONS["host_optional"])}
    with _load(path, arch, imports=host) as m:
        assert m.function("has_optional", "i32()")() == 1
        assert m.function("call_optional", "i32(i32)")(9) == 27


def test_missing_import_is_named():
    path = build_object("imports.c", "aarch64")
    with pytest.raises(elfkit.UnresolvedImportError, match="host_add") as e:
        _load(path, "aarch64", imports={})
    assert set(e.value.names) == {"host_add", "host_log", "host_scale"}


@pytest.mark.parametrize("arch", ARCHES)
def test_common_symbols_and_init_fini_arrays(arch):
    path = build_object("common_init.c", arch, extra=("-fcommon",))
    with open(path, "rb") as f:
        commons = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                   if s["st_shndx"] == "SHN_COMMON"}
    assert {"common_counter", "common_table", "init_order"} <= commons
    log: list[int] = []
    with _load(path, arch, imports={"host_log": (log.append, "void(i32)")}) as m:
        assert log == [123]     # .init_array.101, .init_array.200, then .init_array
        assert m.function("get_common", "i32()")() == 0
        m.function("set_common", "void(i32)")(-77)
        assert m.function("get_common", "i32()")() == -77
        assert int.from_bytes(m.read(m.exports["common_counter"], 4), "little",
                              signed=True) == -77
        assert m.function("table_sum", "i64()")() == 0
        m.function("table_fill", "void(i64)")(2**40)
        assert m.function("table_sum", "i64()")() == 64 * 2**40 + sum(range(64))
        table = m.function("table_address", "ptr()")()
        assert table == m.exports["common_table"] and table % 8 == 0
        lo, hi = m.address_range
        assert lo <= table and table + 64 * 8 <= hi
    assert log == [123, -2, -1]     # .fini_array in reverse order


def _pyelftools_counts(path):
    """Relocation type numbers of the sections a load relocates (those whose
    target is SHF_ALLOC), counted by pyelftools."""
    counts: collections.Counter[int] = collections.Counter()
    with open(path, "rb") as f:
        ef = ELFFile(f)
        for sec in ef.iter_sections():
            if isinstance(sec, RelocationSection) and \
                    ef.get_section(sec["sh_info"])["sh_flags"] & 2:
                counts.update(r["r_info_type"] for r in sec.iter_relocations())
    return counts


@pytest.mark.parametrize("arch,pic,opt", PARAMS)
def test_relocation_counts_match_pyelftools(arch, pic, opt):
    path = build_object("imports.c", arch, pic, opt)
    be = backend(arch)
    want = _pyelftools_counts(path)
    with _load(path, arch, backend=be, lazy=True, init=False) as m:
        numbers = {rt.name: n for n, rt in m.arch.obj_relocs.items()}
        got = collections.Counter({numbers[name]: c for name, c in m.relocation_counts.items()})
    assert got == want and sum(want.values()) > 0


#: arch -> (bytes kept free between provider and importer, reach of its calls)
FAR = {"x86_64": (3 << 30, 1 << 31), "aarch64": (160 << 20, 128 << 20),
       "arm": (40 << 20, 32 << 20), "riscv64": (3 << 30, 1 << 31)}


@pytest.mark.parametrize("arch", sorted(FAR))
def test_far_import_goes_through_a_veneer(arch):
    """An import bound to a function further away than the object's calls
    reach (x86_64 PLT32 +-2 GiB, aarch64 CALL26 +-128 MiB, arm BL +-32 MiB,
    riscv64 AUIPC+JALR +-2 GiB):
    the calls go through veneers the loader builds.  The provider is
    another module in the same machine, with a reservation in between."""
    gap, reach = FAR[arch]
    log: list[int] = []
    # emulated: the emulator places images one after the other (the host's
    # mmap would put the importer in any hole near the provider)
    with _load(build_object("far_provider.c", arch), arch, backend="emulated") as provider:
        spacer = provider.machine.reserve(gap, provider.arch.page_size)
        try:
            imports = elfkit.Imports(host_imports(log))
            imports.register(provider)
            with elfkit.load(build_object("imports.c", arch), machine=provider.machine,
                             imports=imports) as m:
                far = provider.exports["host_add"]
                lo, hi = m.address_range
                assert min(abs(far - lo), abs(far - hi)) > reach
                assert m.function("call_host_add", "i32(i32,i32)")(40, 2) == 1000042
                assert m.function("sum_via_host", "i32(ptr,i32)")(
                    np.array([1, 2], dtype=np.int32), 2) == 2000003
        finally:
            provider.machine.release(spacer, gap)


def test_objects_in_a_fatelf(tmp_path):
    from elfkit import fatelf
    paths = [build_object("kernels.c", a) for a in ("x86_64", "aarch64", "riscv64")]
    sos = tmp_path / "kernels.sos"
    sos.write_bytes(fatelf.pack(paths))
    for a in ("x86_64", "aarch64", "riscv64"):
        with elfkit.load(sos, arch=a, backend="emulated") as m:
            assert m.arch.name == a
            assert m.function("add_i64", "i64(i64,i64)")(2**62, 2**62) == -(2**63)


THUMB = ("-target", "thumb-freestanding-eabihf", "-mcpu=generic+v7a")


@pytest.mark.parametrize("pic,opt", VARIANTS)
def test_thumb_objects(pic, opt):
    """arm objects in Thumb-2 code: THM_CALL (a BLX to A32 code: the host
    callbacks), THM_JUMP24 tail calls to A32 code through a Thumb veneer,
    THM_MOVW/MOVT; exports carry the Thumb bit."""
    with _load(build_object("kernels.c", "arm", pic, opt, extra=THUMB), "arm") as m:
        assert m.exports["add_i32"] & 1
        for name in ("add_i64", "many_mixed", "mix_fd", "recurse"):
            spec = KERNELS_EXPORTS[name]
            for args in KERNEL_CALLS[name]:
                assert m.function(name, spec.signature)(*args) == spec.ref(*args), name
    log: list[int] = []
    with _load(build_object("imports.c", "arm", pic, opt, extra=THUMB), "arm",
               imports=host_imports(log)) as m:
        assert any(k.startswith("R_ARM_THM_") for k in m.relocation_counts)
        assert m.function("call_host_add", "i32(i32,i32)")(3, 4) == 7
        assert m.function("sum_via_host", "i32(ptr,i32)")(
            np.array([1, 2, 3], dtype=np.int32), 3) == 6
        assert m.function("call_host_scale", "f64(f64,f32)")(2.0, 1.5) == 3.0
        assert m.function("call_optional", "i32(i32)")(3) == -1
    assert log == [100, 200]
