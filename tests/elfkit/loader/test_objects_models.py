"""Relocatable objects of every code model: the catalogue's kernels.c built
with ``-c`` for each ``-mcmodel`` a CPU has (x86_64 small/medium/large,
aarch64 tiny/small/large, RISC-V medlow/medany, with linker relaxation on
and off), position independent and not, by the toolchain's clang for all
six CPUs and by the host's gcc for the host's; every export called natively
(host CPU) and emulated and compared with the same source built as a shared
object (the catalogue's ``kernels.so``).  Non-PIC x86_64 small-model code
(R_X86_64_32/32S) is placed in the low 2 GiB; what cannot be placed is
refused naming each relocation.  Objects built with ``-g``: their
``.rela.debug_*`` are applied, so a fault report names the source line
pyelftools' line program of the same object gives."""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit.errors import EmulationFault, RelocationError
from tests.plugins import ARCHES, KERNELS_EXPORTS

from .objects import HERE, backend, build_gcc_object, build_object, gcc_arch
from .test_objects import KERNEL_CALLS, host_imports

PICS = ("-fPIC", "-fno-PIC")
#: code models per CPU: (extra flags, the -f options clang accepts them with)
MODELS: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "x86_64": [((f"-mcmodel={m}",), PICS) for m in ("small", "medium", "large")],
    # clang: "-mcmodel=large only allowed with -fno-pic" on aarch64
    "aarch64": [(("-mcmodel=tiny",), PICS), (("-mcmodel=small",), PICS),
                (("-mcmodel=large",), ("-fno-PIC",))],
    **{a: [((f"-mcmodel={m}", r), PICS) for m in ("medlow", "medany")
           for r in ("-mrelax", "-mno-relax")] for a in ("riscv64", "riscv32")},
    "arm": [((), PICS)],
    "i386": [((), PICS)],
}
VARIANTS = [pytest.param(a, extra, pic, id=f"{a}{''.join(extra)}{pic}")
            for a in ARCHES for extra, pics in MODELS[a] for pic in pics]
GCC = gcc_arch()
GCC_VARIANTS = [pytest.param(f"-mcmodel={m}", pic, opt, id=f"gcc-mcmodel={m}{pic}{opt}")
                for m in ("small", "medium", "large") for pic in ("-fPIC", "-fno-pic")
                for opt in ("-O2", "-O0")]
needs_gcc = pytest.mark.skipif(GCC != "x86_64", reason="needs the host's gcc for x86_64")


def _backends(arch):
    return ["native", "emulated"] if backend(arch) == "native" else ["emulated"]


def _results(path, be):
    """Every KERNEL_CALLS result and .bss use of ``path`` on ``be``."""
    out = []
    with elfkit.load(path, backend=be) as m:
        assert m.backend == be
        for name, calls in KERNEL_CALLS.items():
            fn = m.function(name, KERNELS_EXPORTS[name].signature)
            out += [(name, args, fn(*args)) for args in calls]
        m.function("bss_fill", "void(u32)")(9)
        out.append(("bss_sum", (), m.function("bss_sum", "u64()")()))
        counts = m.relocation_counts
        span = m.address_range
    return out, counts, span


def _import_results(path, be):
    """imports.c's calls through host imports (a newer registration of
    host_add first), its init/fini log and relocation counts on ``be``."""
    log: list[int] = []
    imports = elfkit.Imports(host_imports(log))
    imports.register({"host_add": (lambda a, b: a * 1000 + b, "i32(i32,i32)")})
    with elfkit.load(path, backend=be, imports=imports) as m:
        out = [m.function("call_host_add", "i32(i32,i32)")(3, 4),
               m.function("call_host_add_ptr", "i32(i32,i32)")(5, 6),
               m.function("sum_via_host", "i32(ptr,i32)")(np.array([1, 2, 3], dtype=np.int32), 3),
               m.function("call_host_scale", "f64(f64,f32)")(2.0, 1.5),
               m.function("has_optional", "i32()")(), m.function("call_optional", "i32(i32)")(9)]
        m.function("call_host_log", "void(i32)")(7)
        counts = m.relocation_counts
    return (out, log), counts


