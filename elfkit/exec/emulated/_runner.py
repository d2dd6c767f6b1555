"""Running guest calls (a mixin of ``EmulatedMachine``): per-signature
callers, nested calls from host callbacks, time and instruction limits,
cancellation, and turning an abnormal stop into the right exception.

The argument packing and result decoding of a call is generated once per
signature by ``_codegen.build_caller``; it calls back into ``_run_limited``
(when a limit applies), ``_abnormal`` (when emulation stopped early or with
an error) and ``_nested`` (when a host callback calls guest code).
"""
from __future__ import annotations

import ctypes
import time
from collections.abc import Callable

from ... import arguments
from ...errors import CallTimeout, ExecutionError, MemoryAccessError, SignatureError
from ...signature import Signature
from ...signature import parse as parse_signature
from . import _cc, _codegen, _uc, _watchdog
from ._layout import SENTINEL

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._state import MachineState
else:
    MachineState = object

C = _uc.C
lib = _uc.lib

# why emulation stopped early (set before uc_emu_stop)
STOP_HOOK = "hook"            # a Python callback raised
STOP_TIMEOUT = "timeout"
STOP_CANCEL = "cancel"
STOP_INTR = "interrupt"       # CPU exception seen by the interrupt hook
STOP_BUDGET = "budget"
STOP_SIGNAL = "signal"        # a signal arrived while the main thread ran the call

_check_signals: Any = None    # ctypes.pythonapi.PyErr_CheckSignals, looked up on first use

_NO_LIMIT = 1 << 63


