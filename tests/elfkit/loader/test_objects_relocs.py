"""Relocatable objects: RISC-V objects built for linker relaxation (RELAX,
ALIGN, compressed branches, ADD/SUB/SET in ``.eh_frame``), unknown
relocation types refused with every offender named, and IREE's static
library output (``--iree-llvmcpu-link-static``) loaded and queried."""
from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

import elfkit
from elfkit.errors import RelocationError
from tests.plugins import KERNELS_EXPORTS

from .objects import CACHE, REPO, backend, build_object

RELAXED = ("-mrelax", "-falign-functions=16", "-funwind-tables", "-fasynchronous-unwind-tables")


def _fdes(data: bytes, addr: int) -> set[tuple[int, int]]:
    """(pc_begin, pc_range) of the FDEs of a loaded ``.eh_frame`` at ``addr``
    (pc-relative signed 4-byte pc_begin, 4-byte range: clang's encoding)."""
    out = set()
    pos = 0
    while pos + 4 <= len(data):
        (length,) = struct.unpack_from("<I", data, pos)
        if length == 0:
            break
        (cie_id,) = struct.unpack_from("<I", data, pos + 4)
        if cie_id:                       # an FDE
            rel, size = struct.unpack_from("<iI", data, pos + 8)
            out.add((addr + pos + 8 + rel, size))
        pos += 4 + length
    return out


@pytest.mark.parametrize("arch", ["riscv64", "riscv32"])
def test_riscv_relaxable_object(arch):
    """Built for relaxation: the loader does not relax, so every
    R_RISCV_ALIGN's NOPs stay and are checked; the FDEs of .eh_frame
    (32_PCREL starts, ADD32/SUB32 lengths) match the functions' addresses
    and sizes from .symtab."""
    path = build_object("kernels.c", arch, extra=RELAXED)
    with elfkit.load(path) as m:
        counts = m.relocation_counts
        for name in ("ALIGN", "RELAX", "BRANCH", "RVC_BRANCH", "RVC_JUMP", "CALL_PLT",
                     "PCREL_HI20", "PCREL_LO12_I", "ADD32", "SUB32", "SET6", "SUB6",
                     "32_PCREL"):
            assert counts.get(f"R_RISCV_{name}", 0) > 0, name
        spec = KERNELS_EXPORTS["many_mixed"]
        args = tuple(x for k in range(10) for x in (k - 4, 0.25 * k))
        assert m.function("many_mixed", spec.signature)(*args) == spec.ref(*args)
        assert m.function("recurse", "u64(u64)")(30) == KERNELS_EXPORTS["recurse"].ref(30)
        placed = ELFFile(io.BytesIO(bytes(m.elf.data)))      # sections at image offsets
        eh = placed.get_section_by_name(".eh_frame")
        fdes = _fdes(m.read(m.base + eh["sh_addr"], eh["sh_size"]), m.base + eh["sh_addr"])
        funcs = {(m.exports[s.name], s["st_size"]) for s in
                 placed.get_section_by_name(".symtab").iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s.name in m.exports}
        assert funcs and funcs <= fdes


def test_riscv_align_padding_must_be_nops(tmp_path):
    """An R_RISCV_ALIGN whose padding is not NOPs is refused (the loader
    keeps the padding as it is, it does not relax)."""
    path = build_object("kernels.c", "riscv64", extra=RELAXED)
    data = bytearray(path.read_bytes())
    ef = ELFFile(io.BytesIO(bytes(data)))
    text = ef.get_section_by_name(".text")
    rels = ef.get_section_by_name(".rela.text")
    align = [(i, r) for i, r in enumerate(rels.iter_relocations())
             if r["r_info_type"] == 43 and r["r_addend"] >= 4]
    i, r = align[0]
    data[text["sh_offset"] + r["r_offset"]:text["sh_offset"] + r["r_offset"] + 4] = \
        bytes.fromhex("73001000")        # ebreak instead of a nop
    with pytest.raises(RelocationError, match=r"R_RISCV_ALIGN.*not all NOPs") as e:
        elfkit.load(bytes(data))
    assert e.value.problems == [f".rela.text[{i}] at offset {r['r_offset']:#x}: R_RISCV_ALIGN: "
                                f"the {r['r_addend']} bytes of alignment padding are not all "
                                "NOPs"]


