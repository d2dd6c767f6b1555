"""The floating-point control register of each CPU, for runtimes that set
FPU modes around the code they call (IREE flushes denormals to zero around
every dispatch: x86 MXCSR FTZ|DAZ, aarch64 FPCR FZ|FZ16, arm FPSCR FZ;
RISC-V has no such mode).

* :func:`fp_control` gives an architecture's :class:`FpControl`: the
  register, its flush-to-zero bits, and a few instructions of that CPU that
  set bits in it (returning its old value), write it, or set the flush bits
  and fall through (only scratch registers touched, argument registers and
  the stack as they were).
  Natively the bits are IREE's; emulated x86 sets DAZ alone (see
  ``_UNICORN_FZ``).
* :func:`flushing_call_through3` is ``arch.call_through3`` (``int f(fn, a,
  b, c) { return fn(a, b, c); }``) entered with the flush bits set: for
  emulated machines, whose calls each start from the FPU's reset state.
* :func:`host_fpu` reads and writes the calling thread's register on this
  host (natively: two tiny functions in an executable page); the caller
  restores what it changed.
"""
from __future__ import annotations

import threading

from .._support.records import DataRecord
from ..arch import Arch, host
from ..arch import get as get_arch

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class FpControl(DataRecord, frozen=True, slots=True):
    """One CPU's floating-point control register."""
    register: str           # its name (unicorn's and gdb's)
    flush_denormals: int    # the bits flushing denormal inputs and results to zero
    or_code: bytes          # ``uintptr_t f(uintptr_t bits)``: sets ``bits``, returns the old value
    set_code: bytes         # ``void f(uintptr_t value)``: write it
    #: sets ``flush_denormals`` and falls through, under unicorn (x86: DAZ
    #: only, see _UNICORN_FZ)
    flush_prefix: bytes


_X86_FTZ_DAZ = 0x8040
#: _UNICORN_FZ: unicorn's x86 (QEMU 5.0) applies MXCSR.FZ to the x87 unit's
#: float status instead of the SSE unit's: setting it would flush x87
#: results (which the CPU never does; iree-compile's ``generic`` i386 code is
#: x87) and still not SSE ones.  The emulated prefix sets DAZ alone: SSE
#: inputs are flushed, SSE results that underflow stay denormal.
_CONTROLS = {
    # sub rsp,8; stmxcsr [rsp]; mov eax,[rsp]; or [rsp],edi; ldmxcsr [rsp]; add rsp,8; ret
    "x86_64": FpControl("MXCSR", _X86_FTZ_DAZ,
                        bytes.fromhex("4883ec08" "0fae1c24" "8b0424" "093c24" "0fae1424"
                                      "4883c408" "c3"),
                        # sub rsp,8; mov [rsp],edi; ldmxcsr [rsp]; add rsp,8; ret
                        bytes.fromhex("4883ec08" "893c24" "0fae1424" "4883c408" "c3"),
                        # sub rsp,8; stmxcsr [rsp]; or dword [rsp],0x40 (DAZ only, see
                        # _UNICORN_FZ); ldmxcsr [rsp]; add rsp,8
                        bytes.fromhex("4883ec08" "0fae1c24" "810c2440000000" "0fae1424"
                                      "4883c408")),
    # push eax; stmxcsr [esp]; mov eax,[esp]; mov ecx,[esp+8]; or [esp],ecx; ldmxcsr [esp];
    # add esp,4; ret
    "i386": FpControl("MXCSR", _X86_FTZ_DAZ,
                      bytes.fromhex("50" "0fae1c24" "8b0424" "8b4c2408" "090c24" "0fae1424"
                                    "83c404" "c3"),
                      # ldmxcsr [esp+4]; ret
                      bytes.fromhex("0fae542404" "c3"),
                      # push eax; stmxcsr [esp]; or dword [esp],0x40 (DAZ, see _UNICORN_FZ);
                      # ldmxcsr [esp]; pop eax
                      bytes.fromhex("50" "0fae1c24" "810c2440000000" "0fae1424" "58")),
    # mrs x1,fpcr; orr x2,x1,x0; msr fpcr,x2; mov x0,x1; ret  |  msr fpcr,x0; ret
    "aarch64": FpControl("FPCR", 0x1080000,
                         bytes.fromhex("01443bd5" "220000aa" "02441bd5" "e00301aa" "c0035fd6"),
                         bytes.fromhex("00441bd5" "c0035fd6"),
                         # mrs x9,fpcr; mov x10,#0x1080000; orr x9,x9,x10; msr fpcr,x9
                         bytes.fromhex("09443bd5" "0a21a0d2" "29010aaa" "09441bd5")),
    # vmrs r1,fpscr; orr r2,r1,r0; vmsr fpscr,r2; mov r0,r1; bx lr  |  vmsr fpscr,r0; bx lr
    # (ARM state)
    "arm": FpControl("FPSCR", 0x1000000,
                     bytes.fromhex("101af1ee" "002081e1" "102ae1ee" "0100a0e1" "1eff2fe1"),
                     bytes.fromhex("100ae1ee" "1eff2fe1"),
                     # vmrs ip,fpscr; orr ip,ip,#0x1000000; vmsr fpscr,ip
                     bytes.fromhex("10caf1ee" "01c48ce3" "10cae1ee")),
}


