"""FatELF v1: the format, reading, selecting and verifying (writing: write.py).

On-disk layout (every FatELF field is little-endian, whatever the host or the
embedded ELFs; the embedded ELFs keep their own byte order)::

    0   u32  magic          0x1F0E70FA  (bytes FA 70 0E 1F)
    4   u16  version        1
    6   u8   record count   0..255
    7   u8   reserved       0
    8 + 24*i: record i
        +0  u16 machine     e_machine
        +2  u8  osabi       e_ident[EI_OSABI]
        +3  u8  osabi_ver   e_ident[EI_ABIVERSION]
        +4  u8  word size   1 = 32-bit, 2 = 64-bit   (same values as EI_CLASS)
        +5  u8  byte order  1 = little, 0 = big      (NOT the EI_DATA values)
        +6  u8  reserved0, +7 u8 reserved1
        +8  u64 offset      of the ELF from the start of the file
        +16 u64 size        of the ELF

The writer (``write.py``) puts the first ELF at ``align_up(8 + 24*n, align)`` and every next
one at the previous offset plus ``align_up(size, align)``, with zero padding
in between and nothing after the last ELF.  At the default 4096 this is byte
for byte what ``iree-fatelf join`` and icculus ``fatelf-glue`` write.

Nothing here imports anything heavier than the standard library; the
architecture table (``elfkit.arch``) is imported on first use.
"""
from __future__ import annotations

import enum
import errno
import json
import mmap
import os
import stat as _stat
import struct
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from ..errors import ArchError, FatElfError

__all__ = [
    "MAGIC", "MAGIC_BYTES", "VERSION", "HEADER_SIZE", "RECORD_SIZE", "MAX_RECORDS",
    "PAGE_SIZE", "DEFAULT_ALIGN", "IREE_OSABIS", "BEST_ORDER",
    "WordSize", "ByteOrder", "OsAbi", "Severity",
    "Record", "Problem", "FatElf", "FatElfArchError",
    "is_fatelf", "read", "select", "best", "host_record", "matches_host",
    "verify", "slice_names",
]

MAGIC = 0x1F0E70FA
MAGIC_BYTES = b"\xfa\x70\x0e\x1f"
VERSION = 1
HEADER_SIZE = 8
RECORD_SIZE = 24
MAX_RECORDS = 255
PAGE_SIZE = 4096
DEFAULT_ALIGN = 4096
#: largest alignment ``pack`` accepts (also the cap for ``align="auto"``)
MAX_ALIGN = 1 << 30

ELF_MAGIC = b"\x7fELF"
_PT_LOAD = 1

_HEADER = struct.Struct("<IHBB")
_RECORD = struct.Struct("<HBBBBBBQQ")

#: EI_OSABI values IREE's runtime accepts for the host slice: NONE (SysV),
#: Linux and Standalone.
IREE_OSABIS = frozenset({0, 3, 255})

#: Preference order of :func:`best` when the host has no slice of its own.
BEST_ORDER = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")

_CHUNK = 1 << 20


class WordSize(enum.IntEnum):
    """FatELF ``word_size`` (same numbers as ELF ``EI_CLASS``)."""

    BITS32 = 1
    BITS64 = 2


class ByteOrder(enum.IntEnum):
    """FatELF ``byte_order``.  Careful: ELF ``EI_DATA`` uses 1 = LSB, 2 = MSB."""

    BIG = 0
    LITTLE = 1


class OsAbi(enum.IntEnum):
    NONE = 0
    HPUX = 1
    NETBSD = 2
    LINUX = 3
    HURD = 4
    SOLARIS = 6
    AIX = 7
    IRIX = 8
    FREEBSD = 9
    TRU64 = 10
    MODESTO = 11
    OPENBSD = 12
    OPENVMS = 13
    NSK = 14
    AROS = 15
    ARM = 97
    STANDALONE = 255


class Severity(str, enum.Enum):
    """How bad a :class:`Problem` is.

    ``fatal``: the file cannot be read as a FatELF (or ELF) at all.
    ``error``: the file is malformed; :func:`read` refuses it.
    ``warning``: legal to read but against the FatELF spec or unwise
    (slices not page-aligned, non-zero reserved bytes, trailing junk).
    ``note``: worth knowing, not wrong: a slice whose offset is page-aligned
    but not a multiple of its segments' ``p_align`` (typical of aarch64
    linked for 64 KiB pages and packed at 4096, as IREE does) cannot be
    mapped in place, only copied.
    """

    FATAL = "fatal"
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    def __str__(self) -> str:
        return self.value


