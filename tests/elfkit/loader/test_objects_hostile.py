"""Relocatable objects read as pyelftools reads them, and hostile ones
refused: the object parser's sections, symbols and relocations compared
field by field with pyelftools' reading of the catalogue's objects (every
CPU, PIC and not); a real object with one field made wrong (a symbol name
past its string table or not NUL-terminated, a section index out of range,
SHN_XINDEX without its table, a relocation naming a symbol past the table
or a place past its section, a PC-relative value out of reach) ends in our
ParseError / RelocationError naming what and where; a sweep of clobbered
symbol and relocation fields raises nothing but elfkit's errors."""
from __future__ import annotations

import io
import struct

import pytest
from elftools.elf import enums
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

import elfkit
from elfkit.errors import ElfkitError, ParseError, RelocationError
from elfkit.loader.objparse import parse_object
from tests.plugins import ARCHES

from .objects import VARIANTS, build_object

PARAMS = [pytest.param(a, pic, opt, id=f"{a}{pic}{opt}") for a in ARCHES
          for pic, opt in VARIANTS]
_SPECIAL = {"SHN_UNDEF": 0, "SHN_ABS": 0xFFF1, "SHN_COMMON": 0xFFF2}
#: pyelftools' section type names, every CPU's
_SH_TYPES = {k: v for n in dir(enums) if n.startswith("ENUM_SH_TYPE_")
             for k, v in getattr(enums, n).items() if isinstance(v, int)}


def _shndx(v) -> int:
    return v if isinstance(v, int) else _SPECIAL[v]


@pytest.mark.parametrize("src", ["kernels.c", "imports.c", "common_init.c"])
@pytest.mark.parametrize("arch,pic,opt", PARAMS)
def test_parse_matches_pyelftools(arch, pic, opt, src):
    data = build_object(src, arch, pic, opt).read_bytes()
    ours = parse_object(data)
    ref = ELFFile(io.BytesIO(data))
    assert [s.name for s in ours.sections] == [s.name for s in ref.iter_sections()]
    for s, r in zip(ours.sections, ref.iter_sections()):
        t = r["sh_type"]
        assert (s.type, s.flags, s.offset, s.size, s.link, s.info, s.entsize) == (
            t if isinstance(t, int) else _SH_TYPES[t], r["sh_flags"],
            r["sh_offset"], r["sh_size"], r["sh_link"], r["sh_info"], r["sh_entsize"])
        assert s.align == max(r["sh_addralign"], 1)
    tab = next(s for s in ref.iter_sections() if isinstance(s, SymbolTableSection))
    want = [(s.name, s["st_value"], s["st_size"], s.entry.st_info.bind,
             s.entry.st_info.type, s.entry.st_other.visibility, _shndx(s["st_shndx"]))
            for s in tab.iter_symbols()]
    got = [(s.name, s.value, s.size, s.bind, s.type, s.visibility, s.shndx)
           for s in ours.symbols]
    binds = {"STB_LOCAL": 0, "STB_GLOBAL": 1, "STB_WEAK": 2}
    types = {"STT_NOTYPE": 0, "STT_OBJECT": 1, "STT_FUNC": 2, "STT_SECTION": 3, "STT_FILE": 4,
             "STT_COMMON": 5, "STT_TLS": 6}
    vis = {"STV_DEFAULT": 0, "STV_INTERNAL": 1, "STV_HIDDEN": 2, "STV_PROTECTED": 3}
    want = [(n, v, z, binds[b], types[t], vis[o], x) for n, v, z, b, t, o, x in want]
    assert got == want
    rels = [s for s in ref.iter_sections() if isinstance(s, RelocationSection)]
    assert [r.name for r in ours.relsections] == [r.name for r in rels]
    for o, r in zip(ours.relsections, rels):
        assert o.target == r["sh_info"] and o.rela == r.is_RELA()
        assert o.offsets == [x["r_offset"] for x in r.iter_relocations()]
        assert o.types == [x["r_info_type"] for x in r.iter_relocations()]
        assert o.syms == [x["r_info_sym"] for x in r.iter_relocations()]
        assert o.addends == [x["r_addend"] if r.is_RELA() else 0 for x in r.iter_relocations()]


