"""Running a range of native workgroups: one ctypes call for the whole range.

A native dispatch calls its function once per workgroup, each with the
address of that workgroup's state; the states of a range lie one after
another in host memory.  Calling the function from Python costs a ctypes
call per workgroup (about a microsecond: more than many workgroups take).
:class:`WorkgroupRunner` instead makes one call into a small loop of the
host's own machine code (:mod:`~vmrt.hal.local.workgroup_loop_x86_64`,
:mod:`~vmrt.hal.local.workgroup_loop_aarch64`: hand-written, a hundred
bytes, no toolchain needed), written once per machine into a page of the
executable's native machine (``reserve``, ``write``, ``protect``: public
``elfkit.exec`` calls).  The loop calls the function for each workgroup
state of ``[start, end)``, stops at the first nonzero return and reports
which workgroup stopped it and with what status, so errors name the same
workgroup ``(x, y, z)`` and status as the per-workgroup calls did.  The
loop is a plain ``CFUNCTYPE`` function: the GIL is released during the
whole range, so ``local-task`` workers run theirs in parallel.

Limits (:mod:`~vmrt.hal.local.dispatch_limits`), as before checked between
workgroups:

* a cancel: the loop reads a cancel word before each workgroup, which a
  stop function registered with ``ExecutionLimits.stopping`` sets (so a
  cancel from another thread, or of an enclosing invocation, stops the
  range before its next workgroup); each thread keeps one word registered
  with the limits it last ran under (:func:`cancel_word`: registering
  around each range cost more than the loop saved on small grids), and
  the cancel flag is checked once before the call (a cancel before it runs
  no workgroup);
* a deadline: native code cannot read the clock the way
  ``time.monotonic`` does, and a timer thread per range to set the cancel
  word would cost more than the loop saves; a range with a deadline runs
  with one ctypes call per workgroup, checked before each, as before
  (invocations with a timeout are rare and not on hot paths).

The per-workgroup Python loop also stays where the native loop does not
apply: a host without loop code (other than x86_64 and aarch64, or
Windows), an executable with imports (an import implemented in Python that
raises can only report after the native call returns, when the failing
workgroup is no longer known), a page the host refuses to make executable
(a warning says so once), and ``VMRT_WORKGROUP_LOOP=python`` in the
environment.  Results are identical either way.

The FPU state is the caller's business as before (``flushed``, else
:func:`~vmrt.hal.local.fpu_state.push`/``pop`` around the range).
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import weakref
from functools import partial

from elfkit.exec import PROT_EXEC, PROT_READ

from ...errors import Cancelled, DispatchError, StatusCode, VmError
from .dispatch_args import workgroup_xyz
from .dispatch_limits import before_workgroup
from .fpu_state import pop, push
from .guest import sig

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from .dispatch_limits import ExecutionLimits

#: ``VMRT_WORKGROUP_LOOP=python``: one ctypes call per workgroup (the native
#: loop off; read when a runner is made)
ENV = "VMRT_WORKGROUP_LOOP"
#: the loop's signature: ``u64 loop(u64 *p, u64 k, u64 end, const volatile
#: i32 *cancel)`` with ``p``: [0] the dispatch function, [1] environment,
#: [2] dispatch state, [3] workgroup state 0, [4] workgroup state size, [5]
#: status (out, low 32 bits).  It calls ``fn(env, ds, p[3] + k * p[4])`` for
#: ``k`` from ``k`` to ``end``, first reading ``*cancel`` (nonzero: stop),
#: stops at the first nonzero return, stores the status it stopped with (0:
#: finished or cancelled) in ``p[5]`` and returns the ``k`` it stopped at
#: (``end``: all ran).
LOOP_SIG = "u64(u64,u64,u64,u64)"

_LOCK = threading.Lock()
#: machine -> address of its loop (an int: the machine's functions hold it)
_LOOPS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_WARNED: list[str] = []
#: the cancel word of ranges run without limits (never set)
_NEVER = ctypes.c_int32(0)
#: its address (the batch loop's ranges without limits read it too)
NEVER_ADDRESS = ctypes.addressof(_NEVER)


def loop_code(arch_name: str) -> bytes | None:
    """The loop's machine code for a host of ``arch_name``, or None."""
    if sys.platform == "win32":         # the loop follows the System V / AAPCS64 conventions
        return None
    if arch_name == "x86_64":       # the batch loop (vmrt.hal.local.batch) follows
        from .workgroup_loop_x86_64 import BATCH_CODE, BATCH_OFFSET, CODE
        return CODE.ljust(BATCH_OFFSET, b"\xcc") + BATCH_CODE
    if arch_name == "aarch64":
        from .workgroup_loop_aarch64 import CODE as A64
        return A64
    return None


