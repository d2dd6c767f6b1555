"""The commands a :class:`~vmrt.hal.command_buffer.CommandBuffer` records,
and how a submission resolves their operands and runs a dispatch.

A command names each buffer it touches either directly (a ``hal.buffer``) or
by *slot* into the binding table given at submission; :func:`resolve_all`
checks an operand against the table and the buffer.  :func:`run_resolved`
and :func:`gather` are the submission's fast resolution (the common case:
every range inside an aligned buffer); :func:`run_dispatch` the checked
path, which stages a misaligned buffer through an aligned copy or reports
what is wrong.
"""
from __future__ import annotations

from collections.abc import Sequence

from elfkit.support import DataRecord

from ..errors import HalError, StatusCode
from .buffer import BUFFER_ALIGNMENT, WHOLE_BUFFER, HalBuffer, HostBytes, aligned_memory
from .objects import HalExecutable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

def _value_hash(record: Any) -> int:
    """The hash of a command record: that of its fields' values."""
    return hash(tuple([getattr(record, name) for name in record.__slots__]))


# The records below are never changed once made, but are not frozen
# records: a frozen record's construction costs twice as much (each field
# set through ``object.__setattr__``), and an LSTM's recording makes ~3,000
# a call; they hash by value all the same.
class BufferRef(DataRecord, slots=True):
    """A buffer operand: ``buffer`` or, when it is None, binding-table ``slot``."""
    slot: int
    buffer: HalBuffer | None
    offset: int
    length: int
    __hash__ = _value_hash


class Fill(DataRecord, slots=True):
    target: BufferRef
    pattern: bytes
    __hash__ = _value_hash


class Update(DataRecord, slots=True):
    source: bytes
    target: BufferRef
    __hash__ = _value_hash


class Copy(DataRecord, slots=True):
    source: BufferRef
    target: BufferRef
    __hash__ = _value_hash


class Dispatch(DataRecord, slots=True):
    executable: HalExecutable
    ordinal: int
    workgroups: tuple[int, int, int]
    constants: tuple[int, ...]
    bindings: tuple[BufferRef, ...]
    __hash__ = _value_hash


def resolve(ref: BufferRef, table: Sequence[tuple[HalBuffer, int, int]],
             what: str) -> tuple[HalBuffer, int, int]:
    """The byte range ``(buffer, start, length)`` a command operand names."""
    return resolve_all((ref,), table, (what,))[0]


def resolve_all(refs: Sequence[BufferRef], table: Sequence[tuple[HalBuffer, int, int]],
                labels: Sequence[str]) -> list[tuple[HalBuffer, int, int]]:
    """:func:`resolve` of each operand (``labels`` name them in errors)."""
    out = []
    n = len(table)
    for ref, what in zip(refs, labels):
        if ref.buffer is not None:
            buf, base = ref.buffer, 0
            limit = len(buf.bytes)
        else:
            if not 0 <= ref.slot < n:
                raise HalError(f"{what}: binding table slot {ref.slot} out of range (the "
                               f"submission provides {n} binding(s))", StatusCode.OUT_OF_RANGE)
            buf, base, tlen = table[ref.slot]
            if buf is None:
                raise HalError(f"{what}: binding table slot {ref.slot} is null",
                              StatusCode.INVALID_ARGUMENT)
            size = len(buf.bytes)
            limit = size if tlen == WHOLE_BUFFER else base + tlen
            if base < 0 or limit > size or base > limit:
                raise HalError(f"{what}: binding table slot {ref.slot} range [{base}, {limit}) "
                              f"is out of bounds of a {size}-byte buffer", StatusCode.OUT_OF_RANGE)
        start = base + ref.offset
        length = limit - start if ref.length == WHOLE_BUFFER else ref.length
        if ref.offset < 0 or length < 0 or start + length > limit:
            where = "buffer" if ref.buffer is not None else f"binding table slot {ref.slot}"
            raise HalError(f"{what}: range [{ref.offset}, {ref.offset + length}) is out of "
                          f"bounds of {where} ({limit - base} bytes)", StatusCode.OUT_OF_RANGE)
        out.append((buf, start, length))
    return out


