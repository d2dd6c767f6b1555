"""The objects behind the device ``hal`` module (:mod:`vmrt.modules.hal.module`):
devices, allocators, fences, files, executables and command buffers.

Everything runs synchronously on the calling thread, like IREE's
``local-sync`` driver: queue operations execute when they are issued and
signal their fences at once, so a fence is either signalled, failed, or
waiting for something that can never happen (awaiting it is an error, not a
hang).  Buffers are :class:`vmrt.hal.buffer.HalBuffer` objects over 64-byte aligned
host memory (the alignment compiled dispatch code assumes).
"""
from __future__ import annotations

from ..errors import HalError, StatusCode
from ..vm.types import RefObject, RefType
from .buffer import HAL_BUFFER_TYPE
from .buffer_view import BUFFER_VIEW_TYPE

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

ALLOCATOR_TYPE = RefType("hal.allocator")
CHANNEL_TYPE = RefType("hal.channel")
COMMAND_BUFFER_TYPE = RefType("hal.command_buffer")
DEVICE_TYPE = RefType("hal.device")
EVENT_TYPE = RefType("hal.event")
EXECUTABLE_TYPE = RefType("hal.executable")
FENCE_TYPE = RefType("hal.fence")
FILE_TYPE = RefType("hal.file")
SEMAPHORE_TYPE = RefType("hal.semaphore")

#: every ``hal`` ref type, registered before a bytecode module is loaded
ALL_TYPES = (ALLOCATOR_TYPE, HAL_BUFFER_TYPE, BUFFER_VIEW_TYPE, CHANNEL_TYPE, COMMAND_BUFFER_TYPE,
             DEVICE_TYPE, EVENT_TYPE, EXECUTABLE_TYPE, FENCE_TYPE, FILE_TYPE, SEMAPHORE_TYPE)

#: the public names of the ``hal`` ref types (``vmrt.HAL_BUFFER_VIEW_TYPE``, ...), for
#: ``@vmrt.export(..., arg_types=...)`` and ``vmrt.Instance.register_type``
#: (``HAL_BUFFER_TYPE`` is defined in :mod:`vmrt.hal.buffer`)
HAL_ALLOCATOR_TYPE = ALLOCATOR_TYPE
HAL_BUFFER_VIEW_TYPE = BUFFER_VIEW_TYPE
HAL_CHANNEL_TYPE = CHANNEL_TYPE
HAL_COMMAND_BUFFER_TYPE = COMMAND_BUFFER_TYPE
HAL_DEVICE_TYPE = DEVICE_TYPE
HAL_EVENT_TYPE = EVENT_TYPE
HAL_EXECUTABLE_TYPE = EXECUTABLE_TYPE
HAL_FENCE_TYPE = FENCE_TYPE
HAL_FILE_TYPE = FILE_TYPE
HAL_SEMAPHORE_TYPE = SEMAPHORE_TYPE

# ---------------------------------------------------------------------------
# fences
# ---------------------------------------------------------------------------

class Fence(RefObject):
    """``hal.fence`` (``vmrt.Fence``): signalled (status 0), failed (a status
    code) or pending (None).  A program compiled with
    ``--iree-execution-model=async-external`` takes a wait fence (None or a
    signalled one: vmrt's devices are synchronous) and a signal fence after
    its arguments; :meth:`wait` checks the signal fence after the call."""

    __slots__ = ("status",)
    vm_type = FENCE_TYPE

    def __init__(self, status: int | None = None):
        self.status = status

    @property
    def signaled(self) -> bool:
        return self.status == 0

    def signal(self) -> None:
        if self.status is None:
            self.status = 0

    def fail(self, code: int) -> None:
        self.status = code or int(StatusCode.INTERNAL)

    def wait(self, what: str = "fence") -> None:
        """Returns when the fence is signalled; raises when it failed, or
        when it is pending (on a synchronous device nothing can signal it
        later: waiting would never end)."""
        if self.status == 0:
            return
        if self.status is None:
            raise HalError(f"{what} is not signalled and nothing will signal it (vmrt's devices "
                           "are synchronous)", StatusCode.DEADLINE_EXCEEDED)
        code = StatusCode.from_int(self.status)
        raise HalError(f"{what} failed ({code.name})", code)

    def __repr__(self) -> str:
        return f"<hal.fence {'pending' if self.status is None else self.status}>"


def check_waits(fence: Fence | None, what: str) -> None:
    """A queue operation may start only when its wait fence is signalled; on a
    synchronous device a pending fence can never be signalled later."""
    if fence is None or fence.status == 0:
        return
    if fence.status is None:
        raise HalError(f"{what} waits on a fence that nothing will signal (vmrt's device is "
                      "synchronous; the operation would never start)",
                      StatusCode.DEADLINE_EXCEEDED)
    raise HalError(f"{what} waits on a failed fence (status {fence.status})",
                  StatusCode.from_int(fence.status))


class Allocator(RefObject):
    __slots__ = ("device",)
    vm_type = ALLOCATOR_TYPE

    def __init__(self, device: Any):
        self.device = device


class HalFile(RefObject):
    """``hal.file`` over host memory (``hal.ex.file.from_memory``)."""

    __slots__ = ("data",)
    vm_type = FILE_TYPE

    def __init__(self, data: Any):
        self.data = data        # a byte memoryview


class HalExecutable(RefObject):
    """``hal.executable``: a loaded :class:`vmrt.Executable` and its format."""

    __slots__ = ("exe", "format")
    vm_type = EXECUTABLE_TYPE

    def __init__(self, exe: Any, fmt: str):
        self.exe = exe
        self.format = fmt