# Display names for machines elfkit does not run (ours come from elfkit.arch).
_OTHER_MACHINES = {0: "none", 2: "sparc", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390",
                   43: "sparcv9", 50: "ia64", 258: "loongarch"}


class FatElfArchError(FatElfError, ArchError):
    """An unknown architecture name, or no slice for the requested one."""


# --------------------------------------------------------------------------
# architecture names (elfkit.arch imported lazily)

_arch_by_target: dict[tuple[int, int], str] | None = None
_machine_names: dict[int, str] | None = None


def _arch_tables() -> tuple[dict[tuple[int, int], str], dict[int, str]]:
    global _arch_by_target, _machine_names
    if _arch_by_target is None or _machine_names is None:
        from .. import arch as _arch
        _arch_by_target = {(a.machine, WordSize.BITS64 if a.bits == 64 else WordSize.BITS32): a.name
                           for a in _arch.ARCHES.values()}
        names = dict(_OTHER_MACHINES)
        names.update(_arch.MACHINE_NAMES)
        _machine_names = names
    return _arch_by_target, _machine_names


def _arch_name(machine: int, word_size: int) -> str | None:
    return _arch_tables()[0].get((machine, word_size))


def machine_name(machine: int) -> str:
    """A display name for an ``e_machine`` value (``riscv`` for 243)."""
    return _arch_tables()[1].get(machine, f"machine{machine}")


def osabi_name(osabi: int) -> str:
    try:
        return OsAbi(osabi).name.lower()
    except ValueError:
        return f"osabi{osabi}"


def _resolve_arch(arch: Any) -> str:
    """Our arch name for a name, alias or Arch; FatElfArchError otherwise."""
    from .. import arch as _arch
    try:
        return _arch.get(arch).name
    except ArchError as e:
        raise FatElfArchError(str(e)) from None


def _bits_text(word_size: int) -> str:
    return {1: "32-bit", 2: "64-bit"}.get(word_size, f"word size {word_size}")


def _order_text(byte_order: int) -> str:
    return {0: "big-endian", 1: "little-endian"}.get(byte_order, f"byte order {byte_order}")


# --------------------------------------------------------------------------
# records and problems

