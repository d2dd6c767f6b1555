"""Calling an executable library's query (``iree_hal_executable_library_query``,
or a static library's ``<name>_library_query``) and reading the library's v0
table and header it answers, in the machine the library was loaded into."""
from __future__ import annotations

from ...errors import ExecutableError, StatusCode
from . import library_abi as abi
from .guest import GuestMemory, sig


def query_library(mem: GuestMemory, query_addr: int, env: int, label: str,
                  register: bool = True) -> tuple[abi.LibraryV0, abi.LibraryHeader]:
    """Call a library query at ``query_addr`` (``ptr(u32 version, ptr
    environment)``) in ``mem``'s machine for version 6: the library's v0
    table and header.  A NULL answer or header is an ExecutableError
    naming ``label``; elfkit errors (a fault) pass through.  ``register``:
    False leaves a native module waiting for gdb's JIT list (registered
    before its next code runs) instead of registering it for the query."""
    m, lay = mem.machine, mem.layout
    query = m.function(query_addr, sig("ptr(u32,ptr)")) \
        if register or m.backend != "native" else \
        m.function(query_addr, sig("ptr(u32,ptr)"), jit=False)
    lib_ptr = int(query(abi.LIBRARY_VERSION, env) or 0)
    if not lib_ptr:
        raise ExecutableError(
            f"executable {label} does not support this version of the runtime "
            f"({abi.LIBRARY_VERSION:08X}): its query returned NULL for version "
            f"{abi.LIBRARY_VERSION}", StatusCode.FAILED_PRECONDITION)
    lib = lay.library_v0(m.read(lib_ptr, lay.library_v0_size))
    if not lib.header:
        raise ExecutableError(f"executable {label}: the library has a NULL header")
    return lib, lay.library_header(m.read(lib.header, lay.library_header_size))


__all__ = ["query_library"]
