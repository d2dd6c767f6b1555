"""Host buffers passed to guest code: ``ArgumentMemory``, one per emulated
machine, given the machine's ``GuestMemory``.

The guest reaches exactly the bytes it is given.  A numpy array or
bytearray passed as a ``ptr`` argument is

* copied into a small argument arena (writable, up to 64 KiB; zeroed after
  the call) or a mapping of its own, and copied back after the call; or,
* when it spans whole host pages, mapped in three parts: the whole pages
  inside it zero-copy (``uc_mem_map_ptr``, pages that hold nothing but the
  array), and its partial first and last pages copied into guest-owned pages
  around them (copied back after the call, then zeroed).  Arrays from
  ``empty()`` end in their own block's zero padding and need no copy at all.

Every mapping is followed by an unmapped guard page, so a pointer running
past the array faults.  Zero-copy mappings are closed (no access) after the
call and reopened when the same host pages come back (unmapping costs a TLB
flush per page); while closed neither guest code nor ``read``/``write``
reaches them.  ``share()`` keeps one open across calls.
"""
from __future__ import annotations

import ctypes
import weakref
from collections import OrderedDict

from ...errors import MemoryAccessError, ModuleClosedError, SignatureError
from . import _uc
from ._layout import PAGE, round_up
from ._memory import Region

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._guestmem import GuestMemory

C = _uc.C
lib = _uc.lib

_ARENA_SIZE = 1 << 20          # argument arena for small copied buffers
_ARENA_MAX = 64 << 10          # larger copied buffers get their own mapping
_ZC_CACHE = 16                 # zero-copy mappings kept (closed) between calls
_ZEROS = bytes(PAGE)
_CHARP = ctypes.POINTER(ctypes.c_char)


def _host(addr: int) -> Any:
    """A host address as unicorn's memory functions take it."""
    return ctypes.cast(addr, _CHARP)