class _Obj:
    """A real x86_64 object and where its fields are, found with pyelftools."""

    def __init__(self, src: str = "kernels.c"):
        self.data = build_object(src, "x86_64").read_bytes()
        f = ELFFile(io.BytesIO(self.data))
        self.secs = list(f.iter_sections())
        self.symtab = next(s for s in self.secs if isinstance(s, SymbolTableSection))
        self.strtab = self.secs[self.symtab["sh_link"]]
        self.rela = next(s for s in self.secs if isinstance(s, RelocationSection)
                         and s.name == ".rela.text")

    def sym_at(self, i: int) -> int:
        return self.symtab["sh_offset"] + 24 * i

    def named_symbol(self) -> int:
        return next(i for i, s in enumerate(self.symtab.iter_symbols()) if s.name and i)

    def with_(self, at: int, fmt: str, value: int) -> bytes:
        out = bytearray(self.data)
        struct.pack_into(fmt, out, at, value)
        return bytes(out)


@pytest.fixture(scope="module")
def obj() -> _Obj:
    return _Obj()


def test_symbol_name_past_its_string_table(obj):
    i = obj.named_symbol()
    bad = obj.with_(obj.sym_at(i), "<I", obj.strtab["sh_size"] + 5)
    with pytest.raises(ParseError, match=rf"symbol {i}: name offset 0x[0-9a-f]+ is outside its "
                                         rf"string table \(section {obj.symtab['sh_link']}"):
        elfkit.load(bad, backend="native")


def test_symbol_name_not_nul_terminated(obj):
    i = obj.named_symbol()
    out = bytearray(obj.data)
    end = obj.strtab["sh_offset"] + obj.strtab["sh_size"]
    out[end - 1] = ord("x")             # the table's last string runs off its end
    struct.pack_into("<I", out, obj.sym_at(i), obj.strtab["sh_size"] - 1)
    with pytest.raises(ParseError, match=rf"symbol {i}: name at offset 0x[0-9a-f]+ of section "
                                         rf"{obj.symtab['sh_link']} is not NUL-terminated"):
        elfkit.load(bytes(out), backend="native")


@pytest.mark.parametrize("shndx", ["count", 0xFEFF, 0xFFF0])
def test_symbol_section_index_out_of_range(obj, shndx):
    i = obj.named_symbol()
    n = len(obj.secs)
    v = n if shndx == "count" else shndx
    bad = obj.with_(obj.sym_at(i) + 6, "<H", v)
    with pytest.raises(ParseError, match=rf"symbol {i}: section index {v} is out of range "
                                         rf"\({n} sections\)"):
        elfkit.load(bad, backend="native")


def test_xindex_without_its_table(obj):
    i = obj.named_symbol()
    bad = obj.with_(obj.sym_at(i) + 6, "<H", 0xFFFF)
    with pytest.raises(ParseError, match=rf"symbol {i}: SHN_XINDEX without a SHT_SYMTAB_SHNDX"):
        elfkit.load(bad, backend="native")


def test_relocation_symbol_past_the_table(obj):
    nsyms = obj.symtab.num_symbols()
    at = obj.rela["sh_offset"] + 24 * 2 + 8      # r_info of .rela.text[2]
    info = int.from_bytes(obj.data[at:at + 8], "little")
    bad = obj.with_(at, "<Q", (nsyms + 3) << 32 | info & 0xFFFFFFFF)
    idx = obj.secs.index(obj.rela)
    with pytest.raises(ParseError, match=rf"section {idx} \(\.rela\.text\): relocation\(s\) 2 "
                                         rf"name symbol indices past the {nsyms} symbols"):
        elfkit.load(bad, backend="native")


