"""Host buffers passed to guest code (a mixin of ``EmulatedMachine``).

numpy arrays and bytearrays given as ``ptr`` arguments are mapped zero-copy
(``uc_mem_map_ptr``) when their memory is page-aligned in whole pages, else
copied into a small argument arena (writable, up to 64 KiB) or a mapping of
their own, and copied back after the call.  Zero-copy mappings are closed
(no access) between calls and reopened when the same array comes back;
``share()`` keeps one mapped across calls.
"""
from __future__ import annotations

import ctypes
import weakref
from typing import TYPE_CHECKING, Any

from ...errors import MemoryAccessError, SignatureError
from . import _uc
from ._layout import PAGE, round_up
from ._memory import Region

if TYPE_CHECKING:
    from ._state import MachineState
else:
    MachineState = object

C = _uc.C
lib = _uc.lib

_ARENA_SIZE = 1 << 20          # argument arena for small copied buffers
_ARENA_MAX = 64 << 10          # larger copied buffers get their own mapping
_ZC_CACHE = 16                 # zero-copy mappings kept (closed) between calls


class ArgumentMemory(MachineState):
    """Mapping and copying of buffer arguments; uses the machine's ``_uc``,
    address space and arena set up by ``EmulatedMachine.__init__``."""

    @property
    def cached_mappings(self) -> int:
        """How many zero-copy mappings of host arrays are kept between calls
        (at most 16; reused when the same array is passed again)."""
        return len(self._zc)

    def _ptr_arg(self, obj: Any, cleanup: list) -> int:
        if obj is None:
            return 0
        if hasattr(obj, "__index__") and not hasattr(obj, "__array_interface__"):
            return int(obj.__index__()) & ((1 << self.arch.bits) - 1)
        if hasattr(obj, "__array_interface__") and type(obj).__module__.startswith("numpy"):
            if getattr(obj, "ndim", 1) == 0 and obj.dtype.kind in "iu":
                return int(obj) & ((1 << self.arch.bits) - 1)
            return self._map_array(obj, cleanup)
        try:
            mv = memoryview(obj)
        except TypeError:
            raise SignatureError(f"cannot pass a {type(obj).__name__} as a pointer: use an int "
                                 f"address, None, a numpy array or a bytes-like object") from None
        return self._map_buffer(mv, cleanup)

    def _map_array(self, arr: Any, cleanup: list) -> int:
        import numpy as np
        n = int(arr.nbytes)
        writable = bool(arr.flags.writeable)
        perms = C.UC_PROT_READ | (C.UC_PROT_WRITE if writable else 0)
        contiguous = arr.flags.c_contiguous or arr.flags.f_contiguous
        if contiguous and n:
            ptr = arr.__array_interface__["data"][0]
            span = _host_span(arr, ptr, n)
            if span is not None:
                region = self._zero_copy(span[0], span[1], perms)
                cleanup.append((region, None, None, False))
                return region.start + (ptr - span[0])
        data = arr if contiguous else np.ascontiguousarray(arr)
        if n <= _ARENA_MAX and writable:
            region = self._arena_take(n)
        else:
            region = self._new_region(max(n, 1), PAGE, "buffer", "(copied numpy)", perms=perms)
        if n:
            src = data.__array_interface__["data"][0]
            lib.uc_mem_write(self._h, region.start,
                             ctypes.cast(src, ctypes.POINTER(ctypes.c_char)), n)
        cleanup.append((region, arr, data, writable))
        return region.start

    # Zero-copy mappings (uc_mem_map_ptr) are kept after the call with no
    # access rights (PROT_NONE) and re-opened when the same host range is
    # passed again: unmapping costs a TLB flush per page (~0.35 ms per 4 MiB
    # on arm/aarch64), changing protections does not.  While closed the guest
    # cannot touch the range; when opened again it is backed by whatever the
    # caller passes at that host address, which it keeps alive for the call.
    def _zero_copy(self, host_start: int, host_size: int, perms: int) -> Region:
        self._check_open()
        key = (host_start, host_size)
        region = self._zc.get(key)
        if region is not None:
            self._zc.move_to_end(key)
            uses, cur = region.extra
            want = perms | (cur if uses else 0)
            if want != cur:
                lib.uc_mem_protect(self._h, region.start, host_size, want)
            region.extra = (uses + 1, want)
            return region
        self._zc_evict(len(self._zc) >= _ZC_CACHE)
        addr = self._space.find(host_size, PAGE)
        try:
            region = self._space.add(Region(addr, host_size, "zerocopy", "(numpy, zero-copy)",
                                            mapped=host_size, map_start=addr, extra=(1, perms)))
        except MemoryAccessError:
            self._zc_evict(True, all_idle=True)
            region = self._space.add(Region(addr, host_size, "zerocopy", "(numpy, zero-copy)",
                                            mapped=host_size, map_start=addr, extra=(1, perms)))
        err = lib.uc_mem_map_ptr(self._h, addr, host_size, perms, ctypes.c_void_p(host_start))
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
                self._space.remove(r.start)
                lib.uc_mem_unmap(self._h, r.map_start, r.mapped)
                if not all_idle and len(self._zc) < _ZC_CACHE:
                    return

    # Small copied arguments go to one argument arena (mapped once, zeroed
    # after each call) instead of a fresh mapping per argument: mapping and
    # unmapping cost ~10 us each.  The arena holds no host data between calls.
    def _arena_take(self, n: int) -> Region:
        arena = self._arena
        if arena is None:
            arena = self._arena = self._new_region(_ARENA_SIZE, PAGE, "buffer", "(argument arena)")
            self._arena_top = 0
        start = (self._arena_top + 63) & -64
        if start + n > arena.size:
            return self._new_region(max(n, 1), PAGE, "buffer", "(copied argument)")
        self._arena_top = start + max(n, 1)
        return Region(arena.start + start, n, "arena", mapped=n, map_start=arena.start + start,
                      extra=start)

    def _map_buffer(self, mv: memoryview, cleanup: list) -> int:
        mv = mv.cast("B") if mv.c_contiguous else memoryview(mv.tobytes())
        n = mv.nbytes
        writable = not mv.readonly
        perms = C.UC_PROT_READ | (C.UC_PROT_WRITE if writable else 0)
        if n <= _ARENA_MAX and writable:
            region = self._arena_take(n)
        else:
            region = self._new_region(max(n, 1), PAGE, "buffer", "(copied buffer)", perms=perms)
        if n:
            self._write_raw(region.start, mv)
        cleanup.append((region, mv, None, writable))
        return region.start

    def _release_args(self, cleanup: list) -> None:
        for region, obj, data, writable in cleanup:
            try:
                if writable and obj is not None and not self._closed:
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
                if self._closed:
                    pass
                elif region.kind == "zerocopy":
                    uses, cur = region.extra
                    if uses <= 1:
                        lib.uc_mem_protect(self._h, region.start, region.size, 0)
                        region.extra = (0, 0)
                    else:
                        region.extra = (uses - 1, cur)
                elif region.kind == "arena":
                    if region.size:
                        lib.uc_mem_write(self._h, region.start, bytes(region.size), region.size)
                    self._arena_top = min(self._arena_top, region.extra)
                else:
                    self._space.remove(region.start)
                    lib.uc_mem_unmap(self._h, region.map_start, region.mapped)

    def share(self, array: Any) -> int:
        """Map a numpy array into the guest until ``unshare``; zero-copy when
        it is page-aligned (e.g. from ``empty()``), otherwise refused."""
        cl: list = []
        ptr = array.__array_interface__["data"][0]
        if _host_span(array, ptr, int(array.nbytes)) is None:
            raise MemoryAccessError("share(): the array is not page-aligned host memory; create it "
                                    "with machine.empty() or pass it as a call argument instead")
        addr = self._map_array(array, cl)
        self._shared[addr] = (cl, array)
        return addr

    def unshare(self, addr: int) -> None:
        entry = self._shared.pop(addr, None)
        if entry is None:
            raise MemoryAccessError(f"unshare({addr:#x}): not an address returned by share()")
        self._release_args(entry[0])

    @staticmethod
    def empty(shape: Any, dtype: Any = "float32") -> Any:
        """A numpy array in page-aligned host memory: passed to guest code
        without copying (``mem_map_ptr``)."""
        return page_aligned_empty(shape, dtype)


