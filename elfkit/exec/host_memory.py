"""Host memory for the native machine: anonymous mappings through libc
(mmap, mprotect, madvise, mincore via ctypes), and the pool of released
reservations kept for the next one of the same size."""
from __future__ import annotations

import ctypes
import mmap as _mmap
import re
import threading

from ..errors import MemoryAccessError
from .base import PROT_EXEC, PROT_READ, PROT_WRITE

_libc = ctypes.CDLL(None, use_errno=True)
#: libc's mmap (also lowmap's, for images placed low)
libc_mmap = _libc.mmap
libc_mmap.restype = ctypes.c_void_p
libc_mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long)
munmap = _libc.munmap
munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
mprotect = _libc.mprotect
mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_madvise = _libc.madvise
_madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
MAP_FAILED = ctypes.c_void_p(-1).value

_OS_PROT = {PROT_READ: _mmap.PROT_READ, PROT_WRITE: _mmap.PROT_WRITE, PROT_EXEC: _mmap.PROT_EXEC}


def os_prot(prot: int) -> int:
    p = 0
    for k, v in _OS_PROT.items():
        if prot & k:
            p |= v
    return p


#: the OS protection of each of elfkit's protection values (all bits combined)
OS_PROTS = tuple(os_prot(p) for p in range((PROT_READ | PROT_WRITE | PROT_EXEC) + 1))


def map_range(size: int, align: int, page: int) -> int:
    """A new read/write anonymous mapping of ``size`` bytes at an ``align``-aligned address."""
    total = size + align - page
    p = libc_mmap(None, total, _mmap.PROT_READ | _mmap.PROT_WRITE,
                 _mmap.MAP_PRIVATE | _mmap.MAP_ANONYMOUS, -1, 0)
    if p in (None, MAP_FAILED):
        raise MemoryAccessError(f"mmap of {total} bytes failed: errno {ctypes.get_errno()}")
    base = (p + align - 1) & ~(align - 1)
    if base > p:
        munmap(p, base - p)
    tail = (p + total) - (base + size)
    if tail > 0:
        munmap(base + size, tail)
    return base


#: Released reservations kept, inaccessible (PROT_NONE), for the next
#: reservation of the same size: loading and closing a plugin in turn then
#: costs two mprotect calls and a memset instead of mmap, munmap and a page
#: fault per page (a fresh page costs ~1.4 µs in the kernel, populated or
#: not, against ~0.03 µs to clear a resident one: for a 3 MB image, 1.1 ms
#: against 0.1 ms).  At most SPARE_COUNT of them, each at most
#: SPARE_MAX_SIZE bytes and SPARE_BYTES in all, shared by every native
#: machine of the process.  Those above SPARE_LAZY_FREE bytes are given to
#: the kernel as lazily freeable (MADV_FREE): it may take their pages back
#: under memory pressure instead of swapping them, and then the next use
#: faults them in afresh (zero-filled either way, see take_spare).
#: A released image whose memory still held exactly the bytes its loader
#: expected (``release_image``) is kept with those bytes named: a reload of
#: the same plugin at that address takes it back as it is (``reuse``), which
#: spares the read/write step, the clearing and the copy.  Such a range is
#: kept with its protection runs as separate kernel mappings (VMAs): every
#: other run is marked MADV_NOHUGEPAGE (no effect on ranges this small: a
#: huge page needs 2 MiB), so that making the range inaccessible does not
#: merge them and protecting it again does not split them, which roughly
#: halves what those mprotect calls cost.
SPARE_COUNT = 4
SPARE_MAX_SIZE = 4 << 20
SPARE_BYTES = 8 << 20
SPARE_LAZY_FREE = 256 << 10
_MADV_FREE = getattr(_mmap, "MADV_FREE", 8)
_MADV_NOHUGEPAGE = getattr(_mmap, "MADV_NOHUGEPAGE", 15)
_spare: list[tuple[int, int, bytes | None]] = []     # (address, size, bytes it holds)
_spare_lock = threading.Lock()
_RW = _mmap.PROT_READ | _mmap.PROT_WRITE
#: larger kept ranges are cleared page by page as _clear_large says
SPARE_SCAN_SIZE = 64 << 10
_PAGE = _mmap.PAGESIZE
_MADV_DONTNEED = _mmap.MADV_DONTNEED
_mincore = _libc.mincore
_mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
#: mincore's vector to one byte per page, 1 when resident (the other bits are reserved)
_RESIDENT = bytes(i & 1 for i in range(256))
_RUNS = re.compile(rb"\x01+|\x00+")
memcmp = _libc.memcmp
memcmp.restype = ctypes.c_int
memcmp.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)


