"""Running guest calls: ``CallRunner``, one per emulated machine.  It keeps
the per-signature callers, runs nested calls from host callbacks, applies
time and instruction limits, cancels, and turns an abnormal stop into the
right exception.

The argument packing and result decoding of a call is generated once per
signature by ``_codegen.build_caller``, given a ``CallContext``: the code
reads and writes the call state (``_callstate``) itself and calls back into
``run_limited`` (when a limit applies), ``abnormal`` (when emulation stopped
early or with an error) and ``nested`` (when a host callback calls guest
code).  Fault reports (``_faults``) read the machine through its public
accessors.
"""
from __future__ import annotations

import time
import weakref
from collections.abc import Callable

from ..._support import arguments
from ..._support.records import replace
from ...errors import CallTimeout, ExecutionError, SignatureError
from ...signature import Signature
from . import _codegen, _uc, _watchdog
from ._callstate import (
    LOST_INTERRUPT,
    STOP_BUDGET,
    STOP_CANCEL,
    STOP_HOOK,
    STOP_INTR,
    STOP_SIGNAL,
    STOP_TIMEOUT,
    CallState,
)
from ._layout import SENTINEL

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._abis import FloatAbis
    from ._args import ArgumentMemory
    from ._machine import EmulatedMachine
    from ._uc import Engine
    from ._x87 import X87Stack

C = _uc.C
lib = _uc.lib

_check_signals: Any = None    # ctypes.pythonapi.PyErr_CheckSignals, looked up on first use
_NO_LIMIT = 1 << 63


def check_budget(value: object, name: str, where: str) -> int:
    """An instruction budget: an int in [0, 2^63) -- 0 lets no instruction
    run (as in vmrt), None (checked by the caller) is no limit."""
    n = arguments.integer(value, name, where)
    if n < 0:
        raise SignatureError(f"{where}: an instruction budget must not be negative, got {n}")
    if n >= _NO_LIMIT:
        raise SignatureError(f"{where}: an instruction budget must be below 2^63, got {n}")
    return n


def run_pending_handlers() -> None:
    """Run the Python signal handlers of signals that arrived (the main
    thread only), and raise a KeyboardInterrupt Python could not propagate
    (``LOST_INTERRUPT``).  The watchdog stops repeating its stops first: a
    signal arriving from now on stops again."""
    global _check_signals
    if _check_signals is None:
        import ctypes
        _check_signals = ctypes.pythonapi.PyErr_CheckSignals
        _check_signals.restype = ctypes.c_int
        _check_signals.argtypes = ()
    _watchdog.signals_handled()
    try:
        _check_signals()
        lost, LOST_INTERRUPT[0] = LOST_INTERRUPT[0], None
        if lost is not None:    # the handler ran where its exception was dropped
            raise lost
    except KeyboardInterrupt:
        _watchdog.interrupt_handled()
        raise