class CallRunner(MachineState):
    """Uses the machine's ``_h``, ``_uc``, ``_plans``, ``_callers``,
    ``_abi_ranges``, ``_stop``, ``_running`` ... set up by
    ``EmulatedMachine.__init__``."""

    # ------------------------------------------------------------- limits
    def set_limits(self, *, timeout: float | None = None,
                   instruction_budget: int | None = None) -> None:
        """Defaults applied to every call that does not pass its own."""
        self.timeout = timeout
        self.instruction_budget = instruction_budget

    @property
    def timeout(self) -> float | None:
        """Default wall-clock limit (seconds) of every call; None: no limit."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._timeout = arguments.timeout(value, "timeout")
        self._limited = (self._timeout is not None or bool(getattr(self, "_budget", None))
                         or self._x87.counted)

    @property
    def instruction_budget(self) -> int | None:
        """Default instruction budget of every call; None: unlimited."""
        return self._budget

    @instruction_budget.setter
    def instruction_budget(self, value: int | None) -> None:
        if value is not None and arguments.integer(value, "instruction_budget", "machine") < 0:
            raise SignatureError("an instruction budget must not be negative")
        self._budget = value
        self._limited = (getattr(self, "_timeout", None) is not None or bool(self._budget)
                         or self._x87.counted)

    # ------------------------------------------------- instruction counting
    @property
    def instructions(self) -> int:
        """Guest instructions run by calls since :meth:`count_instructions`
        was switched on (0 while off); a call stopped early counts its
        blocks whole."""
        return getattr(self, "_icount", 0)

    def count_instructions(self, on: bool = True) -> None:
        """Count the guest instructions calls run (:attr:`instructions`), for
        callers that charge them to a budget of their own.  A block hook
        adds each basic block's instruction count (decoded once per block),
        which slows emulation down; switching it on or off flushes the
        translation cache, so leave it on while it is needed."""
        self._check_open()
        hook: int | None = getattr(self, "_icount_hook", None)
        if bool(on) == (hook is not None):
            return
        if hook is not None:
            self._icount_hook = None
            self._del_hook(hook)
            self._uc.flush_tb()
            return
        self._icount = 0
        sizes: dict[tuple[int, int], int] = {}

        def on_block(_h: Any, address: int, size: int, _ud: Any) -> None:
            n = sizes.get((address, size))
            if n is None:
                n = sizes[(address, size)] = self._block_length(address, size)
            self._icount += n
        self._icount_hook = self._add_hook(C.UC_HOOK_BLOCK, _uc.HOOK_CODE(on_block), 1, 0)
        self._uc.flush_tb()

    def _block_length(self, address: int, size: int) -> int:
        """How many instructions the basic block at ``address`` has."""
        buf = ctypes.create_string_buffer(max(size, 1))
        if not size or lib.uc_mem_read(self._h, address, buf, size):
            return 1
        thumb = False
        if self.arch.name == "arm":
            lib.uc_reg_read(self._h, self._reg("CPSR"), self._word_ref)
            thumb = bool(self._word_buf.value & 0x20)
        from ..disasm import disassemble  # tracing and budgets only: imported on use
        return max(1, len(disassemble(buf.raw[:size], address, self.arch, thumb=thumb)))

    def note_code(self, addr: int, size: int) -> None:
        """Called when ``[addr, addr+size)`` becomes executable: on i386, a
        straight run of x87 instructions switches the instruction counter on
        for every later call (see ``_x87.X87_RUN_LIMIT``)."""
        if self._x87.scan(addr, size):
            self._limited = True

    # -------------------------------------------------------------- calls
    def plan(self, sig: Signature | str, float_abi: str | None = None) -> _cc.Plan:
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

    def call(self, addr: int, sig: Signature | str, args: tuple[Any, ...] = (),
             timeout: float | None = None, budget: int | None = None) -> Any:
        self._check_open()
        if not isinstance(sig, Signature):
            sig = parse_signature(sig)
        abi = self._abi_at(addr) if self._mixed_abi else self._float_abi
        f = self._callers.get((sig, abi, False))
        if f is None:
            self._uc.ran = True       # from now on host writes to code invalidate translations
            f = self._callers[(sig, abi, False)] = _codegen.build_caller(
                self, self.plan(sig, abi), None, f"call {sig}")
        return f(addr, tuple(args), timeout, budget)

    def function(self, addr: int, sig: Signature | str, name: str = "") -> Callable[..., Any]:
        """A fast callable ``f(*args, timeout=None, budget=None)`` for ``addr``."""
        self._check_open()
        sig = parse_signature(sig)
        self._uc.ran = True
        label = name or self.symbolize(addr)
        if not label.isidentifier():
            label = f"guest_{addr:x}"
        abi = self._abi_at(addr)
        proto = self._callers.get((sig, abi, True))
        if proto is None:     # generated once per signature, copied for each address
            proto = self._callers[(sig, abi, True)] = _codegen.build_caller(
                self, self.plan(sig, abi), addr, label)
            return proto
        return _codegen.rebind(proto, addr, label)

    def _nested(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: Any,
                budget: Any) -> Any:
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
        with self._slock:
            self._running = False
            gen = self._gen
        try:
            return fn(*args, timeout=timeout, budget=budget)
        finally:
            with self._slock:
                self._running = True
                self._gen = gen
            self._call_sp = saved_sp
            lib.uc_context_restore(self._h, ctx.context)
            self._ctx_pool.append(ctx)

    def _bad_args(self, plan: _cc.Plan, args: tuple[Any, ...],
                  err: BaseException | None) -> Exception:
        if isinstance(err, (SignatureError, MemoryAccessError)):
            return err
        return _codegen.bad_args(plan, args, err)

    def _bad_result(self, plan: _cc.Plan, name: str, res: Any) -> Exception:
        return _codegen.bad_result(plan, name, res)

    # ----------------------------------------------- limits, stop, cancel
    def _run_limited(self, entry: int, timeout: float | None, budget: int | None) -> int:
        count = budget if budget is not None else (self.instruction_budget or 0)
        t = arguments.timeout(timeout, "call") if timeout is not None else self.timeout
        if budget is not None:
            arguments.integer(budget, "budget", "call")
        if count < 0:
            raise SignatureError("an instruction budget must not be negative")
        run_count = count or (_NO_LIMIT if self._x87.counted else 0)
        if run_count and not self._count_mode:
            # unicorn adds its counting hook without flushing the translation
            # cache: blocks translated before would never be counted
            self._uc.flush_tb()
        self._count_mode = bool(run_count)
        gen = self._gen
        token = (_watchdog.arm(t, lambda: self._request_stop(STOP_TIMEOUT, gen))
                 if t is not None else None)
        failed: BaseException | None = None
        try:
            err = lib.uc_emu_start(self._h, entry, SENTINEL, 0, run_count)
        finally:
            if token is not None:
                failed = _watchdog.disarm(token)
        if failed is not None:
            self._stop = None
            self._reset()
            raise ExecutionError(f"the watchdog could not stop the call to "
                                 f"{self.symbolize(entry)}: {failed}") from failed
        if not err and self._stop is None and count and self._pc() != SENTINEL:
            self._stop = STOP_BUDGET
        return err

    def _request_stop(self, reason: str, gen: int) -> bool:
        """Stop the run of call ``gen`` (or of a call it made from a host
        callback) if it is running now; a stop never reaches a later call."""
        with self._slock:
            if not self._running or gen not in self._active:
                return False
            if self._stop is None:
                self._stop = reason
            lib.uc_emu_stop(self._h)
            return True

    def _stop_for_signal(self) -> None:
        """Called by the watchdog thread when a signal arrived while this
        machine ran a call on the main thread."""
        with self._slock:
            active = list(self._active)
        if active:
            self._request_stop(STOP_SIGNAL, active[-1])

    def cancel(self, wait: float = 1.0) -> bool:
        """Stop the call running in another thread (it raises ``CallTimeout``)
        and wait up to ``wait`` seconds for it to end.  Returns False if no
        call was running.  A cancel never reaches a call started after it."""
        with self._slock:
            if not self._active:
                return False
            gen = self._active[0]
        end = time.monotonic() + wait
        while gen in self._active:
            self._request_stop(STOP_CANCEL, gen)
            if time.monotonic() > end:
                break
            time.sleep(0.001)
        return True

    def _pc(self) -> int:
        lib.uc_reg_read(self._h, self._pc_id, self._word_ref)
        v = self._word_buf.value
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

    def _abnormal(self, err: int, entry: int, timeout: float | None, budget: int | None) -> None:
        """Emulation stopped with an error or early; raise, or return if the
        call completed after all (a stop request that came too late)."""
        self._uc.ran = True
        stop, self._stop = self._stop, None
        if stop == STOP_HOOK:
            exc, self._hook_exc = self._hook_exc, None
            self._reset()
            assert exc is not None
            raise exc                    # the host callback's own exception
        pc = self._pc()
        if not err and pc == SENTINEL and stop != STOP_INTR:
            if stop == STOP_SIGNAL:
                self._run_signal_handlers()
            return
        if not err and stop == STOP_SIGNAL:
            self._run_signal_handlers()          # raises (KeyboardInterrupt) after a reset
            stop = None                          # the handlers returned: carry on
        if not err and stop in (STOP_TIMEOUT, STOP_CANCEL, STOP_BUDGET):
            raise self._stopped(stop, entry, pc, timeout, budget)
        if not err and stop is None:
            # the signal handlers returned: carry on (limits start afresh)
            with self._slock:
                gen = self._gen
                self._active.append(gen)
                self._stop = None
                self._running = True
            prev, _watchdog.MAIN[0] = _watchdog.MAIN[0], self     # on the main thread
            try:
                if timeout is None and budget is None and not self._limited:
                    self._count_mode = False
                    err2 = lib.uc_emu_start(self._h, pc, SENTINEL, 0, 0)
                else:
                    err2 = self._run_limited(pc, timeout, budget)
            finally:
                _watchdog.MAIN[0] = prev
                with self._slock:
                    self._running = False
                    self._active.pop()
            if err2 or self._stop is not None:
                self._abnormal(err2, entry, timeout, budget)
            return
        from ._faults import build_fault  # a fault report: imported on the first one
        fault = build_fault(self, err, pc, entry, interrupted=stop == STOP_INTR,
                            mem_fault=self._mem_fault, intno=self._intno)
        self._reset()
        raise fault

    def _run_signal_handlers(self) -> None:
        global _check_signals
        if _check_signals is None:
            import ctypes
            _check_signals = ctypes.pythonapi.PyErr_CheckSignals
            _check_signals.restype = ctypes.c_int
            _check_signals.argtypes = ()
        try:
            _check_signals()
        except BaseException:
            self._reset()
            raise
        finally:
            _watchdog.signals_handled()

    def _stopped(self, stop: str, entry: int, pc: int, timeout: float | None,
                 budget: int | None) -> CallTimeout:
        """The ``CallTimeout`` for a call stopped by its timeout, a cancel or
        its budget; the machine is reset."""
        where = self.symbolize(pc)
        target = self.symbolize(entry)
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
