"""The contract between the loader and the machines that run code.

The loader lays an image out and asks a Machine to reserve, write, protect
and call; it never touches ctypes calls or unicorn itself.  ``NativeMachine``
(exec/native.py) maps real host memory; ``EmulatedMachine``
(exec/emulated/) maps unicorn guest memory.  Several modules may share one
machine.
"""
from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable

from ..arch import Arch
from ..signature import Signature

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

PROT_NONE = 0
PROT_READ = 1
PROT_WRITE = 2
PROT_EXEC = 4

_NOTHING_TO_QUIESCE = contextlib.nullcontext()     # reusable: it holds no state


class Machine(abc.ABC):
    arch: Arch
    backend: str          # "native" or "emulated"
    can_execute = True    # False for a memory-only machine (image inspection)

    # --- address space ----------------------------------------------------
    @abc.abstractmethod
    def reserve(self, size: int, align: int) -> int:
        """Reserve ``size`` bytes (a multiple of the page size) aligned to
        ``align``; the range is zero-filled and readable/writable until
        ``protect`` says otherwise.  Returns the base address."""

    def reserve_low(self, size: int, align: int, limit: int) -> int | None:
        """``reserve``, with the whole range below ``limit`` (for code with
        short absolute addresses); None when no such range is free.  By
        default a plain reservation that happens to lie there (an
        emulator's address space starts low)."""
        base = self.reserve(size, align)
        if base + size <= limit:
            return base
        self.release(base, size)
        return None

    @abc.abstractmethod
    def release(self, addr: int, size: int) -> None:
        """Give back a range obtained from ``reserve``."""

    def reuse(self, addr: int, size: int, content: bytes) -> bool:
        """Take back, at ``addr``, a range an earlier ``release_image`` gave
        with the same ``content`` (that very bytes object) and that still
        holds exactly those bytes: True, and the range is reserved again,
        inaccessible (PROT_NONE) until ``protect``; False when the machine
        kept none (the default)."""
        return False

    def release_image(self, addr: int, size: int, content: bytes | None) -> None:
        """``release``, for a range that should hold ``content`` (an image
        the loader keeps); the machine may keep it for ``reuse`` if it
        still does."""
        self.release(addr, size)

    @abc.abstractmethod
    def protect(self, addr: int, size: int, prot: int) -> None:
        """Set PROT_* bits on a page-aligned range inside a reservation."""

    @abc.abstractmethod
    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None: ...

    @abc.abstractmethod
    def read(self, addr: int, size: int) -> bytes: ...

    def host_view(self, addr: int, size: int) -> memoryview | None:
        """A writable byte view of ``[addr, addr+size)`` when that range is
        host memory this process may write directly (a read/write part of a
        reservation); None when the machine's memory is elsewhere (then use
        ``write``).  The loader fills a new reservation through it before
        protecting it; the view must not be used once the range's
        protection changed or it was released."""
        return None

    # --- heap for the host's structs ------------------------------------
    @abc.abstractmethod
    def alloc(self, size: int, align: int = 16) -> int:
        """Zeroed memory the guest code can address; freed by ``free`` or at close."""

    @abc.abstractmethod
    def free(self, addr: int) -> None: ...

    # --- code -------------------------------------------------------------
    @abc.abstractmethod
    def call(self, addr: int, sig: Signature, args: tuple[Any, ...],
             timeout: float | None = None) -> Any:
        """Call guest code at ``addr``.  ``args`` are Python ints, floats or
        numpy arrays (passed by pointer; the callee's writes are visible in the
        array afterwards).  Returns int / float / None per ``sig.ret``."""

    def function(self, addr: int, sig: Signature) -> Callable[..., Any]:
        """A fast callable for repeated calls of one function."""
        return lambda *args, timeout=None: self.call(addr, sig, args, timeout)

    @abc.abstractmethod
    def callback(self, fn: Callable[..., Any], sig: Signature, name: str = "") -> int:
        """Make a host Python function callable from guest code with the C
        signature ``sig``; returns its guest address (kept alive until close)."""

    def symbolize(self, addr: int) -> str:
        """``symbol+0xoff`` for an address, if a module registered with the machine knows it."""
        for mod in list(getattr(self, "_modules", ())):
            s = mod.symbolize(addr)
            if s:
                return s
        return hex(addr)

    @property
    def modules(self) -> list[Any]:
        """The modules living in this machine, in load order."""
        return list(getattr(self, "_modules", ()))

    def attach(self, module: Any) -> None:
        """Remember a module living in this machine (for symbolization)."""
        mods: list[Any] | None = getattr(self, "_modules", None)
        if mods is None:
            mods = []
            self._modules = mods
        mods.append(module)

    def detach(self, module: Any) -> None:
        mods = getattr(self, "_modules", [])
        if module in mods:
            mods.remove(module)

    def symbols_added(self, module: Any, symbols: list[Any]) -> None:
        """A module of this machine named more of its functions
        (``Module.add_symbols``); the native machine tells gdb and perf."""
        return None

    # --- lifetimes ----------------------------------------------------------
    def in_call(self) -> bool:
        """Whether the calling thread is inside a call of this machine (in a
        host callback): closing the machine from there is refused."""
        return False

    def stop_calls(self) -> None:
        """Before closing: make calls running in other threads end soon
        (emulated: cancelled, they raise ``CallTimeout``; native calls cannot
        be interrupted, ``release`` and ``close`` wait for them)."""
        return None

    def quiesced(self) -> contextlib.AbstractContextManager[None]:
        """While this is held, no call of another thread runs in the machine
        and none starts (emulated: running ones are cancelled first); the
        holder may still call.  For tearing down what calls use."""
        return _NOTHING_TO_QUIESCE

    @abc.abstractmethod
    def close(self) -> None: ...
