"""Device statistics (``--print_statistics``): what IREE's allocator
statistics report (bytes allocated, freed and peak per memory heap) plus
allocation/free counts and, a vmrt extension, the dispatches run per
executable export with their wall time.

A device collects them only when its context asks (``Context(...,
statistics=True)``); the device ``hal`` module records each allocation
(:meth:`DeviceStatistics.record_allocation`, which also watches the buffer
so its release counts as a free) and each dispatch
(:meth:`DeviceStatistics.record_dispatch`).

A statistics object made inside ``with listening(listener):`` also tells
``listener(kind, heap, size, live)`` of each allocation (``kind``
"allocate") and free ("free") it counts, on the thread that made or freed
the buffer, with the live bytes of every heap after it: a profile's
allocation events and live-bytes counter (:mod:`vmrt.tools.profile`)."""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from elfkit.support import DataRecord, field

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: IREE_HAL_MEMORY_TYPE_HOST_LOCAL (host-local memory; everything else is
#: counted as device-local, as IREE's heap allocator does)
MEMORY_TYPE_HOST_LOCAL = 0x46


#: ``listener(kind, heap, size, live)``: see the module docstring
AllocationListener = Callable[[str, str, int, "dict[str, int]"], None]

#: the allocation listener statistics made on this thread get
_LISTENER: ContextVar[AllocationListener | None] = ContextVar("vmrt_allocation_listener",
                                                              default=None)


@contextmanager
def listening(listener: AllocationListener) -> Iterator[None]:
    """Statistics made inside this block (on the calling thread) tell
    ``listener`` of each allocation and free they count."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class HeapStatistics(DataRecord):
    """One memory heap's figures (IREE's ``*_bytes_*`` fields and counts)."""
    allocations: int = 0
    frees: int = 0
    bytes_allocated: int = 0
    bytes_freed: int = 0
    bytes_peak: int = 0

    @property
    def bytes_live(self) -> int:
        return self.bytes_allocated - self.bytes_freed


class DispatchStatistics(DataRecord):
    """Dispatches of one executable export and their total wall time."""
    count: int = 0
    total_seconds: float = 0.0

    @property
    def mean_seconds(self) -> float:
        return self.total_seconds / self.count if self.count else 0.0


class DeviceStatistics(DataRecord):
    """A device's allocator and dispatch statistics.  ``heaps`` maps
    ``"HOST_LOCAL"`` and ``"DEVICE_LOCAL"`` to :class:`HeapStatistics`;
    ``dispatches`` maps ``"executable:export"`` to
    :class:`DispatchStatistics` (in first-dispatch order)."""
    heaps: dict[str, HeapStatistics] = field(default_factory=lambda: {
        "HOST_LOCAL": HeapStatistics(), "DEVICE_LOCAL": HeapStatistics()})
    dispatches: dict[str, DispatchStatistics] = field(default_factory=dict)
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)
    #: who else hears of allocations and frees (see :func:`listening`)
    listener: AllocationListener | None = field(default_factory=_LISTENER.get, repr=False,
                                                compare=False)

    def record_allocation(self, buffer: Any, memory_types: int) -> None:
        """Count ``buffer`` (a :class:`vmrt.hal.buffer.HalBuffer`) as allocated
        in the heap ``memory_types`` selects, and as freed when it is released."""
        name = "HOST_LOCAL" if memory_types & MEMORY_TYPE_HOST_LOCAL \
            == MEMORY_TYPE_HOST_LOCAL else "DEVICE_LOCAL"
        heap = self.heaps[name]
        size = len(buffer)
        with self._lock:
            heap.allocations += 1
            heap.bytes_allocated += size
            heap.bytes_peak = max(heap.bytes_peak, heap.bytes_live)
            live = self._live() if self.listener is not None else None
        weakref.finalize(buffer, self._free, name, size)
        if live is not None and self.listener is not None:
            self.listener("allocate", name, size, live)

    def _free(self, name: str, size: int) -> None:
        heap = self.heaps[name]
        with self._lock:
            heap.frees += 1
            heap.bytes_freed += size
            live = self._live() if self.listener is not None else None
        if live is not None and self.listener is not None:
            self.listener("free", name, size, live)

    def _live(self) -> dict[str, int]:
        return {name: h.bytes_live for name, h in self.heaps.items()}

    def record_dispatch(self, executable: Any, ordinal: int, seconds: float) -> None:
        """One dispatch of export ``ordinal`` of ``executable`` (a loaded
        :class:`vmrt.Executable` or vmvx executable) that took ``seconds``."""
        exports = getattr(executable, "exports", ())
        export = exports[ordinal].name if 0 <= ordinal < len(exports) else f"#{ordinal}"
        key = f"{getattr(executable, 'name', '?')}:{export}"
        with self._lock:
            d = self.dispatches.get(key)
            if d is None:
                d = self.dispatches[key] = DispatchStatistics()
            d.count += 1
            d.total_seconds += seconds

    def format(self) -> str:
        """IREE's ``--print_statistics`` text (``[[ iree_hal_allocator_t
        memory statistics ]]`` and one line per heap), then vmrt's allocation
        counts and dispatch table."""
        lines = ["[[ iree_hal_allocator_t memory statistics ]]"]
        for name, h in self.heaps.items():
            lines.append(f"{name:>12}: {h.bytes_peak:12d}B peak / {h.bytes_allocated:12d}B "
                         f"allocated / {h.bytes_freed:12d}B freed / {h.bytes_live:12d}B live")
        lines.append("[[ vmrt allocation counts ]]")
        for name, h in self.heaps.items():
            lines.append(f"{name:>12}: {h.allocations:12d} allocations / {h.frees:12d} frees")
        lines.append("[[ vmrt dispatch statistics ]]")
        if not self.dispatches:
            lines.append("  (no dispatches)")
        for key, d in self.dispatches.items():
            lines.append(f"  {d.count:8d} dispatches {d.total_seconds * 1e3:12.3f} ms total "
                         f"{d.mean_seconds * 1e3:10.3f} ms mean  {key}")
        return "\n".join(lines) + "\n"


__all__ = ["AllocationListener", "DeviceStatistics", "DispatchStatistics", "HeapStatistics",
           "MEMORY_TYPE_HOST_LOCAL", "listening"]
