"""Embedded executable plugins: a bare-metal ELF (``.so``) or FatELF
(``.sos``) loaded with :func:`elfkit.load`, natively or under emulation, and
driven through IREE's executable-plugin C ABI (:class:`AbiPlugin`, shared
with system plugins)."""
from __future__ import annotations

import os
import struct
from collections.abc import Callable

from ....errors import PluginError, StatusCode
from .. import library_abi as abi
from ..guest import GuestMemory, code_name, host_allocator, read_cstr, sig, status_code
from .plugin import ExecutablePlugin, ImportSlots, Resolved

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class AbiPlugin(ExecutablePlugin):
    """A plugin behind IREE's C ABI (embedded and system plugins): runs the
    v0 sequence query(1) -> check header -> load -> resolve* -> unload.
    Subclasses set ``memory`` (a :class:`GuestMemory` in the plugin's
    machine) and ``alloc_machine`` (whose heap backs the host allocator),
    then call :meth:`init_abi`."""

    memory: GuestMemory
    alloc_machine: Any

    def init_abi(self, query: Callable[[int, int], Any], read: Callable[[int, int], bytes],
                  fn: Callable[[int, str], Callable[..., Any]]) -> None:
        """``query`` calls the exported query; ``read`` reads plugin memory;
        ``fn(address, signature)`` makes a callable for a plugin function."""
        mem = self.memory
        lay = mem.layout
        self._read = read
        v0_ptr = int(query(abi.PLUGIN_VERSION_LATEST, 0) or 0)
        if not v0_ptr:
            raise PluginError(f"plugin {self.source} does not support this version of the "
                              f"runtime ({abi.PLUGIN_VERSION_LATEST:08X}): its query returned NULL",
                              StatusCode.FAILED_PRECONDITION)
        header_ptr, load, unload, resolve = lay.plugin_v0(read(v0_ptr, lay.plugin_v0_size))
        if not header_ptr:
            raise PluginError(f"plugin {self.source}: query returned a table with a NULL header")
        h = lay.plugin_header(read(header_ptr, lay.plugin_header_size))
        self.version, self.features, self.sanitizer = h.version, h.features, h.sanitizer
        self.name = read_cstr(read, h.name_ptr) or "(unnamed)"
        self.description = read_cstr(read, h.description_ptr)
        self.check_header()
        if not load or not resolve:
            raise PluginError(f"{self.label}: its v0 table has no "
                              f"{'load' if not load else 'resolve'} function")
        w = "u64" if mem.word == 8 else "u32"
        self._load_fn = fn(load, f"ptr(ptr,{w},ptr,ptr)")
        self._unload_fn = fn(unload, "void(ptr)") if unload else None
        self._resolve_fn = fn(resolve, "ptr(ptr,ptr,ptr)")
        # load(environment, param_count, params, &self)
        alloc = host_allocator(self.alloc_machine)
        env = mem.alloc_words([alloc.self_ptr, alloc.ctl])
        pairs = b""
        for k, v in self.params.items():
            kb, vb = k.encode(), v.encode()
            pairs += lay.string_pair(mem.alloc_bytes(kb or b"\0", 1), len(kb),
                                     mem.alloc_bytes(vb or b"\0", 1), len(vb))
        params_ptr = mem.alloc_bytes(pairs, mem.word) if pairs else 0
        out_self = mem.alloc(mem.word, mem.word)
        st = status_code(self._load_fn(env, len(self.params), params_ptr, out_self))
        self.self_ptr = mem.word_at(out_self)
        if st:
            raise PluginError(f"{self.label}: load() failed with {code_name(st)}", st)
        self._loaded = True

    def resolve_slots(self, slots: ImportSlots) -> Resolved:
        if self.closed:
            raise PluginError(f"{self.label} is closed")
        if slots.count == 0:
            return Resolved(0, 0)
        mem = slots.mem
        before = slots.functions()
        params = mem.alloc_bytes(mem.layout.resolve_params(
            slots.count, slots.names_ptr, slots.functions_ptr, slots.contexts_ptr), mem.word)
        out = mem.alloc(4, 4)
        st = status_code(self._resolve_fn(self.self_ptr, params, out))
        resolution = struct.unpack("<I", mem.read(out, 4))[0]
        after = slots.functions()
        provided = [n for n, b, a in zip(slots.names, before, after) if a and not b]
        return Resolved(st, resolution, provided)

    def _close(self) -> None:
        self.closed = True
        try:
            if getattr(self, "_loaded", False) and self._unload_fn is not None:
                self._unload_fn(self.self_ptr)
        finally:
            self.release()

    def release(self) -> None:
        self.memory.free_all()


class EmbeddedPlugin(AbiPlugin):
    kind = "embedded"

    def __init__(self, source: Any, params: dict[str, str], *, arch: Any, backend: str,
                 machine: Any, label: str | None):
        super().__init__()
        import elfkit
        self.params = params
        self.source = label or (os.fspath(source) if isinstance(source, (str, os.PathLike))
                                else "<memory>")
        try:
            self.module = elfkit.load(source, arch=arch, backend=backend, machine=machine)
        except elfkit.ElfkitError as e:
            raise PluginError(f"loading plugin from {self.source}: {e}",
                              StatusCode.FAILED_PRECONDITION) from e
        self.machine = self.module.machine
        self.alloc_machine = self.machine
        self.memory = GuestMemory(self.machine)
        try:
            try:
                query_addr = self.module.symbol(abi.PLUGIN_QUERY_NAME)
            except elfkit.ElfkitError:
                raise PluginError(f"plugin {self.source} does not export "
                                  f"'{abi.PLUGIN_QUERY_NAME}'", StatusCode.NOT_FOUND) from None
            m = self.machine
            query = m.function(query_addr, sig("ptr(u32,ptr)"))
            self.init_abi(query, m.read, lambda addr, s: m.function(addr, sig(s)))
        except elfkit.ElfkitError as e:
            self._abandon()
            code = StatusCode.DEADLINE_EXCEEDED if isinstance(e, elfkit.CallTimeout) \
                else StatusCode.INTERNAL
            raise PluginError(f"{self.label}: {e}", code) from e
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        self.closed = True
        self.memory.free_all()
        self.module.close()

    def available_for(self, machine: Any) -> str | None:
        if self.closed:
            return "closed"
        if machine is self.machine:
            return None
        if machine.backend == "native" and self.machine.backend == "native":
            return None  # one host address space
        return (f"it lives in another machine ({self.machine.arch.name} {self.machine.backend}); "
                f"load it into the executable's machine")

    def release(self) -> None:
        super().release()
        self.module.close()


__all__ = ["AbiPlugin", "EmbeddedPlugin"]