# id(mmap) -> (weakref to the mmap, host address, size) for page_aligned_empty()
_BLOCKS: dict[int, tuple[Any, int, int]] = {}


def page_aligned_empty(shape: Any, dtype: Any = "float32") -> Any:
    """A zero-filled numpy array whose memory is page-aligned mmap'd host memory,
    so emulated calls map it without copying."""
    import mmap

    import numpy as np
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    size = round_up(max(count * dt.itemsize, 1))
    mm = mmap.mmap(-1, size)
    c = ctypes.c_char.from_buffer(mm)
    addr = ctypes.addressof(c)
    del c
    key = id(mm)

    def forget(_r: Any, k: int = key) -> None:
        _BLOCKS.pop(k, None)
    _BLOCKS[key] = (weakref.ref(mm, forget), addr, size)
    return np.frombuffer(mm, dtype=dt, count=count).reshape(shape)


def _host_span(arr: Any, ptr: int, n: int) -> tuple[int, int] | None:
    """(start, size) of page-aligned host memory covering [ptr, ptr+n) that may
    be mapped into the guest as is, or None."""
    if n <= 0:
        return None
    if ptr % PAGE == 0 and n % PAGE == 0:
        return ptr, n
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
                return None
            base = nxt
    else:
        return None
    if not isinstance(base, mmap.mmap):
        return None
    entry = _BLOCKS.get(id(base))
    if entry is None or entry[0]() is not base:
        return None
    _ref, start, size = entry
    lo = ptr & -PAGE
    hi = round_up(ptr + n)
    if lo < start or hi > start + size:
        return None
    return lo, hi - lo
