"""The local CPU device (IREE's ``local-sync`` driver; ``local-task`` runs
synchronously here too): device queries and executable loading through one
:class:`ExecutableLoader`."""
from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from ...errors import HalError, StatusCode
from ...vm.types import RefObject
from ..objects import DEVICE_TYPE, Allocator, HalExecutable
from .loader import ExecutableLoader, supports_format

#: drivers vmrt answers for; both run synchronously here
DRIVERS = ("local-sync", "local-task")


class Device(RefObject):
    """One synchronous CPU device (``--device=local-sync`` or ``local-task``).

    Executables are loaded through one :class:`vmrt.hal.local.executable.ExecutableLoader`
    (created on first use from the ``--executable_plugin`` specs) and run
    natively when they are built for this host, emulated otherwise."""

    vm_type = DEVICE_TYPE

    def __init__(self, uri: str, plugin_specs: Sequence[str] = (), backend: str = "auto",
                 call_timeout: float | None = None):
        driver, sep, rest = uri.partition("://")
        driver = driver.strip() or "local-task"
        if driver not in DRIVERS:
            raise HalError(f"no HAL driver '{driver}' is available in vmrt (device URI "
                          f"'{uri}'); vmrt provides {', '.join(DRIVERS)}", StatusCode.NOT_FOUND)
        self.uri = uri
        self.identifier = driver
        self.plugin_specs = list(plugin_specs)
        self.backend = backend
        #: bounds every emulated call (plugin set-up included): the context's timeout
        self.call_timeout = call_timeout
        self.allocator = Allocator(self)
        self._loader: ExecutableLoader | None = None

    @property
    def loader(self) -> ExecutableLoader:
        if self._loader is None:
            self._loader = ExecutableLoader(self.plugin_specs, backend=self.backend,
                                            call_timeout=self.call_timeout)
        return self._loader

    def supports_format(self, fmt: str) -> bool:
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
                          "<arch>, embedded-fatelf, system-elf-<arch> and vmvx-bytecode-fb)",
                          StatusCode.NOT_FOUND)
        return HalExecutable(self.loader.load(data, constants, executable_format=fmt), fmt)

    def close(self) -> None:
        if self._loader is not None:
            self._loader.close()
            self._loader = None

    def __repr__(self) -> str:
        return f"<hal.device {self.identifier}>"