class ArgumentMemory:
    """Mapping and copying of buffer arguments into ``memory``: the generated
    callers turn each ``ptr`` argument into an address with ``ptr_arg`` and
    give what it noted to ``release`` after the call; ``share`` and
    ``unshare`` keep an array mapped across calls."""

    def __init__(self, memory: GuestMemory) -> None:
        self._mem = memory
        self._space = memory.space
        self._h = memory.engine.handle
        self._mask = (1 << memory.engine.arch.bits) - 1
        self._closed = False
        self._arena: Region | None = None
        self._arena_top = 0
        self._shared: dict[int, tuple[list[Any], Any]] = {}
        # (host start, host size, head page, tail page) -> the zero-copy mapping
        self._zc: OrderedDict[tuple[int, int, bool, bool], Region] = OrderedDict()

    def close(self) -> None:
        """The machine closed: its memory is gone; ``release`` does nothing."""
        self._closed = True

    @property
    def cached_mappings(self) -> int:
        """How many zero-copy mappings of host arrays are kept between calls
        (at most 16; reused when the same array is passed again)."""
        return len(self._zc)

    def ptr_arg(self, obj: Any, cleanup: list[Any]) -> int:
        """The guest address to pass for ``obj`` (None, an int, a numpy array,
        a bytes-like object); a mapped buffer is noted in ``cleanup``."""
        if obj is None:
            return 0
        if hasattr(obj, "__index__") and not hasattr(obj, "__array_interface__"):
            return int(obj.__index__()) & self._mask
        if hasattr(obj, "__array_interface__") and type(obj).__module__.startswith("numpy"):
            if getattr(obj, "ndim", 1) == 0 and obj.dtype.kind in "iu":
                return int(obj) & self._mask
            return self._map_array(obj, cleanup)
        try:
            mv = memoryview(obj)
        except TypeError:
            raise SignatureError(f"cannot pass a {type(obj).__name__} as a pointer: use an int "
                                 f"address, None, a numpy array or a bytes-like object") from None
        return self._map_buffer(mv, cleanup)

    def _map_array(self, arr: Any, cleanup: list[Any]) -> int:
        import numpy as np
        n = int(arr.nbytes)
        writable = bool(arr.flags.writeable)
        perms = C.UC_PROT_READ | (C.UC_PROT_WRITE if writable else 0)
        contiguous = arr.flags.c_contiguous or arr.flags.f_contiguous
        if contiguous and n:
            ptr = arr.__array_interface__["data"][0]
            lo = round_up(ptr)                      # whole host pages inside the array
            hi = (ptr + n) & -PAGE
            if _padded_end(arr, ptr, n):
                hi = round_up(ptr + n)              # ends in its empty() block's padding
            if hi > lo and (lo == ptr and hi >= ptr + n or n > _ARENA_MAX or not writable):
                head = lo - ptr
                tail = max(ptr + n - hi, 0)
                region = self._zero_copy(lo, hi - lo, bool(head), bool(tail), perms)
                addr = region.start + (PAGE - head if head else 0)
                if head:
                    lib.uc_mem_write(self._h, addr, _host(ptr), head)
                if tail:
                    lib.uc_mem_write(self._h, addr + head + hi - lo, _host(hi), tail)
                cleanup.append((region, arr, (addr, ptr, head, hi - lo, tail), writable))
                return addr
        self._check_fits(n)
        data = arr if contiguous else np.ascontiguousarray(arr)
        if n <= _ARENA_MAX and writable:
            region = self._arena_take(n)
        else:
            region = self._mem.new_region(max(n, 1), PAGE, "buffer", "(copied numpy)", perms)
        if n:
            src = data.__array_interface__["data"][0]
            lib.uc_mem_write(self._h, region.start,
                             ctypes.cast(src, ctypes.POINTER(ctypes.c_char)), n)
        cleanup.append((region, arr, data, writable))
        return region.start

    def _check_fits(self, n: int) -> None:
        """Refuse a buffer argument the guest memory limit cannot hold
        before copying it (a strided view of a huge virtual array would
        otherwise end in a MemoryError)."""
        space = self._space
        if n > space.limit - space.used:
            raise MemoryAccessError(
                f"cannot pass a {n:#x}-byte buffer: the guest memory limit of {space.limit:#x} "
                f"bytes would be exceeded ({space.used:#x} in use)")

    # Zero-copy mappings: [copied head page] [host pages, uc_mem_map_ptr]
    # [copied tail page], kept after the call with no access rights
    # (PROT_NONE) and re-opened when the same host pages are passed again:
    # unmapping costs a TLB flush per page (~0.35 ms per 4 MiB on
    # arm/aarch64), changing protections does not.  While closed the guest
    # cannot touch the range (and ``read``/``write`` refuse it); when opened
    # again it is backed by whatever the caller passes at those host pages,
    # which it keeps alive for the call.
    def _zero_copy(self, host_start: int, host_size: int, head: bool, tail: bool,
                   perms: int) -> Region:
        if self._closed:
            raise ModuleClosedError("the emulated machine was closed")
        key = (host_start, host_size, head, tail)
        region = self._zc.get(key)
        if region is not None:
            self._zc.move_to_end(key)
            uses, cur = region.extra
            want = perms | (cur if uses else 0)
            if want != cur:
                lib.uc_mem_protect(self._h, region.start, region.size, want)
            region.extra = (uses + 1, want)
            return region
        self._zc_evict(len(self._zc) >= _ZC_CACHE)
        hp, tp = PAGE if head else 0, PAGE if tail else 0
        size = hp + host_size + tp
        addr = self._space.find(size, PAGE)
        region = Region(addr, size, "zerocopy", "(numpy, zero-copy)", mapped=size,
                        map_start=addr, extra=(1, perms))
        try:
            self._space.add(region)
        except MemoryAccessError:
            self._zc_evict(True, all_idle=True)
            self._space.add(region)
        err = lib.uc_mem_map_ptr(self._h, addr + hp, host_size, perms,
                                 ctypes.c_void_p(host_start))
        if not err and hp:
            err = lib.uc_mem_map(self._h, addr, hp, perms)
            if err:
                lib.uc_mem_unmap(self._h, addr + hp, host_size)
        if not err and tp:
            err = lib.uc_mem_map(self._h, addr + hp + host_size, tp, perms)
            if err:
                lib.uc_mem_unmap(self._h, addr, hp + host_size)
        if err:
            self._space.remove(addr)
            raise MemoryAccessError(f"cannot map a numpy buffer of {host_size:#x} bytes: "
                                    f"{_uc.strerror(err)}")
        self._zc[key] = region
        return region

    def _zc_evict(self, needed: bool, all_idle: bool = False) -> None:
        if not needed:
            return
        for key in list(self._zc):
            r = self._zc[key]
            if r.extra[0] == 0:
                del self._zc[key]
                self._mem.drop(r)
                if not all_idle and len(self._zc) < _ZC_CACHE:
                    return

    def _zc_release(self, region: Region, arr: Any, parts: tuple[Any, ...], writable: bool) -> None:
        """After a call: copy the partial edge pages back, zero them, close."""
        addr, ptr, head, inner, tail = parts
        if writable and head:
            lib.uc_mem_read(self._h, addr, _host(ptr), head)
        if writable and tail:
            lib.uc_mem_read(self._h, addr + head + inner, _host(ptr + head + inner), tail)
        uses, cur = region.extra
        if uses > 1:
            region.extra = (uses - 1, cur)
            return
        if head:
            lib.uc_mem_write(self._h, region.start, _ZEROS, PAGE)
        if tail:
            lib.uc_mem_write(self._h, region.end - PAGE, _ZEROS, PAGE)
        lib.uc_mem_protect(self._h, region.start, region.size, 0)
        region.extra = (0, 0)

    def closed_at(self, addr: int, size: int) -> Region | None:
        """The closed zero-copy mapping that [addr, addr+size) touches, if any."""
        if not self._zc:
            return None
        r = self._mem.region_near(addr, size)
        if r is not None and r.kind == "zerocopy" and not r.extra[0]:
            return r
        return None

    # Small copied arguments go to one argument arena (mapped once, zeroed
    # after each call) instead of a fresh mapping per argument: mapping and
    # unmapping cost ~10 us each.  The arena holds no host data between calls.
    def _arena_take(self, n: int) -> Region:
        arena = self._arena
        if arena is None:
            arena = self._arena = self._mem.new_region(_ARENA_SIZE, PAGE, "buffer",
                                                       "(argument arena)")
            self._arena_top = 0
        start = (self._arena_top + 63) & -64
        if start + n > arena.size:
            return self._mem.new_region(max(n, 1), PAGE, "buffer", "(copied argument)")
        self._arena_top = start + max(n, 1)
        return Region(arena.start + start, n, "arena", mapped=n, map_start=arena.start + start,
                      extra=start)

    def _map_buffer(self, mv: memoryview, cleanup: list[Any]) -> int:
        self._check_fits(mv.nbytes)
        mv = mv.cast("B") if mv.c_contiguous else memoryview(mv.tobytes())
        n = mv.nbytes
        writable = not mv.readonly
        perms = C.UC_PROT_READ | (C.UC_PROT_WRITE if writable else 0)
        if n <= _ARENA_MAX and writable:
            region = self._arena_take(n)
        else:
            region = self._mem.new_region(max(n, 1), PAGE, "buffer", "(copied buffer)", perms)
        if n:
            self._mem.write_raw(region.start, mv)
        cleanup.append((region, mv, None, writable))
        return region.start

    def release(self, cleanup: list[Any]) -> None:
        """After a call: copy the buffers ``ptr_arg`` noted in ``cleanup``
        back into their host objects and unmap or close their guest copies."""
        for region, obj, data, writable in cleanup:
            if self._closed:
                continue
            kind = region.kind
            if kind == "zerocopy":
                self._zc_release(region, obj, data, writable)
                continue
            try:
                if writable and obj is not None:
                    n = int(data.nbytes) if data is not None else 0
                    if data is None:                       # memoryview
                        n = obj.nbytes
                        if n:
                            tmp = ctypes.create_string_buffer(n)
                            lib.uc_mem_read(self._h, region.start, tmp, n)
                            obj[:] = tmp.raw
                    elif n:
                        dst = data.__array_interface__["data"][0]
                        lib.uc_mem_read(self._h, region.start,
                                        ctypes.cast(dst, ctypes.POINTER(ctypes.c_char)), n)
                        if data is not obj:
                            obj[...] = data
            finally:
                if kind == "arena":
                    if region.size:
                        lib.uc_mem_write(self._h, region.start, bytes(region.size), region.size)
                    self._arena_top = min(self._arena_top, region.extra)
                else:
                    self._mem.drop(region)

    def share(self, array: Any) -> int:
        """See ``EmulatedMachine.share``."""
        cl: list[Any] = []
        ptr = array.__array_interface__["data"][0]
        n = int(array.nbytes)
        if not (n and array.flags.c_contiguous and ptr % PAGE == 0
                and (n % PAGE == 0 or _padded_end(array, ptr, n))):
            raise MemoryAccessError("share(): the array is not page-aligned host memory; create it "
                                    "with machine.empty() or pass it as a call argument instead")
        addr = self._map_array(array, cl)
        self._shared[addr] = (cl, array)
        return addr

    def share_pages(self, owner: Any, ptr: int, n: int, writable: bool) -> int:
        """See ``EmulatedMachine.share_pages``."""
        if not n or ptr % PAGE or n % PAGE:
            raise MemoryAccessError(f"share_pages(): [{ptr:#x}, +{n:#x}) is not whole host "
                                    f"pages")
        perms = C.UC_PROT_READ | (C.UC_PROT_WRITE if writable else 0)
        region = self._zero_copy(ptr, n, False, False, perms)
        cl = [(region, owner, (region.start, ptr, 0, n, 0), writable)]
        self._shared[region.start] = (cl, owner)
        return region.start

    def unshare(self, addr: int) -> None:
        entry = self._shared.pop(addr, None)
        if entry is None:
            raise MemoryAccessError(f"unshare({addr:#x}): not an address returned by share()")
        self.release(entry[0])


