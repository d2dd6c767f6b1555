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
import threading
import weakref
from collections.abc import Callable, Iterator

from ...arch import Arch
from ...arch import get as get_arch
from ...errors import ExecutionError, LayoutError, MemoryAccessError, ModuleClosedError
from ...signature import Signature
from ..base import Machine
from . import _cc, _uc
from ._args import ArgumentMemory, page_aligned_empty
from ._callbacks import Callbacks
from ._debug import DebugSupport
from ._guestmem import GuestMemory
from ._layout import DEFAULT_MEMORY_LIMIT, LOW, PAGE, STUB_BASE
from ._memory import AddressSpace, Region
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


class EmulatedMachine(CallRunner, Callbacks, DebugSupport, Machine):
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
        self._mem = GuestMemory(self._uc, AddressSpace(LOW, hi, PAGE, limit), max_callbacks,
                                stack_size)
        self._space = self._mem.space
        self._stub_end = self._mem.stub_end
        self._stack = self._mem.stack
        self._call_sp = self._mem.stack_top
        self._spans = GuardedSpans(self._mem, limit)
        self._max_callbacks = max_callbacks
        self._stubs: list[dict[str, Callable[[], None]]] = []  # per float ABI, generated lazily
        self._stub_defs: list[tuple[Callable[..., Any], Signature, str]] = []
        self._stub_names: list[str] = []
        self._args = ArgumentMemory(self._mem)
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
        return self._stack.map_start, self._mem.stack_top

    @property
    def page_size(self) -> int:
        """The emulator's guest page size (4 KiB on every architecture): the
        granularity of its mappings, protections and TLB entries."""
        self._check_open()
        return self._uc.page_size

    @property
    def idle_spans(self) -> SpanPool:
        """Released ``reserve_guarded`` spans kept for reuse (see ``_spans``)."""
        return self._spans.pool

    # ---------------------------------------------------------- address space
    def _new_region(self, size: int, align: int, kind: str, name: str = "",
                    perms: int = C.UC_PROT_READ | C.UC_PROT_WRITE) -> Region:
        self._check_open()
        return self._mem.new_region(size, align, kind, name, perms)

    def _write_raw(self, addr: int, data: Any) -> None:
        self._mem.write_raw(addr, data)

    # Memory operations from the host take the call lock: they wait while a
    # call runs in another thread (unmapping under running guest code would
    # crash unicorn), and run at once from a host callback of the call.
    def reserve(self, size: int, align: int = PAGE, name: str = "") -> int:
        """Reserve and map ``size`` bytes for a module image; its segments
        then get their own rights through ``protect``."""
        with self._lock:
            self._check_open()
            try:
                return self._mem.new_region(size, align, "image", name, host=True).start
            except (LayoutError, MemoryAccessError):
                if not self._spans.drain():
                    raise
            return self._mem.new_region(size, align, "image", name, host=True).start

    def release(self, addr: int, size: int | None = None) -> None:
        with self._lock:
            self._release(addr)

    def _release(self, addr: int) -> None:
        self._check_open()
        r = self._space.at(addr)
        if r is None or r.start != addr or r.kind not in ("image", "span"):
            raise MemoryAccessError(f"release({addr:#x}): not the start of a reservation")
        if r.kind == "span" and self._spans.keep(r):
            return
        self._space.remove(addr)
        self._mem.unmap(r.map_start, r.mapped, r.exec_ever)
        r.extra = None          # the host pages of a reserve()d image, now unmapped

    def protect(self, addr: int, size: int, prot: int) -> None:
        with self._lock:
            self._protect(addr, size, prot)

    def _protect(self, addr: int, size: int, prot: int) -> None:
        self._check_open()
        if self._mem.protect(addr, size, prot):
            self.note_code(addr, size)

    def _refused(self, addr: int, size: int) -> Region | None:
        """The closed zero-copy mapping or released span [addr, addr+size) touches."""
        r = self._args.closed_at(addr, size)
        return r if r is not None else self._spans.idle_at(addr, size)

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
        self._mem.write(addr, data)

    def read(self, addr: int, size: int) -> bytes:
        with self._lock:
            return self._read(addr, size)

    def _read(self, addr: int, size: int) -> bytes:
        self._check_open()
        self._refuse_closed(addr, max(size, 1), "read")
        return self._mem.read(addr, size)

    def try_read(self, addr: int, size: int) -> bytes | None:
        """``size`` bytes at ``addr``, or None where guest memory is not readable."""
        if self._refused(addr, max(size, 1)) is not None:
            return None
        return self._mem.try_read(addr, size)

    def is_code(self, addr: int) -> bool:
        """Whether guest code may run at ``addr``: a callback stub, or memory
        that was executable at some point (for backtraces)."""
        if self.stub_name(addr) is not None:
            return True
        r = self._space.at(addr)
        return r is not None and r.exec_ever

    def describe_address(self, addr: int, size: int = 1) -> str:
        """What lives at ``addr`` (for error messages and fault reports)."""
        return self._mem.describe_address(addr, size)

    # ----------------------------------------------------------------- heap
    def alloc(self, size: int, align: int = 16) -> int:
        with self._lock:
            return self._alloc(size, align)

    def _alloc(self, size: int, align: int) -> int:
        self._check_open()
        return self._mem.alloc(size, align)

    def free(self, addr: int) -> None:
        with self._lock:
            self._check_open()
            self._mem.heap.free(addr)

    # ---------------------------------------------------- buffer arguments
    @property
    def cached_mappings(self) -> int:
        """How many zero-copy mappings of host arrays are kept between calls
        (at most 16; reused when the same array is passed again)."""
        return self._args.cached_mappings

    def share(self, array: Any) -> int:
        """Map a numpy array into the guest until ``unshare``; zero-copy when
        it is page-aligned (e.g. from ``empty()``), otherwise refused."""
        with self._lock:
            self._check_open()
            return self._args.share(array)

    def unshare(self, addr: int) -> None:
        with self._lock:
            self._args.unshare(addr)

    @staticmethod
    def empty(shape: Any, dtype: Any = "float32") -> Any:
        """A numpy array in page-aligned host memory: passed to guest code
        without copying (``mem_map_ptr``)."""
        return page_aligned_empty(shape, dtype)

    # ------------------------------------------------------------- spans
    def reserve_guarded(self, size: int, name: str = "", read_only: bool = False) -> int:
        """Reserve and map ``size`` bytes (rounded up to whole pages) of
        read/write memory followed by an unmapped guard page, so that an
        access running past the end faults; ``release`` frees both.  Cheaper
        than ``reserve`` + ``protect(PROT_NONE)`` of a last page: unicorn
        copies the contents of a mapping it splits.  A released span of the
        same size is handed out again, zero-filled (see ``_spans``).
        ``read_only``: guest code may only read the span (a store faults);
        the host fills it through :meth:`span_memory`."""
        with self._lock:
            self._check_open()
            return self._spans.reserve(size, name, read_only)

    def span_memory(self, addr: int) -> memoryview:
        """The host pages behind the guarded span reserved at ``addr`` (its
        mapped bytes, guard page excluded), writable from the host whatever
        the guest's rights: the span's memory without a copy through
        unicorn.  Valid until the span is released."""
        with self._lock:
            self._check_open()
            return self._spans.memory(addr)

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
            self._spans.drain()
            self._args.close()
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