@pytest.fixture(scope="module")
def shared_results(plugins):
    """The catalogue's kernels.so (or imports.so) per CPU, on the same backend."""
    done: dict[tuple[str, str, str], list] = {}

    def get(arch, be, name="kernels"):
        if (arch, be, name) not in done:
            how = _results if name == "kernels" else _import_results
            done[(arch, be, name)] = how(plugins.path(name, arch), be)[0]
        return done[(arch, be, name)]
    return get


@pytest.mark.parametrize("arch,extra,pic", VARIANTS)
def test_code_model_object_matches_shared_object(arch, extra, pic, shared_results):
    path = build_object("kernels.c", arch, pic, "-O2", extra=extra)
    for be in _backends(arch):
        got, counts, (lo, hi) = _results(path, be)
        assert got == shared_results(arch, be), be
        if arch == "x86_64" and pic == "-fno-PIC" and extra == ("-mcmodel=small",):
            assert counts.get("R_X86_64_32S") and hi <= 1 << 31
        if "-mrelax" in extra:
            assert counts.get("R_RISCV_RELAX")
        if arch == "riscv64" and pic == "-fno-PIC" and "-mcmodel=medlow" in extra:
            assert counts.get("R_RISCV_HI20") and hi <= 1 << 31
        if extra == ("-mcmodel=large",) and arch == "aarch64":
            assert counts.get("R_AARCH64_MOVW_UABS_G3")


@pytest.mark.parametrize("arch,extra,pic", VARIANTS)
def test_code_model_imports_object_matches_shared_object(arch, extra, pic, shared_results):
    """Calls to host imports from every code model: PLT/CALL branches,
    GOT loads, import addresses in data (large-model PIC: GOT64, PLTOFF64)."""
    path = build_object("imports.c", arch, pic, "-O2", extra=extra)
    for be in _backends(arch):
        got, counts = _import_results(path, be)
        assert got == shared_results(arch, be, "imports"), be
        if arch == "x86_64" and pic == "-fPIC" and extra == ("-mcmodel=large",):
            assert counts.get("R_X86_64_GOT64")


@needs_gcc
@pytest.mark.parametrize("model,pic,opt", GCC_VARIANTS)
def test_gcc_imports_object_matches_shared_object(model, pic, opt, shared_results):
    path = build_gcc_object("imports.c", pic, opt, extra=(model,))
    for be in _backends("x86_64"):
        got, counts = _import_results(path, be)
        assert got == shared_results("x86_64", be, "imports"), be
        if model == "-mcmodel=large" and pic == "-fPIC":
            assert counts.get("R_X86_64_PLTOFF64") and counts.get("R_X86_64_GOT64")


@needs_gcc
@pytest.mark.parametrize("model,pic,opt", GCC_VARIANTS)
def test_gcc_object_matches_shared_object(model, pic, opt, shared_results):
    """The host's gcc: its small model without -fpic uses R_X86_64_32/32S,
    medium and large R_X86_64_64 and GOTOFF64 / GOTPC32 / GOTPC64."""
    path = build_gcc_object("kernels.c", pic, opt, extra=(model,))
    for be in _backends("x86_64"):
        got, counts, (_lo, hi) = _results(path, be)
        assert got == shared_results("x86_64", be), be
        if model == "-mcmodel=small" and pic == "-fno-pic":
            assert hi <= 1 << 31 and counts.get("R_X86_64_32S")
        if model != "-mcmodel=small" and pic == "-fPIC":
            assert counts.get("R_X86_64_GOTOFF64")


