"""Released guarded spans an emulated machine keeps for its next
``reserve_guarded`` of the same size.

Mapping a span and unmapping it cost unicorn ~30 us for a page and ~130 us
for a MiB (more on a busy machine); a caller staging data per call (vmrt's
dispatch bindings) asks for the same sizes again and again.  A released span
therefore stays mapped, made inaccessible to guest code (no rights: a
``uc_mem_protect``, which makes unicorn rebuild its view of the address
space, ~5-10 us) and counted as in use by the machine, until a reservation of
its size takes it again or the pool lets it go.

The rights are taken away lazily: a span released outside a call keeps them
(it is ``unsealed``) until the next call's guest code starts (the callers
``seal`` the unsealed spans first: guest code never reaches an idle span),
so that a caller that releases its spans after a call and reserves the same
sizes before the next (a dispatch's bindings) hands them back and forth with
no ``uc_mem_protect`` at all.  The host is refused access to an idle span
at once either way (its region says "released span"); a span released by a
host callback, while guest code runs, is sealed at once.

A span handed out again reads as fresh memory: it is zero-filled whole on
the way out (its host pages are written directly, ~40 us per MiB; guest code
may have written anywhere in it, and nothing cheaper tracks where).

The pool is bounded: at most ``max_count`` spans and ``max_bytes`` bytes
(``MAX_BYTES``, or an eighth of the machine's memory limit when that is
less); a span that does not fit is unmapped at once.  The machine empties
it when a reservation hits its memory limit and when it closes.

``GuardedSpans`` hands spans out and takes them back, on the machine's
``GuestMemory``; ``SpanPool`` keeps the books of the idle ones.
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

    from ._guestmem import GuestMemory

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
        """A kept span of ``size`` mapped bytes, zero-filled, or None (the one
        released last: the likeliest to be still unsealed)."""
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

    def forget(self, base: int, size: int) -> None:
        """Forget the kept span at ``base`` (``size`` mapped bytes)."""
        spans = self.idle.get(size, [])
        for i, (b, _pages) in enumerate(spans):
            if b == base:
                del spans[i]
                self.count -= 1
                self.bytes -= size
                return

    def drain(self) -> list[tuple[int, int]]:
        """Forget every kept span; returns their ``(base, size)`` to unmap."""
        out = [(base, size) for size, spans in self.idle.items() for base, _pages in spans]
        self.idle, self.count, self.bytes = {}, 0, 0
        return out


class GuardedSpans:
    """``reserve_guarded`` and the span pool's side of ``release``, on
    ``memory``; ``pool``: the released spans kept (the machine's
    ``idle_spans``).  The machine takes its lock and checks it is open
    before calling in."""

    def __init__(self, memory: GuestMemory, memory_limit: int) -> None:
        self._mem = memory
        self._h = memory.engine.handle
        self.pool = SpanPool(memory_limit)
        #: idle spans that still have the rights they were released with, by
        #: base (the callers read it before every run: see ``seal``)
        self.unsealed: dict[int, Region] = {}

    def reserve(self, size: int, name: str = "", read_only: bool = False) -> int:
        """See ``EmulatedMachine.reserve_guarded``."""
        perms = C.UC_PROT_READ if read_only else C.UC_PROT_READ | C.UC_PROT_WRITE
        if size <= 0:
            raise LayoutError(f"cannot reserve {size} bytes")
        size = round_up(size)
        kept = self.pool.take(size)
        if kept is not None:
            r = self._mem.space.at(kept[0])
            assert r is not None
            self.unsealed.pop(r.start, None)
            if r.rights == perms or self._set_rights(r, perms):
                r.kind, r.name = "span", name
                return r.start
            self._unmap(r)
        try:
            return self._new_span(size, name, perms)
        except (LayoutError, MemoryAccessError):
            if not self.drain():
                raise
        return self._new_span(size, name, perms)    # the room the kept spans held

    def memory(self, addr: int) -> memoryview:
        """See ``EmulatedMachine.span_memory``."""
        r = self._mem.space.at(addr)
        if r is None or r.start != addr or r.kind != "span":
            raise MemoryAccessError(f"span_memory({addr:#x}): not the start of a guarded span")
        return memoryview(r.extra).cast("B")

    def _new_span(self, size: int, name: str, perms: int) -> int:
        space = self._mem.space
        start = space.find(size + PAGE, PAGE)
        r = space.add(Region(start, size + PAGE, "span", name, mapped=size, map_start=start,
                             rights=perms))
        try:
            r.extra = self._mem.map_host(start, size, perms)
        except BaseException:
            space.remove(start)
            raise
        return start

    def _set_rights(self, r: Region, perms: int) -> bool:
        if lib.uc_mem_protect(self._h, r.start, r.mapped, perms):
            return False
        r.rights = perms
        return True

    def _unmap(self, r: Region) -> None:
        self._mem.space.remove(r.start)
        self._mem.unmap(r.start, r.mapped, False)
        r.extra = None              # the host pages, now unmapped

    def keep(self, r: Region, running: bool) -> bool:
        """Keep the released span ``r`` in the pool (False: unmap it);
        ``running``: guest code is running (released by a host callback),
        so the span is sealed at once."""
        if r.exec_ever or not self.pool.fits(r.mapped):
            return False
        if running or r.rights is None:     # (None: ``protect`` changed part of it)
            if not self._set_rights(r, 0):  # out of guest code's reach while idle
                return False
        else:
            self.unsealed[r.start] = r      # sealed before the next run
        r.kind = "released span"
        self.pool.keep(r.start, r.mapped, r.extra)
        return True

    def seal(self) -> None:
        """Take every unsealed idle span's rights away (before guest code
        runs); one that cannot be is unmapped (and leaves the pool)."""
        unsealed = list(self.unsealed.values())
        self.unsealed.clear()
        failed = [r for r in unsealed if not self._set_rights(r, 0)]
        for r in failed:
            self.pool.forget(r.start, r.mapped)
            self._unmap(r)

    def drain(self) -> bool:
        """Unmap every kept span (a reservation short of room, closing);
        whether there was any."""
        spans = self.pool.drain()
        self.unsealed.clear()
        for base, _size in spans:
            r = self._mem.space.at(base)
            assert r is not None
            self._unmap(r)
        return bool(spans)

    def idle_at(self, addr: int, size: int) -> Region | None:
        """The kept span ``[addr, addr + size)`` touches, if any (the host may
        not read or write it either)."""
        if not self.pool.count:
            return None
        r = self._mem.region_near(addr, size)
        return r if r is not None and r.kind == "released span" else None
