"""The local CPU device (IREE's ``local-sync`` and ``local-task`` drivers):
device queries and executable loading through one :class:`ExecutableLoader`.
Queue operations run synchronously on the calling thread for both; under
``local-task`` the workgroups of a native dispatch are spread over
:func:`task_workers` host threads (each ctypes call releases the GIL)."""
from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence

from ...errors import HalError, StatusCode
from ...vm.types import RefObject
from ..objects import DEVICE_TYPE, Allocator, HalExecutable
from .loader import STATIC_FORMAT, ExecutableLoader, supports_format

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: drivers vmrt answers for (queues run synchronously for both)
DRIVERS = ("local-sync", "local-task")
#: most worker threads a local-task dispatch uses
MAX_TASK_WORKERS = 16


def task_workers() -> int:
    """Worker threads of a ``local-task`` dispatch: the CPUs this process may
    run on, at most :data:`MAX_TASK_WORKERS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_TASK_WORKERS))


class Device(RefObject):
    """One CPU device (``--device=local-sync`` or ``local-task``).

    Executables are loaded through one :class:`vmrt.hal.local.executable.ExecutableLoader`
    (created on first use from the ``--executable_plugin`` specs and the
    ``--static_library`` objects) and run natively when they are built for
    this host, emulated otherwise.  With static libraries the device also
    takes executables of format ``static``."""

    vm_type = DEVICE_TYPE

    def __init__(self, uri: str, plugin_specs: Sequence[str] = (), backend: str = "auto",
                 call_timeout: float | None = None, static_libraries: Sequence[Any] = (),
                 static_arches: Sequence[str] = ()):
        driver, sep, rest = uri.partition("://")
        driver = driver.strip() or "local-task"
        if driver not in DRIVERS:
            raise HalError(f"no HAL driver '{driver}' is available in vmrt (device URI "
                          f"'{uri}'); vmrt provides {', '.join(DRIVERS)}", StatusCode.NOT_FOUND)
        self.uri = uri
        self.identifier = driver
        #: host threads one dispatch's workgroups run on
        self.dispatch_threads = task_workers() if driver == "local-task" else 1
        self.plugin_specs = list(plugin_specs)
        #: ``--static_library`` objects (paths or bytes)
        self.static_libraries = list(static_libraries)
        #: the CPUs the program's static executables are for (empty: unknown)
        self.static_arches = list(static_arches)
        self.backend = backend
        #: bounds every emulated call (plugin set-up included): the context's timeout
        self.call_timeout = call_timeout
        self.allocator = Allocator(self)
        #: a vmrt.hal.statistics.DeviceStatistics when the context collects them
        self.statistics: Any = None
        self._loader: ExecutableLoader | None = None

    @property
    def loader(self) -> ExecutableLoader:
        if self._loader is None:
            self._loader = ExecutableLoader(self.plugin_specs, backend=self.backend,
                                            call_timeout=self.call_timeout,
                                            static_libraries=self.static_libraries,
                                            static_arches=self.static_arches)
        return self._loader

    def supports_format(self, fmt: str) -> bool:
        if fmt == STATIC_FORMAT:
            return bool(self.static_libraries)
        return supports_format(fmt)

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

    def load_executable(self, fmt: str, data: Any,
                        constants: Sequence[int] | None) -> HalExecutable:
        if not self.supports_format(fmt):
            raise HalError(f"no executable loader for format '{fmt}' (vmrt loads embedded-elf-"
                          "<arch>, embedded-fatelf, system-elf-<arch> and vmvx-bytecode-fb, and "
                          "static given --static_library)",
                          StatusCode.NOT_FOUND)
        return HalExecutable(self.loader.load(data, constants, executable_format=fmt), fmt)

    def close(self) -> None:
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def __repr__(self) -> str:
        return f"<hal.device {self.identifier}>"
