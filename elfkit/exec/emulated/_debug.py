"""Debugging support of ``EmulatedMachine`` (a mixin): source lines for fault
reports (DWARF ``.debug_line`` of attached modules, or resolvers the caller
registers), register dumps, the execution trace switch and recording of
guest stores (``record_writes``).

Reports read the machine through the public accessors defined here and in
``_machine.py``; ``_faults.py`` and ``_tracer.py`` import nothing from the
machine.
"""
from __future__ import annotations

import bisect
import contextlib
import os
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator

from . import _uc
from ._cc import float_abi_from_eflags
from ._layout import SENTINEL
from ._runner import STOP_HOOK

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._state import MachineState
    from .gdbstub import GdbStub
else:
    MachineState = object

C = _uc.C
lib = _uc.lib
_WIDEST_STORE = 64         # bytes a single guest store may write at most


class DebugSupport(MachineState):
    """Uses the machine's ``_line_info``, ``_line_owner``, ``_modules``,
    ``_tracer`` and hook helpers set up by ``EmulatedMachine.__init__``."""

    @property
    def mixed_float_abi(self) -> bool:
        """Whether attached modules use more than one float ABI (RISC-V), so
        each Python callback finds its caller's ABI by the return address."""
        return self._mixed_abi

    def attach(self, module: Any) -> None:
        """Remember a module: symbols for reports; for RISC-V its float ABI
        (ELF ``e_flags``); its DWARF line table, if any, for fault reports
        (read lazily, at the first fault)."""
        elf = getattr(module, "elf", None)
        e_flags = getattr(elf, "e_flags", None)
        span = getattr(module, "address_range", None)
        if e_flags is not None and self.arch.name.startswith("riscv"):
            abi = float_abi_from_eflags(self.arch, e_flags)
            if not self._abi_ranges:
                self.float_abi = abi        # the default for code outside any module
            if span is not None:
                self._abi_ranges.append((span[0], span[1], abi, module))
            else:
                self._abi_ranges.append((0, 0, abi, module))
            self._mixed_abi = len({r[2] for r in self._abi_ranges} | {self.float_abi}) > 1
        super().attach(module)
        data = getattr(elf, "data", None)
        if span is not None and data is not None and _has_debug_line(data):
            bias = getattr(module, "base", 0)        # a Module's base is its load bias
            self._line_info.append((span[0], span[1], DwarfLines(data, bias)))
            self._line_owner[id(self._line_info[-1][2])] = module
        if self._gdb is not None:
            self._gdb.modules_changed()

    def detach(self, module: Any) -> None:
        super().detach(module)
        if self._gdb is not None:
            self._gdb.modules_changed()
        self._abi_ranges = [r for r in self._abi_ranges if r[3] is not module]
        self._mixed_abi = len({r[2] for r in self._abi_ranges} | {self.float_abi}) > 1
        self._line_info = [li for li in self._line_info
                           if self._line_owner.get(id(li[2])) is not module]

    def add_line_info(self, lo: int, hi: int, resolver: Callable[[int], str | None]) -> None:
        """Register ``resolver(addr) -> "file:line"`` for guest addresses in [lo, hi)."""
        self._line_info.append((lo, hi, resolver))

    def add_debug_info(self, bias: int, elf: Any, lo: int = 0, hi: int = 1 << 64) -> None:
        """Use the DWARF ``.debug_line`` of ``elf`` (bytes or a path), loaded at
        ``bias``, for file:line in fault reports (parsed lazily, on first fault)."""
        self.add_line_info(lo, hi, DwarfLines(elf, bias))

    def source_line(self, addr: int) -> str | None:
        """``file:line`` of a guest address, from registered line information
        (``add_line_info``; attached modules register theirs); None when
        unknown.  Errors of a resolver propagate (fault reports turn them
        into a note)."""
        for lo, hi, resolver in self._line_info:
            if lo <= addr < hi:
                s = resolver(addr)
                if s:
                    return s
        return None

    def registers(self, names: Iterable[str] | None = None) -> dict[str, int]:
        """Current values of integer registers (``dump_regs`` by default)."""
        out = {}
        for n in names or self.arch.dump_regs:
            lib.uc_reg_read(self._h, self._reg(n), self._word_ref)
            v = self._word_buf.value
            out[n] = v & 0xFFFFFFFF if self.arch.bits == 32 else v
        return out

    def read_register(self, name: str) -> Any:
        """Any register by its unicorn name (suffix of UC_<ARCH>_REG_*): an
        int, or for x87 registers a (mantissa, exponent) pair."""
        return self._uc.reg_read(self._reg(name), name)

    def write_register(self, name: str, value: Any) -> None:
        self._uc.reg_write(self._reg(name), name, value)

    @property
    def stop_requested(self) -> bool:
        """Whether the running call was asked to stop (cancel, timeout, signal)."""
        return self._stop is not None

    @property
    def observed(self) -> bool:
        """Whether gdb (``debug``) or an execution trace (``trace``) watches
        this machine, so code run on another machine would go unseen."""
        return self._gdb is not None or self._tracer is not None

    def module_at(self, addr: int) -> Any:
        """The attached module whose image holds ``addr``, else None."""
        for mod in self._modules:
            span = getattr(mod, "address_range", None)
            if span is not None and span[0] <= addr < span[1]:
                return mod
        return None

    def _serve_gdb_if_asked(self) -> None:
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
        """Let gdb debug the guest code: listen on ``host:port`` (0: any free
        port, see the returned stub's ``port``) and stop before the first
        guest instruction of the next call, waiting for gdb to connect
        (``target remote :PORT``) and resume.  ``offset``: the load bias
        reported to gdb by ``qOffsets`` (the module whose file gdb loads);
        None: the module holding the first stop, announced on stderr.
        ``debug(None)`` ends the session (a waiting gdb sees the program
        exit); so does closing the machine.  ``ExecutionError`` when the port
        cannot be listened on."""
        self._stop_debug()
        if port is None:
            return None
        self._check_open()
        from .gdbstub import GdbStub  # the gdb server: imported on first use
        stub = GdbStub(self, port, host=host, offset=offset, ignore=(SENTINEL, self._stub_end),
                       accept_timeout=accept_timeout)
        me = weakref.ref(self)

        def on_code(_h: Any, address: int, _size: int, _ud: Any) -> None:
            m = me()
            if m is None:
                return
            try:
                stub.on_insn(address)
            except BaseException as e:   # noqa: BLE001 - delivered after emu_start returns
                if m._hook_exc is None:
                    m._hook_exc = e
                m._stop = STOP_HOOK
                lib.uc_emu_stop(m._h)

        def on_mem(_h: Any, kind: int, address: int, size: int, _value: int, _ud: Any) -> None:
            stub.on_mem(kind == C.UC_MEM_WRITE, address, size)

        self._gdb_hooks = [
            self._add_hook(C.UC_HOOK_CODE, _uc.HOOK_CODE(on_code), 1, 0),
            self._add_hook(C.UC_HOOK_MEM_READ | C.UC_HOOK_MEM_WRITE, _uc.HOOK_MEM(on_mem), 1, 0)]
        self._gdb = stub
        self._uc.flush_tb()
        return stub

    def _stop_debug(self) -> None:
        stub, self._gdb = self._gdb, None
        if stub is None:
            return
        try:
            for h in self._gdb_hooks:
                self._del_hook(h)
            self._gdb_hooks = []
            if not self._closed:
                self._uc.flush_tb()
        finally:
            stub.close()

    @contextlib.contextmanager
    def record_writes(self, ranges: Iterable[tuple[int, int]]
                      ) -> Iterator[list[tuple[int, int]]]:
        """Record the stores guest code makes into the guest ranges
        ``(address, size)`` while the ``with`` block runs: yields a list that
        fills with one ``(address, size)`` per store (clipped to the range it
        falls in; a store reaching two ranges counts in each), in program
        order.  Every store counts, also one that writes the value already
        there; writes through :meth:`write` or by host callbacks do not.
        Costs nothing outside the block: the memory hook exists only inside
        it (the translation cache is flushed on entry and exit)."""
        self._check_open()
        spans = sorted((int(a), int(a) + int(n)) for a, n in ranges if n > 0)
        seen: list[tuple[int, int]] = []
        if not spans:
            yield seen
            return

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
        hook = self._add_hook(C.UC_HOOK_MEM_WRITE, cfn, max(spans[0][0] - _WIDEST_STORE, 1),
                              max(hi for _lo, hi in spans) - 1)
        self._uc.flush_tb()
        try:
            yield seen
        finally:
            if not self._closed:
                self._uc.del_hook(hook, cfn)
                self._uc.flush_tb()

    def trace(self, target: Any = None, *, mode: str = "block") -> None:
        """Start writing an execution trace to ``target`` (a path or a text
        file): every basic block executed, with its disassembly (``mode=
        "block"``) or its address only (``"compact"``).  ``trace(None)`` stops
        (and raises ``ExecutionError`` if writing the trace failed).
        Costs nothing while off: the block hook exists only while tracing
        (the translation cache is flushed on start and stop so code
        translated before is covered and, afterwards, runs hook-free again)."""
        self._stop_trace()
        if target is not None:
            self._check_open()
            from ._tracer import ExecutionTracer  # imported when tracing starts
            tracer = ExecutionTracer(self, target, mode)

            def on_block(_h: Any, address: int, size: int, _ud: Any) -> None:
                tracer.on_block(address, size)
            self._trace_hook = self._add_hook(C.UC_HOOK_BLOCK, _uc.HOOK_CODE(on_block), 1, 0)
            self._tracer = tracer
            self._uc.flush_tb()

    def _stop_trace(self) -> None:
        tracer, self._tracer = self._tracer, None
        if tracer is None:
            return
        try:
            self._del_hook(self._trace_hook)
            if not self._closed:
                self._uc.flush_tb()
        finally:
            tracer.close()


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
