"""``hal.buffer``: flat bytes of host memory (a numpy ``uint8`` array), and
the allocation rules of vmrt's CPU device (64-byte aligned, bounded size)."""
from __future__ import annotations

import threading
from functools import partial

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

def aligned_bytes(size: int, what: str = "allocation") -> Any:
    """A zeroed numpy uint8 array of ``size`` bytes at a 64-byte aligned address."""
    return aligned_array(size, what)[0]


def aligned_array(size: int, what: str) -> tuple[Any, int]:
    """``aligned_bytes(size)`` and its address."""
    if 0 <= size <= _SMALL:
        return _small(size)
    import numpy as np
    if size < 0:
        raise HalError(f"{what}: negative size {size}", StatusCode.INVALID_ARGUMENT)
    if size > MAX_ALLOCATION:
        raise HalError(f"{what} of {size} bytes exceeds vmrt's limit of {MAX_ALLOCATION} bytes",
                      StatusCode.RESOURCE_EXHAUSTED)
    raw = np.zeros(size + BUFFER_ALIGNMENT, np.uint8)
    addr = int(raw.ctypes.data)
    skip = (-addr) % BUFFER_ALIGNMENT
    return raw[skip:skip + size], addr + skip


#: allocations up to this size are carved from zeroed slabs (one address
#: lookup per slab, not per buffer); a slab lives while any of its buffers
#: does.  Each buffer is its own array over a memoryview of its bytes, so no
#: two buffers look like views of one allocation (vmrt.hal.local.bindings)
_SMALL = 1024
_SLAB = 16384
_slabs = threading.local()


def _small(size: int) -> tuple[Any, int]:
    st = _slabs.__dict__
    off = st.get("off", _SLAB)
    if off + size > _SLAB:
        import numpy as np
        slab = np.zeros(_SLAB + BUFFER_ALIGNMENT, np.uint8)
        base = int(slab.ctypes.data)
        skip = (-base) % BUFFER_ALIGNMENT
        view: Any = slab[skip:skip + _SLAB]
        st["slab"], st["addr"], off = memoryview(view), base + skip, 0
        st["new"] = partial(np.frombuffer, st["slab"], np.uint8)
    st["off"] = off + (-(-size // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT or BUFFER_ALIGNMENT)
    return st["new"](size, off), st["addr"] + off


def new_buffer(size: int, what: str = "allocation") -> HalBuffer:
    data, addr = _small(size) if 0 <= size <= _SMALL else aligned_array(size, what)
    return HalBuffer(data, address=addr)


def buffer_range(buf: HalBuffer, offset: int, length: int, what: str) -> Any:
    """``buf.bytes[offset:offset+length]`` (``length`` -1 = to the end), checked."""
    size = int(buf.bytes.size)
    if length == WHOLE_BUFFER:
        length = size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise HalError(f"{what}: range [{offset}, {offset + length}) is out of bounds of a "
                      f"{size}-byte buffer", StatusCode.OUT_OF_RANGE)
    return buf.bytes[offset:offset + length]


class HalBuffer(RefObject):
    """``hal.buffer``: a flat byte view (numpy uint8) of host memory."""

    __slots__ = ("bytes", "read_only", "address", "__weakref__")
    vm_type = HAL_BUFFER_TYPE

    def __init__(self, data: Any, read_only: bool = False, address: int | None = None):
        self.bytes = data
        #: transfers (fill, update, copy) may not write it: module data
        #: imported from a read-only mapping (``--module_mode=mmap``)
        self.read_only = read_only
        #: the host address of the bytes (-1 when they are not contiguous);
        #: ``address`` is the caller's word for it when it knows it
        self.address: int = address if address is not None else (
            int(data.ctypes.data) if data.flags.c_contiguous else -1)

    def __len__(self) -> int:
        return int(self.bytes.size)

    def writable(self, what: str) -> Any:
        """The bytes, for a write that ``what`` names; PERMISSION_DENIED with
        IREE's text when the buffer only allows reads (module data from a
        read-only mapping, or read-only memory)."""
        if self.read_only or not self.bytes.flags.writeable:
            raise HalError("buffer does not support the requested access type; buffer allows "
                           f"READ, operation requires READ|WRITE; {what}",
                           StatusCode.PERMISSION_DENIED)
        return self.bytes

    def check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.bytes.size:
            raise HalError(f"out-of-bounds access detected (offset={offset}, length={length}, "
                          f"buffer length={self.bytes.size})", StatusCode.OUT_OF_RANGE)