@pytest.mark.parametrize("arch", ["x86_64", "aarch64", "arm"])
def test_unknown_relocation_types_refused_all_named(arch, tmp_path):
    """Types patched to a number no table has: the load fails and names
    each one (section, index, offset, type, symbol)."""
    path = build_object("imports.c", arch)
    data = bytearray(path.read_bytes())
    ef = ELFFile(io.BytesIO(bytes(data)))
    is64 = ef.elfclass == 64
    bad = 200 if not is64 else 0xBEEF
    sec = next(s for s in ef.iter_sections() if isinstance(s, RelocationSection)
               and s.name.endswith(".text"))
    ent = sec["sh_entsize"]
    picked = [0, sec.num_relocations() - 1]
    want = []
    symtab = ef.get_section_by_name(".symtab")
    for i in picked:
        at = sec["sh_offset"] + i * ent + (8 if is64 else 4)
        if is64:
            (info,) = struct.unpack_from("<Q", data, at)
            struct.pack_into("<Q", data, at, (info & ~0xFFFFFFFF) | bad)
            sym = info >> 32
        else:
            (info,) = struct.unpack_from("<I", data, at)
            struct.pack_into("<I", data, at, (info & ~0xFF) | bad)
            sym = info >> 8
        r = sec.get_relocation(i)
        want.append(f"{sec.name}[{i}] at offset {r['r_offset']:#x}: unknown type {bad} "
                    f"against symbol {sym} {symtab.get_symbol(sym).name!r}: not a {arch} "
                    "object relocation type this loader knows")
    with pytest.raises(RelocationError) as e:
        elfkit.load(bytes(data), imports={"host_add": (lambda a, b: a + b, "i32(i32,i32)"),
                                          "host_log": (lambda c: None, "void(i32)"),
                                          "host_scale": (lambda x, s: x, "f64(f64,f32)")})
    assert e.value.problems == want
    bad_file = tmp_path / "bad.o"
    bad_file.write_bytes(data)
    out = subprocess.run([sys.executable, "-m", "elfkit", "inspect", str(bad_file)],
                         capture_output=True)
    assert out.returncode == 1 and b"2 relocation(s) of unknown type" in out.stdout


# ---------------------------------------------------------------- IREE

#: the CPUs the IREE static library is built for (triples: IREE_TARGET_FLAGS)
IREE_ARCHES = ("x86_64", "aarch64")


def _iree_static(arch: str) -> bytes:
    exe = shutil.which("iree-compile")
    if exe is None:
        pytest.skip("iree-compile is not installed (pip install iree-base-compiler)")
    from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, cache_key
    src = REPO / "examples" / "simple_mul.mlir"
    flags = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             *IREE_TARGET_FLAGS[arch], "--iree-llvmcpu-link-embedded=false",
             "--iree-llvmcpu-link-static"]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    out = CACHE / "iree" / cache_key(src.read_bytes(), " ".join(flags), version) / arch
    obj = out / "simple_mul.o"
    if not obj.is_file():
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / "tmp.o"
        subprocess.run([exe, str(src), *flags, f"--iree-llvmcpu-static-library-output-path={tmp}",
                        "-o", str(out / "simple_mul.vmfb")], check=True, capture_output=True,
                       timeout=600)
        tmp.replace(obj)
    return obj.read_bytes()