# id(mmap) -> (weakref to the mmap, host address, bytes of array data) for page_aligned_empty()
_BLOCKS: dict[int, tuple[Any, int, int]] = {}


def page_aligned_empty(shape: Any, dtype: Any = "float32") -> Any:
    """A zero-filled numpy array whose memory is page-aligned mmap'd host memory,
    so emulated calls map it without copying."""
    import mmap

    import numpy as np
    try:
        dt = np.dtype(dtype)
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        if any(isinstance(d, bool) or int(d) != d or d < 0 for d in dims):
            raise ValueError("dimensions must be integers >= 0")
        count = 1
        for d in dims:
            count *= int(d)
    except (TypeError, ValueError) as e:
        raise SignatureError(f"empty(): bad shape {shape!r} or dtype {dtype!r}: {e}") from None
    size = round_up(max(count * dt.itemsize, 1))
    try:
        mm = mmap.mmap(-1, size)
    except (OSError, OverflowError, MemoryError) as e:
        raise MemoryAccessError(f"empty(): cannot allocate {size} bytes of host memory for "
                                f"a {shape} {dt} array: {e}") from None
    c = ctypes.c_char.from_buffer(mm)
    addr = ctypes.addressof(c)
    del c
    key = id(mm)

    def forget(_r: Any, k: int = key) -> None:
        _BLOCKS.pop(k, None)
    _BLOCKS[key] = (weakref.ref(mm, forget), addr, count * dt.itemsize)
    return np.frombuffer(mm, dtype=dt, count=count).reshape(shape)


def _padded_end(arr: Any, ptr: int, n: int) -> bool:
    """Whether [ptr, ptr+n) ends where the data of its ``page_aligned_empty``
    block ends, so the rest of that page is the block's own zero padding
    (which no other array can use) and may be mapped with it."""
    if (ptr + n) % PAGE == 0 or not _BLOCKS:
        return False
    import mmap
    base = arr
    for _ in range(64):
        if isinstance(base, memoryview):
            base = base.obj
        elif isinstance(base, mmap.mmap):
            break
        else:
            nxt = getattr(base, "base", None)
            if nxt is None:
                return False
            base = nxt
    else:
        return False
    if not isinstance(base, mmap.mmap):
        return False
    entry = _BLOCKS.get(id(base))
    if entry is None or entry[0]() is not base:
        return False
    _ref, start, data = entry
    return ptr + n == start + data and ptr >= start