@dataclass(frozen=True, slots=True)
class Record:
    """One FatELF record: which target a slice is for and where it lies.

    ``word_size`` and ``byte_order`` use the FatELF numbers (1/2 and
    1 = little, 0 = big).  For a plain ELF read as a FatELF, the single
    record has offset 0 and the file's size.
    """

    index: int
    machine: int
    osabi: int
    osabi_version: int
    word_size: int
    byte_order: int
    offset: int
    size: int
    reserved0: int = 0
    reserved1: int = 0

    @property
    def arch(self) -> str | None:
        """The elfkit architecture name (``x86_64``, ``aarch64``, ``riscv64``,
        ``arm``, ``i386``, ``riscv32``), or None if elfkit has no such
        architecture (other machines, wrong word size, big-endian)."""
        if self.byte_order != ByteOrder.LITTLE:
            return None
        return _arch_name(self.machine, self.word_size)

    @property
    def bits(self) -> int | None:
        return {1: 32, 2: 64}.get(self.word_size)

    @property
    def little_endian(self) -> bool:
        return self.byte_order == ByteOrder.LITTLE

    @property
    def end(self) -> int:
        """Offset one past the slice's last byte."""
        return self.offset + self.size

    @property
    def target(self) -> tuple[int, int, int, int, int]:
        """The fields that identify a target; two records with the same
        target are illegal."""
        return (self.machine, self.osabi, self.osabi_version, self.word_size, self.byte_order)

    @property
    def machine_name(self) -> str:
        return machine_name(self.machine)

    @property
    def osabi_name(self) -> str:
        return osabi_name(self.osabi)

    @property
    def label(self) -> str:
        """A short name: the arch name if elfkit knows it, otherwise the
        machine name and size (``ppc-64bit``), with ``-be`` for big-endian."""
        name = _arch_name(self.machine, self.word_size)
        if name is None:
            name = f"{self.machine_name}-{self.bits}bit" if self.bits else \
                f"{self.machine_name}-ws{self.word_size}"
        if self.byte_order != ByteOrder.LITTLE:
            name += "-be" if self.byte_order == ByteOrder.BIG else f"-bo{self.byte_order}"
        return name

    def describe(self) -> str:
        return (f"{self.label} (machine {self.machine} {self.machine_name}, "
                f"{_bits_text(self.word_size)}, {_order_text(self.byte_order)}, "
                f"osabi {self.osabi} {self.osabi_name}, abiversion {self.osabi_version})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "arch": self.arch, "label": self.label,
            "machine": self.machine, "machine_name": self.machine_name,
            "osabi": self.osabi, "osabi_name": self.osabi_name,
            "osabi_version": self.osabi_version,
            "word_size": self.word_size, "bits": self.bits,
            "byte_order": self.byte_order,
            "endian": {0: "big", 1: "little"}.get(self.byte_order),
            "offset": self.offset, "size": self.size,
            "reserved0": self.reserved0, "reserved1": self.reserved1,
        }

    def pack(self) -> bytes:
        """The 24 on-disk bytes of this record."""
        return _RECORD.pack(self.machine, self.osabi, self.osabi_version, self.word_size,
                            self.byte_order, self.reserved0, self.reserved1,
                            self.offset, self.size)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing :func:`verify` found wrong.  ``message`` names the record
    index and file offset where there is one."""

    severity: Severity
    message: str
    index: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "message": self.message,
                "index": self.index, "offset": self.offset}


class _Fatal(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# --------------------------------------------------------------------------
# ELF headers (only what FatELF needs: ident, machine, program headers)

@dataclass(frozen=True, slots=True)
class _ElfInfo:
    machine: int
    osabi: int
    osabi_version: int
    word_size: int        # FatELF numbers
    byte_order: int       # FatELF numbers
    max_load_align: int   # largest PT_LOAD p_align (0: none)
    phdr_error: str | None


def _hexstart(b: bytes) -> str:
    return " ".join(f"{x:02x}" for x in b[:8]) or "nothing"


def _elf_info(readat: Callable[[int, int], Any], size: int) -> _ElfInfo:
    """Parse an ELF header from ``readat(offset, count)`` over ``size``
    bytes.  Raises _Fatal with the reason when it is not a usable ELF."""
    ident = bytes(readat(0, min(size, 16)))
    if len(ident) < 4 or ident[:4] != ELF_MAGIC:
        raise _Fatal(f"not an ELF file (starts with {_hexstart(ident)})")
    if len(ident) < 16:
        raise _Fatal(f"ELF identification truncated ({size} bytes, need 16)")
    cls, data = ident[4], ident[5]
    if cls not in (1, 2):
        raise _Fatal(f"invalid ELF class {cls} (EI_CLASS must be 1 or 2)")
    if data not in (1, 2):
        raise _Fatal(f"invalid ELF data encoding {data} (EI_DATA must be 1 or 2)")
    ehsize = 52 if cls == 1 else 64
    if size < ehsize:
        raise _Fatal(f"ELF header truncated ({size} bytes, a {32 * cls}-bit header needs {ehsize})")
    e = "<" if data == 1 else ">"
    hdr = bytes(readat(16, ehsize - 16))
    if cls == 1:
        _t, machine, _v, _entry, phoff, _shoff, _fl, _ehs, phentsize, phnum = \
            struct.unpack_from(e + "HHIIIIIHHH", hdr, 0)
        min_ent, align_fmt, align_at = 32, e + "I", 28
    else:
        _t, machine, _v, _entry, phoff, _shoff, _fl, _ehs, phentsize, phnum = \
            struct.unpack_from(e + "HHIQQQIHHH", hdr, 0)
        min_ent, align_fmt, align_at = 56, e + "Q", 48
    max_align = 0
    phdr_error = None
    if phnum:
        if phentsize < min_ent:
            phdr_error = f"e_phentsize {phentsize} is smaller than a program header ({min_ent})"
        elif phoff + phnum * phentsize > size:
            phdr_error = (f"program headers {phoff}..{phoff + phnum * phentsize - 1} "
                          f"({phnum} x {phentsize} bytes) extend past the end of the ELF ({size} bytes)")
        else:
            table = bytes(readat(phoff, phnum * phentsize))
            for i in range(phnum):
                base = i * phentsize
                p_type = struct.unpack_from(e + "I", table, base)[0]
                if p_type == _PT_LOAD:
                    a = struct.unpack_from(align_fmt, table, base + align_at)[0]
                    if a > max_align:
                        max_align = a
    return _ElfInfo(machine, ident[7], ident[8], cls, 1 if data == 1 else 0, max_align, phdr_error)


def _view_reader(view: memoryview) -> Callable[[int, int], memoryview]:
    return lambda off, n: view[off:off + n]


def _fd_reader(fd: int, base: int = 0) -> Callable[[int, int], bytes]:
    return lambda off, n: os.pread(fd, n, base + off)


# --------------------------------------------------------------------------
# reading

def _is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def is_fatelf(data: Any) -> bool:
    """True when ``data`` (bytes-like, or a path) starts with the FatELF magic."""
    if _is_path(data):
        with open(data, "rb") as f:
            head = f.read(4)
    else:
        head = bytes(memoryview(data).cast("B")[:4]) if not isinstance(data, (bytes, bytearray)) \
            else bytes(data[:4])
    return head == MAGIC_BYTES


class FatElf:
    """A parsed FatELF (or a plain ELF seen as a one-record FatELF).

    Slices are memoryviews over the caller's buffer or over a read-only
    ``mmap`` of the file: nothing is copied.  Close it (or use ``with``) to
    unmap; views handed out earlier keep the mapping alive until they are
    released.
    """

    def __init__(self, view: memoryview, records: list[Record], *, is_plain: bool,
                 version: int | None, reserved: int = 0, name: str | None = None,
                 _mm: mmap.mmap | None = None, _file: BinaryIO | None = None):
        self._view = view
        self.records = records
        self.is_plain = is_plain
        self.version = version
        self.reserved = reserved
        self.name = name
        self._mm = _mm
        self._file = _file
        self._size = len(view)
        self.closed = False

    # -- container protocol
    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __getitem__(self, index: int) -> Record:
        return self.records[index]

    def __enter__(self) -> "FatElf":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "plain ELF" if self.is_plain else f"FatELF v{self.version}"
        where = f" {self.name!r}" if self.name else ""
        return f"<FatElf{where} {kind}, {len(self.records)} records: " + \
            ", ".join(r.label for r in self.records) + ">"

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._view.release()
        except BufferError:
            pass
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass  # slices still alive; the mapping goes when they do
            self._mm = None
        if self._file is not None:
            self._file.close()
            self._file = None

    # -- data
    @property
    def size(self) -> int:
        """Length of the whole file in bytes."""
        return self._size

    @property
    def data(self) -> memoryview:
        """The whole file."""
        self._check_open()
        return self._view

    @property
    def header_size(self) -> int:
        return 0 if self.is_plain else HEADER_SIZE + RECORD_SIZE * len(self.records)

    def _check_open(self) -> None:
        if self.closed:
            raise FatElfError(f"{self._where()}FatELF is closed")

    def _where(self) -> str:
        return f"{self.name}: " if self.name else ""

    def _record(self, record: "Record | int") -> Record:
        if isinstance(record, Record):
            return record
        return self.find(index=record)

    def slice(self, record: "Record | int") -> memoryview:
        """The bytes of one record's ELF (zero-copy), bounds-checked."""
        self._check_open()
        r = self._record(record)
        n = self._size
        if r.size == 0 or r.offset < self.header_size or r.end > n:
            raise FatElfError(
                f"{self._where()}record {r.index}: ELF file range out of bounds; "
                f"{r.offset}-{r.end - 1} ({r.size}) specified out of {n} valid bytes")
        return self._view[r.offset:r.end]

    def find(self, arch: Any = None, *, index: int | None = None) -> Record:
        """The record at ``index``, or the first record for ``arch`` (a name,
        alias or Arch), preferring osabi NONE/Linux/Standalone when several
        records have that arch."""
        if (arch is None) == (index is None):
            raise TypeError("give exactly one of arch and index")
        if index is not None:
            if not 0 <= index < len(self.records):
                raise FatElfError(f"{self._where()}no record {index}: "
                                  f"the file has {len(self.records)} record(s)")
            return self.records[index]
        name = _resolve_arch(arch)
        found = [r for r in self.records if r.arch == name]
        if not found:
            raise FatElfArchError(f"{self._where()}no {name} slice; the file has "
                                  f"{self.summary()}")
        for r in found:
            if r.osabi in IREE_OSABIS:
                return r
        return found[0]

    def summary(self) -> str:
        """``record 0 x86_64, record 1 aarch64`` (for messages)."""
        if not self.records:
            return "no records"
        return ", ".join(f"record {r.index} {r.label}"
                         + ("" if r.osabi in IREE_OSABIS else f" (osabi {r.osabi} {r.osabi_name})")
                         for r in self.records)

    @property
    def end(self) -> int:
        """Furthest record end (the file size for a clean file)."""
        return max((r.end for r in self.records), default=self.header_size)

    # -- conveniences
    def select(self, arch: Any = None, *, fallback: bool = False,
               host: Any = None) -> tuple[Record, memoryview]:
        return select(self, arch, fallback=fallback, host=host)

    def verify(self) -> list[Problem]:
        return _check(self)

    def names(self) -> dict[int, str]:
        return slice_names(self.records)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.name, "fatelf": not self.is_plain, "version": self.version,
                "size": self._size, "records": [r.to_dict() for r in self.records]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def _open_source(source: Any) -> tuple[memoryview, str | None, mmap.mmap | None, BinaryIO | None]:
    if _is_path(source):
        name = os.fspath(source)
        f = open(name, "rb")
        try:
            st = os.fstat(f.fileno())
            if _stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", name)
            mm = None
            if st.st_size > 0 and _stat.S_ISREG(st.st_mode):
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                view = memoryview(mm)
            else:  # empty file, pipe, device: read it
                view = memoryview(f.read())
                f.close()
                f = None  # type: ignore[assignment]
            return view, name, mm, f
        except BaseException:
            if f is not None:
                f.close()
            raise
    if isinstance(source, FatElf):
        raise TypeError("already a FatElf")
    try:
        view = memoryview(source)
    except TypeError:
        raise TypeError(f"expected a path, bytes, bytearray or memoryview, "
                        f"not {type(source).__name__}") from None
    if view.ndim != 1 or view.itemsize != 1 or view.format not in ("B", "b", "c"):
        view = view.cast("B")
    return view, None, None, None