@pytest.mark.parametrize("be", ["native", "emulated"])
def test_unplaceable_absolute_relocation_is_refused(be):
    """A 16-bit absolute address of the object's own data fits only an
    image below 64 KiB, which no machine hands out: the load is refused
    naming the relocation (section, index, offset, type, symbol)."""
    if be == "native" and backend("x86_64") != "native":
        pytest.skip("needs an x86_64 host")
    path = build_object("abs16.s", "x86_64")
    with pytest.raises(RelocationError) as e:
        elfkit.load(path, backend=be)
    assert len(e.value.problems) == 1
    assert e.value.problems[0].startswith(
        ".rela.data[0] at offset 0x0: R_X86_64_16 against symbol")
    assert "'section .data'" in e.value.problems[0]
    assert "below 0x10000" in str(e.value) and f"this {be} machine" in str(e.value)


# ------------------------------------------------------------ DWARF of objects
FAULT_LINE = next(i for i, line in enumerate(
    (HERE / "fault_lines.c").read_text().splitlines(), 1) if "FAULT LINE" in line)
DEBUG = [pytest.param(a, pic, (), id=f"{a}{pic}") for a in ARCHES for pic in PICS] + [
    pytest.param(a, "-fPIC", ("-mrelax",), id=f"{a}-mrelax") for a in ("riscv64", "riscv32")]


def _pyelftools_line(path, func, pc_off):
    """The line pyelftools' line program of the object gives for offset
    ``pc_off`` into function ``func``.  pyelftools applies .rel(a).debug_line
    itself where it knows the types (x86_64, aarch64, arm, i386); for RISC-V
    (not known to it) the three types clang puts there are applied here
    first (R_RISCV_32/64: S+A at DW_LNE_set_address; ADD16/SUB16 pairs at
    DW_LNS_fixed_advance_pc: the difference of their symbols' values).  In
    an object the .text section symbol is 0: the addresses are .text
    offsets."""
    data = path.read_bytes()
    ef = ELFFile(io.BytesIO(data))
    riscv = ef["e_machine"] == "EM_RISCV"
    if riscv:
        ef = ELFFile(io.BytesIO(_riscv_line_applied(ef, data)))
    sym = next(s for s in ef.get_section_by_name(".symtab").iter_symbols() if s.name == func)
    assert ef.get_section(sym["st_shndx"]).name == ".text"
    dw = ef.get_dwarf_info(relocate_dwarf_sections=not riscv)
    rows = sorted((e.state.address, e.state.line) for cu in dw.iter_CUs()
                  for e in dw.line_program_for_CU(cu).get_entries()
                  if e.state is not None and not e.state.end_sequence)
    at = (sym["st_value"] & ~1) + pc_off
    return max(r for r in rows if r[0] <= at)[1]


def _riscv_line_applied(ef, data):
    syms = list(ef.get_section_by_name(".symtab").iter_symbols())
    sec = ef.get_section_by_name(".debug_line")
    out = bytearray(data)
    base = sec["sh_offset"]
    rels = list(ef.get_section_by_name(".rela.debug_line").iter_relocations())
    assert rels
    for r in rels:
        v = syms[r["r_info_sym"]]["st_value"] + r["r_addend"]
        at = base + r["r_offset"]
        kind = r["r_info_type"]
        assert kind in (1, 2, 34, 38), kind       # 32, 64, ADD16, SUB16
        if kind in (1, 2):
            n = 4 * kind
            out[at:at + n] = v.to_bytes(n, "little")
        else:
            old = struct.unpack_from("<H", out, at)[0]
            struct.pack_into("<H", out, at, (old + (v if kind == 34 else -v)) & 0xFFFF)
    return bytes(out)


@pytest.mark.parametrize("arch,pic,extra", DEBUG)
def test_fault_in_debug_object_names_source_line(arch, pic, extra):
    """The report of a fault in a -g object names the line of the faulting
    store in the source, which is also what the object's own line program
    (pyelftools) gives for the fault's pc."""
    path = build_object("fault_lines.c", arch, pic, "-O1", extra=("-g", *extra))
    with elfkit.load(path, backend="emulated") as m:
        assert m.unapplied_relocations == []
        with pytest.raises(EmulationFault) as e:
            m.call("wild_write", 5, restype="void")
        f = e.value
        assert f.source == f"fault_lines.c:{FAULT_LINE}", str(f)
        assert f"(fault_lines.c:{FAULT_LINE})" in str(f).splitlines()[0]
        pc_off = f.pc - (m.exports["wild_write"] & ~1)
        assert m.function("add_i32", "i32(i32,i32)")(2, 3) == 5
    assert _pyelftools_line(path, "wild_write", pc_off) == FAULT_LINE


