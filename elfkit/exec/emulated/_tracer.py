"""The opt-in execution trace of an emulated machine (``EmulatedMachine.trace``).

``ExecutionTracer`` writes one entry per executed basic block: its address
and symbol, and (mode ``"block"``) its disassembly.  Each block's text is
built once and cached by address.  The tracer installs no hook itself: the
machine adds a ``UC_HOOK_BLOCK`` hook that calls ``on_block`` only while
tracing, and reads the machine only through public accessors (``arch``,
``symbolize``, ``try_read``, ``registers``).
"""
from __future__ import annotations

import os

from ...errors import ExecutionError, SignatureError
from ..disasm import disassemble

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

MODES = ("block", "compact")


class ExecutionTracer:
    def __init__(self, machine: Any, target: Any, mode: str = "block"):
        if mode not in MODES:
            raise SignatureError(f"trace mode must be 'block' or 'compact', not {mode!r}")
        self.m = machine
        self.mode = mode
        if isinstance(target, (str, os.PathLike)):
            try:
                self.file = open(target, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
            except OSError as e:
                raise ExecutionError(f"cannot write an execution trace to {target}: {e}") from e
            self._owns = True
        else:
            self.file = target
            self._owns = False
        self.name = str(target) if self._owns else getattr(target, "name", repr(target))
        self.cache: dict[int, str] = {}
        self.blocks = 0
        self.error: BaseException | None = None
        self.file.write(f"# elfkit execution trace ({machine.arch.name}, {mode})\n")

    def on_block(self, address: int, size: int) -> None:
        """Called by the machine's block hook; never raises into unicorn: the
        first error is kept, tracing stops and ``close`` reports it."""
        if self.error is not None:
            return
        try:
            text = self.cache.get(address)
            if text is None:
                text = self.cache[address] = self._describe(address, size)
            self.file.write(text)
            self.blocks += 1
        except BaseException as e:  # noqa: BLE001 - raised by close()
            self.error = e

    def _describe(self, address: int, size: int) -> str:
        m = self.m
        head = f"{address:#x} {m.symbolize(address)}"
        if self.mode == "compact":
            return head + "\n"
        code = m.try_read(address, size) if size else None
        if not code:
            return head + "\n"
        thumb = False
        if m.arch.name == "arm":
            thumb = bool(m.registers(["CPSR"])["CPSR"] & 0x20)
        insns = disassemble(code, address, m.arch, m.symbolize, thumb=thumb)
        body = "".join(f"    {i.address:#x}: {i.text}" + (f"  ; {i.comment}" if i.comment else "")
                       + "\n" for i in insns)
        return f"{head} ({len(insns)} insns)\n{body}"

    def close(self) -> None:
        """Flush (and close a file opened here); raises ``ExecutionError`` if
        writing the trace failed at some block."""
        try:
            self.file.flush()
        finally:
            if self._owns:
                self.file.close()
        if self.error is not None:
            e, self.error = self.error, None
            raise ExecutionError(f"writing the execution trace to {self.name} failed after "
                                 f"{self.blocks} blocks: {type(e).__name__}: {e}") from e
