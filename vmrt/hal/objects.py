"""The objects behind the device ``hal`` module (:mod:`vmrt.modules.hal.device`):
devices, allocators, fences, files, executables and command buffers.

Everything runs synchronously on the calling thread, like IREE's
``local-sync`` driver: queue operations execute when they are issued and
signal their fences at once, so a fence is either signalled, failed, or
waiting for something that can never happen (awaiting it is an error, not a
hang).  Buffers are :class:`vmrt.hal.buffer.HalBuffer` objects over 64-byte aligned
numpy ``uint8`` arrays (the alignment compiled dispatch code assumes).
"""
from __future__ import annotations

import fnmatch
from typing import Any, Sequence

from ..errors import StatusCode, VmError
from ..modules.hal.inline import BUFFER_TYPE, HalBuffer
from .buffer_view import BUFFER_VIEW_TYPE
from ..vm.types import RefObject, RefType

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
ALL_TYPES = (ALLOCATOR_TYPE, BUFFER_TYPE, BUFFER_VIEW_TYPE, CHANNEL_TYPE, COMMAND_BUFFER_TYPE,
             DEVICE_TYPE, EVENT_TYPE, EXECUTABLE_TYPE, FENCE_TYPE, FILE_TYPE, SEMAPHORE_TYPE)

#: base alignment of every buffer the device allocates (IREE's heap buffers use 64)
BUFFER_ALIGNMENT = 64
#: largest single allocation (bytes)
MAX_ALLOCATION = 1 << 30
#: IREE_HAL_WHOLE_BUFFER
WHOLE_BUFFER = -1

#: drivers vmrt answers for; both run synchronously here
DRIVERS = ("local-sync", "local-task")


def aligned_bytes(size: int, what: str = "allocation") -> Any:
    """A zeroed numpy uint8 array of ``size`` bytes at a 64-byte aligned address."""
    import numpy as np
    if size < 0:
        raise VmError(f"{what}: negative size {size}", StatusCode.INVALID_ARGUMENT)
    if size > MAX_ALLOCATION:
        raise VmError(f"{what} of {size} bytes exceeds vmrt's limit of {MAX_ALLOCATION} bytes",
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
        raise VmError(f"{what}: range [{offset}, {offset + length}) is out of bounds of a "
                      f"{size}-byte buffer", StatusCode.OUT_OF_RANGE)
    return buf.bytes[offset:offset + length]


# ---------------------------------------------------------------------------
# fences
# ---------------------------------------------------------------------------

class Fence(RefObject):
    """``hal.fence``: signalled (status 0), failed (a status code) or pending (None)."""

    __slots__ = ("status",)
    vm_type = FENCE_TYPE

    def __init__(self, status: int | None = None):
        self.status = status

    def signal(self) -> None:
        if self.status is None:
            self.status = 0

    def fail(self, code: int) -> None:
        self.status = code or int(StatusCode.INTERNAL)

    def __repr__(self) -> str:
        return f"<hal.fence {'pending' if self.status is None else self.status}>"


def check_waits(fence: Fence | None, what: str) -> None:
    """A queue operation may start only when its wait fence is signalled; on a
    synchronous device a pending fence can never be signalled later."""
    if fence is None or fence.status == 0:
        return
    if fence.status is None:
        raise VmError(f"{what} waits on a fence that nothing will signal (vmrt's device is "
                      "synchronous; the operation would never start)",
                      StatusCode.DEADLINE_EXCEEDED)
    raise VmError(f"{what} waits on a failed fence (status {fence.status})",
                  StatusCode.from_int(fence.status))


# ---------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------

class Allocator(RefObject):
    __slots__ = ("device",)
    vm_type = ALLOCATOR_TYPE

    def __init__(self, device: "Device"):
        self.device = device


class HalFile(RefObject):
    """``hal.file`` over host memory (``hal.ex.file.from_memory``)."""

    __slots__ = ("data",)
    vm_type = FILE_TYPE

    def __init__(self, data: Any):
        self.data = data        # numpy uint8 array


class HalExecutable(RefObject):
    """``hal.executable``: a loaded :class:`vmrt.Executable` and its format."""

    __slots__ = ("exe", "format")
    vm_type = EXECUTABLE_TYPE

    def __init__(self, exe: Any, fmt: str):
        self.exe = exe
        self.format = fmt


class Device(RefObject):
    """One synchronous CPU device (``--device=local-sync`` or ``local-task``).

    Executables are loaded through one :class:`vmrt.hal.local.executable.ExecutableLoader`
    (created on first use from the ``--executable_plugin`` specs) and run
    natively when they are built for this host, emulated otherwise."""

    vm_type = DEVICE_TYPE

    def __init__(self, uri: str, plugin_specs: Sequence[str] = (), backend: str = "auto"):
        driver, sep, rest = uri.partition("://")
        driver = driver.strip() or "local-task"
        if driver not in DRIVERS:
            raise VmError(f"no HAL driver '{driver}' is available in vmrt (device URI "
                          f"'{uri}'); vmrt provides {', '.join(DRIVERS)}", StatusCode.NOT_FOUND)
        self.uri = uri
        self.identifier = driver
        self.plugin_specs = list(plugin_specs)
        self.backend = backend
        self.allocator = Allocator(self)
        self._loader: Any = None

    @property
    def loader(self) -> Any:
        if self._loader is None:
            from .local.executable import ExecutableLoader
            self._loader = ExecutableLoader(self.plugin_specs, backend=self.backend)
        return self._loader

    def supports_format(self, fmt: str) -> bool:
        from .local.executable import _FORMAT_SUFFIX, ExecutableLoader
        if fmt.startswith("embedded-elf-"):
            return fmt[len("embedded-elf-"):] in _FORMAT_SUFFIX.values()
        return fmt == "embedded-fatelf" or (
            fmt.startswith(ExecutableLoader.FORMATS) and fmt.startswith("system-elf-")
            and fmt[len("system-elf-"):] in _FORMAT_SUFFIX.values())

    def query_i64(self, category: str, key: str) -> int | None:
        """What local-sync answers, or None for an unknown key (the import
        then returns ok=0)."""
        if category == "hal.device.id":
            return 1 if fnmatch.fnmatchcase(self.identifier, key) else 0
        if category == "hal.executable.format":
            return 1 if self.supports_format(key) else 0
        if category in ("hal.device", "hal.dispatch") and key == "concurrency":
            return 1
        return None

    def load_executable(self, fmt: str, data: Any, constants: Sequence[int] | None) -> HalExecutable:
        if not self.supports_format(fmt):
            raise VmError(f"no executable loader for format '{fmt}' (vmrt loads embedded-elf-"
                          "<arch> and embedded-fatelf)", StatusCode.NOT_FOUND)
        return HalExecutable(self.loader.load(data, constants), fmt)

    def close(self) -> None:
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def __repr__(self) -> str:
        return f"<hal.device {self.identifier}>"
