"""Host memory below an address: code with 32-bit absolute addresses
(x86_64 ``-fno-pic`` objects of ``-mcmodel=small``: R_X86_64_32/32S) runs
only from the low 2 GiB of the address space, where mmap does not put
mappings by itself.

The top of the range and the range just below the last one handed out are
tried first; then the free ranges from ``/proc/self/maps`` (Linux), highest
first (away from the program break).  Each candidate is mapped with
``MAP_FIXED_NOREPLACE``, which fails instead of replacing a mapping that
appeared since the file was read (a kernel without the flag takes it as a
hint: a mapping elsewhere is given back and the next range tried).  Where
the file does not exist, a few hints spread over the range are tried.  The
first 64 KiB (and below ``vm.mmap_min_addr``) are never used: a null
pointer plus a small offset must still fault."""
from __future__ import annotations

import functools
import mmap as _mmap
import sys

from .host_memory import MAP_FAILED, libc_mmap, munmap

__all__ = ["map_below", "FLOOR"]

#: the lowest address handed out
FLOOR = 0x10000
_MAP_FIXED_NOREPLACE = 0x100000
_linux = sys.platform.startswith("linux")
_last = 0       # the last range handed out (0: none yet)


@functools.cache
def _floor() -> int:
    try:
        with open("/proc/sys/vm/mmap_min_addr") as f:
            return max(FLOOR, int(f.read().strip() or 0))
    except (OSError, ValueError):
        return FLOOR


def _gaps(limit: int) -> list[tuple[int, int]] | None:
    """Unmapped [start, end) ranges below ``limit``, highest first (None:
    the process's mappings cannot be read)."""
    try:
        with open("/proc/self/maps") as f:
            spans = sorted(tuple(int(x, 16) for x in line.split(None, 1)[0].split("-"))
                           for line in f)
    except (OSError, ValueError):
        return None
    gaps = []
    pos = 0
    for lo, hi in spans:
        if lo >= limit:
            break
        if lo > pos:
            gaps.append((pos, lo))
        pos = max(pos, hi)
    if pos < limit:
        gaps.append((pos, limit))
    return gaps[::-1]


def _try(addr: int, size: int, flags: int) -> bool:
    p = libc_mmap(addr, size, _mmap.PROT_READ | _mmap.PROT_WRITE,
                 _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS | flags, -1, 0)
    if p in (None, MAP_FAILED):
        return False
    if p != addr:
        munmap(p, size)
        return False
    return True


def map_below(size: int, align: int, limit: int) -> int | None:
    """A new zero-filled read/write mapping of ``size`` bytes at an
    ``align``-aligned address, wholly below ``limit``; None when no free
    range there holds it."""
    global _last
    floor = _floor()
    # first the top of the range and just below the last range handed out:
    # one system call each, where reading the process's mappings takes ~0.3 ms
    for hint in (limit, _last):
        start = (min(hint, limit) - size) & ~(align - 1)
        if start >= floor and _try(start, size, _MAP_FIXED_NOREPLACE if _linux else 0):
            _last = start
            return start
    gaps = _gaps(limit)
    if gaps is None:
        step = max(size, 16 << 20)
        gaps = [(floor, limit - k * step) for k in range(64) if limit - k * step - size >= floor]
        flags = 0
    else:
        flags = _MAP_FIXED_NOREPLACE
    for lo, hi in gaps:
        lo, hi = max(lo, floor), min(hi, limit)
        start = (hi - size) & ~(align - 1)
        if start >= lo and _try(start, size, flags):
            _last = start
            return start
    return None