@pytest.mark.parametrize("arch", ARCHES)
def test_debug_symfile_of_object_has_load_addresses(arch):
    """The gdb symfile of a -g object: its DWARF's subprogram low_pc values
    are the functions' load addresses (relocated .debug_info, then moved
    like a linked plugin's)."""
    from elfkit.exec.symfile import cached_symfile
    path = build_object("fault_lines.c", arch, "-fPIC", "-O1", extra=("-g",))
    with elfkit.load(path, backend="emulated") as m:
        dw = ELFFile(io.BytesIO(cached_symfile(m))).get_dwarf_info()
        lows = {die.attributes["DW_AT_name"].value.decode(): die.attributes["DW_AT_low_pc"].value
                for cu in dw.iter_CUs() for die in cu.iter_DIEs()
                if die.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in die.attributes}
        assert lows == {"add_i32": m.exports["add_i32"], "wild_write": m.exports["wild_write"]}


@needs_gcc
def test_gcc_debug_object_fault_line():
    path = build_gcc_object("fault_lines.c", "-fno-pic", "-O1", extra=("-g",))
    with elfkit.load(path, backend="emulated") as m:
        assert m.unapplied_relocations == []
        with pytest.raises(EmulationFault) as e:
            m.call("wild_write", 5, restype="void")
        assert e.value.source == f"fault_lines.c:{FAULT_LINE}"


def test_unknown_debug_relocation_is_named_and_dwarf_dropped(tmp_path):
    """An unknown relocation type in .rela.debug_line: the code still loads
    (it does not depend on its DWARF), the offender is named in
    ``unapplied_relocations``."""
    path = build_object("fault_lines.c", "x86_64", "-fPIC", "-O1", extra=("-g",))
    data = bytearray(path.read_bytes())
    ef = ELFFile(io.BytesIO(bytes(data)))
    sec = ef.get_section_by_name(".rela.debug_line")
    at = sec["sh_offset"] + 8                         # r_info of relocation 0
    (info,) = struct.unpack_from("<Q", data, at)
    struct.pack_into("<Q", data, at, (info & ~0xFFFFFFFF) | 0xFF)
    off = sec.get_relocation(0)["r_offset"]
    with elfkit.load(bytes(data), backend="emulated") as m:
        assert len(m.unapplied_relocations) == 1
        assert m.unapplied_relocations[0].startswith(
            f".rela.debug_line[0] at offset {off:#x}: unknown type 255")
        assert m.function("add_i32", "i32(i32,i32)")(2, 3) == 5


def test_low_ranges_are_searched():
    """Several non-PIC x86_64 objects in one native machine: each gets its
    own free range below 2 GiB (the first candidate is taken by then), and
    closing one gives its range back."""
    if backend("x86_64") != "native":
        pytest.skip("needs an x86_64 host")
    path = build_object("kernels.c", "x86_64", "-fno-PIC", "-O2", extra=("-mcmodel=small",))
    first = elfkit.load(path, backend="native")
    mods = [first] + [elfkit.load(path, machine=first.machine) for _ in range(3)]
    try:
        spans = sorted(m.address_range for m in mods)
        assert all(hi <= 1 << 31 for _lo, hi in spans)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))      # disjoint
        for k, m in enumerate(mods):
            assert m.function("add_i64", "i64(i64,i64)")(k, 2**40) == 2**40 + k
            m.function("bss_fill", "void(u32)")(k)
        for k, m in enumerate(mods):
            assert m.function("bss_sum", "u64()")() == sum((k + i) & 0xFF for i in range(1 << 20))
    finally:
        for m in reversed(mods):
            m.close()
