"""Bad input: every malformed plugin ends in an ElfkitError subclass that says
what and where -- never an IndexError, struct.error, MemoryError or a crash."""
from __future__ import annotations

import io
import struct

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit import LayoutError, ParseError, RelocationError, UnresolvedImportError, UnsupportedError
from elfkit.exec.memory import MemoryMachine
from elfkit.loader import parse
from tests.elfkit.loader.reloc_oracle import dynamic_relocations

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]


def _load(data, arch, **kw):
    return elfkit.load(bytes(data), machine=MemoryMachine(elfkit.arch.get(arch)), init=False, **kw)


class Elf:
    """Just enough layout knowledge to aim mutations (offsets come from the file's headers)."""

    def __init__(self, data: bytes):
        self.data = bytearray(data)
        self.is64 = data[4] == 2
        if self.is64:
            self.phoff, = struct.unpack_from("<Q", data, 32)
            self.phentsize, self.phnum = struct.unpack_from("<HH", data, 54)
        else:
            self.phoff, = struct.unpack_from("<I", data, 28)
            self.phentsize, self.phnum = struct.unpack_from("<HH", data, 42)
        self.parsed = parse(bytes(data))

    def phdr(self, i):
        return self.phoff + i * self.phentsize

    def set_phdr(self, i, field, value):
        names64 = ["type", "flags", "offset", "vaddr", "paddr", "filesz", "memsz", "align"]
        fmt64 = "IIQQQQQQ"
        names32 = ["type", "offset", "vaddr", "paddr", "filesz", "memsz", "flags", "align"]
        names, fmt = (names64, fmt64) if self.is64 else (names32, "I" * 8)
        k = names.index(field)
        off = self.phdr(i) + struct.calcsize("<" + fmt[:k])
        struct.pack_into("<" + fmt[k], self.data, off, value)

    def index_of(self, ptype):
        return next(s.index for s in self.parsed.segments if s.type == ptype)

    def dyn_entry_offset(self, tag):
        ds = next(s for s in self.parsed.segments if s.type == 2)
        off = self.parsed.vaddr_to_offset(ds.vaddr, ds.filesz, "dyn")
        ent = 16 if self.is64 else 8
        for i in range(ds.filesz // ent):
            t, = struct.unpack_from("<q" if self.is64 else "<i", self.data, off + i * ent)
            if t == tag:
                return off + i * ent
        raise LookupError(tag)

    def set_dyn(self, tag, value):
        o = self.dyn_entry_offset(tag)
        w = 8 if self.is64 else 4
        struct.pack_into("<Q" if self.is64 else "<I", self.data, o + w, value)

    def set_dyn_tag(self, old, new):
        o = self.dyn_entry_offset(old)
        struct.pack_into("<q" if self.is64 else "<i", self.data, o, new)

    def reloc_tables(self):
        return [t for t in self.parsed.reloc_tables if t.tag != "DT_RELR" and t.count]

    def set_reloc(self, table, i, rtype=None, sym=None, offset=None):
        ent = (24 if table.explicit_addend else 16) if self.is64 else (12 if table.explicit_addend else 8)
        o = table.file_offset + i * ent
        w = 8 if self.is64 else 4
        fmt = "<Q" if self.is64 else "<I"
        r_off, = struct.unpack_from(fmt, self.data, o)
        info, = struct.unpack_from(fmt, self.data, o + w)
        if self.is64:
            t, s = info & 0xFFFFFFFF, info >> 32
            t = t if rtype is None else rtype
            s = s if sym is None else sym
            info = (s << 32) | t
        else:
            t, s = info & 0xFF, info >> 8
            t = t if rtype is None else rtype
            s = s if sym is None else sym
            info = (s << 8) | t
        struct.pack_into(fmt, self.data, o, r_off if offset is None else offset)
        struct.pack_into(fmt, self.data, o + w, info)


@pytest.fixture(params=ARCHES)
def plugin(request, plugins):
    return request.param, plugins.path("relocs", request.param).read_bytes()


def test_good_plugin_loads(plugin):
    arch, data = plugin
    m = _load(data, arch, imports=_all_imports(data))
    assert m.exports
    m.close()


def _all_imports(data):
    elf = parse(data)
    return {s.name: 0x1000 for s in elf.symbols[1:] if not s.defined and s.name}


@pytest.mark.parametrize("size", [0, 3, 15, 16, 40, 52, 63])
def test_truncated_headers(plugin, size):
    arch, data = plugin
    with pytest.raises(ParseError):
        _load(data[:size], arch)


def test_wrong_magic(plugin):
    arch, data = plugin
    with pytest.raises(ParseError, match="not an ELF file"):
        _load(b"\x7fELG" + data[4:], arch)


def test_big_endian_refused(plugin):
    arch, data = plugin
    bad = bytearray(data)
    bad[5] = 2
    with pytest.raises(UnsupportedError, match="big-endian"):
        _load(bad, arch)


def test_foreign_class(plugin):
    arch, data = plugin
    bad = bytearray(data)
    bad[4] = 1 if bad[4] == 2 else 2
    with pytest.raises(elfkit.ElfkitError):
        _load(bad, arch)


@pytest.mark.parametrize("etype,word", [(1, "ET_REL"), (2, "ET_EXEC"), (4, "ET_CORE")])
def test_wrong_type(plugin, etype, word):
    arch, data = plugin
    bad = bytearray(data)
    struct.pack_into("<H", bad, 16, etype)
    with pytest.raises(UnsupportedError, match=word):
        _load(bad, arch)


def test_huge_memsz_refused_before_allocation(plugin):
    arch, data = plugin
    e = Elf(data)
    e.set_phdr(e.index_of(1), "memsz", (1 << 40) if e.is64 else 0xFFFF0000)
    with pytest.raises(LayoutError, match="p_memsz"):
        _load(e.data, arch)


def test_absurd_alignment(plugin):
    arch, data = plugin
    e = Elf(data)
    e.set_phdr(e.index_of(1), "align", 3)
    with pytest.raises(ParseError, match="power of two"):
        _load(e.data, arch)


def test_overlapping_segments(plugin):
    arch, data = plugin
    e = Elf(data)
    loads = [s for s in e.parsed.segments if s.type == 1]
    e.set_phdr(loads[1].index, "vaddr", loads[0].vaddr)
    with pytest.raises(LayoutError, match="overlap"):
        _load(e.data, arch)


def test_segment_past_end_of_file(plugin):
    arch, data = plugin
    e = Elf(data)
    i = e.index_of(1)
    e.set_phdr(i, "filesz", len(data) + 1)
    e.set_phdr(i, "memsz", len(data) + 1)
    with pytest.raises(ParseError, match="past the end"):
        _load(e.data, arch)


def test_phdr_table_past_end(plugin):
    arch, data = plugin
    bad = bytearray(data)
    if bad[4] == 2:
        struct.pack_into("<Q", bad, 32, len(data) - 8)
    else:
        struct.pack_into("<I", bad, 28, len(data) - 8)
    with pytest.raises(ParseError, match="program header table"):
        _load(bad, arch)


def test_tls_segment_refused(plugin):
    arch, data = plugin
    e = Elf(data)
    e.set_phdr(e.index_of(0x6474E551), "type", 7)       # GNU_STACK -> PT_TLS
    with pytest.raises(UnsupportedError, match="TLS is not supported in bare-metal plugins"):
        _load(e.data, arch)


def test_wx_segment_refused(plugin):
    arch, data = plugin
    e = Elf(data)
    text = next(s for s in e.parsed.segments if s.type == 1 and s.flags & 1)
    e.set_phdr(text.index, "flags", 7)
    with pytest.raises(UnsupportedError, match="W\\+X"):
        _load(e.data, arch)


def test_textrel_refused(plugin):
    arch, data = plugin
    e = Elf(data)
    # turn a harmless tag (DT_RELACOUNT / DT_RELCOUNT / DT_FLAGS_1) into DT_TEXTREL
    spare = next((t for t in (0x6FFFFFF9, 0x6FFFFFFA, 0x6FFFFFFB) if _has(e, t)), None)
    if spare is None:
        pytest.skip("no spare dynamic tag to rewrite")
    e.set_dyn_tag(spare, 22)
    with pytest.raises(UnsupportedError, match="TEXTREL"):
        _load(e.data, arch)


def _has(e, tag):
    try:
        e.dyn_entry_offset(tag)
        return True
    except LookupError:
        return False


def test_dynamic_pointer_outside_image(plugin):
    arch, data = plugin
    e = Elf(data)
    e.set_dyn(6, 0x7FFF0000)          # DT_SYMTAB
    with pytest.raises(ParseError, match="DT_SYMTAB"):
        _load(e.data, arch)


def test_strsz_too_large(plugin):
    arch, data = plugin
    e = Elf(data)
    e.set_dyn(10, 1 << 30)             # DT_STRSZ
    with pytest.raises(ParseError, match="DT_STRTAB"):
        _load(e.data, arch)


def test_hash_bucket_count_absurd(plugin):
    arch, data = plugin
    e = Elf(data)
    if not _has(e, 4):
        pytest.skip("no DT_HASH")
    vaddr = e.parsed.dyn[4]
    off = e.parsed.vaddr_to_offset(vaddr, 8, "hash")
    struct.pack_into("<I", e.data, off, 0xFFFFFFF0)
    with pytest.raises(ParseError, match="DT_HASH"):
        _load(e.data, arch)


def test_every_unknown_relocation_is_named(plugin):
    arch, data = plugin
    e = Elf(data)
    t = e.reloc_tables()[0]
    n = min(3, t.count)
    for i in range(n):
        e.set_reloc(t, i, rtype=250)
    with pytest.raises(RelocationError) as ei:
        _load(e.data, arch, imports=_all_imports(data))
    assert len(ei.value.problems) == n
    for i in range(n):
        assert f"{t.tag}[{i}]" in str(ei.value)
    assert "unknown type 250" in str(ei.value)


def test_relocation_symbol_out_of_range(plugin):
    arch, data = plugin
    e = Elf(data)
    t = e.reloc_tables()[0]
    # make it a symbolic relocation type of this arch, against a huge symbol index
    sym_type = {"x86_64": 1, "aarch64": 257, "riscv64": 2, "arm": 2, "i386": 1, "riscv32": 1}[arch]
    e.set_reloc(t, 0, rtype=sym_type, sym=0xFFFF)
    with pytest.raises(RelocationError, match="symbol index 65535 is out of range"):
        _load(e.data, arch, imports=_all_imports(data))


def test_relocation_outside_writable_segment(plugin):
    arch, data = plugin
    e = Elf(data)
    t = e.reloc_tables()[0]
    e.set_reloc(t, 0, offset=0)        # the ELF header: read-only
    with pytest.raises(RelocationError, match="not inside a writable segment"):
        _load(e.data, arch, imports=_all_imports(data))


def test_tls_relocation_refused(plugin):
    arch, data = plugin
    e = Elf(data)
    t = e.reloc_tables()[0]
    tls_type = {"x86_64": 16, "aarch64": 1028, "riscv64": 7, "arm": 17, "i386": 35, "riscv32": 6}[arch]
    e.set_reloc(t, 0, rtype=tls_type)
    with pytest.raises(UnsupportedError, match="TLS is not supported in bare-metal plugins"):
        _load(e.data, arch, imports=_all_imports(data))


@pytest.fixture(params=ARCHES)
def importing(request, plugins):
    return request.param, plugins.path("imports", request.param).read_bytes()


def test_missing_imports_all_listed(importing):
    arch, data = importing
    elf = parse(data)
    required = [s.name for s in elf.symbols[1:] if not s.defined and s.name and not s.weak]
    assert required, "the relocs plugin must import something"
    with pytest.raises(UnresolvedImportError) as ei:
        _load(data, arch)
    assert sorted(ei.value.names) == sorted(required)
    for n in required:
        assert n in str(ei.value)


def test_weak_import_missing_is_zero(importing):
    arch, data = importing
    elf = parse(data)
    weak = [s.name for s in elf.symbols[1:] if not s.defined and s.name and s.weak]
    assert weak, "the imports plugin must import something weakly"
    imps = {k: v for k, v in _all_imports(data).items() if k not in weak}
    # every place relocated against a missing weak import (its GOT slot, PLT
    # slot or pointer; found by pyelftools, not by elfkit) reads 0, so the
    # plugin's `if (host_optional)` sees NULL
    pelf = ELFFile(io.BytesIO(data))
    dynsym = pelf.get_section_by_name(".dynsym")
    word = pelf.elfclass // 8
    places = [off for off, _, symidx, _, _ in dynamic_relocations(pelf)
              if symidx and dynsym.get_symbol(symidx).name in weak]
    assert places, f"no relocation against the weak imports {weak}"
    with _load(data, arch, imports=imps) as m:   # loads: weak imports may be missing
        values = {hex(off): int.from_bytes(m.read(m.base + off, word), "little") for off in places}
    assert values == {hex(off): 0 for off in places}


def test_mutation_sweep_only_raises_our_errors(plugin):
    """Truncate at every structural boundary and clobber every header and
    program-header field with 0 / all-ones / off-by-one: each load either
    succeeds or raises an ElfkitError with a message."""
    arch, data = plugin
    e = Elf(data)
    cases = []
    bounds = {e.phoff, e.phoff + e.phnum * e.phentsize}
    for s in e.parsed.segments:
        bounds |= {s.offset, s.offset + s.filesz}
    for b in sorted(bounds):
        for d in (-1, 0, 1):
            if 0 < b + d < len(data):
                cases.append(bytes(data[:b + d]))
    hdr_fields = range(16, 64 if e.is64 else 52, 2)
    for off in hdr_fields:
        for v in (0, 0xFFFF, None):
            bad = bytearray(data)
            cur, = struct.unpack_from("<H", bad, off)
            struct.pack_into("<H", bad, off, (cur + 1) & 0xFFFF if v is None else v)
            cases.append(bytes(bad))
    for i in range(e.phnum):
        for k in range(e.phentsize // 4):
            for v in (0, 0xFFFFFFFF, None):
                bad = bytearray(data)
                off = e.phdr(i) + 4 * k
                cur, = struct.unpack_from("<I", bad, off)
                struct.pack_into("<I", bad, off, (cur + 1) & 0xFFFFFFFF if v is None else v)
                cases.append(bytes(bad))
    imps = _all_imports(data)
    for c in cases:
        try:
            m = _load(c, arch, imports=imps)
        except elfkit.ElfkitError as err:
            assert str(err)
        else:
            m.close()
    assert len(cases) > 100
