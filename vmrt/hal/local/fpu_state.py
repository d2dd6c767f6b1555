"""The FPU state dispatch code runs in, as IREE sets it: denormals flushed
to zero.

IREE's local-sync command buffer and each local-task worker push an FPU
state with ``IREE_FPU_STATE_FLAG_FLUSH_DENORMALS_TO_ZERO`` around the
dispatch work they do on their thread and pop it afterwards: x86 MXCSR |=
0x8040 (FTZ, DAZ), aarch64 FPCR |= 0x1080000 (FZ, FZ16), arm FPSCR |=
0x1000000 (FZ), nothing on RISC-V (``elfkit.exec.host_fpu`` has the facts).
vmrt does the same:

* native code (and vmvx kernels, which run on the host): :func:`push` sets
  the calling thread's control register before a range of workgroups and
  :func:`pop` restores it after, on every thread that runs workgroups, so
  the Python code around a dispatch never sees a changed FPU;
* emulated code: :func:`dispatch_entry` enters each workgroup's call
  through a stub of the guest's CPU that sets the guest's register first
  (an emulated call starts from the FPU's reset state, so nothing is left
  to restore).

What this changes is visible only in float results that are or pass
through denormals (|x| < 2**-126 for f32): those become zero, as under
iree-run-module.  Code that never sees one (x87 code, what iree-compile
emits for a ``generic`` i386) is unaffected, as on the real CPU.
"""
from __future__ import annotations

import weakref
from functools import partial

from elfkit.exec import PROT_EXEC, PROT_READ, flushing_call_through3, host_fpu

from .guest import sig

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_STUBS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _no_fpu(bits: int) -> int:
    return 0


#: the host's set_bits(bits) -> previous value, set(value) and flush bits
#: (bound at the first dispatch: a start-up without dispatches pays nothing)
_set_bits: Any = None
_set: Any = None
_bits = 0


def _bind() -> None:
    global _set_bits, _set, _bits
    fpu = host_fpu()
    if fpu is None:
        _set, _bits, _set_bits = _no_fpu, 0, _no_fpu
    else:
        _set, _bits, _set_bits = fpu.set, fpu.control.flush_denormals, fpu.set_bits


def push() -> int | None:
    """Flush denormals to zero on the calling thread (natively); the token
    :func:`pop` restores the previous state with (None: nothing changed)."""
    if _set_bits is None:
        _bind()
    prev = _set_bits(_bits)
    return None if prev | _bits == prev else prev


def pop(token: int | None) -> None:
    """Restore what :func:`push` changed (``token`` is what it returned)."""
    if token is not None:
        _set(token)


def flush_bits() -> int:
    """The control-register bits :func:`push` sets (0: none on this host),
    for native code that sets them itself (:mod:`~vmrt.hal.local.batch`)."""
    if _set_bits is None:
        _bind()
    return _bits


def keep_denormals() -> None:
    """Clear the flush bits on the calling thread.  A new thread starts with
    the FPU state of the thread that created it, which is a dispatch's when
    that thread was running one: a worker started then would flush
    denormals in everything it runs for good (and its :func:`push` and
    :func:`pop` would change nothing)."""
    if _set_bits is None:
        _bind()
    prev = _set_bits(_bits)
    _set(prev & ~_bits)


def dispatch_entry(machine: Any, address: int, word: int) -> Any:
    """The callable of the dispatch function at ``address`` in ``machine``
    (``f(environment, dispatch_state, workgroup_state, **call options)``):
    for an emulated machine whose CPU has a flush-to-zero mode, a call
    through the machine's flushing stub (made once per machine)."""
    w = f"u{word * 8}"
    code = None if machine.backend == "native" else flushing_call_through3(machine.arch)
    if code is None:
        return machine.function(address, sig(f"i32({w},{w},{w})"))
    stub = _STUBS.get(machine)
    if stub is None:
        page = machine.arch.page_size
        stub = machine.reserve(page, page)
        machine.write(stub, code)
        machine.protect(stub, page, PROT_READ | PROT_EXEC)
        _STUBS[machine] = stub
    return partial(machine.function(stub, sig(f"i32({w},{w},{w},{w})")), address)


__all__ = ["dispatch_entry", "flush_bits", "pop", "push"]
