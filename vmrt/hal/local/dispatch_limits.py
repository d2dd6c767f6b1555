"""How a dispatch obeys the limits of the invocation that runs it: the
context's deadline, instruction budget and cancel
(:class:`vmrt.vm.context.ExecutionLimits`, found with
:func:`~vmrt.vm.context.current_limits`).

* Emulated workgroups run with a unicorn timeout of what is left until the
  deadline and an instruction count of what is left of the budget; the
  guest instructions they run are counted (``count_instructions``) and
  charged to the budget.  A cancel stops a workgroup in flight
  (``machine.cancel``).  Workers running one dispatch on several threads
  share its budget through :class:`BudgetShares`.
* Native workgroups cannot be counted or stopped inside: the deadline and a
  cancel are checked before each workgroup starts; the budget counts VM
  instructions only.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import elfkit

from ...errors import BudgetExceeded, Cancelled, StatusCode, VmError
from ...vm.context import ExecutionLimits, current_limits

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["BudgetShares", "ExecutionLimits", "before_workgroup", "current_limits",
           "guest_workgroup", "shares_for", "stop_error", "stopping_guest"]


def before_workgroup(where: str, deadline: float | None, limits: ExecutionLimits | None) -> None:
    """Raise if the invocation was cancelled or the deadline passed."""
    if limits is not None and limits.cancel_requested():
        raise Cancelled(f"{where}: the invocation was cancelled", StatusCode.CANCELLED)
    if deadline is not None and deadline - time.monotonic() <= 0:
        raise BudgetExceeded(f"{where}: execution timed out", StatusCode.DEADLINE_EXCEEDED)


class BudgetShares:
    """What is left of an invocation's instruction budget while ``threads``
    workers run one dispatch, without a lock on the hot path: each worker
    adds the guest instructions it ran to its own slot of :attr:`ran` (one
    writer per slot), and a workgroup may run what the budget had at the
    start of the dispatch less what every worker has charged so far.

    A stale read of another worker's slot only lets a workgroup run longer
    than it may; a charge then takes :meth:`left` below zero, which
    :func:`guest_workgroup` reports as the budget spent.  A workgroup is
    stopped only when it needs more than every other workgroup left it,
    so the dispatch fails exactly when the instructions it needs exceed the
    budget -- where a single thread fails.  :meth:`settle` charges the
    total to the invocation once the workers have stopped."""

    __slots__ = ("limits", "cap", "ran")

    def __init__(self, limits: ExecutionLimits, cap: int, threads: int):
        self.limits = limits
        self.cap = cap
        #: guest instructions run by each worker in this dispatch
        self.ran = [0] * threads

    def left(self) -> int:
        """Instructions the budget has left (negative: overspent)."""
        return self.cap - sum(self.ran)

    def settle(self) -> None:
        """Charge what every worker ran to the invocation (after they
        stopped); an overspent budget is raised by the next tick."""
        self.limits.left -= sum(self.ran)
        self.ran = [0] * len(self.ran)


def shares_for(limits: ExecutionLimits | None, threads: int) -> BudgetShares | None:
    """The shares of ``limits``' budget for a dispatch on ``threads``
    workers; None when there is no budget."""
    if limits is None:
        return None
    cap = limits.remaining
    return None if cap is None else BudgetShares(limits, cap, threads)


def guest_workgroup(fn: Any, machine: Any, args: tuple[int, int, int], where: str,
                    deadline: float | None, limits: ExecutionLimits | None,
                    shares: BudgetShares | None = None, worker: int = 0) -> int:
    """One emulated workgroup under the invocation's limits.  With
    ``shares`` (a dispatch on several workers; this one is ``worker``) the
    budget is taken from and charged to them instead of ``limits``."""
    before_workgroup(where, deadline, limits)
    left = None if deadline is None else deadline - time.monotonic()
    if shares is not None:
        budget: int | None = shares.left()
    else:
        budget = None if limits is None else limits.remaining
    if limits is None or budget is None:
        machine.count_instructions(False)       # no-op unless a budgeted call left it on
        return int(fn(*args, timeout=left))
    if budget <= 0:
        raise _spent(where, limits)
    machine.count_instructions(True)
    start = machine.instructions
    if shares is None:
        try:
            return int(fn(*args, timeout=left, budget=budget))
        finally:
            limits.left -= machine.instructions - start   # charged; raised by the next tick
    try:
        r = int(fn(*args, timeout=left, budget=budget))
    finally:
        shares.ran[worker] += machine.instructions - start
    if shares.left() < 0:       # other workers ran what this one counted on
        raise _spent(where, limits)
    return r


def _spent(where: str, limits: ExecutionLimits | None) -> BudgetExceeded:
    n = None if limits is None else limits.budget
    return BudgetExceeded(f"{where}: instruction budget of {n} exhausted",
                          StatusCode.RESOURCE_EXHAUSTED)


def stop_error(e: elfkit.CallTimeout, where: str, limits: ExecutionLimits | None) -> VmError:
    """The VM error for a guest call stopped by its timeout, budget or a cancel."""
    if e.reason == "cancel" or limits is not None and limits.cancel_requested():
        return Cancelled(f"{where}: the invocation was cancelled", StatusCode.CANCELLED)
    if e.reason == "budget":
        return _spent(where, limits)
    return BudgetExceeded(f"{where}: execution timed out", StatusCode.DEADLINE_EXCEEDED)


@contextlib.contextmanager
def stopping_guest(machine: Any, limits: ExecutionLimits | None) -> Iterator[None]:
    """While the block runs, a cancel of the invocation stops the guest call
    running in ``machine`` at once."""
    if limits is None:
        yield
        return
    with limits.stopping(lambda: machine.cancel(wait=0)):
        yield
