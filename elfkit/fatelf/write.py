"""Writing FatELF files: pack, extract, remove, replace, split.

Inputs are streamed (a reflink where the filesystem can clone, copy_file_range
on network filesystems, else 1 MiB chunks), never read whole, and every output
path is written atomically (a temporary file in the same directory, then
``elfkit._support.files.replace_file``): an error leaves no partial file.
Reading and slice selection live in ``reader.py``, the format in ``format.py``.
"""
from __future__ import annotations

import io
import os

from .._support.files import (
    clone_range,
    offloads_copies,
    open_regular,
    open_special_output,
    replace_file,
)
from .._support.records import DataRecord
from ..errors import FatElfError, FatElfFormatError, InvalidArgumentError
from .elfheader import ElfHeader, fd_reader, read_elf_header, view_reader
from .format import (
    DEFAULT_ALIGN,
    HEADER_SIZE,
    MAGIC,
    MAGIC_BYTES,
    MAX_ALIGN,
    MAX_RECORDS,
    PAGE_SIZE,
    RECORD_SIZE,
    VERSION,
    Record,
    slice_names,
)
from .reader import FatElf, is_path, read

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

_CHUNK = 1 << 20
#: smallest copy worth a reflink: below it the bytes are copied (a few microseconds),
#: sparing the clone attempt its ioctl and the import of fcntl (~0.1 ms of start-up)
_CLONE_MIN = 1 << 16


class _Piece(DataRecord, frozen=True, slots=True):
    """One ELF to write: from an fd range or from memory."""

    name: str
    size: int
    info: ElfHeader
    fd: int | None = None
    offset: int = 0
    view: memoryview | None = None


class _Closing:
    """The descriptors of the inputs a write opened, closed when it ends, the
    last opened first (what ``contextlib.ExitStack`` did here, without the
    ~0.5 ms its import adds to each writing command's start-up)."""

    __slots__ = ("fds",)

    def __init__(self) -> None:
        self.fds: list[int] = []

    def __enter__(self) -> _Closing:
        return self

    def __exit__(self, *exc: object) -> None:
        fds, self.fds = self.fds, []
        for fd in reversed(fds):
            try:
                os.close(fd)
            except OSError:     # (an input, only read: closing it loses nothing)
                pass


def _piece_from_path(path: Any, stack: _Closing) -> _Piece:
    name = os.fspath(path)
    fd, size = open_regular(name)   # a FIFO or device is refused, never waited on
    stack.fds.append(fd)
    if os.pread(fd, 4, 0) == MAGIC_BYTES:
        raise FatElfError(f"{name}: is a FatELF; pack takes plain ELF files (split it first)")
    try:
        info = read_elf_header(fd_reader(fd), size)
    except FatElfFormatError as e:
        raise FatElfFormatError(f"{name}: {e}") from None
    if info.phdr_error:
        raise FatElfError(f"{name}: {info.phdr_error}")
    return _Piece(name, size, info, fd=fd)


def _piece_from_view(data: Any, name: str) -> _Piece:
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    if bytes(view[:4]) == MAGIC_BYTES:
        raise FatElfError(f"{name}: is a FatELF; pack takes plain ELF files (split it first)")
    try:
        info = read_elf_header(view_reader(view), len(view))
    except FatElfFormatError as e:
        raise FatElfFormatError(f"{name}: {e}") from None
    if info.phdr_error:
        raise FatElfError(f"{name}: {info.phdr_error}")
    return _Piece(name, len(view), info, view=view)


def _piece_from_record(fat: FatElf, r: Record) -> _Piece:
    view = fat.slice(r)
    name = f"{fat.name or '<FatELF>'}[record {r.index}]"
    try:
        info = read_elf_header(view_reader(view), len(view))
    except FatElfFormatError as e:
        raise FatElfFormatError(f"{name}: {e}") from None
    fd = fat.fileno()
    if fd is not None:
        return _Piece(name, r.size, info, fd=fd, offset=r.offset)
    return _Piece(name, r.size, info, view=view)


def _pieces(inputs: Iterable[Any], stack: _Closing) -> list[_Piece]:
    out = []
    for i, x in enumerate(inputs):
        if is_path(x):
            out.append(_piece_from_path(x, stack))
        elif isinstance(x, _Piece):
            out.append(x)
        else:
            out.append(_piece_from_view(x, f"input {i}"))
        if len(out) > MAX_RECORDS:
            raise FatElfError(f"too many inputs: a FatELF holds at most {MAX_RECORDS} ELFs")
    return out


