"""``EmulatedMachine``: the Machine contract on a unicorn CPU.

Guest address space (all arches)::

    0x0      .. 0x10000     never mapped (null-pointer accesses fault)
    0x10000                 sentinel page: calls return here and the emulator
                            stops before executing it (``until`` address)
    0x11000  .. +64 KiB     callback stubs, 16 bytes each (a return
                            instruction); one code hook covers exactly this
                            range and dispatches to the Python function
    0x100000 .. top         reservations (images), heap arenas, the stack,
                            argument buffers -- each followed by an unmapped
                            guard page; the stack has a guard page below it

A call packs its arguments into one register batch (+ one stack write),
runs ``uc_emu_start(entry, until=sentinel)`` and decodes the result; the code
doing this is generated once per signature (``_codegen``).  No per-
instruction or per-block hook is installed unless tracing is switched on.
"""
from __future__ import annotations

import ctypes
import math
import struct
import threading
import time
import weakref
from typing import Any, Callable, Iterable

from ...arch import Arch, get as get_arch
from ...errors import (CallTimeout, ExecutionError, LayoutError, MemoryAccessError,
                       SignatureError)
from ...signature import Signature, parse as parse_signature
from ..base import PROT_EXEC, PROT_READ, PROT_WRITE, Machine
from . import _cc, _codegen, _uc, _watchdog
from ._args import ArgumentMemory, _round_up
from ._memory import AddressSpace, Heap, Region

C = _uc.C
lib = _uc.lib

PAGE = 4096
SENTINEL = 0x10000
STUB_BASE = 0x11000
STUB_SIZE = 16
_LO = 0x100000

# why emulation stopped early (set before uc_emu_stop)
STOP_HOOK = "hook"            # a Python callback raised
STOP_TIMEOUT = "timeout"
STOP_CANCEL = "cancel"
STOP_INTR = "interrupt"       # CPU exception seen by the interrupt hook
STOP_BUDGET = "budget"

_DEFAULT_LIMIT = 4 << 30