def _parse(view: memoryview) -> tuple[bool, int | None, int, list[Record]]:
    """(is_plain, version, reserved, records); raises _Fatal."""
    n = len(view)
    head = bytes(view[:4])
    if head == MAGIC_BYTES:
        if n < HEADER_SIZE:
            raise _Fatal(f"FatELF header truncated ({n} bytes, need {HEADER_SIZE})")
        _magic, version, count, reserved = _HEADER.unpack_from(view, 0)
        if version != VERSION:
            raise _Fatal(f"FatELF has version {version} but runtime only supports version {VERSION}")
        required = HEADER_SIZE + RECORD_SIZE * count
        if n < required:
            raise _Fatal(f"FatELF file truncated, requires at least {required}B for headers "
                         f"but only have {n}B available ({count} records)")
        records = []
        for i in range(count):
            f = _RECORD.unpack_from(view, HEADER_SIZE + RECORD_SIZE * i)
            records.append(Record(i, f[0], f[1], f[2], f[3], f[4], f[7], f[8], f[5], f[6]))
        return False, version, reserved, records
    if head == ELF_MAGIC:
        info = _elf_info(_view_reader(view), n)
        rec = Record(0, info.machine, info.osabi, info.osabi_version, info.word_size,
                     info.byte_order, 0, n)
        return True, None, 0, [rec]
    if n == 0:
        raise _Fatal("empty file: neither a FatELF nor an ELF")
    raise _Fatal(f"neither a FatELF nor an ELF file (starts with {_hexstart(head)}; "
                 f"FatELF magic is fa 70 0e 1f)")


