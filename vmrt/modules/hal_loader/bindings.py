"""The bindings of ``hal_loader.executable.dispatch``: ``(vm.buffer, offset,
length)`` ranges as the :class:`~vmrt.hal.buffer.HostBytes` an executable's
``dispatch()`` takes.

The storage of a ``hal_inline`` buffer is 64-byte aligned and bound as it
is (what the code writes lands in the buffer).  Any other ``vm.buffer`` (a
program's ``vm.buffer.alloc``, module rodata) sits wherever Python put it:
it is bound through a 64-byte aligned copy (the alignment compiled dispatch
code assumes), one per buffer so that ranges of one buffer still alias, and
the copy is written back after the dispatch unless the buffer is read-only."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ...errors import HalError, StatusCode
from ...hal.buffer import BUFFER_ALIGNMENT, HostBytes, address_of, aligned_memory
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


@contextmanager
def dispatch_bindings(bindings: Sequence[tuple[Any, int, int]], what: str
                      ) -> Iterator[list[HostBytes]]:
    """The checked bindings of one dispatch, staged where they must be; the
    staged copies of writable buffers are written back when the block ends."""
    staged: dict[int, tuple[Buffer, memoryview, memoryview, int]] = {}
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
            hit = staged.get(id(buf))
            if hit is not None:
                view, addr = hit[2], hit[3]
            else:
                view, addr = _bytes_of(buf)
                if addr % BUFFER_ALIGNMENT:
                    copy, caddr = aligned_memory(len(view), f"{what} binding {i} staging")
                    copy[:] = view
                    if buf.readonly or view.readonly:
                        copy = copy.toreadonly()
                    staged[id(buf)] = (buf, view, copy, caddr)
                    view, addr = copy, caddr
                elif buf.readonly and not view.readonly:
                    view = view.toreadonly()
            out.append(HostBytes(view[offset:offset + length], addr + offset, view))
        yield out
    finally:
        for buf, original, copy, _addr in staged.values():
            if not (buf.readonly or original.readonly):
                original[:] = copy


__all__ = ["dispatch_bindings"]
