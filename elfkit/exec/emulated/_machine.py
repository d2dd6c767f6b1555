"""``EmulatedMachine``: the Machine contract on a unicorn CPU.

The guest address space is laid out as ``_layout`` describes.  A call packs
its arguments into one register batch (+ one stack write), runs
``uc_emu_start(entry, until=sentinel)`` and decodes the result; the code
doing this is generated once per signature (``_codegen``).  No per-
instruction or per-block hook is installed unless tracing is switched on.

The class is assembled from mixins, one file per concern: ``_args``
(buffer arguments), ``_runner`` (calls, limits, cancel, abnormal stops),
``_callbacks`` (host functions called by guest code), ``_debug`` (line
information, registers, tracing) and ``_x87`` (i386 float results).  This
file keeps construction, the address space, the heap and closing.
"""
from __future__ import annotations

import contextlib
import ctypes
import mmap
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator

from ...arch import Arch
from ...arch import get as get_arch
from ...errors import ExecutionError, LayoutError, MemoryAccessError, ModuleClosedError
from ...signature import Signature
from ..base import PROT_EXEC, PROT_READ, PROT_WRITE, Machine
from . import _cc, _uc
from ._args import ArgumentMemory
from ._callbacks import Callbacks
from ._debug import DebugSupport
from ._layout import DEFAULT_MEMORY_LIMIT, LOW, PAGE, SENTINEL, STUB_BASE, STUB_SIZE, round_up
from ._memory import AddressSpace, Heap, Region
from ._runner import STOP_INTR, CallRunner
from ._spans import GuardedSpans, SpanPool
from ._x87 import X87Stack

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

C = _uc.C
lib = _uc.lib

#: the floating-point status register and its sticky "inexact" bit, per arch
#: (x86: QEMU's SSE status keeps its flags for the engine's life already)
#: (the register calls reset, see _codegen.call_reset)
_INEXACT_FLAG = {"aarch64": ("FPSR", 1 << 4), "arm": ("FPSCR", 1 << 4),
                 "riscv32": ("FCSR", 1), "riscv64": ("FCSR", 1)}