def fp_control(arch: Arch | str) -> FpControl | None:
    """``arch``'s floating-point control register; None for a CPU without a
    flush-to-zero mode (RISC-V)."""
    name = arch if isinstance(arch, str) else arch.name
    return _CONTROLS.get(get_arch(name).name)


def flushing_call_through3(arch: Arch | str) -> bytes | None:
    """Machine code of ``int f(fn, a, b, c) { return fn(a, b, c); }`` that
    first sets the flush-to-zero bits of ``arch``'s FP control register
    (left set: an emulated call starts from the reset state again); None
    when the CPU has no such mode."""
    a = get_arch(arch if isinstance(arch, str) else arch.name)
    ctl = _CONTROLS.get(a.name)
    if ctl is None or not a.call_through3:
        return None
    return ctl.flush_prefix + a.call_through3


class HostFpu:
    """The calling thread's FP control register on this host."""

    def __init__(self, control: FpControl, word: int):
        import ctypes
        import mmap
        self.control = control
        page = mmap.PAGESIZE
        code = control.or_code + control.set_code
        self._page = mmap.mmap(-1, page, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        self._page.write(code)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        if libc.mprotect(addr, page, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            raise OSError(ctypes.get_errno(), "mprotect of the FPU control stubs failed")
        uint = ctypes.c_uint64 if word == 8 else ctypes.c_uint32
        #: ``set_bits(bits)``: set ``bits`` in the register; its previous value
        self.set_bits: Any = ctypes.CFUNCTYPE(uint, uint)(addr)
        #: ``set(value)``
        self.set: Any = ctypes.CFUNCTYPE(None, uint)(addr + len(control.or_code))

    def get(self) -> int:
        """The register's value."""
        return int(self.set_bits(0))

    def flush_denormals(self) -> int | None:
        """Set the flush-to-zero bits; the value to :meth:`restore` (None:
        they were set already, nothing changed)."""
        bits = self.control.flush_denormals
        prev = self.set_bits(bits)
        return None if prev | bits == prev else prev

    def restore(self, previous: int | None) -> None:
        """Undo :meth:`flush_denormals` (``previous`` is what it returned)."""
        if previous is not None:
            self.set(previous)


_HOST: list[HostFpu | None] = []
_HOST_LOCK = threading.Lock()


def host_fpu() -> HostFpu | None:
    """The host's :class:`HostFpu` (made on first use); None on a host
    without FP control facts."""
    if not _HOST:
        with _HOST_LOCK:
            if not _HOST:
                h = host()
                ctl = None if h is None else _CONTROLS.get(h.name)
                _HOST.append(None if ctl is None or h is None else HostFpu(ctl, h.word))
    return _HOST[0]


__all__ = ["FpControl", "HostFpu", "flushing_call_through3", "fp_control", "host_fpu"]