def test_relocation_place_past_its_section(obj):
    text = obj.secs[obj.rela["sh_info"]]
    at = obj.rela["sh_offset"] + 24 * 3         # r_offset of .rela.text[3]
    bad = obj.with_(at, "<Q", text["sh_size"])
    idx = obj.secs.index(obj.rela)
    with pytest.raises(ParseError, match=rf"section {idx} \(\.rela\.text\)\[3\]: offset "
                                         rf"{text['sh_size']:#x} is outside the section it "
                                         rf"relocates \(\.text, "):
        elfkit.load(bad, backend="native")


def test_field_running_past_its_section(obj):
    """A 4-byte field whose first byte is the section's last: inside for the
    parser, refused (named) by the relocation."""
    text = obj.secs[obj.rela["sh_info"]]
    rels = list(obj.rela.iter_relocations())
    k = next(i for i, r in enumerate(rels) if r["r_info_type"] in (2, 4))     # PC32 / PLT32
    bad = obj.with_(obj.rela["sh_offset"] + 24 * k, "<Q", text["sh_size"] - 1)
    with pytest.raises(RelocationError) as e:
        elfkit.load(bad, backend="native")
    assert any(p.startswith(f".rela.text[{k}] at offset {text['sh_size'] - 1:#x}: R_X86_64_")
               and "4-byte field runs past the end of .text" in p for p in e.value.problems)


def test_pc_relative_value_out_of_reach(obj):
    """R_X86_64_PC32 against a local symbol with an addend of 2**40: the value
    does not fit 32 signed bits, named with the relocation."""
    rels = list(obj.rela.iter_relocations())
    k = next(i for i, r in enumerate(rels) if r["r_info_type"] == 2)
    bad = obj.with_(obj.rela["sh_offset"] + 24 * k + 16, "<q", 1 << 40)
    with pytest.raises(RelocationError) as e:
        elfkit.load(bad, backend="native")
    assert any(p.startswith(f".rela.text[{k}] at offset ") and "R_X86_64_PC32" in p
               and "does not fit a signed 32-bit field" in p for p in e.value.problems)


def test_clobbered_symbols_and_relocations_raise_only_our_errors(obj):
    """Every field of the first symbols and relocations set to 0, all ones or
    its value plus one: the load succeeds or raises an ElfkitError with a
    message."""
    cases = []
    for base, count in ((obj.symtab["sh_offset"], 8), (obj.rela["sh_offset"], 6)):
        for at in range(base, base + 24 * count, 4):
            for v in (0, 0xFFFFFFFF, None):
                out = bytearray(obj.data)
                cur, = struct.unpack_from("<I", out, at)
                struct.pack_into("<I", out, at, (cur + 1) & 0xFFFFFFFF if v is None else v)
                cases.append(bytes(out))
    for c in cases:
        try:
            m = elfkit.load(c, backend="native")
        except ElfkitError as err:
            assert str(err)
        else:
            m.close()


@pytest.mark.parametrize("src", ["kernels.c", "imports.c", "common_init.c"])
@pytest.mark.parametrize("pic", ["-fPIC", "-fno-PIC"])
def test_exports_match_pyelftools(src, pic):
    """A loaded object exports its defined, named, global or weak symbols of
    default visibility (functions, data, untyped, COMMON), each inside the
    image (absolute ones excepted), as pyelftools reads them."""
    data = build_object(src, "x86_64", pic).read_bytes()
    tab = next(s for s in ELFFile(io.BytesIO(data)).iter_sections()
               if isinstance(s, SymbolTableSection))
    exported, absolute = set(), set()
    for s in tab.iter_symbols():
        bind, typ = s.entry.st_info.bind, s.entry.st_info.type
        if not s.name or bind not in ("STB_GLOBAL", "STB_WEAK") or s["st_shndx"] == "SHN_UNDEF":
            continue
        if s["st_shndx"] == "SHN_ABS":
            absolute.add(s.name)
        if s.entry.st_other.visibility == "STV_DEFAULT" and typ in (
                "STT_NOTYPE", "STT_OBJECT", "STT_FUNC", "STT_COMMON"):
            exported.add(s.name)
    with elfkit.load(data, backend="native", lazy=True, init=False) as m:
        assert set(m.exports) == exported
        for name, addr in m.exports.items():
            assert name in absolute or m.base <= addr < m.base + m.size, name