def _align_value(align: Any, pieces: list[_Piece]) -> int:
    if align == "auto":
        a = PAGE_SIZE
        for p in pieces:
            pa = p.info.max_load_align
            if pa > 1 and pa & (pa - 1):
                raise FatElfError(f"{p.name}: PT_LOAD p_align {pa} is not a power of two")
            if pa > MAX_ALIGN:
                raise FatElfError(f"{p.name}: PT_LOAD p_align {pa} is too large for align='auto' "
                                  f"(at most {MAX_ALIGN})")
            a = max(a, pa)
        return a
    return _check_align(align)


def _check_align(align: Any) -> int:
    if isinstance(align, str):
        if align == "auto":
            return -1
        try:
            align = int(align, 0)
        except ValueError:
            raise FatElfError(f"invalid alignment {align!r}: give a power of two or "
                              "'auto'") from None
    if isinstance(align, bool) or not isinstance(align, int) or align < 1 or align & (align - 1) \
            or align > MAX_ALIGN:
        raise FatElfError(f"invalid alignment {align!r}: give a power of two from 1 to {MAX_ALIGN} "
                          f"or 'auto'")
    return align


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def layout(sizes: Iterable[int], align: int = DEFAULT_ALIGN) -> list[int]:
    """Slice offsets for ELFs of ``sizes`` in that order (the writer's rule)."""
    sizes = list(sizes)
    off = _align_up(HEADER_SIZE + RECORD_SIZE * len(sizes), align)
    offsets = []
    for s in sizes:
        offsets.append(off)
        off += _align_up(s, align)
    return offsets


def _plan(pieces: list[_Piece], align: Any) -> tuple[int, list[Record]]:
    if not pieces:
        raise FatElfError("nothing to pack: give at least one ELF")
    if len(pieces) > MAX_RECORDS:
        raise FatElfError(f"too many inputs ({len(pieces)}): a FatELF holds at most {MAX_RECORDS} "
                          "ELFs")
    a = _align_value(align, pieces)
    seen: dict[tuple[int, ...], _Piece] = {}
    records = []
    for i, (p, off) in enumerate(zip(pieces, layout((p.size for p in pieces), a))):
        info = p.info
        r = Record(i, info.machine, info.osabi, info.osabi_version, info.word_size,
                   info.byte_order, off, p.size)
        first = seen.setdefault(r.target, p)
        if first is not p:
            raise FatElfError(f"{first.name!r} and {p.name!r} are for the same target: "
                              f"{r.describe()}")
        records.append(r)
    return a, records


class Sink:
    """Sequential binary output: a raw fd (fast paths) or a file object."""

    def __init__(self, fd: int | None = None, fileobj: Any = None):
        self.fd = fd
        self.fileobj = fileobj
        self.written = 0

    def write(self, data: Any) -> None:
        mv = memoryview(data)
        if mv.ndim != 1 or mv.itemsize != 1:
            mv = mv.cast("B")
        n = len(mv)
        if self.fd is None:
            for i in range(0, n, _CHUNK):
                self.fileobj.write(mv[i:i + _CHUNK])
        else:
            i = 0
            while i < n:
                i += os.write(self.fd, mv[i:i + (1 << 30)])
        self.written += n

    def zeros(self, n: int) -> None:
        z = bytes(min(n, _CHUNK))
        while n > 0:
            k = min(n, len(z))
            self.write(z[:k] if k < len(z) else z)
            n -= k

    def copy_from_fd(self, src: int, offset: int, count: int, name: str) -> None:
        """Copy ``count`` bytes at ``offset`` of descriptor ``src``: shared
        (a reflink, nothing copied) where the output's filesystem can clone,
        by ``copy_file_range`` where it copies on a server (NFS, SMB ...),
        else through a reused 1 MiB buffer, which on a local filesystem beats
        the kernel's own copy.  Memory use stays flat.  A copy under
        :data:`_CLONE_MIN` bytes is always buffered."""
        done = 0
        if self.fd is not None and count >= _CLONE_MIN:
            done = clone_range(src, offset, self.fd, count)
            self.written += done
            # a network filesystem's server-side copy pays off for large copies only
            if count - done >= _CHUNK and offloads_copies(self.fd):
                done += self._kernel_copy(self.fd, src, offset + done, count - done)
        buf = bytearray(min(_CHUNK, max(count - done, 1)))
        view = memoryview(buf)
        while done < count:
            want = min(len(buf), count - done)
            k = _pread_into(src, view[:want], offset + done)
            if k <= 0:
                raise FatElfError(f"{name}: file shrank while being copied "
                                  f"({done} of {count} bytes)")
            self.write(view[:k])
            done += k

    def _kernel_copy(self, dst: int, src: int, offset: int, count: int) -> int:
        """``copy_file_range`` as far as it goes; the bytes copied (0 where
        the kernel refuses: the buffered copy then does it all)."""
        done = 0
        try:
            while done < count:
                k = os.copy_file_range(src, dst, min(count - done, 1 << 30), offset + done)
                if k == 0:
                    break  # EOF: the buffered copy reports it
                done += k
                self.written += k
        except (OSError, AttributeError) as e:
            if done or not _kernel_refusal(e):
                raise
        return done