def read(source: Any, *, strict: bool = True) -> FatElf:
    """Read a FatELF (or a plain ELF, as one record with ``is_plain`` set).

    ``source`` is a path (mapped read-only, zero-copy), bytes, bytearray or
    memoryview; a FatElf is returned as is.  With ``strict`` (the default)
    every check of :func:`verify` that is an *error* raises FatElfError
    (records out of bounds, overlapping, duplicated, 0 records, slices that
    are not ELF or disagree with their record); warnings do not.  With
    ``strict=False`` only the header and record table must be readable, as
    in IREE's runtime, and :meth:`FatElf.slice` checks bounds.
    """
    if isinstance(source, FatElf):
        return source
    view, name, mm, f = _open_source(source)
    fat = None
    try:
        try:
            is_plain, version, reserved, records = _parse(view)
        except _Fatal as e:
            raise FatElfError(f"{name}: {e.message}" if name else e.message) from None
        fat = FatElf(view, records, is_plain=is_plain, version=version, reserved=reserved,
                     name=name, _mm=mm, _file=f)
        if strict:
            bad = [p for p in _check(fat) if p.severity in (Severity.FATAL, Severity.ERROR)]
            if bad:
                more = f" (and {len(bad) - 1} more problem(s))" if len(bad) > 1 else ""
                raise FatElfError(f"{fat._where()}{bad[0].message}{more}")
        return fat
    except BaseException:
        if fat is not None:
            fat.close()
        else:
            try:
                view.release()
            except BufferError:
                pass
            if mm is not None:
                mm.close()
            if f is not None:
                f.close()
        raise


