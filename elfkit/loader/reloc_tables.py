"""The relocation tables named by PT_DYNAMIC (DT_RELA, DT_REL, DT_JMPREL,
DT_RELR), read into :class:`RelocTable` columns: Python lists for small
tables, numpy arrays for large ones (numpy is imported only then).  Applying
them is ``relocate.py``."""
from __future__ import annotations

import struct
import sys

from .._support.records import DataRecord, field
from ..errors import LayoutError, ParseError
from . import tags as T
from .headers import Limits, Segment, vaddr_to_offset

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BULK", "BULK_COLD", "RelocTable", "read_reloc_tables"]

#: tables at least this long are decoded, and their RELATIVE entries applied,
#: with numpy in bulk (``RelocTable.bulk``) ...
BULK = 256
#: ... once numpy is imported; before that only from this length on: importing
#: numpy costs ~60 ms, more than the plain loops spend on a shorter table (an
#: IREE dispatch library has a few hundred relocations, so a process that runs
#: one would otherwise pay numpy's import for it)
BULK_COLD = 16384


def _bulk(count: int) -> bool:
    return count >= (BULK if "numpy" in sys.modules else BULK_COLD)


class RelocTable(DataRecord, slots=True):
    """One relocation table in file order: parallel lists."""

    tag: str                 # "DT_RELA", "DT_REL", "DT_JMPREL", "DT_RELR"
    explicit_addend: bool
    file_offset: int
    # parallel sequences: lists for small tables, numpy arrays for large ones
    offsets: Any = field(default_factory=list)
    types: Any = field(default_factory=list)
    syms: Any = field(default_factory=list)
    addends: Any = None
    relr_raw: bytes = b""    # DT_RELR: the packed words, decoded at relocation time
    count: int = 0
    bulk: bool = False       # the columns are numpy arrays (see BULK)



def read_reloc_tables(data: memoryview, segments: list[Segment], dyn: dict[int, int],
                      is64: bool, limits: Limits) -> list[RelocTable]:
    """Every relocation table, in the order DT_RELA, DT_REL, DT_JMPREL, DT_RELR
    (DT_RELR is kept packed: ``relr_raw``)."""
    n = len(data)
    w = 8 if is64 else 4
    relasz_ent = 24 if is64 else 12
    relsz_ent = 16 if is64 else 8
    tables: list[RelocTable] = []

    def table(tag_name: str, addr_tag: int, size_tag: int, ent_tag: int | None, want_ent: int,
              rela: bool) -> None:
        if addr_tag not in dyn:
            if size_tag in dyn and dyn[size_tag]:
                raise ParseError(f"{tag_name}SZ is set but {tag_name} is missing")
            return
        size = dyn.get(size_tag, 0)
        ent = dyn.get(ent_tag, want_ent) if ent_tag is not None else want_ent
        if ent != want_ent:
            raise ParseError(f"{tag_name}ENT is {ent}, expected {want_ent}")
        if size % want_ent:
            raise ParseError(f"{tag_name} size {size} is not a multiple of the entry size "
                             f"{want_ent}")
        count = size // want_ent
        if count > limits.max_relocations:
            raise LayoutError(f"{tag_name} has {count} entries, more than the limit "
                              f"({limits.max_relocations})")
        off = vaddr_to_offset(segments, n, dyn[addr_tag], size, tag_name)
        t = RelocTable(tag_name, rela, off, count=count)
        _decode_table(t, data, off, count, is64, rela)
        tables.append(t)

    table("DT_RELA", T.DT_RELA, T.DT_RELASZ, T.DT_RELAENT, relasz_ent, True)
    table("DT_REL", T.DT_REL, T.DT_RELSZ, T.DT_RELENT, relsz_ent, False)
    if T.DT_JMPREL in dyn:
        pltrel = dyn.get(T.DT_PLTREL, T.DT_RELA)
        if pltrel not in (T.DT_RELA, T.DT_REL):
            raise ParseError(f"DT_PLTREL is {pltrel}, expected DT_RELA (7) or DT_REL (17)")
        rela = pltrel == T.DT_RELA
        table("DT_JMPREL", T.DT_JMPREL, T.DT_PLTRELSZ, None,
              relasz_ent if rela else relsz_ent, rela)
    if T.DT_RELR in dyn:
        size = dyn.get(T.DT_RELRSZ, 0)
        ent = dyn.get(T.DT_RELRENT, w)
        if ent != w:
            raise ParseError(f"DT_RELRENT is {ent}, expected {w}")
        if size % w:
            raise ParseError(f"DT_RELRSZ {size} is not a multiple of {w}")
        if size // w > limits.max_relocations:
            raise LayoutError(f"DT_RELR has {size // w} words, more than the limit")
        off = vaddr_to_offset(segments, n, dyn[T.DT_RELR], size, "DT_RELR")
        t = RelocTable("DT_RELR", False, off, relr_raw=bytes(data[off:off + size]), count=size // w)
        tables.append(t)
    return tables


def _decode_table(t: RelocTable, data: memoryview, off: int, count: int, is64: bool,
                  rela: bool) -> None:
    if count == 0:
        t.addends = [] if rela else None
        return
    if not _bulk(count):  # small tables: plain struct is faster than numpy's set-up cost
        fmt = ("<QQq" if rela else "<QQ") if is64 else ("<IIi" if rela else "<II")
        size = struct.calcsize(fmt)
        rows = list(struct.iter_unpack(fmt, data[off:off + count * size]))
        t.offsets = [r[0] for r in rows]
        if is64:
            t.types = [r[1] & 0xFFFFFFFF for r in rows]
            t.syms = [r[1] >> 32 for r in rows]
        else:
            t.types = [r[1] & 0xFF for r in rows]
            t.syms = [r[1] >> 8 for r in rows]
        t.addends = [r[2] for r in rows] if rela else None
        return
    import numpy as np  # large tables are decoded in bulk
    t.bulk = True

    if is64:
        dt = np.dtype([("off", "<u8"), ("info", "<u8")] + ([("add", "<i8")] if rela else []))
    else:
        dt = np.dtype([("off", "<u4"), ("info", "<u4")] + ([("add", "<i4")] if rela else []))
    arr = np.frombuffer(data, dtype=dt, count=count, offset=off)
    info = arr["info"]
    if is64:
        t.types = (info & 0xFFFFFFFF).astype(np.int64)
        t.syms = (info >> 32).astype(np.int64)
    else:
        t.types = (info & 0xFF).astype(np.int64)
        t.syms = (info >> 8).astype(np.int64)
    # large tables stay numpy arrays; relocate.apply works on them in bulk
    t.offsets = arr["off"].astype(np.int64 if not is64 else np.uint64)
    t.addends = arr["add"].astype(np.int64) if rela else None

