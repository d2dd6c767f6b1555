"""``hal.buffer``: flat bytes of host memory (a ``memoryview`` of format ``B``
whose address is known; read-only for module data under
``--module_mode=mmap``), and the allocation rules of vmrt's CPU
device (64-byte aligned, bounded size).  numpy is not needed to allocate,
fill, copy or address a buffer; :func:`aligned_bytes` / :func:`aligned_array`
give numpy views for the code that computes on them."""
from __future__ import annotations

import threading

from ..errors import HalError, StatusCode
from ..vm.types import RefObject, RefType

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: the ``hal.buffer`` ref type (``vmrt.BUFFER_TYPE`` is the VM's ``vm.buffer``)
HAL_BUFFER_TYPE = RefType("hal.buffer")

#: base alignment of every buffer the device allocates (IREE's heap buffers use 64)
BUFFER_ALIGNMENT = 64
#: largest single allocation (bytes)
MAX_ALLOCATION = 1 << 30
#: IREE_HAL_WHOLE_BUFFER
WHOLE_BUFFER = -1
#: allocations from this size on are anonymous mappings (page aligned, zeroed
#: lazily); smaller ones come from the heap, whose freed memory the next call's
#: buffers reuse (a fresh mapping per call costs a page fault per 4 KiB touched:
#: ~1.4 ms of a 512x512 matmul's 7 ms; glibc itself maps from 32 MiB on)
_MAPPED = 32 << 20


def address_of(data: memoryview) -> int:
    """The host address of a contiguous memoryview's first byte (-1 when it
    is empty; numpy finds it when the memory is read-only)."""
    if not data.nbytes:
        return -1
    if _char_from_buffer is None:
        _bind_ctypes()
    try:
        return _addressof(_char_from_buffer(data))
    except TypeError:           # read-only memory
        import numpy as np
        return int(np.frombuffer(data, np.uint8).ctypes.data)


#: ``ctypes.c_char.from_buffer`` and ``ctypes.addressof``, bound at the first
#: :func:`address_of` (ctypes is not imported at start-up; an import
#: statement per call costs a third of the lookup)
_char_from_buffer: Any = None
_addressof: Any = None


def _bind_ctypes() -> None:
    global _char_from_buffer, _addressof
    import ctypes
    _addressof = ctypes.addressof
    _char_from_buffer = ctypes.c_char.from_buffer


def byte_view(data: Any) -> memoryview:
    """``data`` (bytes-like: a memoryview, bytearray, numpy array ...) as a flat
    memoryview of format ``B`` over the same memory (no copy)."""
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format != "B" or view.ndim != 1:
        if not view.c_contiguous:
            raise HalError("host memory for a buffer must be contiguous",
                           StatusCode.INVALID_ARGUMENT)
        view = view.cast("B")
    return view


def aligned_memory(size: int, what: str = "allocation") -> tuple[memoryview, int]:
    """A zeroed writable memoryview of ``size`` bytes at a 64-byte aligned
    address, and that address."""
    if 0 <= size <= _SMALL:
        return _small(size)
    if _SMALL < size <= _MEDIUM:
        return _carve(_medium_slabs.__dict__, size, _MEDIUM_SLAB)
    if size < 0:
        raise HalError(f"{what}: negative size {size}", StatusCode.INVALID_ARGUMENT)
    if size > MAX_ALLOCATION:
        raise HalError(f"{what} of {size} bytes exceeds vmrt's limit of {MAX_ALLOCATION} bytes",
                      StatusCode.RESOURCE_EXHAUSTED)
    try:
        if size >= _MAPPED:
            import mmap
            view = memoryview(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
            return view, address_of(view)
        view = memoryview(bytearray(size + BUFFER_ALIGNMENT))
    except (MemoryError, OSError):
        raise HalError(f"{what} of {size} bytes: out of host memory",
                       StatusCode.RESOURCE_EXHAUSTED) from None
    addr = address_of(view)
    skip = (-addr) % BUFFER_ALIGNMENT
    return view[skip:skip + size], addr + skip


def aligned_bytes(size: int, what: str = "allocation") -> Any:
    """A zeroed numpy uint8 array of ``size`` bytes at a 64-byte aligned address."""
    return aligned_array(size, what)[0]


def aligned_array(size: int, what: str) -> tuple[Any, int]:
    """``aligned_bytes(size)`` and its address."""
    import numpy as np
    view, addr = aligned_memory(size, what)
    return np.frombuffer(view, np.uint8), addr


#: allocations up to this size are carved from zeroed slabs (one address
#: lookup per slab, not per buffer); a slab lives while any of its buffers
#: does.  Each buffer is its own memoryview of its bytes
_SMALL = 1024
_SLAB = 16384
_slabs = threading.local()


#: allocations above ``_SMALL`` up to this size (arguments, mid-size
#: transients) are carved the same way from larger slabs: a slab's address
#: lookup costs more than a copy of a few KiB (a live buffer keeps at most
#: 32x its size alive, as a small one keeps 16 KiB)
_MEDIUM = 4096
_MEDIUM_SLAB = 32768
_medium_slabs = threading.local()


def _small(size: int) -> tuple[memoryview, int]:
    return _carve(_slabs.__dict__, size, _SLAB)


def _carve(st: dict[str, Any], size: int, slab_size: int) -> tuple[memoryview, int]:
    """``size`` bytes of the current slab of this thread's ``st`` (a new
    zeroed slab of ``slab_size`` bytes when it has no room left)."""
    # -1 until this thread's first slab: a first allocation of 0 bytes
    # (an empty tensor) must make the slab too
    off = st.get("off", -1)
    if off < 0 or off + size > slab_size:
        slab = memoryview(bytearray(slab_size + BUFFER_ALIGNMENT))
        base = address_of(slab)
        skip = (-base) % BUFFER_ALIGNMENT
        st["slab"], st["addr"], off = slab[skip:skip + slab_size], base + skip, 0
    st["off"] = off + (-(-size // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT or BUFFER_ALIGNMENT)
    return st["slab"][off:off + size], st["addr"] + off


class HostBytes:
    """A contiguous range of host bytes and its address: what
    :meth:`vmrt.Executable.dispatch` takes as a binding besides a numpy array
    (a command buffer's bindings, without numpy)."""

    __slots__ = ("view", "address", "nbytes", "writeable", "base")

    def __init__(self, view: memoryview, address: int, base: Any = None):
        self.view = view
        self.address = address
        self.nbytes = len(view)
        self.writeable = not view.readonly
        #: the memory it is part of (like a numpy view's ``base``: ranges of
        #: one buffer are staged together into an emulated dispatch)
        self.base = base

    def __repr__(self) -> str:
        return f"<HostBytes {self.nbytes} bytes at {self.address:#x}>"


def new_buffer(size: int, what: str = "allocation") -> HalBuffer:
    """A zeroed writable buffer of ``size`` bytes at a 64-byte aligned
    address (the allocation of ``hal.device.queue.alloca`` and of every
    transient buffer)."""
    if 0 <= size <= _SMALL:
        st = _slabs.__dict__
        off = st.get("off", _SLAB)
        # (_small's rounding: whole 64-byte blocks, at least one)
        end = off + ((size + 63) & -64 or 64)
        if end <= _SLAB:                # the common case of _small and buffer_at, in this frame
            st["off"] = end
            buf = _new_object(HalBuffer)
            buf.bytes = st["slab"][off:off + size]
            buf.address = st["addr"] + off
            buf.read_only = False
            return buf
        data, addr = _small(size)
    else:
        data, addr = aligned_memory(size, what)
    return buffer_at(data, addr)


def buffer_at(data: Any, address: int | None) -> HalBuffer:
    """``HalBuffer(data, address=address)`` (a writable-or-not buffer over
    ``data``, a flat byte memoryview or bytes-like; ``address`` None: looked
    up), made without the class call's keyword arguments and ``__init__``
    frame: 0.17 instead of 0.32 us, for the buffers the hot paths make (one
    per dispatch of a compiled program, through queue.alloca)."""
    if data.__class__ is not memoryview:
        data = byte_view(data)
    buf = _new_object(HalBuffer)
    buf.bytes = data
    buf.address = address if address is not None else address_of(data)
    buf.read_only = False
    return buf


def buffer_range(buf: HalBuffer, offset: int, length: int, what: str) -> memoryview:
    """``buf.bytes[offset:offset+length]`` (``length`` -1 = to the end), checked."""
    size = len(buf.bytes)
    if length == WHOLE_BUFFER:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise HalError(f"{what}: range [{offset}, {offset + length}) is out of bounds of a "
                      f"{size}-byte buffer", StatusCode.OUT_OF_RANGE)
    return buf.bytes[offset:offset + length]


#: ``object.__new__``: an instance without its ``__init__`` (fast constructors)
_new_object = object.__new__


class HalBuffer(RefObject):
    """``hal.buffer``: a flat byte view (a memoryview of format ``B``) of host memory."""

    __slots__ = ("bytes", "read_only", "address", "__weakref__")
    vm_type = HAL_BUFFER_TYPE

    def __init__(self, data: Any, read_only: bool = False, address: int | None = None):
        if data.__class__ is not memoryview:
            data = byte_view(data)
        #: the host address of the bytes (-1 when empty and unknown);
        #: ``address`` is the caller's word for it when it knows it
        self.address: int = address if address is not None else address_of(data)
        if read_only and not data.readonly:
            # every view of it is read-only: transfers refuse to write it, a
            # dispatch gets it as a read-only binding (an emulated store into
            # it is refused, nothing is read back) and numpy views are read-only
            data = data.toreadonly()
        self.bytes: memoryview = data
        #: nothing may write it: module data imported from a read-only
        #: mapping (``--module_mode=mmap``); ``bytes`` is then read-only too
        self.read_only = read_only

    def __len__(self) -> int:
        return len(self.bytes)

    def writable(self, what: str) -> memoryview:
        """The bytes, for a write that ``what`` names; PERMISSION_DENIED with
        IREE's text when the buffer only allows reads (module data from a
        read-only mapping, or read-only memory)."""
        if self.read_only or self.bytes.readonly:
            raise HalError("buffer does not support the requested access type; buffer allows "
                           f"READ, operation requires READ|WRITE; {what}",
                           StatusCode.PERMISSION_DENIED)
        return self.bytes

    def as_array(self) -> Any:
        """The bytes as a numpy uint8 array (zero-copy; imports numpy)."""
        import numpy as np
        return np.frombuffer(self.bytes, np.uint8)

    def check_range(self, offset: int, length: int) -> None:
        size = len(self.bytes)
        if offset < 0 or length < 0 or offset + length > size:
            raise HalError(f"out-of-bounds access detected (offset={offset}, length={length}, "
                          f"buffer length={size})", StatusCode.OUT_OF_RANGE)
