"""System executable plugins: a host shared library opened with ``dlopen``
(host only), driven through the same C ABI as embedded plugins."""
from __future__ import annotations

import os
from collections.abc import Callable

from elfkit.signature import parse as parse_signature

from ....errors import PluginError, StatusCode
from .. import library_abi as abi
from ..guest import GuestMemory
from .embedded import AbiPlugin

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class SystemPlugin(AbiPlugin):
    kind = "system"

    def __init__(self, path: str, params: dict[str, str], *, machine: Any):
        super().__init__()
        self.params = params
        self.source = path
        import elfkit
        try:
            self._lib = elfkit.SystemLibrary(path, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
        except elfkit.ElfkitError as e:
            raise PluginError(f"failed to load dynamic library (possibly not found on any search "
                              f"path): {e}", StatusCode.NOT_FOUND) from None
        qfn = self._lib.address(abi.PLUGIN_QUERY_NAME)
        if not qfn:
            raise PluginError(f"symbol '{abi.PLUGIN_QUERY_NAME}' not found in library {path}",
                              StatusCode.NOT_FOUND)
        if machine is None:
            from elfkit.arch import host
            from elfkit.exec import create_machine
            h = host()
            if h is None:
                raise PluginError("system library plugins need a host elfkit can run natively",
                                  StatusCode.UNAVAILABLE)
            machine = create_machine(h, "native")
            self._own_machine = machine
        elif machine.backend != "native":
            raise PluginError(f"system library plugin {path} cannot use a {machine.backend} "
                              f"machine", StatusCode.INVALID_ARGUMENT)
        self.machine = machine
        self.alloc_machine = machine
        self.memory = GuestMemory(machine)
        query = machine.foreign_function(qfn, parse_signature("ptr(u32,ptr)"))
        try:
            self.init_abi(lambda v, r: query(v, r or None), machine.read_unchecked,
                           self._host_fn)
        except BaseException:
            self.closed = True
            self.memory.free_all()
            raise

    def _host_fn(self, addr: int, signature: str) -> Callable[..., Any]:
        return self.machine.foreign_function(addr, parse_signature(signature))

    def available_for(self, machine: Any) -> str | None:
        if self.closed:
            return "closed"
        if machine.backend != "native":
            return f"a host library cannot serve {machine.backend} {machine.arch.name} code"
        return None

    def release(self) -> None:
        super().release()
        own = getattr(self, "_own_machine", None)
        if own is not None:
            own.close()


__all__ = ["SystemPlugin"]