def fill_range(buf: HalBuffer, start: int, length: int, pattern: bytes, what: str) -> None:
    k = len(pattern)
    if start % k or length % k:
        raise HalError(f"{what}: offset {start} and length {length} must be multiples of the "
                      f"{k}-byte pattern", StatusCode.INVALID_ARGUMENT)
    dst = buf.writable(what)[start:start + length]
    if length <= _FILL_CHUNK:
        dst[:] = pattern * (length // k)
        return
    chunk = pattern * (_FILL_CHUNK // k)
    for off in range(0, length, _FILL_CHUNK):
        n = min(_FILL_CHUNK, length - off)
        dst[off:off + n] = chunk[:n]


#: a large fill writes its pattern this many bytes at a time
_FILL_CHUNK = 1 << 16


def binding_labels(what: str, count: int) -> list[str]:
    """How errors name the bindings of command ``what``."""
    return [f"{what} binding {i}" for i in range(count)]


def prepare_dispatch(cmd: Dispatch, device: Any) -> Any:
    """The executable's prepared form of a recorded dispatch (its ``prepare``,
    on the device's ``dispatch_threads`` threads), or None."""
    prepare = getattr(cmd.executable.exe, "prepare", None)
    if prepare is None or 0 in cmd.workgroups:
        return None
    return prepare(cmd.ordinal, cmd.workgroups, cmd.constants, len(cmd.bindings),
                   threads=getattr(device, "dispatch_threads", 1))


def binding_specs(refs: Sequence[BufferRef]) -> tuple[tuple[Any, ...], ...] | None:
    """Per binding ``(slot, its fixed buffer or None, offset, offset +
    length)`` when every binding is a range of fixed, non-zero length at a
    non-negative offset (what :func:`run_resolved` takes), else None."""
    out = []
    for b in refs:
        off, n = b.offset, b.length
        if b.slot < 0 or off < 0 or n <= 0:
            return None
        out.append((b.slot, b.buffer, off, off + n))
    return tuple(out)


def gather(dsteps: Sequence[Any], csteps: Sequence[Any],
           table: Sequence[tuple[HalBuffer, int, int]]) -> list[int] | None:
    """What a batch (see ``CommandBuffer._make_program``) runs over: each
    dispatch's binding addresses and lengths (``dsteps``: its bindings),
    then each copy's target, source and length (``csteps``: the copies);
    None when an operand is not as :func:`run_resolved` takes it (see
    :func:`binding_specs`; or a copy's target is read-only, its two
    lengths differ): the commands then take the checked path."""
    out: list[int] = []
    try:
        for refs in dsteps:
            sizes = []
            for b in refs:
                buf, off, n = b.buffer, b.offset, b.length
                if off < 0 or n <= 0 or b.slot < 0:
                    return None
                if buf is None:
                    buf, base, tlen = table[b.slot]
                    if base < 0 or off + n > tlen or base + tlen > buf.bytes.nbytes:
                        return None
                    off += base
                elif off + n > buf.bytes.nbytes:
                    return None
                addr = buf.address
                if addr % BUFFER_ALIGNMENT:     # (also -1: not contiguous)
                    return None
                out.append(addr + off)
                sizes.append(n)
            out += sizes
        for cmd in csteps:
            n = cmd.source.length
            t = _address(cmd.target, table, True)
            s = _address(cmd.source, table, False)
            if s < 0 or t < 0 or n != cmd.target.length:
                return None
            out += (t, s, n)
    except (IndexError, TypeError, ValueError, AttributeError):
        return None
    return out


def _address(ref: BufferRef, table: Sequence[tuple[HalBuffer, int, int]], write: bool) -> int:
    """The address of a copy operand, -1 when it is not a simple in-bounds
    range (see :func:`binding_specs`; or not writable)."""
    buf, off, n = ref.buffer, ref.offset, ref.length
    if off < 0 or n <= 0 or ref.slot < 0:
        return -1
    if buf is None:
        buf, base, tlen = table[ref.slot]
        if base < 0 or off + n > tlen or base + tlen > buf.bytes.nbytes:
            return -1
        off += base
    elif off + n > buf.bytes.nbytes:
        return -1
    if write and (buf.read_only or buf.bytes.readonly) or buf.address < 0:
        return -1
    return int(buf.address + off)


def run_resolved(specs: tuple[tuple[Any, ...], ...], sizes: list[int], run: Any,
                 table: Sequence[tuple[HalBuffer, int, int]], deadline: float | None) -> bool:
    """The binding-table resolution of the common case, shared by the
    runners and :func:`run_dispatch`: when every binding of ``specs`` (see
    :func:`binding_specs`) lies inside its table entry, itself inside an
    aligned buffer (or inside its fixed aligned buffer), call
    ``run(pointers, sizes, deadline)`` and return True.  Otherwise (a short,
    null, whole-buffer or out-of-bounds entry, a misaligned buffer) return
    False without running anything: the checked path stages the binding or
    reports what is wrong."""
    ptrs: list[int] = []
    try:
        for slot, buf, off, end in specs:
            if buf is None:
                buf, base, tlen = table[slot]
                # inside the entry [base, base + tlen), itself inside the buffer
                if base < 0 or end > tlen or base + tlen > buf.bytes.nbytes:
                    return False
                off += base
            elif end > buf.bytes.nbytes:
                return False
            addr = buf.address
            if addr % BUFFER_ALIGNMENT:     # (also -1: not contiguous)
                return False
            ptrs.append(addr + off)
    except (IndexError, TypeError, ValueError, AttributeError):
        return False
    run(ptrs, sizes, deadline)
    return True


def dispatch_runner(cmd: Dispatch, what: str, prepared: Any, labels: Sequence[str] | None,
                    threads: int, flushed: bool = False) -> tuple[Any, list[int], Any, Any]:
    """``(specs, sizes, run, checked)`` of a recorded dispatch with a
    prepared form: a submission calls ``run_resolved(specs, sizes, run,
    table, deadline)`` (the common case, in that one frame) and, when that
    returns False or ``specs`` is None, ``checked(table, deadline)``
    (:func:`run_dispatch`, which stages odd bindings or reports what is
    wrong).  ``flushed``: ``run`` is the prepared form's ``run_flushed``
    (the caller sets the FPU state around the runs)."""
    def checked(table: Sequence[tuple[HalBuffer, int, int]], deadline: float | None) -> None:
        run_dispatch(cmd, table, what, deadline, prepared, labels, threads)
    return binding_specs(cmd.bindings), [b.length for b in cmd.bindings], \
        prepared.run_flushed if flushed else prepared.run, checked


def run_dispatch(cmd: Dispatch, table: Sequence[tuple[HalBuffer, int, int]], what: str,
                 deadline: float | None = None, prepared: Any = None,
                 labels: Sequence[str] | None = None, threads: int = 1) -> None:
    """Execute one recorded dispatch: ``prepared`` (see :func:`prepare_dispatch`)
    when every binding is a non-empty range of an aligned buffer, else
    :meth:`vmrt.Executable.dispatch`."""
    if prepared is not None:            # (never made for an empty grid)
        specs = binding_specs(cmd.bindings)
        if specs is not None and run_resolved(specs, [b.length for b in cmd.bindings],
                                              prepared.run, table, deadline):
            return
    if 0 in cmd.workgroups:
        return
    if labels is None:
        labels = binding_labels(what, len(cmd.bindings))
    ranges = resolve_all(cmd.bindings, table, labels)
    staged: dict[int, tuple[HalBuffer, memoryview, int]] = {}
    try:
        if prepared is not None and all(n and buf.address != -1 for buf, _s, n in ranges):
            # aligned buffers as they are, misaligned ones through an aligned copy
            ptrs, sizes = [], []
            for buf, start, length in ranges:
                addr = buf.address
                if addr % BUFFER_ALIGNMENT:
                    addr = _stage(buf, staged)[1]
                ptrs.append(addr + start)
                sizes.append(length)
            prepared.run(ptrs, sizes, deadline)
            return
        bindings = []
        for buf, start, length in ranges:
            if buf.address == -1 or buf.address % BUFFER_ALIGNMENT:
                data, addr = _stage(buf, staged)
                if buf.bytes.readonly:      # the copy is bound read-only as the buffer is
                    data = data.toreadonly()
            else:
                data, addr = buf.bytes, buf.address
            if length == 0:
                bindings.append(HostBytes(*aligned_memory(BUFFER_ALIGNMENT)))   # never read
            else:
                bindings.append(HostBytes(data[start:start + length], addr + start, data))
        cmd.executable.exe.dispatch(cmd.ordinal, cmd.workgroups, bindings, list(cmd.constants),
                                    deadline=deadline, threads=threads)
    finally:
        for buf, copy, _addr in staged.values():
            if not buf.bytes.readonly:
                buf.bytes[:] = copy


def _stage(buf: HalBuffer, staged: dict[int, tuple[HalBuffer, memoryview, int]]
           ) -> tuple[memoryview, int]:
    """An aligned copy of a buffer (once per dispatch, so aliasing bindings alias)."""
    hit = staged.get(id(buf))
    if hit is None:
        copy, addr = aligned_memory(len(buf.bytes), "dispatch staging")
        copy[:] = buf.bytes
        hit = staged[id(buf)] = (buf, copy, addr)
    return hit[1], hit[2]


__all__ = ["BufferRef", "Copy", "Dispatch", "Fill", "Update", "binding_labels", "binding_specs",
           "dispatch_runner", "fill_range", "gather", "prepare_dispatch", "resolve",
           "resolve_all", "run_dispatch", "run_resolved"]
