"""Checking a FatELF (or plain ELF): the problems :func:`~elfkit.fatelf.verify`
reports and ``read(strict=True)`` refuses.

Container checks (records in bounds, not overlapping, not duplicated, page
alignment, junk after the last slice) and slice checks (each slice is an ELF
that agrees with its record).  They work on an open
:class:`~elfkit.fatelf.FatElf` and never raise for a malformed file: every
finding is a :class:`~elfkit.fatelf.Problem`.
"""
from __future__ import annotations

from ..errors import FatElfFormatError
from .elfheader import read_elf_header, view_reader
from .format import (
    HEADER_SIZE,
    PAGE_SIZE,
    RECORD_SIZE,
    Problem,
    Record,
    Severity,
    byte_order_text,
    machine_name,
    osabi_name,
    word_size_text,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)

if TYPE_CHECKING:
    from .reader import FatElf

__all__ = ["check_container", "check_slice"]


def check_slice(fat: FatElf, r: Record, where: str) -> list[Problem]:
    """Problems of one in-bounds slice: not an ELF, header disagreeing with
    the record, program headers outside the slice, p_align vs offset.
    ``r`` must lie inside the file; ``where`` starts every message."""
    problems: list[Problem] = []
    E, N = Severity.ERROR, Severity.NOTE
    sl = fat.data[r.offset:r.end]
    try:
        info = read_elf_header(view_reader(sl), len(sl))
    except FatElfFormatError as e:
        problems.append(Problem(E, f"{where}: slice is not a usable ELF: {e}",
                                r.index, r.offset))
        return problems
    if not fat.is_plain:
        if info.machine != r.machine:
            problems.append(Problem(E, f"{where}: the record says machine {r.machine} "
                                    f"({machine_name(r.machine)}) but the ELF header says "
                                    f"{info.machine} ({machine_name(info.machine)})",
                                    r.index, r.offset))
        if info.word_size != r.word_size:
            problems.append(Problem(E, f"{where}: the record says {word_size_text(r.word_size)} "
                                    f"(word size {r.word_size}) but the ELF header says "
                                    f"{word_size_text(info.word_size)} (EI_CLASS {info.word_size})",
                                    r.index, r.offset))
        if info.byte_order != r.byte_order:
            problems.append(Problem(E, f"{where}: the record says {byte_order_text(r.byte_order)} "
                                    f"(byte order {r.byte_order}) but the ELF header says "
                                    f"{byte_order_text(info.byte_order)} "
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


def check_container(fat: FatElf) -> list[Problem]:
    """Every problem of an open FatElf (a plain ELF: its slice checks only)."""
    problems: list[Problem] = []
    E, W = Severity.ERROR, Severity.WARNING
    n = fat.size

    if fat.is_plain:
        return check_slice(fat, fat.records[0], "ELF")

    if fat.reserved:
        problems.append(Problem(W, f"FatELF header reserved byte is {fat.reserved}, not 0",
                                None, 7))
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
            problems.append(Problem(E, f"{where}: ELF file range out of bounds; "
                                       f"{r.offset}-{r.end - 1} ({r.size}) specified out of "
                                       f"{n} valid bytes", r.index, r.offset))
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
            problems.append(Problem(E, f"records {prev.index} (bytes {prev.offset}-{prev.end - 1}) "
                                    f"and {r.index} (bytes {r.offset}-{r.end - 1}) overlap",
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
        problems += check_slice(fat, r, f"record {r.index} ({r.label}) at offset {r.offset}")
    if len(in_bounds) == count:
        end = max(r.end for r in in_bounds)
        if end < n:
            problems.append(Problem(W, f"{n - end} bytes of junk after the last record "
                                    f"(from offset {end})", None, end))
    return problems
