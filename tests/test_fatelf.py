"""elfkit.fatelf: the library (format, selection, packing, verification).

Test inputs are generated here: a valid ELF header plus one PT_LOAD for
each architecture, 32 or 64-bit, little or big-endian, with a chosen
p_align.  The expected FatELF bytes are built independently from the
documented layout, never by calling pack().
"""
from __future__ import annotations

import mmap
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elfkit import fatelf
from elfkit.errors import ArchError, ElfkitError, FatElfError

# (machine, bits) per architecture, written out here rather than taken from elfkit.arch
ARCHES = {
    "x86_64": (62, 64), "aarch64": (183, 64), "riscv64": (243, 64),
    "arm": (40, 32), "i386": (3, 32), "riscv32": (243, 32),
}


def make_elf(machine: int = 62, bits: int = 64, size: int = 600, *, osabi: int = 0,
             abiversion: int = 0, p_align: int = 4096, big_endian: bool = False,
             seed: int = 1) -> bytes:
    """A small but well-formed ELF: header, one PT_LOAD covering the file, payload."""
    e = ">" if big_endian else "<"
    cls = 2 if bits == 64 else 1
    ident = b"\x7fELF" + bytes([cls, 2 if big_endian else 1, 1, osabi, abiversion]) + bytes(7)
    if bits == 64:
        head = ident + struct.pack(e + "HHIQQQIHHHHHH", 3, machine, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
        ph = struct.pack(e + "IIQQQQQQ", 1, 5, 0, 0, 0, size, size, p_align)
    else:
        head = ident + struct.pack(e + "HHIIIIIHHHHHH", 3, machine, 1, 0, 52, 0, 0, 52, 32, 1, 0, 0, 0)
        ph = struct.pack(e + "IIIIIIII", 1, 0, 0, 0, size, size, 5, p_align)
    body = head + ph
    assert size >= len(body)
    return body + bytes((i * 31 + seed * 7) & 0xFF for i in range(size - len(body)))


def arch_elf(name: str, size: int | None = None, **kw) -> bytes:
    machine, bits = ARCHES[name]
    return make_elf(machine, bits, size if size is not None else 500 + 37 * len(name), **kw)


def reference_fatelf(elfs: list[bytes], page: int = 4096) -> bytes:
    """The documented writer layout, computed from scratch."""
    def up(x: int) -> int:
        return -(-x // page) * page

    n = len(elfs)
    out = bytearray(b"\xfa\x70\x0e\x1f" + (1).to_bytes(2, "little") + bytes([n, 0]))
    offsets, off = [], up(8 + 24 * n)
    for e in elfs:
        offsets.append(off)
        off += up(len(e))
    for e, o in zip(elfs, offsets):
        order = "little" if e[5] == 1 else "big"
        machine = int.from_bytes(e[18:20], order)
        out += machine.to_bytes(2, "little")
        out += bytes([e[7], e[8], e[4], 1 if e[5] == 1 else 0, 0, 0])
        out += o.to_bytes(8, "little") + len(e).to_bytes(8, "little")
    for e, o in zip(elfs, offsets):
        out += bytes(o - len(out))
        out += e
    return bytes(out)


def raw_fatelf(records: list[tuple], body: bytes = b"", *, version: int = 1,
               count: int | None = None, reserved: int = 0) -> bytes:
    """Hand-made FatELF: records are (machine, osabi, abiver, word, order, offset, size[, r0, r1])."""
    n = len(records) if count is None else count
    out = b"\xfa\x70\x0e\x1f" + struct.pack("<HBB", version, n, reserved)
    for r in records:
        r0, r1 = (r[7], r[8]) if len(r) > 7 else (0, 0)
        out += struct.pack("<HBBBBBBQQ", r[0], r[1], r[2], r[3], r[4], r0, r1, r[5], r[6])
    return out + body


def place(elfs: list[tuple[int, bytes]], header: bytes) -> bytes:
    """header, then each (offset, bytes) at its offset (zero padding)."""
    out = bytearray(header)
    for off, data in elfs:
        if len(out) < off + len(data):
            out += bytes(off + len(data) - len(out))
        out[off:off + len(data)] = data
    return bytes(out)


def one_line(e: BaseException) -> str:
    msg = str(e)
    assert msg and "\n" not in msg, repr(msg)
    return msg


# --------------------------------------------------------------------------
# layout and byte compatibility

def test_reference_example_from_the_spec():
    """aarch64 3112 B, x86_64 3040 B, riscv64 3224 B -> offsets 4096/8192/12288, 15512 bytes."""
    elfs = [arch_elf("aarch64", 3112), arch_elf("x86_64", 3040), arch_elf("riscv64", 3224)]
    data = fatelf.pack(elfs)
    assert len(data) == 15512
    assert data == reference_fatelf(elfs)
    assert [r.offset for r in fatelf.read(data).records] == [4096, 8192, 12288]


@pytest.mark.parametrize("sizes", [
    [600], [4096], [4096, 4096], [4097, 1, 8191],
    [700, 8192, 100, 5000, 64, 300],
])
def test_pack_matches_reference_layout(sizes):
    names = list(ARCHES)
    elfs = [arch_elf(names[i], max(s, 120)) for i, s in enumerate(sizes)]
    data = fatelf.pack(elfs)
    assert data == reference_fatelf(elfs)
    assert len(data) == fatelf.read(data).records[-1].end  # no tail padding


def test_header_spilling_past_one_page():
    """171 records need 4112 header bytes, so the first slice goes to 8192."""
    elfs = [make_elf(62, 64, 200, abiversion=i) for i in range(171)]
    data = fatelf.pack(elfs)
    assert data == reference_fatelf(elfs)
    assert fatelf.read(data).records[0].offset == 8192


def test_255_records_is_the_maximum():
    elfs = [make_elf(243, 64, 130, abiversion=i, seed=i) for i in range(255)]
    data = fatelf.pack(elfs, align=64)
    fat = fatelf.read(data)
    assert len(fat.records) == 255 and data[6] == 255
    assert bytes(fat.slice(254)) == elfs[254]
    assert data == reference_fatelf(elfs, page=64)
    with pytest.raises(FatElfError, match="at most 255"):
        fatelf.pack(elfs + [make_elf(62, 64, 130)])


def test_layout_helper():
    assert fatelf.layout([3112, 3040, 3224]) == [4096, 8192, 12288]
    assert fatelf.layout([10, 10], align=16) == [64, 80]


# --------------------------------------------------------------------------
# round trips

@pytest.mark.parametrize("as_path", [False, True])
def test_round_trip_all_six_arches(tmp_path, as_path):
    elfs = {name: arch_elf(name) for name in ARCHES}
    inputs = []
    for name, data in elfs.items():
        p = tmp_path / f"plugin.{name}.so"
        p.write_bytes(data)
        inputs.append(p if as_path else data)
    out = tmp_path / "plugin.sos"
    records = fatelf.pack_to(out, inputs)
    assert [r.arch for r in records] == list(ARCHES)
    assert out.read_bytes() == reference_fatelf(list(elfs.values()))
    with fatelf.read(out) as fat:
        assert not fat.is_plain and fat.version == 1
        assert fat.records == records
        for r, (name, data) in zip(fat.records, elfs.items()):
            machine, bits = ARCHES[name]
            assert (r.arch, r.machine, r.bits, r.word_size, r.byte_order, r.osabi, r.osabi_version) \
                == (name, machine, bits, 1 if bits == 32 else 2, 1, 0, 0)
            assert bytes(fat.slice(r)) == data
            assert fat.find(name) == r
            dest = tmp_path / f"x.{name}.so"
            assert fatelf.extract_to(dest, fat, name) == r
            assert dest.read_bytes() == data
            rec, view = fatelf.select(fat, name)
            assert rec == r and bytes(view) == data


def test_riscv32_and_riscv64_are_distinct():
    data = fatelf.pack([arch_elf("riscv64"), arch_elf("riscv32")])
    fat = fatelf.read(data)
    assert [r.machine for r in fat.records] == [243, 243]
    assert [r.arch for r in fat.records] == ["riscv64", "riscv32"]
    assert fatelf.select(fat, "rv32")[0].index == 1
    assert fatelf.select(fat, "riscv_64")[0].index == 0


def test_pack_to_file_object_and_bytes_agree(tmp_path):
    import io
    elfs = [arch_elf("x86_64"), arch_elf("arm")]
    buf = io.BytesIO()
    fatelf.pack_to(buf, elfs)
    assert buf.getvalue() == fatelf.pack(elfs) == reference_fatelf(elfs)


def test_pack_streams_large_inputs(tmp_path):
    """Several MiB: exercises the chunked/kernel copy paths; bytes must match."""
    big = bytearray(arch_elf("aarch64", 5 * (1 << 20) + 123))
    big[-10:] = b"0123456789"
    src = tmp_path / "big.so"
    src.write_bytes(big)
    other = arch_elf("x86_64", 4096 * 3)
    (tmp_path / "x.so").write_bytes(other)
    out = tmp_path / "big.sos"
    fatelf.pack_to(out, [src, tmp_path / "x.so"])
    assert out.read_bytes() == reference_fatelf([bytes(big), other])
    # extract via the descriptor fast path as well
    fatelf.extract_to(tmp_path / "back.so", out, "aarch64")
    assert (tmp_path / "back.so").read_bytes() == bytes(big)


# --------------------------------------------------------------------------
# alignment

def test_align_options():
    a = arch_elf("x86_64", 100 + 1000)
    b = arch_elf("aarch64", 1300, p_align=65536)
    assert fatelf.pack([a, b], align=4096) == reference_fatelf([a, b])
    assert fatelf.pack([a, b], align=16) == reference_fatelf([a, b], page=16)
    auto = fatelf.read(fatelf.pack([a, b], align="auto"))
    assert [r.offset for r in auto.records] == [65536, 131072]
    assert fatelf.verify(auto) == []
    # auto never goes below a page
    small = fatelf.read(fatelf.pack([arch_elf("arm", p_align=16)], align="auto"))
    assert small.records[0].offset == 4096


@pytest.mark.parametrize("align", [0, 3, -4096, 1 << 31, "x", "12k", True, 1.5])
def test_bad_align_rejected(align):
    with pytest.raises(FatElfError, match="alignment") as e:
        fatelf.pack([arch_elf("x86_64")], align=align)
    one_line(e.value)


def test_default_pack_of_64k_aarch64_gives_a_note_not_an_error():
    data = fatelf.pack([arch_elf("aarch64", p_align=65536)])
    probs = fatelf.verify(data)
    assert [p.severity for p in probs] == [fatelf.Severity.NOTE]
    assert "p_align (65536)" in probs[0].message and "record 0" in probs[0].message


# --------------------------------------------------------------------------
# pack refuses bad inputs (and writes nothing)

def test_pack_rejects(tmp_path):
    x = arch_elf("x86_64")
    cases = {
        "nothing to pack": [],
        "same target": [x, arch_elf("x86_64", 900)],
        "not an ELF": [x, b"hello world, this is not an ELF file at all" * 3],
        "ELF header truncated": [x[:40]],
        "invalid ELF class": [x[:4] + b"\x05" + x[5:]],
        "invalid ELF data": [x[:5] + b"\x00" + x[6:]],
        "is a FatELF": [fatelf.pack([x])],
        "program headers": [x[:100]],
    }
    for expected, inputs in cases.items():
        with pytest.raises(FatElfError, match=expected) as e:
            fatelf.pack(inputs)
        one_line(e.value)
        out = tmp_path / "out.sos"
        with pytest.raises(FatElfError):
            fatelf.pack_to(out, inputs)
        assert not out.exists()
    assert os.listdir(tmp_path) == []


def test_pack_duplicate_names_both_files(tmp_path):
    (tmp_path / "a.so").write_bytes(arch_elf("riscv64"))
    (tmp_path / "b.so").write_bytes(arch_elf("riscv64", 999))
    with pytest.raises(FatElfError) as e:
        fatelf.pack_to(tmp_path / "o.sos", [tmp_path / "a.so", tmp_path / "b.so"])
    assert "a.so" in str(e.value) and "b.so" in str(e.value)


def test_targets_differing_only_in_osabi_are_allowed():
    data = fatelf.pack([arch_elf("x86_64", osabi=3), arch_elf("x86_64", osabi=0),
                        arch_elf("x86_64", osabi=0, abiversion=1)])
    assert [(r.osabi, r.osabi_version) for r in fatelf.read(data).records] == [(3, 0), (0, 0), (0, 1)]


def test_big_endian_input_uses_fatelf_byte_order_zero():
    be = make_elf(2, 64, 400, big_endian=True)  # sparc64-ish machine, big-endian
    be_aarch64 = make_elf(183, 64, 400, big_endian=True)
    data = fatelf.pack([be, be_aarch64])
    assert data == reference_fatelf([be, be_aarch64])
    fat = fatelf.read(data)
    r = fat.records[1]
    assert (r.machine, r.byte_order, r.little_endian, r.arch) == (183, 0, False, None)
    assert r.label == "aarch64-be"
    assert data[8 + 24 + 5] == 0  # FatELF byte order 0 = big, unlike EI_DATA (2)
    assert fatelf.verify(fat) == []


def test_pack_error_midway_leaves_no_file(tmp_path, monkeypatch):
    out = tmp_path / "keep.sos"
    out.write_bytes(b"previous contents")
    src = tmp_path / "a.so"
    src.write_bytes(arch_elf("x86_64"))

    def boom(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fatelf.write._Sink, "copy_from_fd", boom)
    with pytest.raises(OSError):
        fatelf.pack_to(out, [src])
    assert out.read_bytes() == b"previous contents"
    assert sorted(os.listdir(tmp_path)) == ["a.so", "keep.sos"]


def test_input_shrinking_while_copied_is_detected(tmp_path, monkeypatch):
    src = tmp_path / "a.so"
    src.write_bytes(arch_elf("x86_64", 9000))
    real = fatelf.write._Sink.copy_from_fd

    def shrink_first(self, fd, offset, count, name):
        os.truncate(src, 5000)
        return real(self, fd, offset, count, name)

    monkeypatch.setattr(fatelf.write._Sink, "copy_from_fd", shrink_first)
    with pytest.raises(FatElfError, match="shrank"):
        fatelf.pack_to(tmp_path / "o.sos", [src])
    assert not (tmp_path / "o.sos").exists()


# --------------------------------------------------------------------------
# reading

def test_plain_elf_is_one_record(tmp_path):
    data = arch_elf("riscv64")
    for src in (data, bytearray(data), memoryview(data)):
        fat = fatelf.read(src)
        assert fat.is_plain and fat.version is None and len(fat) == 1
        r = fat.records[0]
        assert (r.arch, r.offset, r.size) == ("riscv64", 0, len(data))
        assert bytes(fat.slice(r)) == data
        assert fatelf.verify(src) == []
    p = tmp_path / "p.so"
    p.write_bytes(data)
    with fatelf.read(p) as fat:
        assert fat.is_plain and bytes(fat.slice(0)) == data


def test_slices_are_zero_copy(tmp_path):
    data = fatelf.pack([arch_elf("x86_64"), arch_elf("i386")])
    fat = fatelf.read(data)
    view = fat.slice(1)
    assert isinstance(view, memoryview) and view.obj is data
    p = tmp_path / "f.sos"
    p.write_bytes(data)
    with fatelf.read(p) as fat:
        v = fat.slice(0)
        assert isinstance(v.obj, mmap.mmap) and v.readonly
        assert bytes(v) == arch_elf("x86_64")
        del v
    assert fat.closed
    with pytest.raises(FatElfError, match="closed"):
        fat.slice(0)


def test_select_view_outlives_file_object(tmp_path):
    p = tmp_path / "f.sos"
    p.write_bytes(fatelf.pack([arch_elf("x86_64"), arch_elf("arm")]))
    rec, view = fatelf.select(p, "arm")
    assert bytes(view) == arch_elf("arm")
    view.release()


def test_is_fatelf(tmp_path):
    data = fatelf.pack([arch_elf("x86_64")])
    assert fatelf.is_fatelf(data) and fatelf.is_fatelf(memoryview(data))
    assert not fatelf.is_fatelf(arch_elf("x86_64")) and not fatelf.is_fatelf(b"")
    p = tmp_path / "f"
    p.write_bytes(data)
    assert fatelf.is_fatelf(p) and fatelf.is_fatelf(str(p))


def test_record_is_frozen_dataclass_with_slots():
    import dataclasses
    r = fatelf.read(fatelf.pack([arch_elf("i386")])).records[0]
    assert dataclasses.is_dataclass(r) and not hasattr(r, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.offset = 0  # type: ignore[misc]
    assert r.arch == "i386" and r.bits == 32 and r.end == r.offset + r.size
    assert r.to_dict()["machine_name"] == "i386"


def test_machine_names_include_aarch64_and_riscv():
    assert fatelf.machine_name(183) == "aarch64"
    assert fatelf.machine_name(243) == "riscv"
    assert fatelf.machine_name(62) == "x86_64"
    assert fatelf.machine_name(9999) == "machine9999"


# --------------------------------------------------------------------------
# bad input: read() raises FatElfError with a one-line message

X64 = arch_elf("x86_64", 700)
A64 = arch_elf("aarch64", 800)


def good_two() -> bytes:
    return fatelf.pack([X64, A64])


BAD = {
    "empty": (b"", "empty file"),
    "garbage": (b"MZ\x90\x00 not an elf" * 4, "neither a FatELF nor an ELF"),
    "truncated header": (b"\xfa\x70\x0e\x1f\x01", "header truncated"),
    "version 2": (raw_fatelf([], version=2), "FatELF has version 2 but runtime only supports version 1"),
    "zero records": (raw_fatelf([]), "no records"),
    "truncated records": (good_two()[:40],
                          "FatELF file truncated, requires at least 56B for headers but only have 40B"),
    "count larger than file": (raw_fatelf([], count=255) + bytes(100), "requires at least 6128B"),
    "offset past end": (raw_fatelf([(62, 0, 0, 2, 1, 4096, 700)], bytes(4096 - 32) + X64[:300]),
                        "ELF file range out of bounds; 4096-4795 (700) specified out of 4396 valid bytes"),
    "huge offset": (raw_fatelf([(62, 0, 0, 2, 1, 1 << 63, 700)]) + bytes(10), "out of bounds"),
    "slice in header": (raw_fatelf([(62, 0, 0, 2, 1, 8, 700)], bytes(700)), "inside the FatELF header"),
    "size zero": (raw_fatelf([(62, 0, 0, 2, 1, 4096, 0)], bytes(4096)), "size is 0"),
    "overlapping": (place([(4096, X64), (4096 + 512, A64)],
                          raw_fatelf([(62, 0, 0, 2, 1, 4096, 700), (183, 0, 0, 2, 1, 4096 + 512, 800)])),
                    "overlap"),
    "not ELF slice": (place([(4096, b"\x00" * 700)], raw_fatelf([(62, 0, 0, 2, 1, 4096, 700)])),
                      "not a usable ELF"),
    "lying machine": (place([(4096, X64)], raw_fatelf([(183, 0, 0, 2, 1, 4096, 700)])),
                      "record says machine 183 (aarch64) but the ELF header says 62 (x86_64)"),
    "lying class": (place([(4096, X64)], raw_fatelf([(62, 0, 0, 1, 1, 4096, 700)])),
                    "record says 32-bit"),
    "lying byte order": (place([(4096, X64)], raw_fatelf([(62, 0, 0, 2, 0, 4096, 700)])),
                         "record says big-endian"),
    "lying osabi": (place([(4096, X64)], raw_fatelf([(62, 3, 0, 2, 1, 4096, 700)])),
                    "record says osabi 3 (linux) but the ELF header says 0 (none)"),
    "duplicate": (place([(4096, X64), (8192, X64)],
                        raw_fatelf([(62, 0, 0, 2, 1, 4096, 700), (62, 0, 0, 2, 1, 8192, 700)])),
                  "records 0 and 1 are for the same target"),
    "bad word size": (place([(4096, X64)], raw_fatelf([(62, 0, 0, 7, 1, 4096, 700)])),
                      "invalid word size 7"),
    "truncated slice": (place([(4096, X64[:40])], raw_fatelf([(62, 0, 0, 2, 1, 4096, 40)])),
                        "ELF header truncated"),
    "plain ELF truncated": (X64[:30], "ELF header truncated"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_raises(case, tmp_path):
    data, expected = BAD[case]
    with pytest.raises(FatElfError) as e:
        fatelf.read(data)
    msg = one_line(e.value)
    assert expected in msg, msg
    # the same from a file, with the file name in front
    p = tmp_path / "bad.sos"
    p.write_bytes(data)
    with pytest.raises(FatElfError) as e:
        fatelf.read(p)
    assert one_line(e.value).startswith(str(p) + ": ")
    # select refuses it too; verify reports it without raising
    with pytest.raises(FatElfError):
        fatelf.select(data, fallback=True)
    probs = fatelf.verify(data)
    assert any(expected in p.message for p in probs), probs
    assert all(p.severity in ("fatal", "error", "warning", "note") for p in probs)


def test_errors_belong_to_the_elfkit_hierarchy():
    with pytest.raises(ElfkitError):
        fatelf.read(b"nope")


def test_verify_reports_every_problem():
    # record 0 lies about its machine, record 1 is unaligned, record 2 is past
    # the end, record 3 overlaps record 0 and is not an ELF, reserved bytes are set.
    hdr = raw_fatelf([(183, 0, 0, 2, 1, 4096, 700, 1, 0),
                      (183, 0, 0, 2, 1, 8292, 800),
                      (243, 0, 0, 2, 1, 1 << 20, 100),
                      (40, 0, 0, 1, 1, 4396, 200)], reserved=9)
    data = place([(4096, X64), (4396, bytes(200)), (8292, A64)], hdr)
    probs = fatelf.verify(data)
    text = "\n".join(p.message for p in probs)
    for expected in ["header reserved byte is 9", "record 0 (table offset 8): reserved bytes",
                     "record 2 (riscv64) at offset 1048576: ELF file range out of bounds",
                     "record 1 (aarch64) at offset 8292: offset is not a multiple of the 4096",
                     "records 0 (bytes 4096-4795) and 3 (bytes 4396-4595) overlap",
                     "record 0 (aarch64) at offset 4096: the record says machine 183",
                     "record 3 (arm) at offset 4396: slice is not a usable ELF"]:
        assert expected in text, text
    assert {p.index for p in probs if p.index is not None} == {0, 1, 2, 3}
    assert all(p.severity in (fatelf.Severity.ERROR, fatelf.Severity.WARNING) for p in probs)


def test_verify_reports_bad_p_align():
    bad = arch_elf("x86_64", p_align=12345)
    probs = fatelf.verify(fatelf.pack([bad]))
    assert [p.severity for p in probs] == [fatelf.Severity.WARNING]
    assert "p_align 12345 is not a power of two" in probs[0].message
    with pytest.raises(FatElfError, match="not a power of two"):
        fatelf.pack([bad], align="auto")


def test_verify_junk_and_clean():
    data = good_two()
    assert fatelf.verify(data) == []
    probs = fatelf.verify(data + b"junk")
    assert [p.severity for p in probs] == [fatelf.Severity.WARNING]
    assert "4 bytes of junk" in probs[0].message
    fatal = fatelf.verify(raw_fatelf([], version=3))
    assert [p.severity for p in fatal] == [fatelf.Severity.FATAL]


def test_lenient_read_checks_only_the_chosen_record():
    # like IREE: a broken record 1 does not stop selecting record 0
    hdr = raw_fatelf([(62, 0, 0, 2, 1, 4096, 700), (183, 0, 0, 2, 1, 1 << 30, 800)])
    data = place([(4096, X64)], hdr)
    with pytest.raises(FatElfError):
        fatelf.read(data)
    fat = fatelf.read(data, strict=False)
    rec, view = fatelf.select(fat, host="x86_64")
    assert rec.index == 0 and bytes(view) == X64
    with pytest.raises(FatElfError, match="ELF file range out of bounds; 1073741824-1073742623 "
                                          r"\(800\) specified out of 4796 valid bytes"):
        fatelf.select(fat, "aarch64")


def test_lenient_select_still_rejects_a_lying_chosen_record():
    data = place([(4096, X64)], raw_fatelf([(62, 0, 0, 2, 1, 4096, 700, 0, 0)]))
    bad = bytearray(data)
    bad[4096 + 18] = 40  # the slice now says arm
    fat = fatelf.read(bytes(bad), strict=False)
    with pytest.raises(FatElfError, match="record says machine 62"):
        fatelf.select(fat, host="x86_64")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_files_never_crash(data):
    base = bytearray(fatelf.pack([arch_elf("x86_64", 300), arch_elf("riscv32", 200)], align=64))
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(base) - 1))
        base[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del base[data.draw(st.integers(0, len(base))):]
    blob = bytes(base)
    try:
        fat = fatelf.read(blob)
    except FatElfError as e:
        one_line(e)
    else:
        for r in fat.records:
            assert len(fat.slice(r)) == r.size
    for p in fatelf.verify(blob):
        assert p.message
    try:
        fatelf.select(blob, host="x86_64", fallback=True)
    except FatElfError as e:
        one_line(e)


# --------------------------------------------------------------------------
# selection by IREE's rules

def fat_of(*elfs: bytes) -> fatelf.FatElf:
    return fatelf.read(fatelf.pack(list(elfs)))


def test_host_selection_first_match():
    fat = fat_of(arch_elf("aarch64"), arch_elf("x86_64", osabi=3), arch_elf("x86_64"))
    rec, view = fatelf.select(fat, host="x86_64")
    assert rec.index == 1 and bytes(view) == arch_elf("x86_64", osabi=3)
    assert fatelf.select(fat, host="arm64")[0].index == 0


@pytest.mark.parametrize("osabi,ok", [(0, True), (3, True), (255, True), (9, False), (1, False),
                                      (97, False)])
def test_host_selection_osabi(osabi, ok):
    fat = fat_of(arch_elf("x86_64", osabi=osabi))
    if ok:
        assert fatelf.select(fat, host="x86_64")[0].osabi == osabi
    else:
        with pytest.raises(FatElfError, match="no ELFs matching the runtime architecture or Linux "
                                              "ABI found in the FatELF"):
            fatelf.select(fat, host="x86_64")
        # an explicit arch is still found, and the fallback takes it
        assert fatelf.select(fat, "x86_64")[0].osabi == osabi
        assert fatelf.select(fat, host="x86_64", fallback=True)[0].osabi == osabi


def test_host_selection_skips_foreign_osabi_for_a_later_match():
    fat = fat_of(arch_elf("x86_64", osabi=9), arch_elf("x86_64", osabi=255))
    assert fatelf.select(fat, host="x86_64")[0].index == 1
    assert fatelf.select(fat, "x86_64")[0].index == 1  # explicit arch prefers IREE's osabis


def test_host_selection_word_size_and_byte_order():
    x32 = make_elf(62, 32, 400)                    # machine x86_64, 32-bit class
    be = make_elf(62, 64, 400, big_endian=True)    # machine x86_64, big-endian
    fat = fat_of(x32, be)
    assert [r.word_size for r in fat.records] == [1, 2]
    assert [r.byte_order for r in fat.records] == [1, 0]
    assert [r.arch for r in fat.records] == [None, None]
    with pytest.raises(FatElfError, match="no ELFs matching"):
        fatelf.select(fat, host="x86_64")
    fat2 = fat_of(x32, be, arch_elf("x86_64"))
    assert fatelf.select(fat2, host="x86_64")[0].index == 2
    # riscv: the word size tells riscv32 and riscv64 apart
    rv = fat_of(arch_elf("riscv32"), arch_elf("riscv64"))
    assert fatelf.select(rv, host="riscv64")[0].index == 1
    assert fatelf.select(rv, host="riscv32")[0].index == 0


def test_matching_record_with_offset_or_size_zero_is_no_match():
    # IREE treats a matching record at offset 0 / size 0 as no match (lenient read)
    data = place([(4096, X64)], raw_fatelf([(62, 0, 0, 2, 1, 0, 700)]))
    fat = fatelf.read(data, strict=False)
    with pytest.raises(FatElfError, match="no ELFs matching"):
        fatelf.select(fat, host="x86_64")


def test_select_on_this_host():
    from elfkit import arch
    h = arch.host()
    if h is None:
        pytest.skip("host architecture not supported by elfkit")
    others = [n for n in ARCHES if n != h.name]
    fat = fat_of(*(arch_elf(n) for n in others), arch_elf(h.name))
    rec, view = fatelf.select(fat)
    assert rec.arch == h.name and bytes(view) == arch_elf(h.name)
    assert fatelf.host_record(fat) == rec and fatelf.matches_host(rec)


def test_select_plain_elf():
    data = arch_elf("x86_64")
    rec, view = fatelf.select(data, host="x86_64")
    assert rec.offset == 0 and bytes(view) == data
    assert fatelf.select(data, "amd64")[0].arch == "x86_64"
    with pytest.raises(FatElfError, match="not for the host aarch64"):
        fatelf.select(data, host="aarch64")
    with pytest.raises(FatElfError, match="no aarch64 slice"):
        fatelf.select(data, "aarch64")
    assert fatelf.select(data, host="aarch64", fallback=True)[0].arch == "x86_64"


def test_select_unknown_arch_and_missing_arch():
    fat = fat_of(arch_elf("x86_64"), arch_elf("riscv64"))
    with pytest.raises(fatelf.FatElfArchError) as e:
        fatelf.select(fat, "mips")
    assert isinstance(e.value, ArchError) and isinstance(e.value, FatElfError)
    with pytest.raises(FatElfError) as e:
        fatelf.select(fat, "arm")
    assert one_line(e.value) == "no arm slice; the file has record 0 x86_64, record 1 riscv64"


def test_find_by_index():
    fat = fat_of(arch_elf("x86_64"), arch_elf("riscv64"))
    assert fat.find(index=1).arch == "riscv64"
    with pytest.raises(FatElfError, match="no record 2"):
        fat.find(index=2)
    with pytest.raises(FatElfError, match="no record -1"):
        fat.find(index=-1)


# --------------------------------------------------------------------------
# the "best" slice when the host has none

def test_best_order():
    assert fatelf.BEST_ORDER == ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")
    fat = fat_of(arch_elf("riscv32"), arch_elf("arm"), arch_elf("riscv64"), arch_elf("aarch64"))
    assert fatelf.best(fat).arch == "aarch64"
    assert fatelf.best(fat, available=["riscv32", "arm"]).arch == "arm"
    assert fatelf.best(fat, available=["x86_64"]) is None
    # host i386 has no slice: fallback takes the best one
    rec, view = fatelf.select(fat, host="i386", fallback=True)
    assert rec.arch == "aarch64" and bytes(view) == arch_elf("aarch64")
    # an IREE-acceptable osabi beats the arch order
    fat2 = fat_of(arch_elf("aarch64", osabi=9), arch_elf("riscv32", osabi=3))
    assert fatelf.best(fat2).arch == "riscv32"


def test_best_with_nothing_emulatable():
    fat = fat_of(make_elf(8, 32, 300), make_elf(183, 64, 300, big_endian=True))
    assert fatelf.best(fat) is None
    with pytest.raises(FatElfError, match="no slice elfkit can run or emulate"):
        fatelf.select(fat, host="x86_64", fallback=True)


# --------------------------------------------------------------------------
# remove, replace, split

def test_remove_is_pack_of_the_rest(tmp_path):
    elfs = [arch_elf(n) for n in ARCHES]
    src = tmp_path / "a.sos"
    fatelf.pack_to(src, elfs)
    out = tmp_path / "b.sos"
    recs = fatelf.remove_to(out, src, "riscv64")
    rest = [e for n, e in zip(ARCHES, elfs) if n != "riscv64"]
    assert out.read_bytes() == reference_fatelf(rest)
    assert [r.arch for r in recs] == [n for n in ARCHES if n != "riscv64"]
    fatelf.remove_to(out, src, index=0)
    assert out.read_bytes() == reference_fatelf(elfs[1:])
    single = fatelf.pack([elfs[0]])
    with pytest.raises(FatElfError, match="only record"):
        fatelf.remove_to(tmp_path / "c.sos", single, index=0)
    assert not (tmp_path / "c.sos").exists()


def test_remove_with_the_output_being_the_input(tmp_path):
    elfs = [arch_elf("x86_64"), arch_elf("arm")]
    src = tmp_path / "a.sos"
    fatelf.pack_to(src, elfs)
    fatelf.remove_to(src, src, "x86_64")
    assert src.read_bytes() == reference_fatelf(elfs[1:])


def test_replace(tmp_path):
    elfs = [arch_elf("x86_64"), arch_elf("aarch64"), arch_elf("riscv32")]
    src = tmp_path / "a.sos"
    fatelf.pack_to(src, elfs)
    new = arch_elf("aarch64", 9000, seed=5)
    old, recs = fatelf.replace_to(tmp_path / "b.sos", src, new)
    assert old.index == 1
    assert (tmp_path / "b.sos").read_bytes() == reference_fatelf([elfs[0], new, elfs[2]])
    # same bytes in: same file out
    fatelf.replace_to(tmp_path / "c.sos", src, elfs[1])
    assert (tmp_path / "c.sos").read_bytes() == src.read_bytes()
    with pytest.raises(FatElfError, match="no record matches") as e:
        fatelf.replace_to(tmp_path / "d.sos", src, arch_elf("arm"))
    one_line(e.value)
    with pytest.raises(FatElfError, match="no record matches"):  # osabi is part of the target
        fatelf.replace_to(tmp_path / "d.sos", src, arch_elf("x86_64", osabi=3))
    assert not (tmp_path / "d.sos").exists()


def test_split_names_are_unique(tmp_path):
    elfs = [arch_elf(n) for n in ARCHES]
    src = tmp_path / "plugin.v2.sos"
    fatelf.pack_to(src, elfs)
    out = tmp_path / "out"
    out.mkdir()
    plan = fatelf.split(src, out)
    names = [os.path.basename(p) for _r, p in plan]
    assert names == [f"plugin.v2.{n}.so" for n in ARCHES]
    for (_r, p), e in zip(plan, elfs):
        assert open(p, "rb").read() == e
    # default directory: the file's own
    plan = fatelf.split(src)
    assert all(os.path.dirname(p) == str(tmp_path) for _r, p in plan)


def test_slice_names_disambiguate():
    fat = fat_of(arch_elf("x86_64"), arch_elf("x86_64", osabi=3), arch_elf("x86_64", osabi=3, abiversion=2),
                 make_elf(21, 64, 300, big_endian=True), make_elf(999, 32, 300))
    assert list(fatelf.slice_names(fat.records).values()) == [
        "x86_64-none", "x86_64-linux-abiv0", "x86_64-linux-abiv2", "ppc64-64bit-be", "machine999-32bit"]


# --------------------------------------------------------------------------
# real plugins, when the session provides them (tests/conftest.py `plugins`)

def test_real_standalone_plugin_round_trip(request, tmp_path):
    try:
        plugins = request.getfixturevalue("plugins")
    except pytest.FixtureLookupError:
        pytest.skip("no plugins fixture")
    paths = []
    for name in ARCHES:
        try:
            paths.append(plugins.path("standalone", name))
        except Exception as e:  # an arch the toolchain could not build
            pytest.skip(f"standalone plugin for {name} unavailable: {e}")
    out = tmp_path / "standalone.sos"
    fatelf.pack_to(out, paths)
    blobs = [open(p, "rb").read() for p in paths]
    assert out.read_bytes() == reference_fatelf(blobs)
    with fatelf.read(out) as fat:
        assert [r.arch for r in fat.records] == list(ARCHES)
        assert all(p.severity is fatelf.Severity.NOTE for p in fatelf.verify(fat))
        for r, b in zip(fat.records, blobs):
            assert bytes(fat.slice(r)) == b
    auto = tmp_path / "auto.sos"
    fatelf.pack_to(auto, paths, align="auto")
    assert fatelf.verify(auto) == []


def test_split_creates_the_directory(tmp_path):
    src = tmp_path / "p.sos"
    fatelf.pack_to(src, [arch_elf("x86_64"), arch_elf("riscv32")])
    plan = fatelf.split(src, tmp_path / "new" / "dir")
    assert [os.path.basename(p) for _r, p in plan] == ["p.x86_64.so", "p.riscv32.so"]
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(FatElfError, match="not a directory"):
        fatelf.split(src, tmp_path / "file")


def test_copy_from_mapped_file_into_a_file_object(tmp_path):
    import io
    src = tmp_path / "p.sos"
    elfs = [arch_elf("x86_64", 3 * (1 << 20) + 5), arch_elf("arm")]
    fatelf.pack_to(src, elfs)
    buf = io.BytesIO()
    fatelf.extract_to(buf, src, "x86_64")
    assert buf.getvalue() == elfs[0]
    # pack from a path into a file object (descriptor source, Python sink)
    one = tmp_path / "one.so"
    one.write_bytes(elfs[0])
    buf = io.BytesIO()
    fatelf.pack_to(buf, [one])
    assert buf.getvalue() == reference_fatelf([elfs[0]])


def test_import_is_cheap():
    import subprocess
    import sys
    code = ("import sys, elfkit.fatelf, elfkit.fatelf.cli; "
            "bad = [m for m in ('lief', 'unicorn', 'capstone', 'numpy') if m in sys.modules]; "
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "", out


# --------------------------------------------------------------------------
# identify(): what a file is, from its headers

def test_identify_plain_elf_per_arch(tmp_path):
    for name, (machine, bits) in ARCHES.items():
        elf = arch_elf(name)
        want = fatelf.Identity("elf", (name,), (machine,), (bits,))
        assert fatelf.identify(elf) == want
        assert fatelf.identify(bytearray(elf)) == want
        assert fatelf.identify(memoryview(elf)) == want
        p = tmp_path / f"{name}.so"
        p.write_bytes(elf)
        assert fatelf.identify(p) == want and fatelf.identify(str(p)) == want


def test_identify_machines_elfkit_does_not_run():
    # big-endian ppc64 (21) and an unknown 32-bit machine: no elfkit arch
    assert fatelf.identify(make_elf(21, 64, 300, big_endian=True)) == \
        fatelf.Identity("elf", (None,), (21,), (64,))
    assert fatelf.identify(make_elf(999, 32, 300)) == fatelf.Identity("elf", (None,), (999,), (32,))
    # the header alone is enough: e_machine is at offset 18
    assert fatelf.identify(arch_elf("riscv32")[:20]) == \
        fatelf.Identity("elf", ("riscv32",), (243,), (32,))


def test_identify_fatelf(tmp_path):
    names = ["aarch64", "riscv32", "x86_64", "arm"]
    data = fatelf.pack([arch_elf(n) for n in names] + [make_elf(21, 64, 300, big_endian=True)])
    want = fatelf.Identity("fatelf", tuple(names) + (None,),
                           tuple(ARCHES[n][0] for n in names) + (21,),
                           tuple(ARCHES[n][1] for n in names) + (64,))
    assert fatelf.identify(data) == want
    p = tmp_path / "p.sos"
    p.write_bytes(data)
    assert fatelf.identify(p) == want
    with fatelf.read(p) as fat:
        assert fatelf.identify(fat) == want
    # only the header and record table are read: the slices need not be there
    assert fatelf.identify(data[:8 + 24 * 5]) == want
    assert fatelf.identify(raw_fatelf([])) == fatelf.Identity("fatelf", (), (), ())


@pytest.mark.parametrize("data, message", [
    (b"", "not an ELF or FatELF file"),
    (b"MZ\x90\x00 not an elf" * 4, "not an ELF or FatELF file"),
    (b"\x7fEL", "not an ELF or FatELF file"),
    (b"\x7fELF\x02\x01\x01", "ELF header truncated"),
    (arch_elf("x86_64")[:19], "ELF header truncated"),
    (b"\x7fELF\x03\x01" + bytes(14), "invalid ELF class 3"),
    (b"\x7fELF\x02\x03" + bytes(14), "invalid ELF data encoding 3"),
    (b"\xfa\x70\x0e\x1f\x01", "FatELF header truncated"),
    (raw_fatelf([(62, 0, 0, 2, 1, 4096, 100)], count=2), "FatELF file truncated"),
    (raw_fatelf([], version=2), "FatELF has version 2"),
    (raw_fatelf([(62, 0, 0, 3, 1, 4096, 100)]), "record 0: invalid word size 3"),
])
def test_identify_errors(data, message, tmp_path):
    with pytest.raises(FatElfError, match=message) as e:
        fatelf.identify(data)
    one_line(e.value)
    p = tmp_path / "bad.bin"
    p.write_bytes(data)
    with pytest.raises(FatElfError, match=message) as e:
        fatelf.identify(p)
    assert str(e.value).startswith(f"{p}: ")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.sampled_from([b"", b"\x7fELF", b"\xfa\x70\x0e\x1f"]))
def test_identify_never_crashes(tail, magic):
    data = magic + tail
    try:
        ident = fatelf.identify(data)
    except FatElfError:
        return
    assert ident.kind in ("elf", "fatelf")
    assert len(ident.arches) == len(ident.machines) == len(ident.word_sizes)
    assert set(ident.word_sizes) <= {32, 64}


def test_identify_prefixes_of_a_real_fatelf():
    data = fatelf.pack([arch_elf("x86_64"), arch_elf("i386")])
    for n in range(len(data) + 1):
        try:
            fatelf.identify(data[:n])
        except FatElfError:
            assert n < 8 + 24 * 2
        else:
            assert n >= 8 + 24 * 2


def test_identify_real_plugins_match_pyelftools(request):
    from elftools.elf.elffile import ELFFile
    from elftools.elf.enums import ENUM_E_MACHINE
    try:
        plugins = request.getfixturevalue("plugins")
    except pytest.FixtureLookupError:
        pytest.skip("no plugins fixture")
    seen = 0
    for name, arch, path in plugins:
        with open(path, "rb") as f:
            ef = ELFFile(f)
            want = fatelf.Identity("elf", (arch,), (ENUM_E_MACHINE[ef["e_machine"]],),
                                   (ef.elfclass,))
        assert fatelf.identify(path) == want, (name, arch)
        seen += 1
    assert seen