def take_spare(size: int, align: int) -> int | None:
    """A kept reservation of ``size`` bytes aligned to ``align``, read/write
    and zero-filled as a new mapping would be; None when there is none."""
    if size > SPARE_MAX_SIZE:
        return None
    with _spare_lock:
        for i, (addr, n, _held) in enumerate(_spare):
            if n == size and not addr & (align - 1):
                del _spare[i]
                break
        else:
            return None
    if mprotect(addr, size, _RW) != 0:
        munmap(addr, size)
        return None
    if size <= SPARE_SCAN_SIZE:
        ctypes.memset(addr, 0, size)
    else:
        _clear_large(addr, size)
    return addr


def _clear_large(addr: int, size: int) -> None:
    """Zero-fill a kept read/write range: its resident pages by memset (they
    stay, no page fault at their next use), the others by MADV_DONTNEED
    (zero-filled on demand, including any the kernel swapped out or took
    back after MADV_FREE).  A large image is mostly .bss its code never
    touched: clearing those pages would fault every one of them in."""
    npages = size // _PAGE
    vec = ctypes.create_string_buffer(npages)
    if _mincore(addr, size, vec) != 0:
        ctypes.memset(addr, 0, size)
        return
    flags = vec.raw.translate(_RESIDENT)
    for m in _RUNS.finditer(flags):
        a, b = m.span()
        # resident: cleared in place; else dropped (cleared too if the kernel refuses)
        if flags[a] or _madvise(addr + a * _PAGE, (b - a) * _PAGE, _MADV_DONTNEED) != 0:
            ctypes.memset(addr + a * _PAGE, 0, (b - a) * _PAGE)


def take_kept(addr: int, size: int, content: bytes) -> bool:
    """Take back the kept reservation at ``addr`` if it holds ``content``
    (that very object); it stays inaccessible until protected."""
    with _spare_lock:
        for i, (a, n, held) in enumerate(_spare):
            if a == addr and n == size and held is content:
                del _spare[i]
                return True
    return False


def keep_runs_apart(addr: int, prots: list[int], page: int) -> None:
    """Mark every other run of equal protections MADV_NOHUGEPAGE, so the
    kernel keeps the runs as separate mappings whatever their protections."""
    odd = False
    i = 0
    while i < len(prots):
        j = i + 1
        while j < len(prots) and prots[j] == prots[i]:
            j += 1
        if odd:
            _madvise(addr + i * page, (j - i) * page, _MADV_NOHUGEPAGE)   # advice only
        odd = not odd
        i = j


def give_spare(addr: int, size: int, content: bytes | None = None) -> bool:
    """Keep a released reservation for a later one (False: unmap it);
    ``content``: the bytes it holds, checked by the caller, or None.  When
    the pool is full its oldest ranges are unmapped to make room: the range
    released last is the likeliest to be asked for next (a plugin loaded
    and closed in turn), and a pool full of ranges of sizes no load asks for
    would otherwise keep every later one out."""
    if size > SPARE_MAX_SIZE:
        return False
    if size > SPARE_LAZY_FREE:
        _madvise(addr, size, _MADV_FREE)      # advice only: a refusal changes nothing
        content = None                        # the kernel may zero its pages
    if mprotect(addr, size, 0) != 0:
        return False
    evicted = []
    with _spare_lock:
        total = sum(n for _a, n, _h in _spare) + size
        while _spare and (len(_spare) >= SPARE_COUNT or total > SPARE_BYTES):
            old = _spare.pop(0)
            total -= old[1]
            evicted.append(old)
        if total > SPARE_BYTES:
            return False
        _spare.append((addr, size, content))
    for a, n, _h in evicted:
        munmap(a, n)
    return True