class EmulatedMachine(ArgumentMemory, CallRunner, Callbacks, DebugSupport, GuardedSpans, Machine):
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

    def __init__(self, arch: Arch | str, *, memory_limit: int | None = None,
                 stack_size: int = 1 << 20, instruction_budget: int | None = None,
                 timeout: float | None = None, float_abi: str | None = None,
                 cpu: str | int | None = None, max_callbacks: int = 4096,
                 trace: Any = None) -> None:
        self.arch = arch = get_arch(arch)
        self._closed = False
        self._uc = _uc.Engine(arch, cpu, page_size=PAGE)
        self._h = self._uc.handle
        self._lock = threading.RLock()        # held by a call for its whole duration
        self._slock = threading.Lock()        # start/end of a run vs. stop requests
        self._gen = 0                         # number of the latest call
        self._active: list[int] = []          # calls in progress (outer first)
        self._running = False
        self._stop: str | None = None
        self._hook_exc: BaseException | None = None
        self._mem_fault: tuple[int, int, int, int] | None = None
        self._intno: int | None = None
        self._modules: list[Any] = []
        self._line_info: list[tuple[int, int, Callable[[int], str | None]]] = []
        self._line_owner: dict[int, Any] = {}
        self._tracer: Any = None
        self._trace_hook = 0
        self._gdb: Any = None
        self._gdb_hooks: list[int] = []
        self._plans: dict[tuple[Signature, str], _cc.Plan] = {}
        # (signature, float ABI, bound): callers of call() (bound False) and the
        # prototypes function() copies for each entry address (bound True)
        self._callers: dict[tuple[Signature, str, bool], Callable[..., Any]] = {}
        # RISC-V: float ABI per module image (lo, hi, abi, module); calls and
        # callbacks use the ABI of the code involved when modules disagree
        self._abi_ranges: list[tuple[int, int, str, Any]] = []
        self._mixed_abi = False
        self._ctx_pool: list[Any] = []
        self._x87 = X87Stack(self._uc)
        self._timeout: float | None = None
        self._budget: int | None = None
        self.instruction_budget = instruction_budget
        self.timeout = timeout
        self._float_abi = "hard"
        if float_abi is not None:
            self.float_abi = float_abi
        hi = (1 << 32) - 0x10000 if arch.bits == 32 else 1 << 46
        limit = DEFAULT_MEMORY_LIMIT if memory_limit is None else int(memory_limit)
        self._space = AddressSpace(LOW, hi, PAGE, limit)
        #: released ``reserve_guarded`` spans kept for reuse (see ``_spans``)
        self.idle_spans = SpanPool(limit)
        self._init_runtime_page(max_callbacks)
        self._init_stack(stack_size)
        self._heap = Heap(self._heap_range, self._heap_drop)
        self._arena: Region | None = None
        self._shared: dict[int, tuple[list, Any]] = {}
        self._zc: OrderedDict[tuple[int, int, bool, bool], Region] = OrderedDict()
        self._arena_top = 0
        self._sp_id = self._reg(arch.cc.sp)
        self._pc_id = self._reg(arch.cc.pc)
        self._word_buf = ctypes.c_uint64()
        self._word_ref = ctypes.byref(self._word_buf)
        # CPU set-up (FPU on, thread pointer zero), then the pristine context
        for name, value in arch.uc_init:
            self._uc.reg_write(self._reg(name), name, value)
        self._ctx0 = self._uc.context_save()
        #: (register, bit) of the FP flag ``raise_inexact_flag`` raised, or None
        self.inexact_flag: tuple[str, int] | None = None
        self._init_hooks()
        self._count_mode = False     # unicorn's instruction-count hook is installed
        if trace is not None:
            self.trace(trace)
        self._serve_gdb_if_asked()

    def _init_runtime_page(self, max_callbacks: int) -> None:
        """The sentinel page and the callback stubs, all trap instructions."""
        self._max_callbacks = max_callbacks
        stub_bytes = round_up(max_callbacks * STUB_SIZE)
        self._stub_end = STUB_BASE + stub_bytes
        self._map(SENTINEL, PAGE + stub_bytes, C.UC_PROT_EXEC)
        trap = self.arch.trap_insn or self.arch.ret_insn
        self._write_raw(SENTINEL, (trap * (PAGE // len(trap) + 1))[:PAGE])
        self._write_raw(STUB_BASE, (trap * (stub_bytes // len(trap) + 1))[:stub_bytes])
        self._stubs: list[dict[str, Callable[[], None]]] = []  # per float ABI, generated lazily
        self._stub_defs: list[tuple[Callable[..., Any], Signature, str]] = []
        self._stub_names: list[str] = []
        self._callback_refs: list[Any] = []

    def _init_stack(self, stack_size: int) -> None:
        """The stack: [guard page][stack_size bytes]."""
        stack_size = round_up(max(stack_size, PAGE))
        start = self._space.find(stack_size + PAGE, 16)
        self._stack = self._space.add(Region(start, stack_size + PAGE, "stack",
                                             mapped=stack_size, map_start=start + PAGE))
        self._map(start + PAGE, stack_size, C.UC_PROT_READ | C.UC_PROT_WRITE)
        self._stack_top = start + PAGE + stack_size
        self._call_sp = self._stack_top

    def _init_hooks(self) -> None:
        """Stub dispatch, invalid memory and CPU exceptions: added before any
        code is translated, so they apply everywhere.  The hooks hold the
        machine weakly."""
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

    def raise_inexact_flag(self) -> None:
        """Set the FPU's sticky *inexact* exception flag, now and in the state
        an abnormal stop resets the CPU to.

        unicorn (QEMU's softfloat) computes float add, sub, mul, div, fma
        and sqrt with the host FPU only once *inexact* is already raised
        (it cannot tell whether a host result was exact), and in software
        otherwise, about twice as slow overall; code whose arithmetic stays
        exact (integer-valued data) never raises it.  Results are bit-identical
        either way; only guest code that reads the FP exception flags without
        clearing them first can tell.  vmrt does this for dispatch libraries
        (IREE's generated code never reads the FP flags)."""
        flag = _INEXACT_FLAG.get(self.arch.name)
        with self._lock:
            self._check_open()
            if flag is None or self.inexact_flag is not None:
                return
            if self.in_call():
                raise ExecutionError("raise_inexact_flag: not from inside a call")
            reg, bit = flag
            lib.uc_context_restore(self._h, self._ctx0.context)
            self._word_buf.value = 0
            lib.uc_reg_read(self._h, self._reg(reg), self._word_ref)
            self._word_buf.value |= bit
            lib.uc_reg_write(self._h, self._reg(reg), self._word_ref)
            lib.uc_context_save(self._h, self._ctx0.context)
            self.inexact_flag = flag
            self._callers.clear()

    # ------------------------------------------------------------------ basics
    def _reg(self, name: str) -> int:
        return self._uc.reg_id(name)

    def _add_hook(self, kind: int, cfn: Any, begin: int, end: int) -> int:
        return self._uc.add_hook(kind, cfn, begin, end)

    def _del_hook(self, handle: int) -> None:
        self._uc.del_hook(handle)

    @property
    def float_abi(self) -> str:
        return self._float_abi if self._float_abi != "hard" else self.arch.cc.float_abi

    @float_abi.setter
    def float_abi(self, value: str) -> None:
        _cc.check_abi(self.arch, value)
        if value != self._float_abi:
            self._float_abi = value
            self._callers.clear()

    def _check_open(self) -> None:
        if self._closed:
            raise ModuleClosedError("the emulated machine was closed")

    @property
    def stack_range(self) -> tuple[int, int]:
        """[low, high) of the machine's stack (without its guard page)."""
        return self._stack.map_start, self._stack_top

    @property
    def page_size(self) -> int:
        """The emulator's guest page size (4 KiB on every architecture): the
        granularity of its mappings, protections and TLB entries."""
        self._check_open()
        return self._uc.page_size

    # ---------------------------------------------------------- address space
    def _map(self, addr: int, size: int, perms: int) -> None:
        err = lib.uc_mem_map(self._h, addr, size, perms)
        if err:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: {_uc.strerror(err)}")

    def _unmap(self, addr: int, size: int, exec_ever: bool = True) -> None:
        if exec_ever and self._uc.ran:
            self._uc.remove_cache(addr, addr + size)
        lib.uc_mem_unmap(self._h, addr, size)

    def _new_region(self, size: int, align: int, kind: str, name: str = "",
                    perms: int = C.UC_PROT_READ | C.UC_PROT_WRITE,
                    host: bool = False) -> Region:
        self._check_open()
        if size <= 0:
            raise LayoutError(f"cannot reserve {size} bytes")
        size = round_up(size)
        if align & (align - 1):
            raise LayoutError(f"alignment {align:#x} is not a power of two")
        start = self._space.find(size, max(align, PAGE))
        region = self._space.add(Region(start, size, kind, name, mapped=size, map_start=start))
        try:
            if host:
                region.extra = self._map_host(start, size, perms)
            else:
                self._map(start, size, perms)
        except BaseException:
            self._space.remove(start)
            raise
        return region

    def _map_host(self, addr: int, size: int, perms: int) -> Any:
        """Map ``size`` bytes at ``addr`` backed by fresh zeroed host pages
        (``uc_mem_map_ptr``); returns the host buffer, to be kept alive for
        as long as the mapping exists.  unicorn splits such a mapping without
        copying its contents when ``protect`` gives part of it other rights
        (it copies the whole of a mapping it allocated itself)."""
        try:
            buf = (ctypes.c_char * size).from_buffer(mmap.mmap(-1, size))
        except OSError as e:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: no host memory "
                                    f"({e.strerror or e})") from None
        err = lib.uc_mem_map_ptr(self._h, addr, size, perms, ctypes.addressof(buf))
        if err:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: "
                                    f"{_uc.strerror(err)}")
        return buf

    # Memory operations from the host take the call lock: they wait while a
    # call runs in another thread (unmapping under running guest code would
    # crash unicorn), and run at once from a host callback of the call.
    def reserve(self, size: int, align: int = PAGE, name: str = "") -> int:
        """Reserve and map ``size`` bytes for a module image; its segments
        then get their own rights through ``protect``."""
        with self._lock:
            try:
                return self._new_region(size, align, "image", name, host=True).start
            except (LayoutError, MemoryAccessError):
                if not self._drain_spans():
                    raise
            return self._new_region(size, align, "image", name, host=True).start

    def release(self, addr: int, size: int | None = None) -> None:
        with self._lock:
            self._release(addr)

    def _release(self, addr: int) -> None:
        self._check_open()
        r = self._space.at(addr)
        if r is None or r.start != addr or r.kind not in ("image", "span"):
            raise MemoryAccessError(f"release({addr:#x}): not the start of a reservation")
        if r.kind == "span" and self._keep_span(r):
            return
        self._space.remove(addr)
        self._unmap(r.map_start, r.mapped, r.exec_ever)
        r.extra = None          # the host pages of a reserve()d image, now unmapped

    def protect(self, addr: int, size: int, prot: int) -> None:
        with self._lock:
            self._protect(addr, size, prot)

    def _protect(self, addr: int, size: int, prot: int) -> None:
        self._check_open()
        r = self._space.at(addr)
        if (addr % PAGE or r is None or addr + size > r.end
                or r.kind in ("runtime", "released span")):
            raise MemoryAccessError(f"protect({addr:#x}, {size:#x}): not a page-aligned range "
                                    "inside a reservation")
        if prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC):
            raise MemoryAccessError(f"protect: unknown protection bits {prot:#x}")
        size = round_up(size)
        err = lib.uc_mem_protect(self._h, addr, size, prot)    # PROT_* == UC_PROT_*
        if err:
            raise MemoryAccessError(f"protect({addr:#x}, {size:#x}): {_uc.strerror(err)}")
        if prot & PROT_EXEC:
            r.exec_ever = True
            self.note_code(addr, size)
        elif r.exec_ever and self._uc.ran:
            self._uc.remove_cache(addr, addr + size)

    def _write_raw(self, addr: int, data: Any) -> None:
        n = len(data)
        buf: Any
        if isinstance(data, bytes):
            buf = data
        else:
            mv = memoryview(data).cast("B")
            n = mv.nbytes
            buf = (ctypes.c_char * n).from_buffer(mv) if not mv.readonly else bytes(mv)
        err = lib.uc_mem_write(self._h, addr, buf, n)
        if err:
            raise MemoryAccessError(f"cannot write {n} bytes at {addr:#x}: "
                                    f"{self.describe_address(addr, n)}")

    def _refused(self, addr: int, size: int) -> Region | None:
        """The closed zero-copy mapping or released span [addr, addr+size) touches."""
        r = self._closed_zero_copy(addr, size)
        return r if r is not None or not self.idle_spans.count else self._idle_span(addr, size)

    def _refuse_closed(self, addr: int, size: int, what: str) -> None:
        r = self._refused(addr, size)
        if r is not None:
            raise MemoryAccessError(f"cannot {what} {size} bytes at {addr:#x}: "
                                    f"{self.describe_address(r.start)}")

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        with self._lock:
            self._write(addr, data)

    def _write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        self._check_open()
        self._refuse_closed(addr, max(memoryview(data).nbytes, 1), "write")
        self._write_raw(addr, data)
        if self._uc.ran:
            r = self._space.at(addr)
            if r is not None and r.exec_ever:
                self._uc.remove_cache(addr, addr + max(len(data), 1))

    def read(self, addr: int, size: int) -> bytes:
        with self._lock:
            return self._read(addr, size)

    def _read(self, addr: int, size: int) -> bytes:
        self._check_open()
        if size < 0:
            raise MemoryAccessError(f"cannot read {size} bytes")
        self._refuse_closed(addr, max(size, 1), "read")
        if size > 1 << 20:
            self._check_covered(addr, size)   # before allocating a host buffer that large
        buf = ctypes.create_string_buffer(size)
        err = lib.uc_mem_read(self._h, addr, buf, size)
        if err:
            raise MemoryAccessError(f"cannot read {size} bytes at {addr:#x}: "
                                    f"{self.describe_address(addr, size)}")
        return buf.raw

    def _check_covered(self, addr: int, size: int) -> None:
        """MemoryAccessError unless mapped regions cover ``[addr, addr + size)``."""
        at, end = addr, addr + size
        while at < end:
            r = self._space.at(at)
            if r is None:
                raise MemoryAccessError(f"cannot read {size} bytes at {addr:#x}: "
                                        f"{self.describe_address(at)}"
                                        + (f" at {at:#x}" if at != addr else ""))
            at = r.end

    def try_read(self, addr: int, size: int) -> bytes | None:
        """``size`` bytes at ``addr``, or None where guest memory is not readable."""
        if addr < 0 or addr + size > 1 << self.arch.bits or size > self._space.used + PAGE:
            return None
        if self._refused(addr, max(size, 1)) is not None:
            return None
        buf = ctypes.create_string_buffer(size)
        return None if lib.uc_mem_read(self._h, addr, buf, size) else buf.raw

    def is_code(self, addr: int) -> bool:
        """Whether guest code may run at ``addr``: a callback stub, or memory
        that was executable at some point (for backtraces)."""
        if self.stub_name(addr) is not None:
            return True
        r = self._space.at(addr)
        return r is not None and r.exec_ever

    def describe_address(self, addr: int, size: int = 1) -> str:
        """What lives at ``addr`` (for error messages and fault reports)."""
        if addr < SENTINEL:
            return "unmapped (null-pointer region)"
        if SENTINEL <= addr < self._stub_end:
            return "runtime page (return sentinel / callback stubs)"
        st = self._stack
        if st.start <= addr < st.map_start:
            return f"stack guard page below the stack [{st.map_start:#x}, {self._stack_top:#x}) " \
                   f"(stack overflow?)"
        r = self._space.at(addr)
        if r is not None and r.kind == "zerocopy" and not r.extra[0]:
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
        with self._lock:
            return self._alloc(size, align)

    def _alloc(self, size: int, align: int) -> int:
        self._check_open()
        addr = self._heap.alloc(int(size), int(align))
        n = self._heap.size_of(addr) or 0
        if n and n < Heap.BIG:
            self._write_raw(addr, bytes(n))      # arena memory may be reused: zero it
        return addr

    def free(self, addr: int) -> None:
        with self._lock:
            self._check_open()
            self._heap.free(addr)

    # ------------------------------------------------------------------ close
    def in_call(self) -> bool:
        return bool(self._active) and self._lock._is_owned()  # type: ignore[attr-defined]

    def stop_calls(self) -> None:
        if self._active and not self.in_call():
            self.cancel(wait=5.0)

    @contextlib.contextmanager
    def quiesced(self) -> Iterator[None]:
        # a call holds the call lock for its whole run: cancel what runs, take
        # the lock before another thread's next call can (retrying if one won)
        while True:
            self.stop_calls()
            if self._lock.acquire(timeout=0.05):
                break
        try:
            yield
        finally:
            self._lock.release()

    def close(self) -> None:
        if self._closed:
            return
        if self.in_call():
            raise ExecutionError("cannot close an emulated machine from inside one of its "
                                 "own calls (a host callback)")
        self.stop_calls()
        with self._lock:
            if not self._closed:
                self._close()

    def _close(self) -> None:
        try:
            self._drain_spans()
            self._stop_debug()
            self._stop_trace()          # raises if writing the trace failed
        finally:
            self._closed = True
            uc = self._uc
            self._stubs = []
            self._callers.clear()
            uc.close()
            self._uc = None

    def __enter__(self) -> EmulatedMachine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._space.used:#x} bytes mapped"
        return f"<EmulatedMachine {self.arch.name} ({state})>"
