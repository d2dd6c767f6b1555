"""FatELF v1: the on-disk format, its records and their names.

This file is the format only: constants, the header and record layout,
:class:`Record` and :class:`Problem`, and display names.  Reading a file is
``reader.py``, checking it ``checks.py``, choosing a slice ``selection.py``,
the embedded ELF header ``elfheader.py``, writing ``write.py``.

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

Nothing here imports anything heavier than the standard library; names
come from ``elfkit._support.machines``, and ``elfkit.arch`` is imported only by
:func:`resolve_arch`.
"""
from __future__ import annotations

import enum

from .._support.machines import ARCH_MACHINES, MACHINE_NAMES, arch_for
from .._support.records import DataRecord
from ..errors import ArchError, FatElfArchError, FatElfFormatError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = [
    "MAGIC", "MAGIC_BYTES", "VERSION", "HEADER_SIZE", "RECORD_SIZE", "MAX_RECORDS",
    "PAGE_SIZE", "DEFAULT_ALIGN", "MAX_ALIGN", "IREE_OSABIS", "BEST_ORDER",
    "HEADER_FORMAT", "RECORD_FORMAT",
    "BIG", "LITTLE", "OSABI_NAMES", "Severity", "Record", "Problem",
    "arch_name", "machine_name", "osabi_name", "resolve_arch", "word_size_text",
    "byte_order_text", "hex_prefix", "parse_header", "slice_names",
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

# (struct formats; reading and writing take the fields with int.from_bytes and
# int.to_bytes, so that no command loads the _struct extension)
#: the FatELF header: magic, version, record count, reserved
HEADER_FORMAT = "<IHBB"
#: one record: machine, osabi, osabi_version, word_size, byte_order, reserved0,
#: reserved1, offset, size
RECORD_FORMAT = "<HBBBBBBQQ"

#: EI_OSABI values IREE's runtime accepts for the host slice: NONE (SysV),
#: Linux and Standalone.
IREE_OSABIS = frozenset({0, 3, 255})

#: Preference order of :func:`best` when the host has no slice of its own.
BEST_ORDER = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")


#: FatELF ``byte_order`` values (careful: ELF ``EI_DATA`` uses 1 = LSB, 2 = MSB);
#: :class:`ByteOrder` (``enums.py``) names them
BIG = 0
LITTLE = 1

#: display names of ``EI_OSABI`` values; :class:`OsAbi` (``enums.py``) is built from
#: them, so that reading a file does not create the enum classes
OSABI_NAMES = {0: "none", 1: "hpux", 2: "netbsd", 3: "linux", 4: "hurd", 6: "solaris",
               7: "aix", 8: "irix", 9: "freebsd", 10: "tru64", 11: "modesto",
               12: "openbsd", 13: "openvms", 14: "nsk", 15: "aros", 97: "arm",
               255: "standalone"}


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


# Display names for machines elfkit does not run (ours come from elfkit._support.machines).
_OTHER_MACHINES = {0: "none", 2: "sparc", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390",
                   43: "sparcv9", 50: "ia64", 258: "loongarch"}


# --------------------------------------------------------------------------
# architecture names (from elfkit._support.machines; elfkit.arch is imported only to
# resolve a name or alias)

def arch_name(machine: int, word_size: int) -> str | None:
    """The elfkit arch name for ``e_machine`` and a FatELF/EI_CLASS word size
    (1 = 32-bit, 2 = 64-bit), or None when elfkit has no such architecture."""
    return arch_for(machine, {1: 32, 2: 64}.get(word_size, 0))


def machine_name(machine: int) -> str:
    """A display name for an ``e_machine`` value (``riscv`` for 243)."""
    return MACHINE_NAMES.get(machine) or _OTHER_MACHINES.get(machine, f"machine{machine}")


def osabi_name(osabi: int) -> str:
    """A display name for an ``EI_OSABI`` value (``linux`` for 3)."""
    return OSABI_NAMES.get(osabi) or f"osabi{osabi}"


def resolve_arch(arch: Any) -> str:
    """The elfkit arch name for a name, alias or Arch; FatElfArchError otherwise."""
    if type(arch) is str and arch in ARCH_MACHINES:    # a name as it is: no elfkit.arch
        return arch
    from .. import arch as _arch
    try:
        return _arch.get(arch).name
    except ArchError as e:
        raise FatElfArchError(str(e)) from None


def word_size_text(word_size: int) -> str:
    """``32-bit``/``64-bit`` for a FatELF word size (for messages)."""
    return {1: "32-bit", 2: "64-bit"}.get(word_size, f"word size {word_size}")


def byte_order_text(byte_order: int) -> str:
    """``little-endian``/``big-endian`` for a FatELF byte order (for messages)."""
    return {0: "big-endian", 1: "little-endian"}.get(byte_order, f"byte order {byte_order}")


# --------------------------------------------------------------------------
# records and problems

class Record(DataRecord, frozen=True, slots=True):
    """One FatELF record: which target a slice is for and where it lies.

    ``word_size`` and ``byte_order`` use the FatELF numbers (1/2 and
    1 = little, 0 = big).  For a plain ELF read as a FatELF, the single
    record has offset 0 and the file's size.  Immutable, compared by value.
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
        if self.byte_order != LITTLE:
            return None
        return arch_name(self.machine, self.word_size)

    @property
    def bits(self) -> int | None:
        return {1: 32, 2: 64}.get(self.word_size)

    @property
    def little_endian(self) -> bool:
        return self.byte_order == LITTLE

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
        name = arch_name(self.machine, self.word_size)
        if name is None:
            name = f"{self.machine_name}-{self.bits}bit" if self.bits else \
                f"{self.machine_name}-ws{self.word_size}"
        if self.byte_order != LITTLE:
            name += "-be" if self.byte_order == BIG else f"-bo{self.byte_order}"
        return name

    def describe(self) -> str:
        return (f"{self.label} (machine {self.machine} {self.machine_name}, "
                f"{word_size_text(self.word_size)}, {byte_order_text(self.byte_order)}, "
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
        # RECORD_FORMAT's fields, by int.to_bytes (no struct module to import)
        return (self.machine.to_bytes(2, "little")
                + bytes((self.osabi, self.osabi_version, self.word_size, self.byte_order,
                         self.reserved0, self.reserved1))
                + self.offset.to_bytes(8, "little") + self.size.to_bytes(8, "little"))


class Problem(DataRecord, frozen=True, slots=True):
    """One thing :func:`verify` found wrong.  ``message`` names the record
    index and file offset where there is one.  Immutable, compared by value."""

    severity: Severity
    message: str
    index: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "message": self.message,
                "index": self.index, "offset": self.offset}

def hex_prefix(data: bytes) -> str:
    """The first 8 bytes in hex (``fa 70 0e 1f ...``), for messages about bad magic."""
    return " ".join(f"{x:02x}" for x in data[:8]) or "nothing"


def parse_header(view: memoryview) -> tuple[int, int, list[Record]]:
    """``(version, reserved, records)`` of the FatELF header and record table
    at the start of ``view`` (which must start with :data:`MAGIC_BYTES`).

    Only the header and table are read, so a prefix of the file is enough.
    Raises FatElfFormatError when they are truncated or the version is not 1.
    """
    n = len(view)
    if n < HEADER_SIZE:
        raise FatElfFormatError(f"FatELF header truncated ({n} bytes, need {HEADER_SIZE})")
    head = bytes(view[:HEADER_SIZE])
    version, count, reserved = head[4] | head[5] << 8, head[6], head[7]
    if version != VERSION:
        raise FatElfFormatError(f"FatELF has version {version} but runtime only supports "
                                f"version {VERSION}")
    required = HEADER_SIZE + RECORD_SIZE * count
    if n < required:
        raise FatElfFormatError(f"FatELF file truncated, requires at least {required}B for "
                                f"headers but only have {n}B available ({count} records)")
    table = bytes(view[HEADER_SIZE:required])
    records = []
    for i in range(count):
        f = table[RECORD_SIZE * i:RECORD_SIZE * (i + 1)]
        records.append(Record(i, f[0] | f[1] << 8, f[2], f[3], f[4], f[5],
                              int.from_bytes(f[8:16], "little"),
                              int.from_bytes(f[16:24], "little"), f[6], f[7]))
    return version, reserved, records


# --------------------------------------------------------------------------
# names

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
