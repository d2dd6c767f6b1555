"""Host functions callable from guest code (a mixin of ``EmulatedMachine``).

Each ``callback`` gets a 16-byte stub in the runtime page (a return
instruction); one ``UC_HOOK_CODE`` hook covering the stub range calls
``_on_stub``, which runs the Python function through code generated per
signature and float ABI (``_codegen.build_callback``).  An exception in the
function stops emulation and is re-raised by the call that ran the guest code.
"""
from __future__ import annotations

from collections.abc import Callable

from ...errors import ExecutionError, MemoryAccessError, SignatureError
from ...signature import Signature
from ...signature import parse as parse_signature
from . import _codegen, _uc
from ._layout import SENTINEL, STUB_BASE, STUB_SIZE
from ._runner import STOP_HOOK

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._state import MachineState
else:
    MachineState = object

lib = _uc.lib


class Callbacks(MachineState):
    """Uses the machine's ``_stubs``, ``_stub_defs``, ``_stub_names``,
    ``_hook_exc`` and ``_stop`` set up by ``EmulatedMachine.__init__``."""

    def callback(self, fn: Callable[..., Any], sig: Signature | str, name: str = "") -> int:
        self._check_open()
        if not callable(fn):
            raise SignatureError(f"callback {name!r}: {fn!r} is not callable")
        i = len(self._stubs)
        if i >= self._max_callbacks:
            raise MemoryAccessError(f"no free callback stub (max_callbacks={self._max_callbacks})")
        sig = parse_signature(sig)
        self.plan(sig)                     # validate now; code is generated at first use
        label = name or getattr(fn, "__name__", "") or f"callback{i}"
        if label == "<lambda>":
            label = f"callback{i}"
        addr = STUB_BASE + i * STUB_SIZE
        self._stubs.append({})
        self._stub_defs.append((fn, sig, label))
        self._stub_names.append(label)
        self._write_raw(addr, self.arch.ret_insn)
        if self._uc.ran:
            self._uc.remove_cache(addr, addr + STUB_SIZE)
        return addr

    def _on_stub(self, address: int) -> None:
        try:
            i = (address - STUB_BASE) // STUB_SIZE
            if not 0 <= i < len(self._stubs):
                raise ExecutionError(f"guest code called {address:#x}, an unassigned callback stub")
            if self._mixed_abi:       # the calling code's float ABI, found by its return address
                lr = self.arch.cc.lr    # set: mixed float ABIs are RISC-V only
                lib.uc_reg_read(self._h, self._reg(lr), self._word_ref)  # type: ignore[arg-type]
                abi = self._abi_at(self._word_buf.value)
            else:
                abi = self._float_abi
            cbs = self._stubs[i]
            cb = cbs.get(abi)
            if cb is None:
                fn, sig, label = self._stub_defs[i]
                cb = cbs[abi] = _codegen.build_callback(self, self.plan(sig, abi), fn, label)
            cb()
        except BaseException as e:      # noqa: BLE001 - delivered after emu_start returns
            if self._hook_exc is None:
                self._hook_exc = e
            self._stop = STOP_HOOK
            lib.uc_emu_stop(self._h)

    def stub_name(self, addr: int) -> str | None:
        """The name of the callback whose stub contains ``addr``, else None."""
        if STUB_BASE <= addr < STUB_BASE + len(self._stubs) * STUB_SIZE:
            return self._stub_names[(addr - STUB_BASE) // STUB_SIZE]
        return None

    def symbolize(self, addr: int) -> str:
        if addr == SENTINEL:
            return "<host>"
        s = self.stub_name(addr)
        if s is not None:
            off = (addr - STUB_BASE) % STUB_SIZE
            return f"<callback {s}>" + (f"+{off:#x}" if off else "")
        return super().symbolize(addr)
