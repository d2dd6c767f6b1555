"""``EmulatedMachine``: the Machine contract on a unicorn CPU.

The guest address space is laid out as ``_layout`` describes.  A call packs
its arguments into one register batch (+ one stack write), runs
``uc_emu_start(entry, until=sentinel)`` and decodes the result; the code
doing this is generated once per signature (``_codegen``).  No per-
instruction or per-block hook is installed unless tracing is switched on.

The machine is a facade over parts that each keep their own state behind a
small interface, all given the unicorn engine (``_uc.Engine``) or what they
need of each other when built: ``GuestMemory`` (``_guestmem``: mappings,
runtime page, stack, heap), ``GuardedSpans`` (``_spans``),
``ArgumentMemory`` (``_args``: buffer arguments), ``X87Stack`` (``_x87``:
i386 float results), ``FloatAbis`` (``_abis``: float ABI per module, plans),
``CallRunner`` (``_runner``: calls, limits, cancel, abnormal stops; it owns
the ``CallState`` of ``_callstate``), ``Callbacks`` (``_callbacks``: host
functions called by guest code) and ``Debugger`` (``_debug``: line
information, registers, gdb, tracing).  This file takes the call lock
around host operations, checks the machine is open, and closes the parts.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

from ...arch import Arch
from ...arch import get as get_arch
from ...errors import ExecutionError, LayoutError, MemoryAccessError
from ...signature import Signature
from ...signature import parse as parse_signature
from ..base import Machine
from . import _cc, _uc
from ._abis import FloatAbis
from ._args import ArgumentMemory, page_aligned_empty
from ._callbacks import Callbacks
from ._callstate import stop_first_at_exit
from ._debug import Debugger, DwarfLines
from ._guestmem import GuestMemory
from ._layout import DEFAULT_MEMORY_LIMIT, LOW, PAGE, SENTINEL
from ._memory import AddressSpace, Region
from ._runner import CallRunner
from ._spans import GuardedSpans, SpanPool
from ._x87 import X87Stack

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._profiler import GuestProfile
    from .gdbstub import GdbStub

#: the floating-point status register and its sticky "inexact" bit, per arch
#: (x86: QEMU's SSE status keeps its flags for the engine's life already)
#: (the register calls reset, see _codegen.call_reset)
_INEXACT_FLAG = {"aarch64": ("FPSR", 1 << 4), "arm": ("FPSCR", 1 << 4),
                 "riscv32": ("FCSR", 1), "riscv64": ("FCSR", 1)}


class EmulatedMachine(Machine):
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
        self._uc = engine = _uc.Engine(arch, cpu, page_size=PAGE)
        hi = (1 << 32) - 0x10000 if arch.bits == 32 else 1 << 46
        limit = DEFAULT_MEMORY_LIMIT if memory_limit is None else int(memory_limit)
        self._mem = mem = GuestMemory(engine, AddressSpace(LOW, hi, PAGE, limit), max_callbacks,
                                      stack_size)
        self._spans = GuardedSpans(mem, limit)
        self._args = ArgumentMemory(mem)
        self._x87 = X87Stack(engine)
        self._abis = FloatAbis(arch)
        self._runner = CallRunner(engine, self, self._abis, self._args, self._x87,
                                  (mem.stack.map_start, mem.stack_top))
        self._state = state = self._runner.state
        state.unsealed, state.seal = self._spans.unsealed, self._spans.seal
        self._lock = state.lock                # held by a call for its whole duration
        self._callers = self._runner.callers
        self._callbacks = Callbacks(mem, state, self._abis, self._x87, max_callbacks)
        self._debugger = Debugger(engine, state, self, mem.stub_end)
        self._modules: list[Any] = []
        self.instruction_budget = instruction_budget
        self.timeout = timeout
        if float_abi is not None:
            self.float_abi = float_abi
        if trace is not None:
            self.trace(trace)
        self._debugger.serve_gdb_if_asked()
        stop_first_at_exit()        # after the finalizers this machine registered

    def _check_open(self) -> None:
        if self._state.closed:
            self._state.check_open()        # raises, saying why

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
            if flag is None or self._runner.inexact_flag is not None:
                return
            if self.in_call():
                raise ExecutionError("raise_inexact_flag: not from inside a call")
            self._runner.raise_inexact_flag(flag)

    @property
    def inexact_flag(self) -> tuple[str, int] | None:
        """(register, bit) of the FP flag ``raise_inexact_flag`` raised, or None."""
        return self._runner.inexact_flag

    @property
    def float_abi(self) -> str:
        return self._abis.value

    @float_abi.setter
    def float_abi(self, value: str) -> None:
        if self._abis.set(value):
            self._runner.forget_callers()

    @property
    def mixed_float_abi(self) -> bool:
        """Whether attached modules use more than one float ABI (RISC-V), so
        each Python callback finds its caller's ABI by the return address."""
        return self._abis.mixed

    def plan(self, sig: Signature | str, float_abi: str | None = None) -> _cc.Plan:
        """Where arguments and result of ``sig`` live (see ``_cc``)."""
        return self._abis.plan(sig, float_abi)

    @property
    def stack_range(self) -> tuple[int, int]:
        """[low, high) of the machine's stack (without its guard page)."""
        return self._mem.stack.map_start, self._mem.stack_top

    @property
    def page_size(self) -> int:
        """The emulator's guest page size (4 KiB on every architecture): the
        granularity of its mappings, protections and TLB entries."""
        self._check_open()
        return self._uc.page_size

    # ----------------------------------------------------------------- calls
    def call(self, addr: int, sig: Signature | str, args: tuple[Any, ...] = (),
             timeout: float | None = None, budget: int | None = None) -> Any:
        if self._state.closed:
            self._state.check_open()        # raises, saying why
        if not isinstance(sig, Signature):
            sig = parse_signature(sig)
        abis = self._abis
        abi = abis.at(addr) if abis.mixed else abis.current
        f = self._callers.get((sig, abi, False))
        if f is None:
            f = self._runner.caller(sig, abi)
        return f(addr, tuple(args), timeout, budget)

    def function(self, addr: int, sig: Signature | str, name: str = "") -> Callable[..., Any]:
        """A fast callable ``f(*args, timeout=None, budget=None)`` for ``addr``."""
        self._check_open()      # (labelled with the names known: name_later's wait)
        return self._runner.function(addr, parse_signature(sig), name, self._symbolize)

    def callback(self, fn: Callable[..., Any], sig: Signature | str, name: str = "") -> int:
        self._check_open()
        return self._callbacks.add(fn, sig, name)

    def stub_name(self, addr: int) -> str | None:
        """The name of the callback whose stub contains ``addr``, else None."""
        return self._callbacks.stub_name(addr)

    def symbolize(self, addr: int) -> str:
        self._debugger.name_pending()
        return self._symbolize(addr)

    def _symbolize(self, addr: int) -> str:
        if addr == SENTINEL:
            return "<host>"
        s = self._callbacks.symbolize(addr)
        return s if s is not None else super().symbolize(addr)

    def set_limits(self, *, timeout: float | None = None,
                   instruction_budget: int | None = None) -> None:
        """Defaults applied to every call that does not pass its own."""
        self.timeout = timeout
        self.instruction_budget = instruction_budget

    @property
    def timeout(self) -> float | None:
        """Default wall-clock limit (seconds) of every call; None: no limit."""
        return self._runner.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._runner.timeout = value

    @property
    def instruction_budget(self) -> int | None:
        """Default instruction budget of every call; None: unlimited."""
        return self._runner.instruction_budget

    @instruction_budget.setter
    def instruction_budget(self, value: int | None) -> None:
        self._runner.instruction_budget = value

    @property
    def instructions(self) -> int:
        """Guest instructions run by calls since :meth:`count_instructions`
        was switched on (0 while off); a call stopped early counts its
        blocks whole."""
        return self._runner.instructions

    def count_instructions(self, on: bool = True) -> None:
        """Count the guest instructions calls run (:attr:`instructions`), for
        callers that charge them to a budget of their own.  A block hook
        adds each basic block's instruction count (decoded once per block),
        which slows emulation down; switching it on or off flushes the
        translation cache, so leave it on while it is needed."""
        self._check_open()
        self._runner.count_instructions(on)

    def note_code(self, addr: int, size: int) -> None:
        """Called when ``[addr, addr+size)`` becomes executable: on i386, a
        straight run of x87 instructions switches the instruction counter on
        for every later call (see ``_x87.X87_RUN_LIMIT``)."""
        self._runner.note_code(addr, size)

    def cancel(self, wait: float = 1.0) -> bool:
        """Stop the call running in another thread (it raises ``CallTimeout``)
        and wait up to ``wait`` seconds for it to end.  Returns False if no
        call was running.  A cancel never reaches a call started after it."""
        return self._runner.cancel(wait)

    @property
    def stop_requested(self) -> bool:
        """Whether the running call was asked to stop (cancel, timeout, signal)."""
        return self._state.stop is not None

    # ------------------------------------------------------------ debugging
    def attach(self, module: Any) -> None:
        """Remember a module: symbols for reports; for RISC-V its float ABI
        (ELF ``e_flags``); its DWARF line table, if any, for fault reports
        (read lazily, at the first fault)."""
        elf = getattr(module, "elf", None)
        if self._abis.attach(module, getattr(elf, "e_flags", None),
                             getattr(module, "address_range", None)):
            self._runner.forget_callers()
        super().attach(module)
        self._debugger.attach(module)

    def detach(self, module: Any) -> None:
        super().detach(module)
        self._debugger.detach(module)
        self._abis.detach(module)

    def module_at(self, addr: int) -> Any:
        """The attached module whose image holds ``addr``, else None."""
        for mod in self._modules:
            span = getattr(mod, "address_range", None)
            if span is not None and span[0] <= addr < span[1]:
                return mod
        return None

    def name_later(self, module: Any, namer: Callable[[], object]) -> None:
        """Run ``namer`` (``add_symbols`` of ``module``) when ``symbolize`` or gdb
        first needs names (at once when watched; never once it is detached)."""
        self._debugger.name_later(module, namer)

    def add_line_info(self, lo: int, hi: int, resolver: Callable[[int], str | None]) -> None:
        """Register ``resolver(addr) -> "file:line"`` for guest addresses in [lo, hi)."""
        self._debugger.add_line_info(lo, hi, resolver)

    def add_debug_info(self, bias: int, elf: Any, lo: int = 0, hi: int = 1 << 64) -> None:
        """Use the DWARF ``.debug_line`` of ``elf`` (bytes or a path), loaded at
        ``bias``, for file:line in fault reports (parsed lazily, on first fault)."""
        self._debugger.add_line_info(lo, hi, DwarfLines(elf, bias))

    def source_line(self, addr: int) -> str | None:
        """``file:line`` of a guest address, from registered line information
        (``add_line_info``; attached modules register theirs); None when
        unknown.  Errors of a resolver propagate (fault reports turn them
        into a note)."""
        return self._debugger.source_line(addr)

    def has_line_info(self, lo: int, hi: int) -> bool:
        """Whether any line information covers part of ``[lo, hi)``."""
        return self._debugger.has_line_info(lo, hi)

    def registers(self, names: Iterable[str] | None = None) -> dict[str, int]:
        """Current values of integer registers (``dump_regs`` by default)."""
        self._check_open()
        return self._debugger.registers(names)

    def read_register(self, name: str) -> Any:
        """Any register by its unicorn name (suffix of UC_<ARCH>_REG_*): an
        int, or for x87 registers a (mantissa, exponent) pair."""
        self._check_open()
        return self._uc.reg_read(self._uc.reg_id(name), name)

    def write_register(self, name: str, value: Any) -> None:
        self._check_open()
        self._uc.reg_write(self._uc.reg_id(name), name, value)

    @property
    def observed(self) -> bool:
        """Whether gdb (``debug``) or an execution trace (``trace``) watches
        this machine, so code run on another machine would go unseen."""
        return self._debugger.observed

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
        return self._debugger.debug(port, host=host, offset=offset,
                                    accept_timeout=accept_timeout)

    def record_writes(self, ranges: Iterable[tuple[int, int]]
                      ) -> contextlib.AbstractContextManager[list[tuple[int, int]]]:
        """Record the stores guest code makes into the guest ranges
        ``(address, size)`` while the ``with`` block runs: yields a list that
        fills with one ``(address, size)`` per store (clipped to the range it
        falls in; a store reaching two ranges counts in each), in program
        order.  Every store counts, also one that writes the value already
        there; writes through :meth:`write` or by host callbacks do not.
        Costs nothing outside the block: the memory hook exists only inside
        it (the translation cache is flushed on entry and exit)."""
        self._check_open()
        return self._debugger.record_writes(ranges)

    def trace(self, target: Any = None, *, mode: str = "block") -> None:
        """Start writing an execution trace to ``target`` (a path or a text
        file): every basic block executed, with its disassembly (``mode=
        "block"``) or its address only (``"compact"``).  ``trace(None)`` stops
        (and raises ``ExecutionError`` if writing the trace failed).
        Costs nothing while off: the block hook exists only while tracing
        (the translation cache is flushed on start and stop so code
        translated before is covered and, afterwards, runs hook-free again)."""
        self._debugger.trace(target, mode=mode)

    def profile(self, profile: GuestProfile | None) -> None:
        """Count the guest instructions later calls run into ``profile`` (a
        :class:`GuestProfile`, which may collect from several machines), by
        function and source line; ``profile(None)`` stops and charges the
        counts (do it before unloading the modules).  A block hook counts
        each block run: a native one (``blockhook``: built for the host once,
        cached; about 1.0-1.3 times the unprofiled run time), else a Python
        one (10-25 times; a warning says why).  The translation cache is
        flushed on start and stop; nothing is hooked while off; waits while a
        call runs in another thread; see ``_profiler``."""
        with self._lock:
            self._debugger.profile(profile)

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
        r = self._mem.space.at(addr)
        if r is None or r.start != addr or r.kind not in ("image", "span"):
            raise MemoryAccessError(f"release({addr:#x}): not the start of a reservation")
        if r.kind == "span" and self._spans.keep(r, self._state.running):
            return
        self._mem.space.remove(addr)
        self._mem.unmap(r.map_start, r.mapped, r.exec_ever)
        r.extra = None          # the host pages of a reserve()d image, now unmapped

    def protect(self, addr: int, size: int, prot: int) -> None:
        with self._lock:
            self._protect(addr, size, prot)

    def _protect(self, addr: int, size: int, prot: int) -> None:
        self._check_open()
        code = self._mem.protect(addr, size, prot)
        if code:
            self.note_code(addr, code)

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
        r = self._mem.space.at(addr)
        return r is not None and r.exec_ever

    def regions(self) -> list[tuple[int, int, str]]:
        """The guest's address space as ``(start, size, kind)`` per region, by
        address (kinds: image, heap, stack, buffer, runtime, large); pages of
        a region may be unmapped (guards): read them with :meth:`try_read`."""
        self._check_open()
        return [(r.start, r.size, r.kind) for r in self._mem.space]

    def describe_address(self, addr: int, size: int = 1) -> str:
        """What lives at ``addr`` (for error messages and fault reports)."""
        return self._mem.describe_address(addr, size)

    def alloc(self, size: int, align: int = 16) -> int:
        with self._lock:
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

    def share_pages(self, owner: Any, address: int, size: int, writable: bool = True) -> int:
        """Map the host pages [address, address + size) (page-aligned memory
        that ``owner`` keeps alive, e.g. an ``mmap``) into the guest until
        ``unshare``, zero-copy (read-only unless ``writable``): ``share``
        without numpy."""
        with self._lock:
            self._check_open()
            return self._args.share_pages(owner, address, size, writable)

    def unshare(self, addr: int) -> None:
        with self._lock:
            self._args.unshare(addr)

    @staticmethod
    def empty(shape: Any, dtype: Any = "float32") -> Any:
        """A numpy array in page-aligned host memory: passed to guest code
        without copying (``mem_map_ptr``)."""
        return page_aligned_empty(shape, dtype)

    # ------------------------------------------------------------- spans
    @property
    def idle_spans(self) -> SpanPool:
        """Released ``reserve_guarded`` spans kept for reuse (see ``_spans``)."""
        return self._spans.pool

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
        return self._state.in_call()

    def stop_calls(self) -> None:
        if self._state.active and not self.in_call():
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
        if self._state.closed:
            return
        if self.in_call():
            raise ExecutionError("cannot close an emulated machine from inside one of its "
                                 "own calls (a host callback)")
        self.stop_calls()
        with self._lock:
            if not self._state.closed:
                self._close()

    def _close(self) -> None:
        try:
            self._spans.drain()
            self._debugger.stop_debug()
            self._debugger.stop_trace()          # raises if writing the trace failed
        finally:
            self._state.closed = True
            self._args.close()
            self._callbacks.close()
            self._runner.close()
            self._uc.close()

    def __enter__(self) -> EmulatedMachine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._state.closed else f"{self._mem.space.used:#x} bytes mapped"
        return f"<EmulatedMachine {self.arch.name} ({state})>"