@contextmanager
def _opened(source: Any, strict: bool = True) -> Iterator[FatElf]:
    """read() that closes what it opened (not a FatElf passed in)."""
    if isinstance(source, FatElf):
        yield source
        return
    fat = read(source, strict=strict)
    try:
        yield fat
    finally:
        fat.close()


# --------------------------------------------------------------------------
# verification

def _slice_checks(fat: FatElf, r: Record, where: str) -> list[Problem]:
    """Problems of one in-bounds slice: not an ELF, header disagreeing with
    the record, program headers outside the slice, p_align vs offset."""
    problems: list[Problem] = []
    E, N = Severity.ERROR, Severity.NOTE
    view = fat._view
    sl = view[r.offset:r.end]
    try:
        info = _elf_info(_view_reader(sl), len(sl))
    except _Fatal as e:
        problems.append(Problem(E, f"{where}: slice is not a usable ELF: {e.message}",
                                r.index, r.offset))
        return problems
    if not fat.is_plain:
        if info.machine != r.machine:
            problems.append(Problem(E, f"{where}: the record says machine {r.machine} "
                                    f"({machine_name(r.machine)}) but the ELF header says "
                                    f"{info.machine} ({machine_name(info.machine)})",
                                    r.index, r.offset))
        if info.word_size != r.word_size:
            problems.append(Problem(E, f"{where}: the record says {_bits_text(r.word_size)} "
                                    f"(word size {r.word_size}) but the ELF header says "
                                    f"{_bits_text(info.word_size)} (EI_CLASS {info.word_size})",
                                    r.index, r.offset))
        if info.byte_order != r.byte_order:
            problems.append(Problem(E, f"{where}: the record says {_order_text(r.byte_order)} "
                                    f"(byte order {r.byte_order}) but the ELF header says "
                                    f"{_order_text(info.byte_order)} "
                                    f"(EI_DATA {2 - info.byte_order})", r.index, r.offset))
        if info.osabi != r.osabi:
            problems.append(Problem(E, f"{where}: the record says osabi {r.osabi} "
                                    f"({osabi_name(r.osabi)}) but the ELF header says "
                                    f"{info.osabi} ({osabi_name(info.osabi)})", r.index, r.offset))
        if info.osabi_version != r.osabi_version:
            problems.append(Problem(E, f"{where}: the record says abiversion {r.osabi_version} "
                                    f"but the ELF header says {info.osabi_version}",
                                    r.index, r.offset))
    if info.phdr_error:
        problems.append(Problem(E, f"{where}: {info.phdr_error}", r.index, r.offset))
    a = info.max_load_align
    if a & (a - 1):
        problems.append(Problem(Severity.WARNING, f"{where}: PT_LOAD p_align {a} is not a power "
                                f"of two", r.index, r.offset))
    elif not fat.is_plain and a > PAGE_SIZE and r.offset % a:
        problems.append(Problem(N, f"{where}: offset is not a multiple of the slice's largest "
                                f"PT_LOAD p_align ({a}), so it cannot be mapped in place "
                                f"(pack with align='auto')", r.index, r.offset))
    return problems