def loop_address(machine: Any) -> int | None:
    """The address of the loop in ``machine`` (a native machine; written on
    first use), or None when it has none (see the module docstring)."""
    addr = _LOOPS.get(machine)
    if addr is not None:
        return addr
    code = loop_code(machine.arch.name) if machine.backend == "native" else None
    if code is None:
        return None
    with _LOCK:
        addr = _LOOPS.get(machine)
        if addr is None:
            page = machine.arch.page_size
            addr = None
            try:
                addr = machine.reserve(page, page)
                machine.write(addr, code)
                machine.protect(addr, page, PROT_READ | PROT_EXEC)
            except Exception as e:  # noqa: BLE001 - any failure means the Python loop
                if addr is not None:
                    machine.release(addr, page)
                if not _WARNED:
                    _WARNED.append(f"{type(e).__name__}: {e}")
                    import warnings
                    warnings.warn(f"vmrt: native dispatches call each workgroup from Python "
                                  f"(the native workgroup loop could not be made executable: "
                                  f"{_WARNED[0]})", RuntimeWarning, stacklevel=3)
                return None
            _LOOPS[machine] = addr
    return addr


def workgroup_failure(where: str, xyz: str, cause: Exception | int) -> DispatchError:
    """The error of workgroup ``xyz`` (``"(x, y, z)"``) that raised ``cause``
    or returned it (a nonzero status)."""
    if isinstance(cause, int):
        return DispatchError(f"{where} returned catastrophic error {cause} in workgroup {xyz}",
                             StatusCode.INTERNAL)
    return DispatchError(f"{where} failed in workgroup {xyz}: {type(cause).__name__}: {cause}",
                         StatusCode.INTERNAL)


def each_workgroup(call: Callable[[int], int], start: int, end: int,
                   failure: Callable[[int, Exception | int], Exception]) -> None:
    """``call(k)`` for ``k`` from ``start`` to ``end``, stopping at the
    first nonzero status ``r``: raises ``failure(k, r)``, or ``failure(k,
    e)`` for an exception ``e`` of ``call(k)`` (a :class:`VmError` escapes
    as is)."""
    k = start - 1
    try:
        for k in range(start, end):  # k names the failing workgroup
            r = call(k)
            if r:
                break
        else:
            return
    except VmError:
        raise
    except Exception as e:
        raise failure(k, e) from e
    raise failure(k, r)


