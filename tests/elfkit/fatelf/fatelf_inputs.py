"""Inputs of the FatELF tests (test_fatelf.py, test_fatelf_cli.py), generated
here: a valid ELF header plus one PT_LOAD for each architecture, 32 or
64-bit, little or big-endian, with a chosen p_align; FatELF files built from
the documented layout (``reference_fatelf``) or by hand (``raw_fatelf``,
``place``), never by calling pack(); and ``BAD``, malformed files with the
message each must produce."""
from __future__ import annotations

import struct

from elfkit import fatelf

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