def _kernel_refusal(e: BaseException) -> bool:
    """Whether ``copy_file_range`` failed as a kernel that cannot do it here
    does (the buffered copy then does it all) rather than on the data."""
    import errno  # only here: a refusal is rare (start-up time)
    return getattr(e, "errno", None) in (None, errno.EXDEV, errno.EINVAL, errno.ENOSYS,
                                         errno.EOPNOTSUPP, errno.EBADF, errno.ENOTSUP,
                                         errno.EPERM, errno.ETXTBSY)


def _pread_into(fd: int, into: memoryview, offset: int) -> int:
    if hasattr(os, "preadv"):
        return os.preadv(fd, [into], offset)
    data = os.pread(fd, len(into), offset)  # pragma: no cover (no preadv)
    into[:len(data)] = data
    return len(data)


def _emit(sink: Sink, records: list[Record], pieces: list[_Piece]) -> None:
    # HEADER_FORMAT's fields (int.to_bytes: no struct module to import)
    head = bytearray(MAGIC.to_bytes(4, "little") + VERSION.to_bytes(2, "little")
                     + bytes((len(records), 0)))
    for r in records:
        head += r.pack()
    sink.write(head)
    pos = len(head)
    for r, p in zip(records, pieces):
        sink.zeros(r.offset - pos)
        if p.view is not None:
            sink.write(p.view)
        else:
            assert p.fd is not None
            sink.copy_from_fd(p.fd, p.offset, p.size, p.name)
        pos = r.offset + r.size


def _write_single(sink: Sink, piece: _Piece) -> None:
    if piece.view is not None:
        sink.write(piece.view)
    else:
        assert piece.fd is not None
        sink.copy_from_fd(piece.fd, piece.offset, piece.size, piece.name)


class opened:
    """:func:`read` as a context manager that closes what it opened (a
    FatElf passed in stays open: its owner closes it)."""

    __slots__ = ("source", "strict", "fat")

    def __init__(self, source: Any, strict: bool = True) -> None:
        self.source, self.strict = source, strict
        self.fat: FatElf | None = None

    def __enter__(self) -> FatElf:
        if isinstance(self.source, FatElf):
            return self.source
        self.fat = read(self.source, strict=self.strict)
        return self.fat

    def __exit__(self, *exc: object) -> None:
        fat, self.fat = self.fat, None
        if fat is not None:
            fat.close()


class _AtomicFd:
    """A new file next to ``path`` (the descriptor ``with`` gives); renamed
    over it when the block succeeds, removed when it fails."""

    __slots__ = ("path", "tmp", "fd")

    def __init__(self, path: str) -> None:
        self.path, self.tmp, self.fd = path, "", -1

    def __enter__(self) -> int:
        path = self.path
        if os.path.isdir(path):
            raise FatElfError(f"{path}: is a directory")
        directory = os.path.dirname(os.path.abspath(path))
        base = os.path.basename(path)
        for _ in range(100):
            tmp = os.path.join(directory, f".{base}.{os.urandom(4).hex()}.tmp")
            try:
                self.fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                  | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0),
                                  0o777)
                self.tmp = tmp
                return self.fd
            except FileExistsError:
                continue
        raise FatElfError(  # pragma: no cover
            f"{path}: could not create a temporary file next to it")

    def __exit__(self, etype: object, *exc: object) -> None:
        if etype is None:
            try:
                os.close(self.fd)
                self.fd = -1
                replace_file(self.tmp, self.path)
                return
            except BaseException:
                self._discard()
                raise
        self._discard()

    def _discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def _write_out(out: Any, body: Callable[[Sink], None]) -> None:
    if is_path(out):
        special = open_special_output(os.fspath(out))
        if special is not None:   # /dev/null, a FIFO: a stream, never replaced by a file
            try:
                body(Sink(fd=special))
            finally:
                os.close(special)
            return
        with _AtomicFd(os.fspath(out)) as fd:
            body(Sink(fd=fd))
    elif hasattr(out, "write"):
        body(Sink(fileobj=out))
        if hasattr(out, "flush"):
            out.flush()
    else:
        raise InvalidArgumentError(f"output must be a path or a binary file object, not "
                                   f"{type(out).__name__}")


