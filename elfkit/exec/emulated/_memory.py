"""Guest address-space bookkeeping (pure Python; no unicorn here).

``AddressSpace`` hands out page-aligned ranges with at least one unmapped
guard page between any two of them, so a run-away pointer faults instead of
silently walking into the neighbour.  ``Heap`` carves ``alloc()`` requests
out of arenas obtained from the address space.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator

from ..._support.records import DataRecord, field
from ...errors import LayoutError, MemoryAccessError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class Region(DataRecord, slots=True):
    start: int
    size: int                 # bytes reserved (page multiple)
    kind: str                 # "image", "heap", "stack", "buffer", "runtime", "large"
    name: str = ""
    mapped: int = 0           # bytes actually mapped (stack: size minus its guard)
    map_start: int = 0
    exec_ever: bool = False   # code may have been translated from it
    extra: Any = None         # per kind: zerocopy (uses, prot); arena: the previous top
    rights: int | None = None  # a guarded span: its UC_PROT_* (None: mixed, by protect)

    @property
    def end(self) -> int:
        return self.start + self.size

    def describe(self) -> str:
        label = f"{self.kind} {self.name}".strip() if self.name else self.kind
        return f"{label} [{self.start:#x}, {self.end:#x})"


class AddressSpace:
    def __init__(self, lo: int, hi: int, page: int, limit: int):
        self.lo, self.hi, self.page, self.limit = lo, hi, page, limit
        self._starts: list[int] = []
        self._regions: list[Region] = []
        self.used = 0

    def __iter__(self) -> Iterator[Region]:
        return iter(list(self._regions))

    def find(self, size: int, align: int) -> int:
        page = self.page
        align = max(align, page)
        cur = self.lo
        for r in self._regions:
            start = (cur + align - 1) & -align
            if start + size + page <= r.start:
                return start
            cur = max(cur, r.end + page)
        start = (cur + align - 1) & -align
        if start + size > self.hi:
            raise LayoutError(f"guest address space exhausted: no free {size:#x}-byte range "
                              f"aligned to {align:#x} below {self.hi:#x}")
        return start

    def add(self, region: Region) -> Region:
        if self.used + region.size > self.limit:
            raise MemoryAccessError(
                f"guest memory limit of {self.limit:#x} bytes reached ({self.used:#x} in use, "
                f"{region.size:#x} more requested for {region.kind})")
        i = bisect.bisect_left(self._starts, region.start)
        self._starts.insert(i, region.start)
        self._regions.insert(i, region)
        self.used += region.size
        return region

    def remove(self, start: int) -> Region:
        i = bisect.bisect_left(self._starts, start)
        if i >= len(self._starts) or self._starts[i] != start:
            raise MemoryAccessError(f"no reservation starts at {start:#x}")
        del self._starts[i]
        r = self._regions.pop(i)
        self.used -= r.size
        return r

    def at(self, addr: int) -> Region | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            r = self._regions[i]
            if addr < r.end:
                return r
        return None

    def near(self, addr: int) -> tuple[Region | None, Region | None]:
        """The regions just below and just above ``addr``."""
        i = bisect.bisect_right(self._starts, addr) - 1
        below = self._regions[i] if i >= 0 else None
        above = self._regions[i + 1] if i + 1 < len(self._regions) else None
        return below, above


class _Arena(DataRecord, slots=True):
    base: int
    size: int
    free: list[list[int]] = field(default_factory=list)   # sorted [offset, size]


class Heap:
    """First-fit allocator over arenas; big requests get their own range."""

    ARENA = 256 * 1024
    BIG = 64 * 1024

    def __init__(self, new_range: Callable[[int, int], int],
                 drop_range: Callable[[int], None]) -> None:
        self._new_range = new_range          # (size) -> base
        self._drop_range = drop_range        # (base) -> None
        self._arenas: list[_Arena] = []
        self.allocs: dict[int, tuple[_Arena | None, int, int]] = {}   # addr -> (arena, off, size)

    def alloc(self, size: int, align: int) -> int:
        if size < 0 or align <= 0 or align & (align - 1):
            raise MemoryAccessError(f"bad allocation request: size {size}, align {align} "
                                    f"(align must be a power of two)")
        size = max(16, (size + 15) & -16)
        if size >= self.BIG or align > 4096:
            base = self._new_range(size, align)
            self.allocs[base] = (None, 0, size)
            return base
        for arena in self._arenas:
            a = self._take(arena, size, align)
            if a is not None:
                return a
        arena = _Arena(self._new_range(self.ARENA, 4096), self.ARENA)
        arena.free.append([0, self.ARENA])
        self._arenas.append(arena)
        a = self._take(arena, size, align)
        assert a is not None
        return a

    def _take(self, arena: _Arena, size: int, align: int) -> int | None:
        for i, (off, fsize) in enumerate(arena.free):
            start = ((arena.base + off + align - 1) & -align) - arena.base
            pad = start - off
            if pad + size <= fsize:
                rest = fsize - pad - size
                new = []
                if pad:
                    new.append([off, pad])
                if rest:
                    new.append([start + size, rest])
                arena.free[i:i + 1] = new
                addr = arena.base + start
                self.allocs[addr] = (arena, start, size)
                return addr
        return None

    def size_of(self, addr: int) -> int | None:
        e = self.allocs.get(addr)
        return e[2] if e else None

    def free(self, addr: int) -> int:
        e = self.allocs.pop(addr, None)
        if e is None:
            raise MemoryAccessError(f"free({addr:#x}): not an address returned by alloc()")
        arena, off, size = e
        if arena is None:
            self._drop_range(addr)
            return size
        fl = arena.free
        i = bisect.bisect_left(fl, [off, 0])
        fl.insert(i, [off, size])
        # coalesce with the neighbours
        if i + 1 < len(fl) and fl[i][0] + fl[i][1] == fl[i + 1][0]:
            fl[i][1] += fl[i + 1][1]
            del fl[i + 1]
        if i > 0 and fl[i - 1][0] + fl[i - 1][1] == fl[i][0]:
            fl[i - 1][1] += fl[i][1]
            del fl[i]
        return size