@pytest.mark.parametrize("arch", IREE_ARCHES)
def test_iree_static_library_object(arch):
    data = _iree_static(arch)
    ef = ELFFile(io.BytesIO(data))
    assert ef["e_type"] == "ET_REL"
    assert any(s.name.startswith(".rela.text") for s in ef.iter_sections())
    assert any(s.name.startswith(".rela.data.rel.ro") for s in ef.iter_sections())
    queries = [s.name for s in ef.get_section_by_name(".symtab").iter_symbols()
               if s.name.endswith("_library_query") and s["st_info"]["bind"] == "STB_GLOBAL"
               and s["st_info"]["type"] == "STT_FUNC" and s["st_shndx"] != "SHN_UNDEF"]
    assert len(queries) == 1
    with elfkit.load(data, backend=backend(arch)) as m:
        assert queries[0] in m.exports
        query = m.function(queries[0], "ptr(u32,ptr)")
        lib = query(6, None)            # IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6
        assert lib and m.address_range[0] <= lib < m.address_range[1]
        w = m.arch.word
        header = int.from_bytes(m.read(lib, w), "little")
        version, = struct.unpack("<I", m.read(header, 4))
        name_ptr = int.from_bytes(m.read(header + w, w), "little")
        assert version == 6
        assert m.read(name_ptr, 64).split(b"\0")[0] == queries[0][:-len("_library_query")] \
            .encode()
        assert query(5, None) is None or query(5, None) == 0
    # the library's tables (.data.rel.ro.*) are read-only once relocated
    from elfkit.exec.base import PROT_READ
    from elfkit.exec.memory import MemoryMachine
    mm = MemoryMachine(elfkit.arch.get(arch))
    with elfkit.load(data, machine=mm, init=False) as m:
        placed = ELFFile(io.BytesIO(bytes(m.elf.data)))      # sh_addr: image offsets
        relro = [s for s in placed.iter_sections() if s.name.startswith(".data.rel.ro")]
        assert relro and all(mm.prot_at(m.base + s["sh_addr"]) == PROT_READ for s in relro)


# ---------------------------------------------------------------- inspect

def test_inspect_object(tmp_path):
    """``elfkit inspect`` of a .o: sections with their relocation counts,
    totals equal to pyelftools' count, the undefined symbols as imports."""
    import json
    from collections import Counter

    path = build_object("imports.c", "aarch64")
    run = [sys.executable, "-m", "elfkit", "inspect", str(path)]
    text = subprocess.run(run, capture_output=True, text=True)
    assert text.returncode == 0
    assert "aarch64 ELF64 little-endian relocatable object" in text.stdout
    assert "host_optional (weak: may be missing)" in text.stdout
    assert "loadable: yes" in text.stdout
    info = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True).stdout)
    assert info["kind"] == "object" and info["loadable"]
    assert {i["name"]: i["weak"] for i in info["imports"]} == {
        "host_add": False, "host_log": False, "host_scale": False, "host_optional": True}
    assert {e["name"] for e in info["exports"]} == {
        "g_host_add_ptr", "call_host_add", "call_host_add_ptr", "sum_via_host", "call_host_log",
        "call_host_scale", "has_optional", "call_optional"}
    with open(path, "rb") as f:
        ef = ELFFile(f)
        want: Counter[str] = Counter()
        per: dict[str, Counter[str]] = {}
        for sec in ef.iter_sections():
            if isinstance(sec, RelocationSection):
                target = ef.get_section(sec["sh_info"])
                if target["sh_flags"] & 2:
                    names = Counter(elfkit.arch.get("aarch64").obj_relocs[r["r_info_type"]].name
                                    for r in sec.iter_relocations())
                    want += names
                    per[target.name] = names
    assert info["relocations"] == dict(want)
    assert {s["name"]: s["relocations"] for s in info["sections_loaded"]
            if s["relocations"]} == {k: dict(v) for k, v in per.items()}


# ------------------------------------------------- placed bytes, protections

#: word-sized types whose stored value is S+A (abs) or S+A-P (pc), by arch
WORDS = {"x86_64": {1: (8, "abs"), 2: (4, "pc"), 10: (4, "abs"), 11: (4, "abs")},
         "i386": {1: (4, "abs"), 2: (4, "pc")},
         "aarch64": {257: (8, "abs"), 261: (4, "pc")},
         "riscv64": {2: (8, "abs"), 57: (4, "pc")},
         "arm": {2: (4, "abs"), 3: (4, "pc")}}