def pack_to(out: Any, inputs: Iterable[Any], align: int | str = DEFAULT_ALIGN) -> list[Record]:
    """Write a FatELF of ``inputs`` (paths or bytes-like ELFs, in order) to
    ``out`` (a path, written atomically through a temporary file in the
    same directory, or a binary file object).  Inputs are streamed, never
    read whole.  ``align`` is a power of two (default 4096: byte-identical
    to ``iree-fatelf join`` / ``fatelf-glue``) or ``"auto"``: the largest
    PT_LOAD ``p_align`` among the inputs, but at least 4096.

    Refuses (FatElfError, nothing written): no inputs, more than 255,
    anything that is not an ELF (or is a FatELF), two inputs for the same
    target (machine, osabi, abiversion, class, byte order).  Big-endian ELFs
    are recorded with FatELF byte order 0.  Returns the records written.
    """
    if not isinstance(align, str) or align != "auto":
        _check_align(align)
    with _Closing() as stack:
        pieces = _pieces(inputs, stack)
        _a, records = _plan(pieces, align)
        _write_out(out, lambda sink: _emit(sink, records, pieces))
    return records


def pack(inputs: Iterable[Any], align: int | str = DEFAULT_ALIGN) -> bytes:
    """The bytes of a FatELF of ``inputs``; see :func:`pack_to`."""
    buf = io.BytesIO()
    pack_to(buf, inputs, align)
    return buf.getvalue()


def extract_to(out: Any, source: Any, arch: Any = None, *, index: int | None = None,
               record: Record | None = None) -> Record:
    """Write one slice (by ``arch``, ``index`` or ``record``) to ``out``."""
    with opened(source) as fat:
        r = record if record is not None else fat.find(arch, index=index)
        piece = _piece_from_record(fat, r)
        _write_out(out, lambda sink: _write_single(sink, piece))
        return r


def remove_to(out: Any, source: Any, arch: Any = None, *, index: int | None = None,
              align: int | str = DEFAULT_ALIGN) -> list[Record]:
    """Write ``source`` without one record: the same bytes as packing the
    remaining slices in their order.  Removing the only record is refused."""
    with opened(source) as fat:
        gone = fat.find(arch, index=index)
        keep = [r for r in fat.records if r.index != gone.index]
        if not keep:
            raise FatElfError(f"{fat.where}record {gone.index} ({gone.label}) is the only "
                              f"record; removing it would leave an empty FatELF")
        return pack_to(out, [_piece_from_record(fat, r) for r in keep], align)


def replace_to(out: Any, source: Any, elf: Any, *,
               align: int | str = DEFAULT_ALIGN) -> tuple[Record, list[Record]]:
    """Write ``source`` with the record whose target (machine, osabi,
    abiversion, class, byte order) matches ``elf``'s ELF header replaced by
    ``elf`` (a path or bytes), repacked.  Returns (old record, new records)."""
    with opened(source) as fat, _Closing() as stack:
        new = _pieces([elf], stack)[0]
        i = new.info
        target = (i.machine, i.osabi, i.osabi_version, i.word_size, i.byte_order)
        match = [r for r in fat.records if r.target == target]
        if not match:
            t = Record(0, *target, 0, 0)
            raise FatElfError(f"{fat.where}no record matches {new.name} "
                              f"({t.describe()}); the file has {fat.summary()}")
        old = match[0]
        pieces = [new if r.index == old.index else _piece_from_record(fat, r) for r in fat.records]
        return old, pack_to(out, pieces, align)




def split(source: Any, directory: Any = None) -> list[tuple[Record, str]]:
    """Write every slice to ``<directory>/<stem>.<name>.so`` (names from
    :func:`slice_names`; the stem is the file name up to its last dot;
    ``directory`` defaults to the file's own and is created if missing).
    The whole file is checked before anything is written, and each output
    is written atomically.  Returns ``[(record, path), ...]``."""
    with opened(source) as fat:
        if directory is None:
            directory = os.path.dirname(fat.name) if fat.name else "."
        directory = os.fspath(directory) or "."
        base = os.path.basename(fat.name) if fat.name else "fatelf"
        stem = base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base
        names = slice_names(fat.records)
        plan = [(r, os.path.join(directory, f"{stem}.{names[r.index]}.so")) for r in fat.records]
        pieces = [_piece_from_record(fat, r) for r in fat.records]
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise FatElfError(f"{directory}: not a directory")
        os.makedirs(directory, exist_ok=True)
        for (_r, path), piece in zip(plan, pieces):
            def body(sink: Sink, p: _Piece = piece) -> None:
                _write_single(sink, p)
            _write_out(path, body)
        return plan
