"""System executable plugins: a host shared library opened with ``dlopen``
(host only), driven through the same C ABI as embedded plugins; and what
loading a *system-library executable* (format ``system-elf-<arch>``,
``iree-compile --iree-llvmcpu-link-embedded=false``) needs beyond an
embedded one: the debug footer IREE may append, and the host C libraries
that serve its libc/libm imports (see :func:`host_libraries`)."""
from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence

from elfkit.signature import parse as parse_signature

from ....errors import ExecutableError, PluginError, StatusCode
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


#: IREE's optional footer after a system library: magic, version, flags and
#: the library's offset and size and the debug database's offset and size
_FOOTER = struct.Struct("<8sIIQQQQ")
_FOOTER_MAGIC = b"IREEDBG\0"

#: the host C libraries whose exports a system library's undefined symbols
#: bind to, searched first to last (glibc's sonames; libc also has libm's
#: functions on musl): what the process's global scope holds when IREE's
#: loader dlopen()s the library RTLD_LOCAL
HOST_C_LIBRARIES = ("libm.so.6", "libc.so.6", "libm.so", "libc.so")

#: soname -> its SystemLibrary, or None when it could not be opened
_opened: dict[str, Any] = {}


def system_library_bytes(data: bytes, label: str) -> bytes:
    """The shared library inside a system-library executable's bytes: all
    of them, or, when IREE's debug footer (magic ``IREEDBG``) ends them, the
    first ``library_size`` bytes it names (IREE's loader reads the library
    from the start of the data and ignores the debug database on POSIX)."""
    if len(data) < _FOOTER.size or data[-_FOOTER.size:][:8] != _FOOTER_MAGIC:
        return data
    _magic, _version, _flags, _lib_off, lib_size, dbg_off, dbg_size = \
        _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
    room = len(data) - _FOOTER.size
    if lib_size > room or dbg_off + dbg_size > room:
        raise ExecutableError(
            f"system library {label}: its debug footer (at file offset {room}) references bytes "
            f"out of range (library {lib_size} bytes, debug database {dbg_size} bytes at "
            f"{dbg_off}; {room} bytes precede the footer)", StatusCode.OUT_OF_RANGE)
    return data[:lib_size]


def host_libraries(needed: Sequence[str] = ()) -> list[Any]:
    """``elfkit.SystemLibrary`` providers for a native system library's
    undefined symbols, in registration order (``elfkit.Imports``: the last is
    searched first): its ``DT_NEEDED`` libraries (the platform loader's local
    scope) and then the host's libm and libc (the global scope, searched
    before).  Each is opened once per process; one that cannot be opened is
    left out (an import only it had is then reported unresolved), and so is
    a ``DT_NEEDED`` path (a name with a '/'): only sonames, searched on the
    system's library path, are opened on a file's word."""
    import elfkit
    libs = []
    sonames = [n for n in reversed(needed) if "/" not in n]
    for name in [*sonames, *reversed(HOST_C_LIBRARIES)]:
        if name not in _opened:
            try:
                _opened[name] = elfkit.SystemLibrary(name)
            except elfkit.ElfkitError:
                _opened[name] = None
        lib = _opened[name]
        if lib is not None and lib not in libs:
            libs.append(lib)
    return libs


__all__ = ["HOST_C_LIBRARIES", "SystemPlugin", "host_libraries", "system_library_bytes"]