@pytest.mark.parametrize("arch", sorted(WORDS))
def test_object_words_and_protections(arch):
    """Word relocations recomputed from pyelftools' reading of the object
    (S from .symtab and the section placement the load reports, A from the
    RELA entry or, for REL, the original bytes), and each section's
    protection (code R-X, writable data RW, the rest read-only)."""
    from elfkit.exec.base import PROT_EXEC, PROT_READ, PROT_WRITE
    from elfkit.exec.memory import MemoryMachine

    path = build_object("imports.c", arch, "-fno-PIC", "-O0",
                        extra=("-funwind-tables",) if arch == "riscv64" else ())
    raw = path.read_bytes()
    orig = ELFFile(io.BytesIO(raw))
    imports = {"host_add": 0x1000, "host_log": 0x2000, "host_scale": 0x3000}
    mm = MemoryMachine(elfkit.arch.get(arch))
    m = elfkit.load(raw, machine=mm, imports=imports, init=False)
    placed = ELFFile(io.BytesIO(bytes(m.elf.data)))      # sh_addr: image offsets
    symtab = orig.get_section_by_name(".symtab")
    mask = (1 << (8 * m.arch.word)) - 1
    checked = 0
    for sec in orig.iter_sections():
        if not isinstance(sec, RelocationSection):
            continue
        target = orig.get_section(sec["sh_info"])
        if not target["sh_flags"] & 2:
            continue
        where = m.base + placed.get_section(sec["sh_info"])["sh_addr"]
        for r in sec.iter_relocations():
            kind = WORDS[arch].get(r["r_info_type"])
            if kind is None:
                continue
            size, how = kind
            sym = symtab.get_symbol(r["r_info_sym"])
            if sym["st_shndx"] == "SHN_UNDEF":
                s = imports.get(sym.name, 0)
            else:
                s = m.base + placed.get_section(sym["st_shndx"])["sh_addr"] + sym["st_value"]
            if r.is_RELA():
                a = r["r_addend"]
            else:
                off = target["sh_offset"] + r["r_offset"]
                a = int.from_bytes(raw[off:off + size], "little", signed=True)
            p = where + r["r_offset"]
            want = (s + a - (p if how == "pc" else 0)) & ((1 << 8 * size) - 1) & mask
            assert int.from_bytes(m.read(p, size), "little") == want, (sec.name, r)
            checked += 1
    assert checked > 0
    for sec in placed.iter_sections():
        if not sec["sh_flags"] & 2 or not sec["sh_size"]:
            continue
        prot = mm.prot_at(m.base + sec["sh_addr"])
        assert bool(prot & PROT_EXEC) == bool(sec["sh_flags"] & 4), sec.name
        relro = sec.name.startswith(".data.rel.ro")     # read-only once relocated
        assert bool(prot & PROT_WRITE) == (bool(sec["sh_flags"] & 1) and not relro), sec.name
        assert prot & PROT_READ
    m.close()


