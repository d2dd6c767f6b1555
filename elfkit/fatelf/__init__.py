"""Multi-architecture FatELF (``.sos``) containers, compatible with IREE.

Read (zero-copy), select a slice the way IREE's runtime does, pack
(byte-identical to ``iree-fatelf join`` at the default alignment), verify,
and extract/remove/replace/split slices.  A plain ELF is accepted wherever a
FatELF is, as a single record (``FatElf.is_plain``).

    >>> from elfkit import fatelf
    >>> fatelf.pack_to("plugin.sos", ["plugin.x86_64.so", "plugin.aarch64.so"])
    >>> with fatelf.read("plugin.sos") as fat:
    ...     record, data = fatelf.select(fat)            # the host slice
    ...     record, data = fatelf.select(fat, "aarch64")  # a given arch

"Best" slice (``select(..., fallback=True)`` / :func:`best`): when the host
has no slice, take a record whose arch elfkit can emulate, preferring osabi
NONE/Linux/Standalone, then x86_64, aarch64, riscv64, arm, i386, riscv32,
then file order.
"""
from .format import (  # noqa: F401
    BEST_ORDER, DEFAULT_ALIGN, HEADER_SIZE, IREE_OSABIS, MAGIC, MAGIC_BYTES, MAX_RECORDS,
    PAGE_SIZE, RECORD_SIZE, VERSION,
    ByteOrder, FatElf, FatElfArchError, OsAbi, Problem, Record, Severity, WordSize,
    best, host_record, is_fatelf, machine_name, matches_host, osabi_name, read, select,
    slice_names, verify,
)
from .write import (  # noqa: F401
    extract_to, layout, pack, pack_to, remove_to, replace_to, split,
)
from ..errors import FatElfError  # noqa: F401

__all__ = [
    "BEST_ORDER", "DEFAULT_ALIGN", "HEADER_SIZE", "IREE_OSABIS", "MAGIC", "MAGIC_BYTES",
    "MAX_RECORDS", "PAGE_SIZE", "RECORD_SIZE", "VERSION",
    "ByteOrder", "FatElf", "FatElfArchError", "FatElfError", "OsAbi", "Problem", "Record",
    "Severity", "WordSize",
    "best", "extract_to", "host_record", "is_fatelf", "layout", "machine_name", "matches_host",
    "osabi_name", "pack", "pack_to", "read", "remove_to", "replace_to", "select",
    "slice_names", "split", "verify",
]