def _check(fat: FatElf) -> list[Problem]:
    problems: list[Problem] = []
    E, W = Severity.ERROR, Severity.WARNING
    n = fat.size

    if fat.is_plain:
        return _slice_checks(fat, fat.records[0], "ELF")

    if fat.reserved:
        problems.append(Problem(W, f"FatELF header reserved byte is {fat.reserved}, not 0", None, 7))
    count = len(fat.records)
    if count == 0:
        problems.append(Problem(E, "FatELF has no records", None, 6))
        return problems
    header_end = fat.header_size
    in_bounds: list[Record] = []
    for r in fat.records:
        at = HEADER_SIZE + RECORD_SIZE * r.index
        where = f"record {r.index} ({r.label}) at offset {r.offset}"
        if r.reserved0 or r.reserved1:
            problems.append(Problem(W, f"record {r.index} (table offset {at}): reserved bytes are "
                                    f"{r.reserved0}, {r.reserved1}, not 0", r.index, at))
        if r.word_size not in (1, 2):
            problems.append(Problem(E, f"record {r.index} (table offset {at}): invalid word size "
                                    f"{r.word_size} (1 = 32-bit, 2 = 64-bit)", r.index, at))
        if r.byte_order not in (0, 1):
            problems.append(Problem(E, f"record {r.index} (table offset {at}): invalid byte order "
                                    f"{r.byte_order} (1 = little, 0 = big)", r.index, at))
        if r.size == 0:
            problems.append(Problem(E, f"{where}: size is 0", r.index, r.offset))
        elif r.offset < header_end:
            problems.append(Problem(E, f"{where}: the slice starts inside the FatELF header and "
                                    f"records (which end at {header_end})", r.index, r.offset))
        elif r.end > n:
            problems.append(Problem(E, f"{where}: ELF file range out of bounds; {r.offset}-{r.end - 1} "
                                    f"({r.size}) specified out of {n} valid bytes", r.index, r.offset))
        else:
            in_bounds.append(r)
        if r.offset % PAGE_SIZE:
            problems.append(Problem(W, f"{where}: offset is not a multiple of the {PAGE_SIZE}-byte "
                                    f"page size", r.index, r.offset))
    # overlap
    ordered = sorted(in_bounds, key=lambda r: (r.offset, r.index))
    prev: Record | None = None
    for r in ordered:
        if prev is not None and r.offset < prev.end:
            problems.append(Problem(E, f"records {prev.index} (bytes {prev.offset}-{prev.end - 1}) and "
                                    f"{r.index} (bytes {r.offset}-{r.end - 1}) overlap",
                                    r.index, r.offset))
        if prev is None or r.end > prev.end:
            prev = r
    # duplicates
    seen: dict[tuple[int, ...], Record] = {}
    for r in fat.records:
        first = seen.setdefault(r.target, r)
        if first is not r:
            problems.append(Problem(E, f"records {first.index} and {r.index} are for the same "
                                    f"target: {r.describe()}", r.index,
                                    HEADER_SIZE + RECORD_SIZE * r.index))
    for r in in_bounds:
        problems += _slice_checks(fat, r, f"record {r.index} ({r.label}) at offset {r.offset}")
    if len(in_bounds) == count:
        end = max(r.end for r in in_bounds)
        if end < n:
            problems.append(Problem(W, f"{n - end} bytes of junk after the last record "
                                    f"(from offset {end})", None, end))
    return problems


def verify(source: Any) -> list[Problem]:
    """Every problem found in ``source`` (path, bytes or FatElf), in file
    order of discovery.  A file that cannot be read at all gives one
    ``fatal`` problem; OS errors (missing file) are raised."""
    if isinstance(source, FatElf):
        return _check(source)
    view, name, mm, f = _open_source(source)
    try:
        try:
            is_plain, version, reserved, records = _parse(view)
        except _Fatal as e:
            return [Problem(Severity.FATAL, e.message, None, 0)]
        fat = FatElf(view, records, is_plain=is_plain, version=version, reserved=reserved,
                     name=name, _mm=mm, _file=f)
        try:
            return _check(fat)
        finally:
            fat.close()
    finally:
        try:
            view.release()
        except BufferError:
            pass
        if mm is not None and not mm.closed:
            try:
                mm.close()
            except BufferError:
                pass
        if f is not None:
            f.close()


# --------------------------------------------------------------------------
# selection

def _host_target(host: Any = None) -> tuple[int, int, int] | None:
    """(machine, word_size, byte_order) of the host, or of ``host`` (an arch
    name/Arch, taken as little-endian) when given."""
    from .. import arch as _arch
    if host is None:
        a = _arch.host()
        if a is None:
            return None
        order = ByteOrder.LITTLE if sys.byteorder == "little" else ByteOrder.BIG
    else:
        a = _arch.get(host) if not isinstance(host, _arch.Arch) else host
        order = ByteOrder.LITTLE
    return a.machine, (WordSize.BITS64 if a.bits == 64 else WordSize.BITS32), order


def matches_host(record: Record, host: Any = None) -> bool:
    """IREE's rule: same machine, word size and byte order as the host, and
    osabi NONE (0), Linux (3) or Standalone (255).  ``osabi_version`` and
    the reserved bytes are ignored."""
    t = _host_target(host)
    return t is not None and (record.machine, record.word_size, record.byte_order) == t \
        and record.osabi in IREE_OSABIS


def host_record(source: Any, host: Any = None) -> Record | None:
    """The first record IREE's runtime would take on this host, or None."""
    fat = source if isinstance(source, FatElf) else None
    records = fat.records if fat else source
    for r in records:
        if matches_host(r, host):
            return r
    return None


