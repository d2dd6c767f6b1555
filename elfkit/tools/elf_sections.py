"""What ``elfkit disasm`` reads of an ELF: its machine and class, the
executable sections (else the executable ``PT_LOAD`` segments) and the
function symbols of ``.symtab`` (else ``.dynsym``).

Read with :mod:`struct` from the section and program headers, as pyelftools
reads them (names decoded as UTF-8, bad bytes replaced), without importing
pyelftools (typing, inspect, ast and its DWARF tables: tens of milliseconds of
start-up).  A header or table that does not fit in the file is a
:class:`BadElf` saying which."""
from __future__ import annotations

import struct

ET_REL = 1
SHF_EXECINSTR = 0x4
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_DYNSYM = 11
PT_LOAD = 1
PF_X = 1
STT_NOTYPE, STT_FUNC = 0, 2


class BadElf(ValueError):
    """The file is not an ELF, or its headers or tables do not fit in it."""


class ElfFile:
    """The section and program headers of one ELF image (``data``): the ELF
    header is read at once, the tables by :meth:`read_tables`."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\x7fELF":
            raise BadElf("Magic number does not match")       # pyelftools' words
        if len(data) < 16:
            raise BadElf("the ELF identification is past the end of the file")
        if data[4] not in (1, 2) or data[5] not in (1, 2):
            raise BadElf(f"bad class {data[4]} or data encoding {data[5]}")
        self.data = data
        self.bits = 64 if data[4] == 2 else 32
        self.end = "<" if data[5] == 1 else ">"
        e = self.end
        if self.bits == 64:
            fields = self._unpack(e + "HHIQQQIHHHHHH", 16, "the ELF header")
            (self.type, self.machine, _v, _entry, phoff, shoff, _f, _eh, phentsize, phnum,
             shentsize, shnum, shstrndx) = fields
            self._sh = (e + "IIQQQQIIQQ", 64)
            self._ph = (e + "IIQQQQQQ", 56)
        else:
            fields = self._unpack(e + "HHIIIIIHHHHHH", 16, "the ELF header")
            (self.type, self.machine, _v, _entry, phoff, shoff, _f, _eh, phentsize, phnum,
             shentsize, shnum, shstrndx) = fields
            self._sh = (e + "IIIIIIIIII", 40)
            self._ph = (e + "IIIIIIII", 32)
        self._where = (shoff, shnum, shentsize, phoff, phnum, phentsize, shstrndx)
        self.sections: list[tuple[int, ...]] = []
        self.segments: list[tuple[int, ...]] = []
        self.names: list[str] = []

    def read_tables(self) -> None:
        """Read the section and program headers and the section names."""
        shoff, shnum, shentsize, phoff, phnum, phentsize, shstrndx = self._where
        self.sections = self._table(shoff, shnum, shentsize, self._sh, "section header")
        self.segments = self._table(phoff, phnum, phentsize, self._ph, "program header")
        names = self.sections[shstrndx] if 0 < shstrndx < len(self.sections) else None
        self.names = [self._string(names, s[0]) if names else "" for s in self.sections]

    def _unpack(self, fmt: str, offset: int, what: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        if offset < 0 or offset + size > len(self.data):
            raise BadElf(f"{what} at {offset:#x} is past the end of the file")
        return struct.unpack_from(fmt, self.data, offset)

    def _table(self, offset: int, count: int, entsize: int, layout: tuple[str, int],
               what: str) -> list[tuple[int, ...]]:
        if not count or not offset:
            return []
        if entsize < layout[1]:
            raise BadElf(f"{what} entries of {entsize} bytes (at least {layout[1]} expected)")
        return [self._unpack(layout[0], offset + i * entsize, f"{what} {i}")
                for i in range(count)]

    # section header: name, type, flags, addr, offset, size, link, info, align, entsize
    def _bytes(self, offset: int, size: int, what: str) -> bytes:
        if offset + size > len(self.data):
            raise BadElf(f"{what} ({size} bytes at {offset:#x}) is past the end of the file")
        return self.data[offset:offset + size]

    def _string(self, table: tuple[int, ...], offset: int) -> str:
        start = table[4] + offset
        if offset >= table[5] or start >= len(self.data):
            raise BadElf(f"string offset {offset:#x} is outside its string table")
        stop = self.data.find(b"\0", start)
        raw = self.data[start:stop if stop >= 0 else len(self.data)]
        return raw.decode("utf-8", "replace")

    def code_regions(self) -> list[tuple[str, int, bytes]]:
        """(name, address, bytes) of the executable sections, else of the
        executable PT_LOAD segments."""
        regions = [(name, s[3], self._bytes(s[4], s[5], f"section {name}"))
                   for name, s in zip(self.names, self.sections)
                   if s[2] & SHF_EXECINSTR and s[1] == SHT_PROGBITS and s[5]]
        if not regions:
            for p in self.segments:
                p_type, p_offset, p_vaddr, p_filesz, p_flags = \
                    (p[0], p[2], p[3], p[5], p[1]) if self.bits == 64 else \
                    (p[0], p[1], p[2], p[4], p[6])
                if p_type == PT_LOAD and p_flags & PF_X:
                    regions.append((f"segment @{p_vaddr:#x}", p_vaddr,
                                    self._bytes(p_offset, p_filesz, "a segment")))
        return regions

    def symbols(self, name: str) -> list[tuple[str, int, int, int, int]]:
        """(name, type, section index, value, size) of each symbol of the
        symbol table called ``name`` (none when there is no such table)."""
        for secname, s in zip(self.names, self.sections):
            if secname == name and s[1] in (SHT_SYMTAB, SHT_DYNSYM):
                break
        else:
            return []
        entsize, link = s[9], s[6]
        if entsize <= 0 or s[5] % entsize:
            raise BadElf(f"section {name}: {s[5]} bytes, not a multiple of its {entsize}-byte "
                         "entries")
        if not 0 < link < len(self.sections):
            raise BadElf(f"section {name}: its string table index {link} is out of range")
        strings = self.sections[link]
        fmt = self.end + ("IBBHQQ" if self.bits == 64 else "IIIBBH")
        out = []
        for i in range(s[5] // entsize):
            fields = self._unpack(fmt, s[4] + i * entsize, f"symbol {i} of {name}")
            if self.bits == 64:
                st_name, info, _other, shndx, value, size = fields
            else:
                st_name, value, size, info, _other, shndx = fields
            sym = self._string(strings, st_name) if st_name else ""
            out.append((sym, info & 0xF, shndx, value, size))
        return out
