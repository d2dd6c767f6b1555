"""Debugging support of an emulated machine: ``Debugger``, one per machine.
Source lines for fault reports (DWARF ``.debug_line`` of attached modules,
or resolvers the caller registers), register dumps, gdb (``debug``), the
execution trace switch and recording of guest stores (``record_writes``).

Reports, traces and the gdb stub read the machine through its public
accessors; ``_faults.py`` and ``_tracer.py`` import nothing from it.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator

from . import _uc
from ._layout import SENTINEL

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._callstate import CallState
    from ._machine import EmulatedMachine
    from ._uc import Engine
    from .gdbstub import GdbStub

C = _uc.C
lib = _uc.lib
_WIDEST_STORE = 64         # bytes a single guest store may write at most


class Debugger:
    """Line information, registers, gdb, traces and store recording of
    ``engine``.  ``machine``: the machine's public face, handed to the gdb
    stub and the tracer; ``state``: the run a failing gdb hook stops;
    ``stub_end``: end of the runtime page (gdb does not stop there).  The
    machine checks it is open before calling in."""

    def __init__(self, engine: Engine, state: CallState, machine: EmulatedMachine,
                 stub_end: int) -> None:
        self._uc = engine
        self._state = state
        self._machine = machine
        self._stub_end = stub_end
        self._line_info: list[tuple[int, int, Callable[[int], str | None]]] = []
        self._line_owner: dict[int, Any] = {}
        self._tracer: Any = None
        self._trace_hook = 0
        self._profiler: Any = None
        self._profile_hook = 0
        self._gdb: Any = None
        self._gdb_hooks: list[int] = []
        #: (module, what names its functions), run when names are first needed
        self._namers: list[tuple[Any, Callable[[], object]]] = []

    def attach(self, module: Any) -> None:
        """Note ``module``'s DWARF line table, if any, for fault reports (read
        lazily, at the first fault); tell gdb."""
        elf = getattr(module, "elf", None)
        span = getattr(module, "address_range", None)
        data = getattr(elf, "data", None)
        if span is not None and data is not None and _has_debug_line(data):
            bias = getattr(module, "base", 0)        # a Module's base is its load bias
            self._line_info.append((span[0], span[1], DwarfLines(data, bias)))
            self._line_owner[id(self._line_info[-1][2])] = module
        if self._gdb is not None:
            self._gdb.modules_changed()

    def detach(self, module: Any) -> None:
        self._namers = [n for n in self._namers if n[0] is not module]
        if self._gdb is not None:
            self._gdb.modules_changed()
        self._line_info = [li for li in self._line_info
                           if self._line_owner.get(id(li[2])) is not module]

    def name_later(self, module: Any, namer: Callable[[], object]) -> None:
        """See ``EmulatedMachine.name_later``."""
        if self.observed:
            namer()
        else:
            self._namers.append((module, namer))

    def name_pending(self) -> None:
        """Run the namers :meth:`name_later` kept (a symbolize or gdb needs the names)."""
        while self._namers:
            namers, self._namers = self._namers, []
            for _module, namer in namers:
                namer()

    def add_line_info(self, lo: int, hi: int, resolver: Callable[[int], str | None]) -> None:
        """Register ``resolver(addr) -> "file:line"`` for guest addresses in [lo, hi)."""
        self._line_info.append((lo, hi, resolver))

    def source_line(self, addr: int) -> str | None:
        """See ``EmulatedMachine.source_line``."""
        for lo, hi, resolver in self._line_info:
            if lo <= addr < hi:
                s = resolver(addr)
                if s:
                    return s
        return None

    def has_line_info(self, lo: int, hi: int) -> bool:
        """See ``EmulatedMachine.has_line_info``."""
        return any(a < hi and lo < b for a, b, _r in self._line_info)

    def registers(self, names: Iterable[str] | None = None) -> dict[str, int]:
        """Current values of integer registers (``dump_regs`` by default)."""
        e = self._uc
        bits32 = e.arch.bits == 32
        out = {}
        for n in names or e.arch.dump_regs:
            v = e.read_word(e.reg_id(n))
            out[n] = v & 0xFFFFFFFF if bits32 else v
        return out

    @property
    def observed(self) -> bool:
        """Whether gdb, an execution trace or a profile watches this machine."""
        return self._gdb is not None or self._tracer is not None or self._profiler is not None

    def serve_gdb_if_asked(self) -> None:
        """Serve gdb when ``ELFKIT_GDB`` or ``gdbstub.request`` (``vmrt run
        --gdb``, which imports the module to call it) asks for it; without
        either, the gdb stub module is not even imported."""
        gdbstub = sys.modules.get(__package__ + ".gdbstub")
        if gdbstub is None and os.environ.get("ELFKIT_GDB", "").strip():
            from . import gdbstub
        if gdbstub is not None:
            gdb = gdbstub.take_request()
            if gdb is not None:
                self.debug(gdb[1], host=gdb[0], offset=None)

    def debug(self, port: int | None, *, host: str = "127.0.0.1", offset: int | None = 0,
              accept_timeout: float | None = None) -> GdbStub | None:
        """See ``EmulatedMachine.debug``."""
        self.stop_debug()
        if port is None:
            return None
        self._state.check_open()
        self.name_pending()         # gdb reads the modules' symbols
        from .gdbstub import GdbStub  # the gdb server: imported on first use
        stub = GdbStub(self._machine, port, host=host, offset=offset,
                       ignore=(SENTINEL, self._stub_end), accept_timeout=accept_timeout)
        state = self._state

        @state.guard
        def on_code(_h: Any, address: int, _size: int, _ud: Any) -> None:
            try:
                stub.on_insn(address)
            except BaseException as e:   # noqa: BLE001 - delivered after emu_start returns
                state.fail(e)

        @state.guard
        def on_mem(_h: Any, kind: int, address: int, size: int, _value: int, _ud: Any) -> None:
            stub.on_mem(kind == C.UC_MEM_WRITE, address, size)

        self._gdb_hooks = [
            self._uc.add_hook(C.UC_HOOK_CODE, _uc.HOOK_CODE(on_code), 1, 0),
            self._uc.add_hook(C.UC_HOOK_MEM_READ | C.UC_HOOK_MEM_WRITE, _uc.HOOK_MEM(on_mem), 1, 0)]
        self._gdb = stub
        self._uc.flush_tb()
        return stub

    def stop_debug(self) -> None:
        stub, self._gdb = self._gdb, None
        if stub is None:
            return
        try:
            for h in self._gdb_hooks:
                self._uc.del_hook(h)
            self._gdb_hooks = []
            if not self._state.closed:
                self._uc.flush_tb()
        finally:
            stub.close()

    @contextlib.contextmanager
    def record_writes(self, ranges: Iterable[tuple[int, int]]
                      ) -> Iterator[list[tuple[int, int]]]:
        """See ``EmulatedMachine.record_writes``."""
        spans = sorted((int(a), int(a) + int(n)) for a, n in ranges if n > 0)
        seen: list[tuple[int, int]] = []
        if not spans:
            yield seen
            return

        state = self._state

        @state.guard
        def on_write(_h: Any, _kind: int, address: int, size: int, _value: int,
                     _ud: Any) -> None:
            end = address + size
            for lo, hi in spans:
                if address < hi and lo < end:
                    a = max(address, lo)
                    seen.append((a, min(end, hi) - a))

        cfn = _uc.HOOK_MEM(on_write)
        # a store is hooked by its first byte: start early enough to see one
        # that begins before the first range and reaches into it
        hook = self._uc.add_hook(C.UC_HOOK_MEM_WRITE, cfn, max(spans[0][0] - _WIDEST_STORE, 1),
                                 max(hi for _lo, hi in spans) - 1)
        self._uc.flush_tb()
        try:
            yield seen
        finally:
            if not self._state.closed:
                self._uc.del_hook(hook, cfn)
                self._uc.flush_tb()

    def trace(self, target: Any = None, *, mode: str = "block") -> None:
        """See ``EmulatedMachine.trace``."""
        self.stop_trace()
        if target is not None:
            self._state.check_open()
            from ._tracer import ExecutionTracer  # imported when tracing starts
            tracer = ExecutionTracer(self._machine, target, mode)

            @self._state.guard
            def on_block(_h: Any, address: int, size: int, _ud: Any) -> None:
                tracer.on_block(address, size)
            self._trace_hook = self._uc.add_hook(C.UC_HOOK_BLOCK, _uc.HOOK_CODE(on_block), 1, 0)
            self._tracer = tracer
            self._uc.flush_tb()

    def stop_trace(self) -> None:
        """Stop tracing; ``ExecutionError`` if writing the trace failed."""
        tracer, self._tracer = self._tracer, None
        if tracer is None:
            return
        try:
            self._uc.del_hook(self._trace_hook)
            if not self._state.closed:
                self._uc.flush_tb()
        finally:
            tracer.close()

    def profile(self, profile: Any) -> None:
        """See ``EmulatedMachine.profile``."""
        counter, self._profiler = self._profiler, None
        if counter is not None:
            self._uc.del_hook(self._profile_hook)
            if not self._state.closed:       # (a closed machine's counts are lost)
                self._uc.flush_tb()
                counter.finish(self._machine)
        if profile is not None:
            self._state.check_open()
            from ._callgraph import call_sites  # imported when profiling starts
            from ._profiler import BlockCounter
            from .blockhook import native_counter
            native = native_counter(guard=self._state.guard)
            sites = call_sites(self._machine, self._uc, (SENTINEL, self._stub_end))
            counter = BlockCounter(profile, native, sites)
            if native is not None:      # counted in C (see blockhook)
                self._profile_hook = self._uc.add_native_hook(
                    C.UC_HOOK_BLOCK, native.hook, native.user_data, 1, 0)
            else:
                self._profile_hook = self._uc.add_hook(
                    C.UC_HOOK_BLOCK, _uc.HOOK_CODE(self._state.guard(counter.on_block)), 1, 0)
            self._profiler = counter
            self._uc.flush_tb()


def _has_debug_line(data: Any) -> bool:
    """Cheap check (no parsing): does the ELF image contain a .debug_line name?"""
    try:
        return b".debug_line" in bytes(data[-(1 << 20):])
    except (TypeError, ValueError):     # not a bytes-like image: no line table
        return False


class DwarfLines:
    """``addr -> "file:line"`` from an ELF's ``.debug_line`` (pyelftools, lazy)."""

    def __init__(self, elf: Any, bias: int):
        self._elf = elf
        self._bias = bias
        self._rows: list[tuple[int, str]] | None = None
        self._addrs: list[int] = []

    def _load(self) -> None:
        import io

        from elftools.elf.elffile import ELFFile
        src = self._elf
        if isinstance(src, (bytes, bytearray, memoryview)):
            stream: Any = io.BytesIO(bytes(src))
        else:
            stream = open(src, "rb")  # noqa: SIM115 - closed by the finally below
        rows: list[tuple[int, str]] = []
        try:
            ef = ELFFile(stream)
            if ef.has_dwarf_info() and ef.get_section_by_name(".debug_line") is not None:
                dw = ef.get_dwarf_info(relocate_dwarf_sections=True)
                for cu in dw.iter_CUs():
                    lp = dw.line_program_for_CU(cu)
                    if lp is None:
                        continue
                    files = lp["file_entry"]
                    ver = lp.header.version
                    for entry in lp.get_entries():
                        st = entry.state
                        if st is None or st.end_sequence:
                            continue
                        idx = st.file if ver >= 5 else st.file - 1
                        name = "?"
                        if 0 <= idx < len(files):
                            n = files[idx].name
                            name = n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n)
                        rows.append((st.address, f"{name}:{st.line}"))
        finally:
            if stream is not None and not isinstance(src, (bytes, bytearray, memoryview)):
                stream.close()
        rows.sort()
        self._rows = rows
        self._addrs = [r[0] for r in rows]
        self._elf = None

    def __call__(self, addr: int) -> str | None:
        if self._rows is None:
            self._load()
        rel = addr - self._bias
        i = bisect.bisect_right(self._addrs, rel) - 1
        if i < 0 or rel - self._addrs[i] > 4096:
            return None
        return self._rows[i][1]  # type: ignore[index]
