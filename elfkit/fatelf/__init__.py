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

``identify(data)`` says whether bytes or a file are an ELF or a FatELF and
for which machines (:class:`Identity`), from the headers alone.
``pick_slice(data, arch)`` is what the loader loads: a plain ELF as is, else
the requested, host or best slice.

Files: ``format.py`` (on-disk format, records, names), ``enums.py``, ``elfheader.py`` (the
embedded ELF header), ``identity.py`` (identify), ``reader.py`` (read, verify, select),
``checks.py`` (what verify finds), ``selection.py`` (host and best slice
rules), ``write.py`` (pack, extract, remove, replace, split), ``cli.py``.

"Best" slice (``select(..., fallback=True)`` / :func:`best`): when the host
has no slice, take a record whose arch elfkit can emulate, preferring osabi
NONE/Linux/Standalone, then x86_64, aarch64, riscv64, arm, i386, riscv32,
then file order.
"""
from .._support import lazy_names
from ..errors import FatElfArchError, FatElfError, FatElfFormatError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .enums import ByteOrder, OsAbi, WordSize
    from .format import (
        BEST_ORDER,
        DEFAULT_ALIGN,
        HEADER_SIZE,
        IREE_OSABIS,
        MAGIC,
        MAGIC_BYTES,
        MAX_RECORDS,
        PAGE_SIZE,
        RECORD_SIZE,
        VERSION,
        Problem,
        Record,
        Severity,
        machine_name,
        osabi_name,
        slice_names,
    )
    from .identity import Identity, identify
    from .reader import FatElf, is_fatelf, pick_slice, read, select, verify
    from .selection import best, host_record, matches_host
    from .write import extract_to, layout, pack, pack_to, remove_to, replace_to, split

# Each name is imported from its file on first use: ``fatelf list`` never imports
# the writer, a native ``vmrt run`` of a plain ELF only what reads headers.
_LAZY = {
    "BEST_ORDER": "format",
    "DEFAULT_ALIGN": "format",
    "HEADER_SIZE": "format",
    "IREE_OSABIS": "format",
    "MAGIC": "format",
    "MAGIC_BYTES": "format",
    "MAX_RECORDS": "format",
    "PAGE_SIZE": "format",
    "RECORD_SIZE": "format",
    "VERSION": "format",
    "ByteOrder": "enums",
    "OsAbi": "enums",
    "Problem": "format",
    "Record": "format",
    "Severity": "format",
    "WordSize": "enums",
    "machine_name": "format",
    "osabi_name": "format",
    "slice_names": "format",
    "Identity": "identity",
    "identify": "identity",
    "FatElf": "reader",
    "is_fatelf": "reader",
    "pick_slice": "reader",
    "read": "reader",
    "select": "reader",
    "verify": "reader",
    "best": "selection",
    "host_record": "selection",
    "matches_host": "selection",
    "extract_to": "write",
    "layout": "write",
    "pack": "write",
    "pack_to": "write",
    "remove_to": "write",
    "replace_to": "write",
    "split": "write",
}
__getattr__ = lazy_names(__name__, _LAZY, globals())

__all__ = [
    "BEST_ORDER", "DEFAULT_ALIGN", "HEADER_SIZE", "IREE_OSABIS", "MAGIC", "MAGIC_BYTES",
    "MAX_RECORDS", "PAGE_SIZE", "RECORD_SIZE", "VERSION",
    "ByteOrder", "FatElf", "FatElfArchError", "FatElfError", "FatElfFormatError", "Identity",
    "OsAbi", "Problem", "Record", "Severity", "WordSize",
    "best", "extract_to", "host_record", "identify", "is_fatelf", "layout", "machine_name",
    "matches_host", "osabi_name", "pack", "pack_to", "pick_slice", "read", "remove_to",
    "replace_to", "select", "slice_names", "split", "verify",
]