class CallRunner:
    """Calls into guest code on ``engine``.  ``machine``: the machine's public
    face, for symbols and fault reports; ``abis``: which float ABI a call
    uses; ``args``: buffer arguments; ``x87``: i386 float results;
    ``stack``: ``(low, high)`` of the machine's stack.  Sets the CPU up
    (``arch.uc_init``) and keeps that as the state an abnormal stop resets to."""

    def __init__(self, engine: Engine, machine: EmulatedMachine, abis: FloatAbis,
                 args: ArgumentMemory, x87: X87Stack, stack: tuple[int, int]) -> None:
        self._uc = engine
        self._h = engine.handle
        self._machine = machine
        self.arch = arch = engine.arch
        self._abis = abis
        self._x87 = x87
        self._stack_low = stack[0]
        self.state = state = CallState(engine, stack[1])
        self._sp_id = engine.reg_id(arch.cc.sp)
        self._pc_id = engine.reg_id(arch.cc.pc)
        #: (signature, float ABI, bound): callers of ``call`` (bound False) and
        #: the prototypes ``function`` copies for each entry address (bound True)
        self.callers: dict[tuple[Signature, str, bool], Callable[..., Any]] = {}
        #: (address, signature, float ABI, name): what ``function`` made for
        #: it (a program's dispatch entries all go through one stub: made once)
        self.functions: dict[tuple[int, Signature, str, str], Callable[..., Any]] = {}
        self._ctx_pool: list[Any] = []
        self._timeout: float | None = None
        self._budget: int | None = None
        self._icount = 0
        self._icount_hook: int | None = None
        self._mem_fault: tuple[int, int, int, int] | None = None
        self._intno: int | None = None
        #: (register, bit) of the FP flag ``raise_inexact_flag`` raised, or None
        self.inexact_flag: tuple[str, int] | None = None
        self._context = _codegen.CallContext(engine, state, self, args, x87)
        # CPU set-up (FPU on, thread pointer zero), then the pristine context
        for name, value in arch.uc_init:
            engine.reg_write(engine.reg_id(name), name, value)
        self._ctx0 = engine.context_save()
        self._init_hooks()

    def _init_hooks(self) -> None:
        """Invalid memory accesses and CPU exceptions: added before any code
        is translated, so they apply everywhere.  The hooks hold the runner
        weakly."""
        me = weakref.ref(self)

        @self.state.guard
        def on_mem(_h: Any, kind: int, address: int, size: int, value: int, _ud: Any) -> bool:
            r = me()
            if r is not None:
                r._mem_fault = (kind, address, size, value)
            return False

        @self.state.guard
        def on_intr(_h: Any, intno: int, _ud: Any) -> None:
            r = me()
            if r is not None:
                r._intno = intno
                r.state.stop = STOP_INTR
                lib.uc_emu_stop(r._h)

        self._uc.add_hook(C.UC_HOOK_MEM_INVALID, _uc.HOOK_MEM_INVALID(on_mem), 1, 0)
        self._uc.add_hook(C.UC_HOOK_INTR, _uc.HOOK_INTR(on_intr), 1, 0)

    def close(self) -> None:
        """The machine closed: drop the generated code (it holds buffers)."""
        self.forget_callers()

    def forget_callers(self) -> None:
        """Generate the callers again (the float ABI or the FP state changed)."""
        self.callers.clear()
        self.functions.clear()

    # ------------------------------------------------------------- limits
    @property
    def timeout(self) -> float | None:
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._timeout = arguments.timeout(value, "timeout")
        self._update_limited()

    @property
    def instruction_budget(self) -> int | None:
        return self._budget

    @instruction_budget.setter
    def instruction_budget(self, value: int | None) -> None:
        self._budget = None if value is None else check_budget(value, "instruction_budget",
                                                               "machine")
        self._update_limited()

    def _update_limited(self) -> None:
        self.state.limited = (self._timeout is not None or self._budget is not None
                              or self._x87.counted)

    def note_code(self, addr: int, size: int) -> None:
        """``[addr, addr+size)`` became executable: on i386, a straight run of
        x87 instructions switches the instruction counter on for every later
        call (see ``_x87.X87_RUN_LIMIT``)."""
        if self._x87.scan(addr, size):
            self._update_limited()

    # ------------------------------------------------- instruction counting
    @property
    def instructions(self) -> int:
        return self._icount

    def count_instructions(self, on: bool = True) -> None:
        """See ``EmulatedMachine.count_instructions``."""
        hook = self._icount_hook
        if bool(on) == (hook is not None):
            return
        if hook is not None:
            self._icount_hook = None
            self._uc.del_hook(hook)
            self._uc.flush_tb()
            return
        self._icount = 0
        sizes: dict[tuple[int, int], int] = {}

        @self.state.guard
        def on_block(_h: Any, address: int, size: int, _ud: Any) -> None:
            n = sizes.get((address, size))
            if n is None:
                n = sizes[(address, size)] = self._block_length(address, size)
            self._icount += n
        self._icount_hook = self._uc.add_hook(C.UC_HOOK_BLOCK, _uc.HOOK_CODE(on_block), 1, 0)
        self._uc.flush_tb()

    def _block_length(self, address: int, size: int) -> int:
        """How many instructions the basic block at ``address`` has."""
        code = self._machine.try_read(address, size) if size else None
        if not code:
            return 1
        thumb = False
        if self.arch.name == "arm":
            thumb = bool(self._uc.read_word(self._uc.reg_id("CPSR")) & 0x20)
        from ..disasm import instruction_addresses  # budgets and counts only: on use
        return max(1, len(instruction_addresses(code, address, self.arch, thumb=thumb)))

    # -------------------------------------------------------------- calls
    def caller(self, sig: Signature, abi: str) -> Callable[..., Any]:
        """The caller ``f(entry, args, timeout, budget)`` of ``sig`` under
        float ABI ``abi`` (generated on first use, kept in ``callers``)."""
        f = self.callers.get((sig, abi, False))
        if f is None:
            self._uc.ran = True       # from now on host writes to code invalidate translations
            f = self.callers[(sig, abi, False)] = _codegen.build_caller(
                self._context, self._abis.plan(sig, abi), None, f"call {sig}")
        return f

    def function(self, addr: int, sig: Signature, name: str,
                 symbolize: Callable[[int], str]) -> Callable[..., Any]:
        """A fast callable ``f(*args, timeout=None, budget=None)`` for ``addr``
        named ``name``, else by ``symbolize(addr)`` when that is an
        identifier (made once per address, signature and name: the callable
        keeps no state of its own)."""
        self._uc.ran = True
        abi = self._abis.at(addr)
        key = (addr, sig, abi, name)
        f = self.functions.get(key)
        if f is not None:
            return f
        label = name or symbolize(addr)
        if not label.isidentifier():
            label = f"guest_{addr:x}"
        proto = self.callers.get((sig, abi, True))
        if proto is None:     # generated once per signature, copied for each address
            f = self.callers[(sig, abi, True)] = _codegen.build_caller(
                self._context, self._abis.plan(sig, abi), addr, label)
        else:
            f = _codegen.rebind(proto, addr, label)
        self.functions[key] = f
        return f

    def nested(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: Any,
               budget: Any) -> Any:
        """A call made by a host callback while guest code is running: run it
        on the guest stack below the caller's frame, then restore the CPU."""
        state = self.state
        state.check_open()
        sp = (self._uc.read_word(self._sp_id) - self.arch.cc.red_zone - 64) & -16
        if sp <= self._stack_low + 256:
            raise ExecutionError("guest stack exhausted by nested calls")
        ctx = self._ctx_pool.pop() if self._ctx_pool else self._uc.context_save()
        lib.uc_context_save(self._h, ctx.context)
        saved_sp, gen = state.call_sp, state.gen    # (changed by this thread only)
        # an exception anywhere (a KeyboardInterrupt after any call) leaves
        # the outer call's state whole: all is changed inside the try, and the
        # finally puts it back with plain stores under the lock, then the CPU
        try:
            state.call_sp = sp
            with state.slock:
                state.running = False
            return fn(*args, timeout=timeout, budget=budget)
        finally:
            with state.slock:
                state.running = True
                state.gen = gen
                state.call_sp = saved_sp
            lib.uc_context_restore(self._h, ctx.context)
            self._ctx_pool.append(ctx)

    def raise_inexact_flag(self, flag: tuple[str, int]) -> None:
        """Raise FP flag ``flag`` = (register, bit) now and in the pristine
        state; the callers are generated again to keep it raised."""
        reg, bit = flag
        lib.uc_context_restore(self._h, self._ctx0.context)
        regid = self._uc.reg_id(reg)
        self._uc.write_word(regid, self._uc.read_word(regid) | bit)
        lib.uc_context_save(self._h, self._ctx0.context)
        self.inexact_flag = flag
        self._context = replace(self._context, inexact=flag)
        self.forget_callers()

    # ----------------------------------------------- limits, stop, cancel
    def run_limited(self, entry: int, timeout: float | None, budget: int | None) -> int:
        """Run guest code at ``entry`` under a timeout and/or an instruction budget."""
        state = self.state
        if budget is not None:
            budget = check_budget(budget, "budget", "call")
        limit = budget if budget is not None else self.instruction_budget
        count = limit or 0
        t = arguments.timeout(timeout, "call") if timeout is not None else self.timeout
        if limit == 0:                  # a budget of no instructions: nothing runs
            state.stop = STOP_BUDGET
            return 0
        run_count = count or (_NO_LIMIT if self._x87.counted else 0)
        if run_count and not state.count_mode:
            # unicorn adds its counting hook without flushing the translation
            # cache: blocks translated before would never be counted
            self._uc.flush_tb()
        state.count_mode = bool(run_count)
        gen = state.gen
        token = (_watchdog.arm(t, lambda: self._request_stop(STOP_TIMEOUT, gen))
                 if t is not None else None)
        failed: BaseException | None = None
        try:
            err = lib.uc_emu_start(self._h, entry, SENTINEL, 0, run_count)
        finally:
            if token is not None:
                failed = _watchdog.disarm(token)
        if failed is not None:
            state.stop = None
            self._reset()
            raise ExecutionError(f"the watchdog could not stop the call to "
                                 f"{self._machine.symbolize(entry)}: {failed}") from failed
        if not err and state.stop is None and count and self._pc() != SENTINEL:
            state.stop = STOP_BUDGET
        return err

    def _request_stop(self, reason: str, gen: int) -> bool:
        """Stop the run of call ``gen`` (or of a call it made from a host
        callback) if it is running now; a stop never reaches a later call."""
        with self.state.slock:
            return self._stop_locked(reason, gen)

    def _stop_locked(self, reason: str, gen: int) -> bool:
        state = self.state
        if not state.running or gen not in state.active:
            return False
        if state.stop is None:
            state.stop = reason
        lib.uc_emu_stop(self._h)
        return True

    def stop_for_signal(self) -> None:
        """Called by the watchdog thread when a signal whose handler raises
        arrived while this machine ran a call on the main thread: stop that
        call if the signal arrived after it started, unless the main thread
        ran the handlers since (``PENDING`` cleared, under the same lock, by
        a call starting)."""
        state = self.state
        with state.slock:
            if state.active and state.started <= _watchdog.PENDING[0]:
                self._stop_locked(STOP_SIGNAL, state.active[-1])

    def cancel(self, wait: float = 1.0) -> bool:
        """Stop the call running in another thread (it raises ``CallTimeout``)
        and wait up to ``wait`` seconds for it to end.  Returns False if no
        call was running.  A cancel never reaches a call started after it."""
        state = self.state
        with state.slock:
            if not state.active:
                return False
            gen = state.active[0]
        end = time.monotonic() + wait
        while gen in state.active:
            self._request_stop(STOP_CANCEL, gen)
            if time.monotonic() > end:
                break
            time.sleep(0.001)
        return True

    def _pc(self) -> int:
        v = self._uc.read_word(self._pc_id)
        return v & 0xFFFFFFFF if self.arch.bits == 32 else v

    def _reset(self) -> None:
        """Back to the pristine CPU state after a call stopped abnormally.

        The TLB is flushed too: unicorn fills a TLB entry for an access
        that then faults on a page's protection, and a later access to the
        page hits that entry without the check (a stale pointer into a
        closed zero-copy mapping read host memory on its second try)."""
        lib.uc_context_restore(self._h, self._ctx0.context)
        self._uc.flush_tlb()
        self._mem_fault = None
        self._intno = None

    def abnormal(self, err: int, entry: int, timeout: float | None, budget: int | None) -> None:
        """Emulation stopped with an error or early; raise, or return if the
        call completed after all (a stop request that came too late)."""
        self._uc.ran = True
        state = self.state
        stop, state.stop = state.stop, None
        if stop == STOP_HOOK:
            exc, state.hook_exc = state.hook_exc, None
            self._reset()
            assert exc is not None
            if isinstance(exc, KeyboardInterrupt):
                _watchdog.interrupt_handled()   # (a hook ran the SIGINT handler)
            raise exc                    # the host callback's own exception
        pc = self._pc()
        if not err and pc == SENTINEL and stop != STOP_INTR:
            if stop == STOP_SIGNAL:
                self._run_signal_handlers()
            return
        if not err and stop == STOP_SIGNAL:
            # A stopped run is never resumed: unicorn may have stopped it after
            # a load or store of the instruction at pc, which a resumed run
            # would execute again.  The handlers raise (KeyboardInterrupt) after
            # a reset; if the SIGINT handler ran already (its KeyboardInterrupt
            # caught in a host callback; or, without the kernel's time stamps
            # of signals, caught before this call started) the call ends with
            # a KeyboardInterrupt all the same.
            self._run_signal_handlers()
            self._reset()
            _watchdog.interrupt_handled()
            raise KeyboardInterrupt(f"the call to {self._machine.symbolize(entry)} was "
                                    f"stopped by SIGINT at {self._machine.symbolize(pc)}")
        if not err and stop in (STOP_TIMEOUT, STOP_CANCEL, STOP_BUDGET):
            raise self._stopped(stop, entry, pc, timeout, budget)
        from ._faults import build_fault  # a fault report: imported on the first one
        fault = build_fault(self._machine, err, pc, entry, interrupted=stop == STOP_INTR,
                            mem_fault=self._mem_fault, intno=self._intno)
        self._reset()
        raise fault

    def pending_handlers(self) -> None:
        """Run the pending signal handlers before a call on the main thread
        starts (see ``_codegen._run_lines``)."""
        run_pending_handlers()

    def _run_signal_handlers(self) -> None:
        """Run the pending Python signal handlers now; the machine is reset
        if one raises."""
        try:
            run_pending_handlers()
        except BaseException:
            self._reset()
            raise

    def _stopped(self, stop: str, entry: int, pc: int, timeout: float | None,
                 budget: int | None) -> CallTimeout:
        """The ``CallTimeout`` for a call stopped by its timeout, a cancel or
        its budget; the machine is reset."""
        where = self._machine.symbolize(pc)
        target = self._machine.symbolize(entry)
        self._reset()
        if stop == STOP_TIMEOUT:
            t = timeout if timeout is not None else self.timeout
            err = CallTimeout(f"call to {target} timed out after {t} s (stopped at {where}); "
                              f"the machine was reset and is usable")
        elif stop == STOP_CANCEL:
            err = CallTimeout(f"call to {target} was cancelled (stopped at {where})")
            err.reason = "cancel"
        else:
            n = budget if budget is not None else self.instruction_budget
            err = CallTimeout(f"call to {target} exhausted its instruction budget of {n} "
                              f"(stopped at {where})")
            err.reason = "budget"
        return err
