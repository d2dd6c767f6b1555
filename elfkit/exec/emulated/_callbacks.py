"""Host functions callable from guest code: ``Callbacks``, one table per
emulated machine.

Each ``callback`` gets a 16-byte stub in the runtime page (a return
instruction); one ``UC_HOOK_CODE`` hook covering the stub range calls
``on_stub``, which runs the Python function through code generated per
signature and float ABI (``_codegen.build_callback``).  An exception in the
function stops emulation (``CallState.fail``) and is re-raised by the call
that ran the guest code.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable

from ...errors import ExecutionError, MemoryAccessError, SignatureError
from ...signature import Signature
from ...signature import parse as parse_signature
from . import _codegen, _uc
from ._layout import STUB_BASE, STUB_SIZE

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._abis import FloatAbis
    from ._callstate import CallState
    from ._guestmem import GuestMemory
    from ._x87 import X87Stack

C = _uc.C


class Callbacks:
    """The callback stubs of ``memory``'s runtime page (``max_callbacks`` of
    them): ``add`` assigns one, ``on_stub`` (the stub range's code hook)
    runs its function.  ``abis`` says which float ABI the calling code uses;
    ``state``: the run a failing function stops; ``x87``: i386 float results."""

    def __init__(self, memory: GuestMemory, state: CallState, abis: FloatAbis, x87: X87Stack,
                 max_callbacks: int) -> None:
        self._mem = memory
        self._uc = engine = memory.engine
        self._state = state
        self._abis = abis
        self._x87 = x87
        self._max = max_callbacks
        self._lr_id = engine.reg_id(engine.arch.cc.lr) if engine.arch.cc.lr else -1
        self._stubs: list[dict[str, Callable[[], None]]] = []  # per float ABI, generated lazily
        self._defs: list[tuple[Callable[..., Any], Signature, str]] = []
        self._names: list[str] = []
        me = weakref.ref(self)

        @state.guard
        def on_stub(_h: Any, address: int, _size: int, _ud: Any) -> None:
            cbs = me()
            if cbs is not None:
                cbs.on_stub(address)
        engine.add_hook(C.UC_HOOK_CODE, _uc.HOOK_CODE(on_stub), STUB_BASE, memory.stub_end - 1)

    def add(self, fn: Callable[..., Any], sig: Signature | str, name: str = "") -> int:
        """See ``EmulatedMachine.callback``."""
        if not callable(fn):
            raise SignatureError(f"callback {name!r}: {fn!r} is not callable")
        i = len(self._stubs)
        if i >= self._max:
            raise MemoryAccessError(f"no free callback stub (max_callbacks={self._max})")
        sig = parse_signature(sig)
        self._abis.plan(sig)               # validate now; code is generated at first use
        label = name or getattr(fn, "__name__", "") or f"callback{i}"
        if label == "<lambda>":
            label = f"callback{i}"
        addr = STUB_BASE + i * STUB_SIZE
        self._stubs.append({})
        self._defs.append((fn, sig, label))
        self._names.append(label)
        self._mem.write_raw(addr, self._uc.arch.ret_insn)
        if self._uc.ran:
            self._uc.remove_cache(addr, addr + STUB_SIZE)
        return addr

    def on_stub(self, address: int) -> None:
        """Guest code reached the stub at ``address``: run its function."""
        try:
            i = (address - STUB_BASE) // STUB_SIZE
            if not 0 <= i < len(self._stubs):
                raise ExecutionError(f"guest code called {address:#x}, an unassigned callback stub")
            abis = self._abis
            # mixed ABIs (RISC-V): the calling code's, found by its return address
            abi = abis.at(self._uc.read_word(self._lr_id)) if abis.mixed else abis.current
            cbs = self._stubs[i]
            cb = cbs.get(abi)
            if cb is None:
                fn, sig, label = self._defs[i]
                cb = cbs[abi] = _codegen.build_callback(self._uc, self._x87, abis.plan(sig, abi),
                                                        fn, label)
            cb()
        except BaseException as e:      # noqa: BLE001 - delivered after emu_start returns
            self._state.fail(e)

    def stub_name(self, addr: int) -> str | None:
        """The name of the callback whose stub contains ``addr``, else None."""
        if STUB_BASE <= addr < STUB_BASE + len(self._stubs) * STUB_SIZE:
            return self._names[(addr - STUB_BASE) // STUB_SIZE]
        return None

    def symbolize(self, addr: int) -> str | None:
        """``<callback name>+off`` for an address in a stub, else None."""
        s = self.stub_name(addr)
        if s is None:
            return None
        off = (addr - STUB_BASE) % STUB_SIZE
        return f"<callback {s}>" + (f"+{off:#x}" if off else "")

    def close(self) -> None:
        """Drop the generated code (it holds the functions)."""
        self._stubs = []