def best(source: Any, available: Iterable[str] | None = None) -> Record | None:
    """The slice to emulate when the host has none of its own.

    Among records whose arch elfkit knows (see :attr:`Record.arch`; only
    those in ``available`` if given), prefer an osabi IREE accepts (NONE,
    Linux, Standalone), then the arch order of :data:`BEST_ORDER`
    (x86_64, aarch64, riscv64, arm, i386, riscv32: 64-bit first, then by how
    mature and fast its emulation is), then file order.  None if no record
    qualifies.
    """
    records = source.records if isinstance(source, FatElf) else list(source)
    allowed = set(BEST_ORDER if available is None else (_resolve_arch(a) for a in available))
    rank = {name: i for i, name in enumerate(BEST_ORDER)}
    cands = [r for r in records if r.arch is not None and r.arch in allowed]
    if not cands:
        return None
    return min(cands, key=lambda r: (r.osabi not in IREE_OSABIS, rank.get(r.arch or "", 99), r.index))


def select(source: Any, arch: Any = None, *, fallback: bool = False,
           host: Any = None) -> tuple[Record, memoryview]:
    """Pick one slice: ``(record, bytes)``, the bytes a zero-copy memoryview.

    ``source`` is a path, bytes-like or FatElf; a plain ELF is one record.
    A path or bytes is read with ``strict=True`` (a malformed file raises);
    a FatElf read with ``strict=False`` gets IREE's leniency: only the chosen
    record is checked.

    * ``arch=None``: IREE's runtime rule (:func:`matches_host`), first match
      in file order; ``host`` overrides the host arch (for tests/tools).
      With ``fallback=True`` and no host slice, take :func:`best` instead.
    * ``arch`` given (name, alias or Arch): the first record of that arch,
      preferring osabi NONE/Linux/Standalone.

    The chosen slice's ELF header is re-checked against its record
    (machine, class, byte order, osabi), as IREE does after selecting.
    Errors are FatElfError with IREE's texts where IREE has one.
    """
    if isinstance(source, FatElf):
        fat, own = source, False
    else:
        fat, own = read(source), True
    try:
        if arch is not None:
            rec = fat.find(arch)
        else:
            rec = host_record(fat, host)
            if rec is not None and (rec.offset == 0 and not fat.is_plain or rec.size == 0):
                rec = None
            if rec is None and fallback:
                rec = best(fat)
                if rec is None:
                    raise FatElfArchError(f"{fat._where()}no slice elfkit can run or emulate; "
                                          f"the file has {fat.summary()}")
            if rec is None:
                t = _host_target(host)
                hostname = "unsupported host" if t is None else \
                    f"host {_arch_name(t[0], t[1]) or machine_name(t[0])}"
                if fat.is_plain:
                    raise FatElfArchError(f"{fat._where()}ELF is {fat.records[0].describe()}, "
                                          f"not for the {hostname}")
                raise FatElfArchError(f"{fat._where()}no ELFs matching the runtime architecture or "
                                      f"Linux ABI found in the FatELF ({hostname}; {fat.summary()})")
        view = fat.slice(rec)
        if not fat.is_plain:
            bad = [p for p in _slice_checks(fat, rec, f"record {rec.index} ({rec.label}) at offset "
                                            f"{rec.offset}") if p.severity is Severity.ERROR]
            if bad:
                raise FatElfError(f"{fat._where()}{bad[0].message}")
    except BaseException:
        if own:
            fat.close()
        raise
    if own and fat._file is not None:
        # the returned view keeps the mapping alive; the descriptor can go
        fat._file.close()
        fat._file = None
    return rec, view


# --------------------------------------------------------------------------
# writing


def slice_names(records: Iterable[Record]) -> dict[int, str]:
    """A distinct short name per record index: the label (``x86_64``,
    ``riscv32``, ``ppc-64bit``, ``aarch64-be``); when labels collide, the
    osabi name is added, then ``abiv<N>``, then ``r<index>``."""
    records = list(records)
    names = {r.index: r.label for r in records}

    def refine(extra: Callable[[Record], str]) -> None:
        counts: dict[str, int] = {}
        for n in names.values():
            counts[n] = counts.get(n, 0) + 1
        for r in records:
            if counts[names[r.index]] > 1:
                names[r.index] += "-" + extra(r)

    refine(lambda r: r.osabi_name)
    refine(lambda r: f"abiv{r.osabi_version}")
    refine(lambda r: f"r{r.index}")
    return names
