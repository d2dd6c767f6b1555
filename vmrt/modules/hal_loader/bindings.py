"""The bindings of ``hal_loader.executable.dispatch``: ``(vm.buffer, offset,
length)`` ranges as the :class:`~vmrt.hal.buffer.HostBytes` an executable's
``dispatch()`` takes.

The storage of a ``hal_inline`` buffer is 64-byte aligned and bound as it
is (what the code writes lands in the buffer).  Any other ``vm.buffer`` (a
program's ``vm.buffer.alloc``, module rodata) sits wherever Python put it,
and a range that does not start 64-byte aligned (the alignment compiled
dispatch code assumes) is bound through an aligned copy, one per buffer (and
offset modulo 64) so that ranges of one buffer still alias; the ranges are
written back after the dispatch unless the buffer is read-only (a read-only
buffer, e.g. rodata, is always bound through a copy: native code could
store into it, an emulated store is refused)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ...errors import HalError, StatusCode
from ...hal.buffer import BUFFER_ALIGNMENT, HalBuffer, HostBytes, address_of, aligned_memory
from ...vm.buffer import Buffer
from ..hal_inline.module import StorageBuffer

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def _bytes_of(buf: Buffer) -> tuple[memoryview, int]:
    """A buffer's bytes as a memoryview and their host address (-1: empty)."""
    if isinstance(buf, StorageBuffer):
        return buf.hal_buffer.bytes, buf.hal_buffer.address
    data = buf.data
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view, address_of(view)


def storage_pointers(bindings: Sequence[tuple[Any, int, int]]
                     ) -> tuple[list[int], list[int]] | None:
    """The host addresses and lengths of bindings that are all non-empty,
    in-range, 64-byte aligned ranges of writable ``hal_inline`` storage
    (what a compiled program passes): a prepared dispatch runs over them as
    they are.  None for anything else (:func:`dispatch_bindings` then checks
    and stages)."""
    ptrs, sizes = [], []
    for buf, offset, length in bindings:
        if buf.__class__ is not StorageBuffer or buf.readonly or length <= 0 or offset < 0:
            return None
        hal = buf.hal_buffer
        addr = hal.address + offset
        if addr % BUFFER_ALIGNMENT or offset + length > len(hal.bytes):
            return None
        ptrs.append(addr)
        sizes.append(length)
    return ptrs, sizes


def observed(executable: Any, entry_point: int, grid: tuple[int, int, int], words: list[int],
             bindings: Sequence[tuple[Any, int, int]], deadline: float | None,
             run: Callable[[], None]) -> Any | None:
    """The dispatch as a dispatch tool sees a command buffer's
    (:class:`~vmrt.hal.dispatch_observer.ObservedDispatch`): each binding a
    range of a ``hal.buffer`` over the ``vm.buffer``'s bytes (the storage's
    own buffer for ``hal_inline`` storage); ``run`` runs it.  None when a
    binding is not a ``vm.buffer`` range (running it reports which)."""
    from ...hal.command_buffer import BufferRef, Dispatch
    from ...hal.dispatch_observer import ObservedDispatch
    what = "hal_loader.executable.dispatch"
    ranges = []
    for buf, offset, length in bindings:
        if not isinstance(buf, Buffer) or offset < 0 or length < 0 \
                or offset + length > len(buf.data):
            return None
        if isinstance(buf, StorageBuffer):
            hal = buf.hal_buffer
        else:
            view, addr = _bytes_of(buf)
            hal = HalBuffer(view, read_only=buf.readonly or view.readonly, address=addr)
        ranges.append((hal, offset, length))
    refs = tuple(BufferRef(i, hal, offset, length) for i, (hal, offset, length) in
                 enumerate(ranges))
    cmd = Dispatch(executable, entry_point, grid, tuple(words), refs)
    return ObservedDispatch(cmd, what, tuple(ranges), run, deadline)


@contextmanager
def dispatch_bindings(bindings: Sequence[tuple[Any, int, int]], what: str
                      ) -> Iterator[list[HostBytes]]:
    """The checked bindings of one dispatch, staged where they must be; the
    staged ranges of writable buffers are written back when the block ends."""
    # (buffer id, offset % 64) -> [buffer, its bytes, the copy, the copy's address, ranges]
    staged: dict[tuple[int, int], list[Any]] = {}
    out: list[HostBytes] = []
    try:
        for i, (buf, offset, length) in enumerate(bindings):
            if buf is None or not isinstance(buf, Buffer):
                kind = "null" if buf is None else f"a {type(buf).__name__}"
                raise HalError(f"{what}: binding {i} is {kind}, expected a vm.buffer",
                               StatusCode.INVALID_ARGUMENT)
            size = len(buf.data)
            if offset < 0 or length < 0 or offset + length > size:
                raise HalError(f"out-of-bounds access detected (offset={offset}, length="
                               f"{length}, alignment=1, buffer length={size}); {what} binding {i}",
                               StatusCode.OUT_OF_RANGE)
            if length == 0:             # never read: any aligned memory will do
                out.append(HostBytes(*aligned_memory(BUFFER_ALIGNMENT)))
                continue
            view, addr = _bytes_of(buf)
            if buf.readonly and not view.readonly:
                view = view.toreadonly()
            if (addr + offset) % BUFFER_ALIGNMENT or view.readonly:
                # an aligned copy, placed so that this range starts aligned
                # (one per buffer and phase: ranges of a buffer still alias);
                # read-only memory too: native code could write into it
                phase = offset % BUFFER_ALIGNMENT
                entry = staged.get((id(buf), phase))
                if entry is None:
                    mem, maddr = aligned_memory(size + BUFFER_ALIGNMENT,
                                                f"{what} binding {i} staging")
                    skip = (-(maddr + phase)) % BUFFER_ALIGNMENT
                    copy = mem[skip:skip + size]
                    copy[:] = view
                    entry = staged[(id(buf), phase)] = [buf, view, copy, maddr + skip, []]
                entry[4].append((offset, length))
                view, addr = entry[2], entry[3]
                if buf.readonly:
                    view = view.toreadonly()
            out.append(HostBytes(view[offset:offset + length], addr + offset, view))
        yield out
    finally:
        for buf, original, copy, _addr, ranges in staged.values():
            if not (buf.readonly or original.readonly):
                for offset, length in ranges:
                    original[offset:offset + length] = copy[offset:offset + length]


__all__ = ["dispatch_bindings", "observed", "storage_pointers"]