class EmulatedMachine(ArgumentMemory, Machine):
    """Runs guest code of ``arch`` under unicorn.

    ``memory_limit``: bytes of guest memory that may be mapped (images, heap,
    stack, argument buffers).  ``stack_size``: the machine's stack (one guard
    page below it).  ``instruction_budget`` / ``timeout``: defaults for every
    call (each call may pass its own).  ``float_abi``: for riscv32/riscv64
    ``"double"`` (ILP32D/LP64D, default), ``"single"`` (ILP32F) or
    ``"soft"``; the loader sets it from the ELF's ``e_flags`` (see
    ``float_abi_from_eflags``).  ``cpu``: a unicorn CPU model name or number.
    ``trace``: a path or file to write an execution trace to (see ``trace``).
    """

    backend = "emulated"

    def __init__(self, arch: "Arch | str", *, memory_limit: int | None = None,
                 stack_size: int = 1 << 20, instruction_budget: int | None = None,
                 timeout: float | None = None, float_abi: str | None = None,
                 cpu: "str | int | None" = None, max_callbacks: int = 4096,
                 trace: Any = None) -> None:
        self.arch = arch = get_arch(arch)
        cc = arch.cc
        self._closed = False
        self._uc = _uc.open_uc(arch, cpu)
        self._h = self._uc._uch
        self._lock = threading.RLock()
        self._running = False
        self._stop: str | None = None
        self._hook_exc: BaseException | None = None
        self._mem_fault: tuple[int, int, int, int] | None = None
        self._intno: int | None = None
        self._ran = False
        self._modules: list[Any] = []
        self._line_info: list[tuple[int, int, Callable[[int], str | None]]] = []
        self._line_owner: dict[int, Any] = {}
        self._tracer: Any = None
        self._plans: dict[tuple[Signature, str], _cc.Plan] = {}
        self._callers: dict[tuple[Signature, str], Callable[..., Any]] = {}
        # RISC-V: float ABI per module image (lo, hi, abi, module); calls and
        # callbacks use the ABI of the code involved when modules disagree
        self._abi_ranges: list[tuple[int, int, str, Any]] = []
        self._mixed_abi = False
        self._ctx_pool: list[Any] = []
        self._regid: dict[str, int] = {}
        self._SENTINEL = SENTINEL
        self._timeout: float | None = None
        self._budget: int | None = None
        self.instruction_budget = instruction_budget
        self.timeout = timeout
        self._float_abi = "hard"
        if float_abi is not None:
            self.float_abi = float_abi

        hi = (1 << 32) - 0x10000 if arch.bits == 32 else 1 << 46
        limit = _DEFAULT_LIMIT if memory_limit is None else int(memory_limit)
        self._space = AddressSpace(_LO, hi, PAGE, limit)

        # runtime page: sentinel + stubs
        self._max_callbacks = max_callbacks
        stub_bytes = _round_up(max_callbacks * STUB_SIZE)
        self._stub_end = STUB_BASE + stub_bytes
        self._map(SENTINEL, PAGE + stub_bytes, C.UC_PROT_READ | C.UC_PROT_EXEC)
        trap = arch.trap_insn or arch.ret_insn
        self._write_raw(SENTINEL, (trap * (PAGE // len(trap) + 1))[:PAGE])
        self._write_raw(STUB_BASE, (trap * (stub_bytes // len(trap) + 1))[:stub_bytes])
        self._stubs: list[dict[str, Callable[[], None]]] = []  # per float ABI, generated lazily
        self._stub_defs: list[tuple[Callable[..., Any], Signature, str]] = []
        self._stub_names: list[str] = []
        self._callback_refs: list[Any] = []

        # stack: [guard page][stack_size bytes]
        stack_size = _round_up(max(stack_size, PAGE))
        start = self._space.find(stack_size + PAGE, 16)
        self._stack = self._space.add(Region(start, stack_size + PAGE, "stack",
                                             mapped=stack_size, map_start=start + PAGE))
        self._map(start + PAGE, stack_size, C.UC_PROT_READ | C.UC_PROT_WRITE)
        self._stack_top = start + PAGE + stack_size
        self._call_sp = self._stack_top

        self._heap = Heap(self._heap_range, self._heap_drop)
        self._arena: Region | None = None
        self._shared: dict[int, tuple[list, Any]] = {}
        from collections import OrderedDict
        self._zc: "OrderedDict[tuple[int, int], Region]" = OrderedDict()
        self._arena_top = 0

        self._sp_id = self._reg(cc.sp)
        self._pc_id = self._reg(cc.pc)
        self._word_buf = ctypes.c_uint64()
        self._word_ref = ctypes.byref(self._word_buf)

        # CPU set-up (FPU on, thread pointer zero), then the pristine context
        for name, value in arch.uc_init:
            self._uc.reg_write(self._reg(name), value)
        self._ctx0 = self._uc.context_save()

        # hooks: before any code is translated, so they apply everywhere
        self._hooks: list[Any] = []
        me = weakref.ref(self)

        def on_stub(_h: Any, address: int, _size: int, _ud: Any) -> None:
            m = me()
            if m is not None:
                m._on_stub(address)

        def on_mem(_h: Any, kind: int, address: int, size: int, value: int, _ud: Any) -> bool:
            m = me()
            if m is not None:
                m._mem_fault = (kind, address, size, value)
            return False

        def on_intr(_h: Any, intno: int, _ud: Any) -> None:
            m = me()
            if m is not None:
                m._intno = intno
                m._stop = STOP_INTR
                lib.uc_emu_stop(m._h)

        self._add_hook(C.UC_HOOK_CODE, _uc.HOOK_CODE(on_stub), STUB_BASE, self._stub_end - 1)
        self._add_hook(C.UC_HOOK_MEM_INVALID, _uc.HOOK_MEM_INVALID(on_mem), 1, 0)
        self._add_hook(C.UC_HOOK_INTR, _uc.HOOK_INTR(on_intr), 1, 0)
        self._count_mode = False     # unicorn's instruction-count hook is installed
        if trace is not None:
            self.trace(trace)

    # ------------------------------------------------------------------ basics
    def _reg(self, name: str) -> int:
        r = self._regid.get(name)
        if r is None:
            r = self._regid[name] = _uc.reg(self.arch, name)
        return r

    def _add_hook(self, kind: int, cfn: Any, begin: int, end: int) -> int:
        hh = ctypes.c_size_t()
        err = lib.uc_hook_add(self._h, ctypes.byref(hh), kind, ctypes.cast(cfn, ctypes.c_void_p),
                              None, ctypes.c_uint64(begin), ctypes.c_uint64(end))
        if err:
            raise ExecutionError(f"unicorn: cannot add hook: {_uc.strerror(err)}")
        self._hooks.append(cfn)
        return hh.value

    def _del_hook(self, handle: int) -> None:
        lib.uc_hook_del(self._h, handle)

    @property
    def float_abi(self) -> str:
        return self._float_abi if self._float_abi != "hard" else self.arch.cc.float_abi

    @float_abi.setter
    def float_abi(self, value: str) -> None:
        _cc._check_abi(self.arch, value)
        if value != self._float_abi:
            self._float_abi = value
            self._callers.clear()

    def set_limits(self, *, timeout: float | None = None, instruction_budget: int | None = None) -> None:
        """Defaults applied to every call that does not pass its own."""
        self.timeout = timeout
        self.instruction_budget = instruction_budget

    @property
    def timeout(self) -> float | None:
        """Default wall-clock limit (seconds) of every call; None: no limit."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        if value is not None and value < 0:
            raise SignatureError("a timeout must not be negative")
        self._timeout = value
        self._limited = bool(self._timeout or getattr(self, "_budget", None))

    @property
    def instruction_budget(self) -> int | None:
        """Default instruction budget of every call; None: unlimited."""
        return self._budget

    @instruction_budget.setter
    def instruction_budget(self, value: int | None) -> None:
        if value is not None and value < 0:
            raise SignatureError("an instruction budget must not be negative")
        self._budget = value
        self._limited = bool(getattr(self, "_timeout", None) or self._budget)

    def _check_open(self) -> None:
        if self._closed:
            from ...errors import ModuleClosedError
            raise ModuleClosedError("the emulated machine was closed")

    @property
    def stack_range(self) -> tuple[int, int]:
        return self._stack.map_start, self._stack_top

    # ---------------------------------------------------------- address space
    def _map(self, addr: int, size: int, perms: int) -> None:
        err = lib.uc_mem_map(self._h, addr, size, perms)
        if err:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: {_uc.strerror(err)}")

    def _unmap(self, addr: int, size: int, exec_ever: bool = True) -> None:
        if exec_ever and self._ran:
            self._uc.ctl_remove_cache(addr, addr + size)
        lib.uc_mem_unmap(self._h, addr, size)

    def _new_region(self, size: int, align: int, kind: str, name: str = "",
                    perms: int = C.UC_PROT_READ | C.UC_PROT_WRITE) -> Region:
        self._check_open()
        if size <= 0:
            raise LayoutError(f"cannot reserve {size} bytes")
        size = _round_up(size)
        if align & (align - 1):
            raise LayoutError(f"alignment {align:#x} is not a power of two")
        start = self._space.find(size, max(align, PAGE))
        region = self._space.add(Region(start, size, kind, name, mapped=size, map_start=start))
        try:
            self._map(start, size, perms)
        except BaseException:
            self._space.remove(start)
            raise
        return region

    def reserve(self, size: int, align: int = PAGE, name: str = "") -> int:
        return self._new_region(size, align, "image", name).start

    def release(self, addr: int, size: int | None = None) -> None:
        r = self._space.at(addr)
        if r is None or r.start != addr or r.kind not in ("image",):
            raise MemoryAccessError(f"release({addr:#x}): not the start of a reservation")
        self._space.remove(addr)
        self._unmap(r.map_start, r.mapped, r.exec_ever)

    def protect(self, addr: int, size: int, prot: int) -> None:
        self._check_open()
        r = self._space.at(addr)
        if addr % PAGE or r is None or addr + size > r.end or r.kind == "runtime":
            raise MemoryAccessError(f"protect({addr:#x}, {size:#x}): not a page-aligned range inside "
                                    f"a reservation")
        if prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC):
            raise MemoryAccessError(f"protect: unknown protection bits {prot:#x}")
        size = _round_up(size)
        err = lib.uc_mem_protect(self._h, addr, size, prot)    # PROT_* == UC_PROT_*
        if err:
            raise MemoryAccessError(f"protect({addr:#x}, {size:#x}): {_uc.strerror(err)}")
        if prot & PROT_EXEC:
            r.exec_ever = True
        elif r.exec_ever and self._ran:
            self._uc.ctl_remove_cache(addr, addr + size)

    def _write_raw(self, addr: int, data: Any) -> None:
        n = len(data)
        if isinstance(data, bytes):
            buf = data
        else:
            mv = memoryview(data).cast("B")
            n = mv.nbytes
            buf = (ctypes.c_char * n).from_buffer(mv) if not mv.readonly else bytes(mv)
        err = lib.uc_mem_write(self._h, addr, buf, n)
        if err:
            raise MemoryAccessError(f"cannot write {n} bytes at {addr:#x}: "
                                    f"{self._where(addr, n)}")

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        self._check_open()
        self._write_raw(addr, data)
        if self._ran:
            r = self._space.at(addr)
            if r is not None and r.exec_ever:
                self._uc.ctl_remove_cache(addr, addr + max(len(data), 1))

    def read(self, addr: int, size: int) -> bytes:
        self._check_open()
        if size < 0:
            raise MemoryAccessError(f"cannot read {size} bytes")
        buf = ctypes.create_string_buffer(size)
        err = lib.uc_mem_read(self._h, addr, buf, size)
        if err:
            raise MemoryAccessError(f"cannot read {size} bytes at {addr:#x}: {self._where(addr, size)}")
        return buf.raw

    def _try_read(self, addr: int, size: int) -> bytes | None:
        if addr < 0 or addr + size > 1 << self.arch.bits:
            return None
        buf = ctypes.create_string_buffer(size)
        return None if lib.uc_mem_read(self._h, addr, buf, size) else buf.raw

    def _read_word(self, addr: int) -> int | None:
        b = self._try_read(addr, self.arch.word)
        return None if b is None else int.from_bytes(b, "little")

    def _where(self, addr: int, size: int = 1) -> str:
        """Describe what lives at ``addr`` (for error messages and fault reports)."""
        if addr < SENTINEL:
            return "unmapped (null-pointer region)"
        if SENTINEL <= addr < self._stub_end:
            return "runtime page (return sentinel / callback stubs)"
        st = self._stack
        if st.start <= addr < st.map_start:
            return f"stack guard page below the stack [{st.map_start:#x}, {self._stack_top:#x}) " \
                   f"(stack overflow?)"
        r = self._space.at(addr)
        if r is not None and r.kind == "zerocopy" and not r.extra[0]:  # type: ignore[index]
            return (f"a numpy buffer passed to an earlier call [{r.start:#x}, {r.end:#x}) "
                    f"(closed after that call)")
        if r is not None:
            if addr + size > r.end:
                return f"runs past the end of {r.describe()}"
            return f"in {r.describe()}"
        below, above = self._space.near(addr)
        parts = []
        if below is not None:
            parts.append(f"{addr - below.end:#x} bytes after {below.describe()}")
        if above is not None:
            parts.append(f"{above.start - addr:#x} bytes before {above.describe()}")
        return "unmapped" + (" (" + "; ".join(parts) + ")" if parts else "")

    # ----------------------------------------------------------------- heap
    def _heap_range(self, size: int, align: int) -> int:
        return self._new_region(size, align, "heap").start

    def _heap_drop(self, addr: int) -> None:
        r = self._space.remove(addr)
        self._unmap(r.map_start, r.mapped, False)

    def alloc(self, size: int, align: int = 16) -> int:
        self._check_open()
        addr = self._heap.alloc(int(size), int(align))
        n = self._heap.size_of(addr) or 0
        if n and n < Heap.BIG:
            self._write_raw(addr, bytes(n))      # arena memory may be reused: zero it
        return addr

    def free(self, addr: int) -> None:
        self._check_open()
        self._heap.free(addr)

    # ----------------------------------------------------------------- calls
    def plan(self, sig: "Signature | str", float_abi: str | None = None) -> _cc.Plan:
        """Where arguments and result of ``sig`` live (see ``_cc``)."""
        sig = parse_signature(sig)
        abi = float_abi or self._float_abi
        p = self._plans.get((sig, abi))
        if p is None:
            p = self._plans[(sig, abi)] = _cc.plan(self.arch, sig, abi)
        return p

    def _abi_at(self, addr: int) -> str:
        for lo, hi, abi, _m in self._abi_ranges:
            if lo <= addr < hi:
                return abi
        return self._float_abi

    def call(self, addr: int, sig: "Signature | str", args: tuple[Any, ...] = (),
             timeout: float | None = None, budget: int | None = None) -> Any:
        self._check_open()
        if not isinstance(sig, Signature):
            sig = parse_signature(sig)
        abi = self._abi_at(addr) if self._mixed_abi else self._float_abi
        f = self._callers.get((sig, abi))
        if f is None:
            self._ran = True       # from now on host writes to code invalidate translations
            f = self._callers[(sig, abi)] = _codegen.build_caller(
                self, self.plan(sig, abi), None, f"call {sig}")
        return f(addr, tuple(args), timeout, budget)

    def function(self, addr: int, sig: "Signature | str", name: str = "") -> Callable[..., Any]:
        """A fast callable ``f(*args, timeout=None, budget=None)`` for ``addr``."""
        self._check_open()
        sig = parse_signature(sig)
        self._ran = True
        label = name or self.symbolize(addr)
        if not label.isidentifier():
            label = f"guest_{addr:x}"
        return _codegen.build_caller(self, self.plan(sig, self._abi_at(addr)), addr, label)

    def _run_limited(self, entry: int, timeout: float | None, budget: int | None) -> int:
        count = budget if budget is not None else (self.instruction_budget or 0)
        t = timeout if timeout is not None else self.timeout
        if count < 0 or (t is not None and t < 0):
            raise SignatureError("timeout and instruction budget must not be negative")
        if count and not self._count_mode:
            # unicorn adds its counting hook without flushing the translation
            # cache: blocks translated before would never be counted
            self._uc.ctl_flush_tb()
        self._count_mode = bool(count)
        token = _watchdog.arm(t, self._fire_timeout) if t else None
        try:
            err = lib.uc_emu_start(self._h, entry, SENTINEL, 0, count)
        finally:
            if token is not None:
                _watchdog.disarm(token)
        if not err and self._stop is None and count and self._pc() != SENTINEL:
            self._stop = STOP_BUDGET
        return err

    def _fire_timeout(self) -> None:
        self._stop = STOP_TIMEOUT
        lib.uc_emu_stop(self._h)

    def cancel(self, wait: float = 1.0) -> bool:
        """Stop the call running in another thread (it raises ``CallTimeout``).
        Returns False if no call was running."""
        if not self._running:
            return False
        self._stop = STOP_CANCEL
        end = time.monotonic() + wait
        while True:
            lib.uc_emu_stop(self._h)
            if not self._running or time.monotonic() > end:
                return True
            time.sleep(0.001)

    def _pc(self) -> int:
        lib.uc_reg_read(self._h, self._pc_id, self._word_ref)
        v = self._word_buf.value
        return v & 0xFFFFFFFF if self.arch.bits == 32 else v

    def _reset(self) -> None:
        """Back to the pristine CPU state after a call stopped abnormally."""
        lib.uc_context_restore(self._h, self._ctx0.context)
        self._mem_fault = None
        self._intno = None

    def _abnormal(self, err: int, entry: int, timeout: float | None, budget: int | None) -> None:
        """Emulation stopped with an error or early; raise, or return if the
        call completed after all (a stop request that came too late)."""
        self._ran = True
        stop, self._stop = self._stop, None
        if stop == STOP_HOOK:
            exc, self._hook_exc = self._hook_exc, None
            self._reset()
            assert exc is not None
            raise exc
        pc = self._pc()
        if not err and pc == SENTINEL and stop != STOP_INTR:
            return
        where = self.symbolize(pc)
        target = self.symbolize(entry)
        if not err and stop == STOP_TIMEOUT:
            t = timeout if timeout is not None else self.timeout
            self._reset()
            raise CallTimeout(f"call to {target} timed out after {t} s (stopped at {where}); "
                              f"the machine was reset and is usable")
        if not err and stop == STOP_CANCEL:
            self._reset()
            raise CallTimeout(f"call to {target} was cancelled (stopped at {where})")
        if not err and stop == STOP_BUDGET:
            n = budget if budget is not None else self.instruction_budget
            self._reset()
            raise CallTimeout(f"call to {target} exhausted its instruction budget of {n} "
                              f"(stopped at {where})")
        if not err and stop is None:
            # a stop request meant for another call (cancel race): carry on
            self._running = True
            self._count_mode = False
            try:
                err2 = lib.uc_emu_start(self._h, pc, SENTINEL, 0, 0)
            finally:
                self._running = False
            if err2 or self._stop is not None:
                self._abnormal(err2, entry, timeout, budget)
            return
        from ..faults import build_fault
        fault = build_fault(self, err, stop, pc, entry)
        self._reset()
        raise fault

    def _nested(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: Any, budget: Any) -> Any:
        """A call made by a host callback while guest code is running: run it
        on the guest stack below the caller's frame, then restore the CPU."""
        self._check_open()
        ctx = self._ctx_pool.pop() if self._ctx_pool else self._uc.context_save()
        lib.uc_context_save(self._h, ctx.context)
        lib.uc_reg_read(self._h, self._sp_id, self._word_ref)
        sp = self._word_buf.value
        saved_sp = self._call_sp
        self._call_sp = (sp - self.arch.cc.red_zone - 64) & -16
        if self._call_sp <= self._stack.map_start + 256:
            raise ExecutionError("guest stack exhausted by nested calls")
        self._running = False
        try:
            return fn(*args, timeout=timeout, budget=budget)
        finally:
            self._running = True
            self._call_sp = saved_sp
            lib.uc_context_restore(self._h, ctx.context)
            self._ctx_pool.append(ctx)

    def _bad_args(self, plan: _cc.Plan, args: tuple[Any, ...], err: BaseException | None) -> Exception:
        if isinstance(err, (SignatureError, MemoryAccessError)):
            return err
        return _codegen.bad_args(plan, args, err)

    def _bad_result(self, plan: _cc.Plan, name: str, res: Any) -> Exception:
        return _codegen.bad_result(plan, name, res)

    # --- i386: float results live on the x87 stack
    def _x87_pop(self) -> float:
        lib.uc_reg_read(self._h, self._reg("FPSW"), self._word_ref)
        top = (self._word_buf.value >> 11) & 7
        buf = ctypes.create_string_buffer(16)
        lib.uc_reg_read(self._h, self._reg(f"FP{top}"), buf)
        mant, exp = struct.unpack_from("<QH", buf)
        return f80_to_float(mant, exp)

    def _x87_push(self, value: float) -> None:
        lib.uc_reg_read(self._h, self._reg("FPSW"), self._word_ref)
        sw = self._word_buf.value & 0xFFFF
        top = (((sw >> 11) & 7) - 1) & 7
        buf = ctypes.create_string_buffer(16)
        struct.pack_into("<QH", buf, 0, *float_to_f80(value))
        lib.uc_reg_write(self._h, self._reg(f"FP{top}"), buf)
        self._word_buf.value = (sw & ~0x3800) | (top << 11)
        lib.uc_reg_write(self._h, self._reg("FPSW"), self._word_ref)
        lib.uc_reg_read(self._h, self._reg("FPTAG"), self._word_ref)
        self._word_buf.value = (self._word_buf.value & 0xFFFF) & ~(3 << (2 * top))
        lib.uc_reg_write(self._h, self._reg("FPTAG"), self._word_ref)

    # ------------------------------------------------------------- callbacks
    def callback(self, fn: Callable[..., Any], sig: "Signature | str", name: str = "") -> int:
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
        if self._ran:
            self._uc.ctl_remove_cache(addr, addr + STUB_SIZE)
        return addr

    def _on_stub(self, address: int) -> None:
        try:
            i = (address - STUB_BASE) // STUB_SIZE
            if not 0 <= i < len(self._stubs):
                raise ExecutionError(f"guest code called {address:#x}, an unassigned callback stub")
            if self._mixed_abi:       # the calling code's float ABI, found by its return address
                lib.uc_reg_read(self._h, self._reg(self.arch.cc.lr), self._word_ref)
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

    # --------------------------------------------------------- modules
    def attach(self, module: Any) -> None:
        """Remember a module: symbols for reports; for RISC-V its float ABI
        (ELF ``e_flags``); its DWARF line table, if any, for fault reports
        (read lazily, at the first fault)."""
        elf = getattr(module, "elf", None)
        e_flags = getattr(elf, "e_flags", None)
        image = getattr(module, "_image", None)
        if e_flags is not None and self.arch.name.startswith("riscv"):
            abi = float_abi_from_eflags(self.arch, e_flags)
            if not self._abi_ranges:
                self.float_abi = abi        # the default for code outside any module
            if image is not None:
                lo = getattr(image, "base", 0)
                self._abi_ranges.append((lo, lo + getattr(image, "size", 0), abi, module))
            else:
                self._abi_ranges.append((0, 0, abi, module))
            self._mixed_abi = len({r[2] for r in self._abi_ranges} | {self.float_abi}) > 1
        super().attach(module)
        data = getattr(elf, "data", None)
        if image is not None and data is not None and _has_debug_line(data):
            bias = getattr(image, "bias", 0)
            base = getattr(image, "base", bias)
            size = getattr(image, "size", 1 << 40)
            from ..faults import DwarfLines
            self._line_info.append((base, base + size, DwarfLines(data, bias)))
            self._line_owner[id(self._line_info[-1][2])] = module

    def detach(self, module: Any) -> None:
        super().detach(module)
        self._abi_ranges = [r for r in self._abi_ranges if r[3] is not module]
        self._mixed_abi = len({r[2] for r in self._abi_ranges} | {self.float_abi}) > 1
        self._line_info = [li for li in self._line_info
                           if self._line_owner.get(id(li[2])) is not module]

    # --------------------------------------------------- debugging support
    def add_line_info(self, lo: int, hi: int, resolver: Callable[[int], "str | None"]) -> None:
        """Register ``resolver(addr) -> "file:line"`` for guest addresses in [lo, hi)."""
        self._line_info.append((lo, hi, resolver))

    def add_debug_info(self, bias: int, elf: Any, lo: int = 0, hi: int = 1 << 64) -> None:
        """Use the DWARF ``.debug_line`` of ``elf`` (bytes or a path), loaded at
        ``bias``, for file:line in fault reports (parsed lazily, on first fault)."""
        from ..faults import DwarfLines
        self.add_line_info(lo, hi, DwarfLines(elf, bias))

    def source_line(self, addr: int) -> str | None:
        for lo, hi, resolver in self._line_info:
            if lo <= addr < hi:
                try:
                    s = resolver(addr)
                except Exception:   # noqa: BLE001 - debug info is best effort
                    s = None
                if s:
                    return s
        for mod in list(self._modules):
            f = getattr(mod, "_source_line", None)
            if f is not None:
                try:
                    s = f(addr)
                except Exception:   # noqa: BLE001
                    s = None
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

    def trace(self, target: Any = None, *, mode: str = "block") -> None:
        """Start writing an execution trace to ``target`` (a path or a text
        file): every basic block executed, with its disassembly (``mode=
        "block"``) or its address only (``"compact"``).  ``trace(None)`` stops.
        Costs nothing while off: the block hook exists only while tracing."""
        from ..trace import ExecutionTracer
        if self._tracer is not None:
            self._tracer.close()
            self._tracer = None
        if target is not None:
            self._tracer = ExecutionTracer(self, target, mode)

    # ------------------------------------------------------------------ close
    def close(self) -> None:
        if self._closed:
            return
        if self._running:
            if self._lock._is_owned():  # type: ignore[attr-defined]
                raise ExecutionError("cannot close an emulated machine from inside one of its "
                                     "own calls (a host callback)")
            self.cancel(wait=5.0)
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._tracer is not None:
            try:
                self._tracer.close()
            finally:
                self._tracer = None
        self._closed = True
        uc = self._uc
        self._stubs = []
        self._callers.clear()
        fin = getattr(uc, "_Uc__finalizer", None)
        if fin is not None:
            fin()
        self._uc = None  # type: ignore[assignment]

    def __enter__(self) -> "EmulatedMachine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._space.used:#x} bytes mapped"
        return f"<EmulatedMachine {self.arch.name} ({state})>"


# --- helpers -------------------------------------------------------------------
def _has_debug_line(data: Any) -> bool:
    """Cheap check (no parsing): does the ELF image contain a .debug_line name?"""
    try:
        return b".debug_line" in bytes(data[-(1 << 20):])
    except Exception:   # noqa: BLE001
        return False


def float_abi_from_eflags(arch: "Arch | str", e_flags: int) -> str:
    """The float ABI a RISC-V ELF declares in ``e_flags`` (EF_RISCV_FLOAT_ABI);
    "hard" for other architectures."""
    arch = get_arch(arch)
    if not arch.name.startswith("riscv"):
        return "hard"
    abi = (e_flags >> 1) & 3
    if abi == 3:
        raise SignatureError("RISC-V quad-float ABI (EF_RISCV_FLOAT_ABI_QUAD) is not supported")
    return ("soft", "single", "double")[abi]


def f80_to_float(mant: int, exp: int) -> float:
    sign = -1.0 if exp & 0x8000 else 1.0
    e = exp & 0x7FFF
    if e == 0x7FFF:
        return math.copysign(math.inf if (mant & ((1 << 63) - 1)) == 0 else math.nan, sign)
    if mant == 0:
        return math.copysign(0.0, sign)
    try:
        return sign * math.ldexp(float(mant), e - 16383 - 63)
    except OverflowError:
        return math.copysign(math.inf, sign)


def float_to_f80(x: float) -> tuple[int, int]:
    x = float(x)
    if x != x:
        return 0xC000000000000000, 0x7FFF
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if x == 0.0:
        return 0, sign
    if math.isinf(x):
        return 1 << 63, sign | 0x7FFF
    mant, exp = math.frexp(abs(x))
    return int(mant * (1 << 64)), sign | (exp - 1 + 16383)


# host memory that can be mapped zero-copy ----------------------------------------