def test_run_and_disasm_objects():
    """``elfkit run`` calls an export of a .o; ``elfkit disasm`` lists its
    functions at the image offsets a load gives them."""
    path = build_object("kernels.c", "aarch64", extra=("-ffunction-sections",))
    run = subprocess.run([sys.executable, "-m", "elfkit", "run", str(path), "--call", "add_i64",
                          "--sig", "i64(i64,i64)", "--arg", "5", "--arg", "-7"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.split() == ["-2"], run
    with elfkit.load(path, init=False) as m:
        offsets = {n: a - m.base for n, a in m.exports.items()}
    assert len(set(offsets.values())) == len(offsets)     # one .text.* section each, apart
    dis = subprocess.run([sys.executable, "-m", "elfkit", "disasm", str(path), "mul_u64"],
                         capture_output=True, text=True)
    assert dis.returncode == 0
    assert f"{offsets['mul_u64']:016x} <mul_u64>:" in dis.stdout


@pytest.mark.parametrize("arch", ["x86_64", "arm"])
def test_damaged_objects_end_in_our_errors(arch):
    """Truncated or corrupted objects (fixed seed) load or raise an
    ElfkitError, never IndexError, struct.error or the like."""
    import random

    from elfkit.exec.memory import MemoryMachine

    raw = build_object("imports.c", arch).read_bytes()
    rng = random.Random(25)
    imports = {"host_add": 0x1000, "host_log": 0x1000, "host_scale": 0x1000}
    for it in range(150):
        data = bytearray(raw[:rng.randrange(len(raw))] if it % 4 == 0 else raw)
        for _ in range(rng.randrange(1, 8) if it % 4 else 0):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            elfkit.load(bytes(data), machine=MemoryMachine(elfkit.arch.get(arch)),
                        imports=imports, init=False, lazy=True).close()
        except elfkit.ElfkitError:
            pass


def test_ifunc_in_an_object_refused():
    """A call to an IFUNC needs its resolver run at load time, which the
    object loader does not do: the relocations against it are refused, by
    name, rather than calling the resolver in its place."""
    path = build_object("relocs.c", "aarch64")
    with open(path, "rb") as f:
        ef = ELFFile(f)
        symtab = ef.get_section_by_name(".symtab")
        want = [(sec.name, i) for sec in ef.iter_sections() if isinstance(sec, RelocationSection)
                and ef.get_section(sec["sh_info"])["sh_flags"] & 2
                for i, r in enumerate(sec.iter_relocations())
                if symtab.get_symbol(r["r_info_sym"])["st_info"]["type"] == "STT_LOOS"
                or symtab.get_symbol(r["r_info_sym"])["st_info"]["type"] == "STT_GNU_IFUNC"]
    assert want
    with pytest.raises(RelocationError) as e:
        elfkit.load(path)
    assert [p.split(" at ")[0] for p in e.value.problems] == [f"{n}[{i}]" for n, i in want]
    assert all("IFUNC" in p and "'ifunc_target'" in p for p in e.value.problems)


@pytest.mark.parametrize("arch", ["riscv64", "riscv32"])
def test_riscv_uleb128_and_add_sub_pairs(arch):
    """SET_ULEB128/SUB_ULEB128 and ADD32/SUB32 pairs over relaxable code:
    the loader does not relax, so they come to the distance of the two
    labels in the object (pyelftools' .symtab)."""
    path = build_object("uleb.s", arch)
    with open(path, "rb") as f:
        syms = {s.name: s["st_value"] for s in
                ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    length = syms["code_end"] - syms["code_len"]
    assert 0 < length < 128
    with elfkit.load(path) as m:
        counts = m.relocation_counts
        for name in ("SET_ULEB128", "SUB_ULEB128", "ADD32", "SUB32", "ALIGN"):
            assert counts[f"R_RISCV_{name}"] == 1
        assert m.read(m.exports["uleb_len"], 1)[0] == length
        assert m.function("code_len", "i32()")() == length


@pytest.mark.parametrize("arch", ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"])
def test_any_known_type_anywhere_ends_in_our_errors(arch):
    """Relocations rewritten to a random known type and symbol (fixed seed)
    load or raise an ElfkitError: no table entry makes the loader crash."""
    import random

    from elfkit.exec.memory import MemoryMachine

    raw = build_object("imports.c", arch).read_bytes()
    ef = ELFFile(io.BytesIO(raw))
    is64 = ef.elfclass == 64
    secs = [s for s in ef.iter_sections() if isinstance(s, RelocationSection)]
    types = sorted(elfkit.arch.get(arch).obj_relocs)
    rng = random.Random(25)
    imports = {"host_add": 0x1000, "host_log": 0x1000, "host_scale": 0x1000}
    for _ in range(120):
        data = bytearray(raw)
        sec = rng.choice(secs)
        at = sec["sh_offset"] + rng.randrange(sec.num_relocations()) * sec["sh_entsize"] \
            + (8 if is64 else 4)
        rtype, sym = rng.choice(types), rng.choice([0, rng.randrange(1, 6)])
        if is64:
            struct.pack_into("<Q", data, at, (sym << 32) | rtype)
        else:
            struct.pack_into("<I", data, at, (sym << 8) | rtype)
        try:
            elfkit.load(bytes(data), machine=MemoryMachine(elfkit.arch.get(arch)),
                        imports=imports, init=False, lazy=True).close()
        except elfkit.ElfkitError:
            pass
