"""``hal.buffer``: flat bytes of host memory (a numpy ``uint8`` array), and
the allocation rules of vmrt's CPU device (64-byte aligned, bounded size)."""
from __future__ import annotations

from typing import Any

from ..errors import HalError, StatusCode
from ..vm.types import RefObject, RefType

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
    import numpy as np
    if size < 0:
        raise HalError(f"{what}: negative size {size}", StatusCode.INVALID_ARGUMENT)
    if size > MAX_ALLOCATION:
        raise HalError(f"{what} of {size} bytes exceeds vmrt's limit of {MAX_ALLOCATION} bytes",
                      StatusCode.RESOURCE_EXHAUSTED)
    raw = np.zeros(size + BUFFER_ALIGNMENT, np.uint8)
    skip = (-raw.ctypes.data) % BUFFER_ALIGNMENT
    return raw[skip:skip + size]


def new_buffer(size: int, what: str = "allocation") -> HalBuffer:
    return HalBuffer(aligned_bytes(size, what))


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

    __slots__ = ("bytes", "read_only")
    vm_type = HAL_BUFFER_TYPE

    def __init__(self, data: Any, read_only: bool = False):
        self.bytes = data
        #: transfers (fill, update, copy) may not write it: module data
        #: imported from a read-only mapping (``--module_mode=mmap``)
        self.read_only = read_only

    def __len__(self) -> int:
        return int(self.bytes.size)

    def check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.bytes.size:
            raise HalError(f"out-of-bounds access detected (offset={offset}, length={length}, "
                          f"buffer length={self.bytes.size})", StatusCode.OUT_OF_RANGE)
