"""Released guarded spans an emulated machine keeps for its next
``reserve_guarded`` of the same size.

Mapping a span and unmapping it cost unicorn ~30 us for a page and ~130 us
for a MiB (more on a busy machine); a caller staging data per call (vmrt's
dispatch bindings) asks for the same sizes again and again.  A released span
therefore stays mapped, made inaccessible to guest code (no rights: a
``uc_mem_protect`` each way, ~4 us each, no translated code is dropped) and
counted as in use by the machine, until a reservation of its size takes it
again or the pool lets it go.

A span handed out again reads as fresh memory: it is zero-filled whole on
the way out (its host pages are written directly, ~40 us per MiB; guest code
may have written anywhere in it, and nothing cheaper tracks where).

The pool is bounded: at most ``max_count`` spans and ``max_bytes`` bytes
(``MAX_BYTES``, or an eighth of the machine's memory limit when that is
less); a span that does not fit is unmapped at once.  The machine empties
it when a reservation hits its memory limit and when it closes.
"""
from __future__ import annotations

import ctypes

from ...errors import LayoutError, MemoryAccessError
from . import _uc
from ._layout import PAGE, round_up
from ._memory import Region

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._state import MachineState
else:
    MachineState = object

C = _uc.C
lib = _uc.lib


class SpanPool:
    """Idle spans by size: ``(base, host pages)``; the machine maps, protects
    and unmaps them (the pool only keeps the books and zero-fills)."""

    MAX_COUNT = 16
    MAX_BYTES = 16 << 20

    def __init__(self, memory_limit: int) -> None:
        self.idle: dict[int, list[tuple[int, Any]]] = {}
        self.count = 0          # spans kept
        self.bytes = 0          # their mapped bytes (guard pages not counted)
        self.max_count = self.MAX_COUNT
        self.max_bytes = min(self.MAX_BYTES, memory_limit // 8)

    def take(self, size: int) -> tuple[int, Any] | None:
        """A kept span of ``size`` mapped bytes, zero-filled, or None."""
        spans = self.idle.get(size)
        if not spans:
            return None
        base, pages = spans.pop()
        self.count -= 1
        self.bytes -= size
        ctypes.memset(ctypes.addressof(pages), 0, size)
        return base, pages

    def fits(self, size: int) -> bool:
        """Whether a span of ``size`` mapped bytes may be kept."""
        return self.count < self.max_count and self.bytes + size <= self.max_bytes

    def keep(self, base: int, size: int, pages: Any) -> None:
        self.idle.setdefault(size, []).append((base, pages))
        self.count += 1
        self.bytes += size

    def drain(self) -> list[tuple[int, int]]:
        """Forget every kept span; returns their ``(base, size)`` to unmap."""
        out = [(base, size) for size, spans in self.idle.items() for base, _pages in spans]
        self.idle, self.count, self.bytes = {}, 0, 0
        return out


class GuardedSpans(MachineState):
    """``reserve_guarded`` and the span pool's side of ``release`` (the
    machine's ``idle_spans``)."""

    if TYPE_CHECKING:
        idle_spans: SpanPool

        def _map_host(self, addr: int, size: int, perms: int) -> Any: ...

        def _unmap(self, addr: int, size: int, exec_ever: bool = True) -> None: ...

    def reserve_guarded(self, size: int, name: str = "", read_only: bool = False) -> int:
        """Reserve and map ``size`` bytes (rounded up to whole pages) of
        read/write memory followed by an unmapped guard page, so that an
        access running past the end faults; ``release`` frees both.  Cheaper
        than ``reserve`` + ``protect(PROT_NONE)`` of a last page: unicorn
        copies the contents of a mapping it splits.  A released span of the
        same size is handed out again, zero-filled (see the module notes).
        ``read_only``: guest code may only read the span (a store faults);
        the host fills it through :meth:`span_memory`."""
        perms = C.UC_PROT_READ if read_only else C.UC_PROT_READ | C.UC_PROT_WRITE
        with self._lock:
            self._check_open()
            if size <= 0:
                raise LayoutError(f"cannot reserve {size} bytes")
            size = round_up(size)
            kept = self.idle_spans.take(size)
            if kept is not None:
                r = self._space.at(kept[0])
                assert r is not None
                if self._set_span_rights(r, perms):
                    r.kind, r.name = "span", name
                    return r.start
                self._unmap_span(r)
            try:
                return self._new_span(size, name, perms)
            except (LayoutError, MemoryAccessError):
                if not self._drain_spans():
                    raise
            return self._new_span(size, name, perms)    # the room the kept spans held

    def span_memory(self, addr: int) -> memoryview:
        """The host pages behind the guarded span reserved at ``addr`` (its
        mapped bytes, guard page excluded), writable from the host whatever
        the guest's rights: the span's memory without a copy through
        unicorn.  Valid until the span is released."""
        with self._lock:
            self._check_open()
            r = self._space.at(addr)
            if r is None or r.start != addr or r.kind != "span":
                raise MemoryAccessError(f"span_memory({addr:#x}): not the start of a guarded "
                                        "span")
            return memoryview(r.extra).cast("B")

    def _new_span(self, size: int, name: str, perms: int) -> int:
        start = self._space.find(size + PAGE, PAGE)
        r = self._space.add(Region(start, size + PAGE, "span", name, mapped=size,
                                   map_start=start))
        try:
            r.extra = self._map_host(start, size, perms)
        except BaseException:
            self._space.remove(start)
            raise
        return start

    def _set_span_rights(self, r: Region, perms: int) -> bool:
        return not lib.uc_mem_protect(self._h, r.start, r.mapped, perms)

    def _unmap_span(self, r: Region) -> None:
        self._space.remove(r.start)
        self._unmap(r.start, r.mapped, False)
        r.extra = None              # the host pages, now unmapped

    def _keep_span(self, r: Region) -> bool:
        """Keep the released span ``r`` in the pool (False: unmap it)."""
        if r.exec_ever or not self.idle_spans.fits(r.mapped):
            return False
        if not self._set_span_rights(r, 0):     # out of guest code's reach while idle
            return False
        r.kind = "released span"
        self.idle_spans.keep(r.start, r.mapped, r.extra)
        return True

    def _drain_spans(self) -> bool:
        """Unmap every kept span (a reservation short of room, closing);
        whether there was any."""
        spans = self.idle_spans.drain()
        for base, _size in spans:
            r = self._space.at(base)
            assert r is not None
            self._unmap_span(r)
        return bool(spans)

    def _idle_span(self, addr: int, size: int) -> Region | None:
        """The kept span ``[addr, addr + size)`` touches, if any (the host may
        not read or write it either)."""
        r = self._space.at(addr)
        if r is None:
            r = self._space.near(addr)[1]
            if r is None or r.start >= addr + size:
                return None
        return r if r.kind == "released span" else None
