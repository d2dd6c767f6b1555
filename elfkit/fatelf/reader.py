"""Reading FatELF files: open a source (path, bytes, memoryview) zero-copy,
parse it into a :class:`FatElf`, verify it, select a slice.

A plain ELF is read as a FatElf with one record (``is_plain``).  The format
itself is ``format.py``, the checks ``checks.py``, the host rules
``selection.py``.
"""
from __future__ import annotations

import os

from .._support.files import open_regular
from ..errors import FatElfArchError, FatElfError, FatElfFormatError, InvalidArgumentError
from .checks import check_container, check_slice
from .elfheader import ELF_MAGIC, read_elf_header, view_reader
from .format import (
    HEADER_SIZE,
    IREE_OSABIS,
    MAGIC_BYTES,
    RECORD_SIZE,
    Problem,
    Record,
    Severity,
    arch_name,
    hex_prefix,
    machine_name,
    parse_header,
    resolve_arch,
    slice_names,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    import mmap
    from collections.abc import Iterator
    from typing import Any, BinaryIO

__all__ = ["FatElf", "READ_LIMIT", "is_path", "is_fatelf", "read", "verify", "select",
           "pick_slice"]

#: files up to this size are read into memory, larger ones mapped
READ_LIMIT = 1 << 20


def is_path(source: Any) -> bool:
    """True when ``source`` names a file (str or os.PathLike) rather than
    holding bytes."""
    return isinstance(source, (str, os.PathLike))


def is_fatelf(data: Any) -> bool:
    """True when ``data`` (bytes-like, or a path) starts with the FatELF magic."""
    if is_path(data):
        fd, _size = open_regular(data)
        try:
            head = os.pread(fd, 4, 0)
        finally:
            os.close(fd)
    else:
        head = bytes(memoryview(data).cast("B")[:4]) if not isinstance(data, (bytes, bytearray)) \
            else bytes(data[:4])
    return head == MAGIC_BYTES


class FatElf:
    """A parsed FatELF (or a plain ELF seen as a one-record FatELF).

    Slices are read-only memoryviews over the caller's buffer or over the
    file: a file of up to :data:`READ_LIMIT` bytes is read into memory (cheaper
    than mapping it), a larger one mapped read-only (``mmap``), so nothing is
    copied.  Close it (or use ``with``) to unmap; views handed out earlier keep
    the mapping alive until they are released.
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

    def __enter__(self) -> FatElf:
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
            raise FatElfError(f"{self.where}FatELF is closed")

    @property
    def where(self) -> str:
        """``"<path>: "`` to start a message about this file (empty when it
        was read from memory)."""
        return f"{self.name}: " if self.name else ""

    def fileno(self) -> int | None:
        """The descriptor of the open file behind the slices, or None (read
        from memory, or closed): lets writers copy slices in the kernel."""
        return None if self._file is None else self._file.fileno()

    def _record(self, record: Record | int) -> Record:
        if isinstance(record, Record):
            return record
        return self.find(index=record)

    def slice(self, record: Record | int) -> memoryview:
        """The bytes of one record's ELF (zero-copy), bounds-checked."""
        self._check_open()
        r = self._record(record)
        n = self._size
        if r.size == 0 or r.offset < self.header_size or r.end > n:
            raise FatElfError(
                f"{self.where}record {r.index}: ELF file range out of bounds; "
                f"{r.offset}-{r.end - 1} ({r.size}) specified out of {n} valid bytes")
        return self._view[r.offset:r.end]

    def find(self, arch: Any = None, *, index: int | None = None) -> Record:
        """The record at ``index``, or the first record for ``arch`` (a name,
        alias or Arch), preferring osabi NONE/Linux/Standalone when several
        records have that arch."""
        if (arch is None) == (index is None):
            raise InvalidArgumentError("give exactly one of arch and index")
        if index is not None:
            if not 0 <= index < len(self.records):
                raise FatElfError(f"{self.where}no record {index}: "
                                  f"the file has {len(self.records)} record(s)")
            return self.records[index]
        name = resolve_arch(arch)
        found = [r for r in self.records if r.arch == name]
        if not found:
            raise FatElfArchError(f"{self.where}no {name} slice; the file has "
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
        return check_container(self)

    def names(self) -> dict[int, str]:
        return slice_names(self.records)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.name, "fatelf": not self.is_plain, "version": self.version,
                "size": self._size, "records": [r.to_dict() for r in self.records]}

    def to_json(self) -> str:
        import json  # only here: plain `fatelf list` starts without it
        return json.dumps(self.to_dict(), indent=2)


def _open_source(source: Any) -> tuple[memoryview, str | None, mmap.mmap | None, BinaryIO | None]:
    """``(view, name, mmap, file)`` of a path (mapped read-only) or a
    bytes-like object (viewed as unsigned bytes)."""
    if is_path(source):
        name = os.fspath(source)
        fd, size = open_regular(name)   # FIFOs, devices, directories are refused
        if size <= READ_LIMIT:       # no mmap (its import and the mapping cost more)
            try:
                return memoryview(_pread_all(fd, size)), name, None, None
            finally:
                os.close(fd)
        f = os.fdopen(fd, "rb")
        try:
            import mmap
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return memoryview(mm), name, mm, f
        except BaseException:
            f.close()
            raise
    if isinstance(source, FatElf):
        raise InvalidArgumentError("already a FatElf")
    try:
        view = memoryview(source)
    except TypeError:
        raise InvalidArgumentError(f"expected a path, bytes, bytearray or memoryview, "
                         f"not {type(source).__name__}") from None
    if view.ndim != 1 or view.itemsize != 1 or view.format not in ("B", "b", "c"):
        view = view.cast("B")
    return view, None, None, None


def _pread_all(fd: int, size: int) -> bytes:
    """The first ``size`` bytes of ``fd`` (fewer if the file shrank meanwhile)."""
    parts = []
    done = 0
    while done < size:
        part = os.pread(fd, size - done, done)
        if not part:
            break
        parts.append(part)
        done += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _parse(view: memoryview) -> tuple[bool, int | None, int, list[Record]]:
    """``(is_plain, version, reserved, records)``; raises FatElfFormatError."""
    n = len(view)
    head = bytes(view[:4])
    if head == MAGIC_BYTES:
        version, reserved, records = parse_header(view)
        return False, version, reserved, records
    if head == ELF_MAGIC:
        info = read_elf_header(view_reader(view), n)
        rec = Record(0, info.machine, info.osabi, info.osabi_version, info.word_size,
                     info.byte_order, 0, n)
        return True, None, 0, [rec]
    if n == 0:
        raise FatElfFormatError("empty file: neither a FatELF nor an ELF")
    raise FatElfFormatError(f"neither a FatELF nor an ELF file (starts with {hex_prefix(head)}; "
                            f"FatELF magic is fa 70 0e 1f)")


def _release(view: memoryview, mm: mmap.mmap | None, f: BinaryIO | None) -> None:
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


def _open(source: Any) -> FatElf:
    """Open and parse ``source`` without checking the slices.  On an error
    nothing stays open; a FatElfFormatError's message starts with the path."""
    view, name, mm, f = _open_source(source)
    try:
        is_plain, version, reserved, records = _parse(view)
    except FatElfFormatError as e:
        _release(view, mm, f)
        raise FatElfFormatError(f"{name}: {e}" if name else str(e)) from None
    except BaseException:
        _release(view, mm, f)
        raise
    return FatElf(view, records, is_plain=is_plain, version=version, reserved=reserved,
                  name=name, _mm=mm, _file=f)


def read(source: Any, *, strict: bool = True) -> FatElf:
    """Read a FatELF (or a plain ELF, as one record with ``is_plain`` set).

    ``source`` is a path (mapped read-only, zero-copy), bytes, bytearray or
    memoryview; a FatElf is returned as is.  With ``strict`` (the default)
    every check of :func:`verify` that is an *error* raises FatElfError
    (records out of bounds, overlapping, duplicated, 0 records, slices that
    are not ELF or disagree with their record); warnings do not.  With
    ``strict=False`` only the header and record table must be readable, as
    in IREE's runtime, and :meth:`FatElf.slice` checks bounds.  A file that
    is neither a FatELF nor an ELF raises FatElfFormatError.
    """
    if isinstance(source, FatElf):
        return source
    fat = _open(source)
    try:
        if strict:
            bad = [p for p in check_container(fat)
                   if p.severity in (Severity.FATAL, Severity.ERROR)]
            if bad:
                more = f" (and {len(bad) - 1} more problem(s))" if len(bad) > 1 else ""
                raise FatElfError(f"{fat.where}{bad[0].message}{more}")
        return fat
    except BaseException:
        fat.close()
        raise


def verify(source: Any) -> list[Problem]:
    """Every problem found in ``source`` (path, bytes or FatElf), in file
    order of discovery.  A file that cannot be read at all gives one
    ``fatal`` problem; OS errors (missing file) are raised."""
    if isinstance(source, FatElf):
        return check_container(source)
    view, name, mm, f = _open_source(source)
    try:
        is_plain, version, reserved, records = _parse(view)
    except FatElfFormatError as e:
        _release(view, mm, f)
        return [Problem(Severity.FATAL, str(e), None, 0)]
    except BaseException:
        _release(view, mm, f)
        raise
    with FatElf(view, records, is_plain=is_plain, version=version, reserved=reserved,
                name=name, _mm=mm, _file=f) as fat:
        return check_container(fat)


# --------------------------------------------------------------------------
# selection

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
    from .selection import best, host_record, host_target  # not needed to read a file
    if isinstance(source, FatElf):
        fat, own = source, False
    else:
        fat, own = read(source), True
    rec: Record | None
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
                    raise FatElfArchError(f"{fat.where}no slice elfkit can run or emulate; "
                                          f"the file has {fat.summary()}")
            if rec is None:
                t = host_target(host)
                hostname = "unsupported host" if t is None else \
                    f"host {arch_name(t[0], t[1]) or machine_name(t[0])}"
                if fat.is_plain:
                    raise FatElfArchError(f"{fat.where}ELF is {fat.records[0].describe()}, "
                                          f"not for the {hostname}")
                raise FatElfArchError(f"{fat.where}no ELFs matching the runtime architecture or "
                                      f"Linux ABI found in the FatELF ({hostname}; "
                                      f"{fat.summary()})")
        view = fat.slice(rec)
        if not fat.is_plain:
            bad = [p for p in check_slice(fat, rec, f"record {rec.index} ({rec.label}) at offset "
                                          f"{rec.offset}") if p.severity is Severity.ERROR]
            if bad:
                raise FatElfError(f"{fat.where}{bad[0].message}")
    except BaseException:
        if own:
            fat.close()
        raise
    if own and fat._file is not None:
        # the returned view keeps the mapping alive; the descriptor can go
        fat._file.close()
        fat._file = None
    return rec, view


def pick_slice(data: Any, arch: Any = None, *,
               fallback: bool = True) -> tuple[memoryview, Record | None]:
    """The ELF to load from ``data``: ``(elf bytes, record)``.

    ``data`` is bytes-like (or a FatElf).  A plain ELF (anything without the
    FatELF magic) passes through unchecked as ``(view of data, None)``: the
    loader checks it.  From a FatELF: the slice for ``arch`` (a name, alias
    or Arch) if given; else the host's slice by IREE's rule (:func:`select`);
    else, with ``fallback`` (pass False when the code must run natively),
    the :func:`best` slice to emulate.  Raises FatElfError
    (FatElfArchError when no slice fits).
    """
    if not isinstance(data, FatElf):
        if not isinstance(data, (bytes, bytearray, memoryview)) and is_path(data):
            raise InvalidArgumentError("pick_slice takes bytes or a FatElf, not a path")
        view = memoryview(data)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
        if bytes(view[:4]) != MAGIC_BYTES:     # a plain ELF (is_fatelf, without its checks)
            return view, None
        data = view
    if arch is not None:
        rec, sl = select(data, arch)
    else:
        rec, sl = select(data, fallback=fallback)
    return sl, rec