class WorkgroupRunner:
    """Runs ranges of workgroups of one export of a native executable
    ``exe`` (grid ``wc``; ``where`` names it in errors) whose states lie
    one after another; see the module docstring."""

    def __init__(self, exe: Any, exp: Any, wc: tuple[int, int, int], where: str):
        self.fn = exe.entry(exp)
        self.env = exe.env
        self.ws_size = exe.layout.ws_size
        self.wc = wc
        self.where = where
        self.function = exp.function
        #: the loop's callable (None: one ctypes call per workgroup) and address
        self.loop: Any = None
        self.loop_address = 0
        self.machine_arch = exe.machine.arch.name
        if os.environ.get(ENV, "") != "python" and not getattr(exe, "imports", ()):
            addr = loop_address(exe.machine)
            if addr is not None:
                self.loop = exe.machine.function(addr, sig(LOOP_SIG))
                self.loop_address = addr
        self.local = threading.local()

    def failure(self, k: int, cause: Exception | int,
                index: Sequence[int] | None = None) -> DispatchError:
        """The error of the ``k``-th workgroup (linear index ``index[k]``,
        ``k`` itself without ``index``)."""
        return workgroup_failure(self.where,
                                 workgroup_xyz(k if index is None else index[k], self.wc), cause)

    def run(self, ds: int, ws: int, start: int, end: int, deadline: float | None,
            limits: ExecutionLimits | None = None, flushed: bool = False,
            index: Sequence[int] | None = None) -> None:
        """Workgroups ``start`` to ``end`` whose states are at ``ws + k *
        ws_size`` over dispatch state ``ds`` (``index``: the linear indices
        errors name; ``flushed``: this thread's FPU state is already set)."""
        fpu = None if flushed else push()   # denormals flushed on this thread meanwhile
        try:
            if self.loop is None or deadline is not None:
                self._each(ds, ws, start, end, deadline, limits, index)
            else:
                self._native(ds, ws, start, end, limits, index)
        finally:
            if fpu is not None:
                pop(fpu)

    def _each(self, ds: int, ws: int, start: int, end: int, deadline: float | None,
              limits: ExecutionLimits | None, index: Sequence[int] | None) -> None:
        """One ctypes call per workgroup, the limits checked before each."""
        fn, env, size, where = self.fn, self.env, self.ws_size, self.where

        def call(k: int) -> int:
            if deadline is not None or limits is not None and (
                    limits.cancelled or limits.parent is not None):
                before_workgroup(where, deadline, limits)
            r: int = fn(env, ds, ws + k * size)
            return r
        each_workgroup(call, start, end, lambda k, cause: self.failure(k, cause, index))

    def _state(self) -> tuple[Any, int]:
        """This thread's loop parameters and their address."""
        params = (ctypes.c_uint64 * 6)(self.function, self.env, 0, 0, self.ws_size, 0)
        mine = (params, ctypes.addressof(params))
        self.local.mine = mine
        return mine

    def _native(self, ds: int, ws: int, start: int, end: int, limits: ExecutionLimits | None,
                index: Sequence[int] | None) -> None:
        """The range in one call of the loop."""
        try:
            params, at = self.local.mine
        except AttributeError:
            params, at = self._state()
        params[2] = ds
        params[3] = ws
        cancel = NEVER_ADDRESS if limits is None else cancel_word(limits)
        if limits is not None and (limits.cancelled or limits.parent is not None):
            before_workgroup(self.where, None, limits)      # cancelled before the loop
        try:
            k = self.loop(at, start, end, cancel)
        except VmError:
            raise
        except Exception as e:      # the machine closed meanwhile
            raise self.failure(start, e, index) from e
        if k < end:
            self.stopped(k, params[5], limits, index)

    def stopped(self, k: int, status: int, limits: ExecutionLimits | None,
                 index: Sequence[int] | None) -> None:
        """Raise what stopped a loop at workgroup ``k``: its ``status``
        (low 32 bits; 0: a cancel)."""
        r = status & 0xFFFFFFFF
        if r:
            raise self.failure(k, r - (1 << 32) if r & 0x80000000 else r, index)
        if limits is not None:
            before_workgroup(self.where, None, limits)
        raise Cancelled(f"{self.where}: the invocation was cancelled", StatusCode.CANCELLED)

    def batch_address(self) -> int:
        """The address of the batch loop (:mod:`~vmrt.hal.local.batch`)
        beside this runner's workgroup loop, 0 when there is none."""
        if not self.loop_address or self.machine_arch != "x86_64":
            return 0
        from .workgroup_loop_x86_64 import BATCH_OFFSET
        return self.loop_address + BATCH_OFFSET

    def run_team(self, team: Any, ds: int, ws: int, total: int, chunk: int, threads: int,
                 limits: ExecutionLimits | None) -> float | None:
        """Workgroups ``0 .. total-1`` in chunks of ``chunk`` on ``team``
        (:class:`~vmrt.hal.local.workgroup_loop_team.Team`) with up to
        ``threads`` threads, the calling one's FPU state set by the caller:
        how long (seconds) the calling thread waited for the workers at the
        end; None when the team is busy with another thread's grid (nothing
        ran)."""
        if self.loop is None:
            return None
        cancel = NEVER_ADDRESS if limits is None else cancel_word(limits)
        if limits is not None and (limits.cancelled or limits.parent is not None):
            before_workgroup(self.where, None, limits)      # cancelled before the grid
        res = team.run(self.loop_address, self.function, self.env, ds, ws, self.ws_size, total,
                       chunk, cancel, threads)
        if res is None:
            return None
        fail, stopped, waited = res     # fail: k << 32 | status of the first failure, or ~0
        if stopped:
            failed = fail >> 32 < total
            self.stopped(fail >> 32 if failed else 0, fail if failed else 0, limits, None)
        return float(waited)


_WATCH = threading.local()


def cancel_word(limits: ExecutionLimits) -> int:
    """The address of this thread's cancel word for ``limits``: a stop
    function registered with ``limits.stopping`` (so also for the
    invocations it runs inside) sets it when the invocation is cancelled.

    Registering around every range would cost more than the loop saves on
    small grids, so each thread keeps one registration, for the limits it
    last ran under, until it runs under other limits (or ends).  A word set
    by a cancel of an earlier invocation is cleared here; the caller checks
    ``limits.cancel_requested()`` after this (``cancel`` sets the flag
    before it calls the stop functions), so a cancel is never lost between
    the two."""
    watch = getattr(_WATCH, "watch", None)
    if watch is not None and watch[0] is limits:
        if watch[1].value:
            watch[1].value = 0
        return int(watch[2])
    if watch is not None:
        _WATCH.watch = None
        watch[3].__exit__(None, None, None)     # no longer watching the old limits
    word = ctypes.c_int32(0)
    registration = limits.stopping(partial(setattr, word, "value", 1))
    registration.__enter__()
    _WATCH.watch = (limits, word, ctypes.addressof(word), registration)
    return ctypes.addressof(word)


__all__ = ["ENV", "LOOP_SIG", "NEVER_ADDRESS", "WorkgroupRunner", "cancel_word", "each_workgroup",
           "loop_address", "loop_code", "workgroup_failure"]
