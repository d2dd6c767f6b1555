"""How a dispatch obeys the limits of the invocation that runs it: the
context's deadline, instruction budget and cancel
(:class:`vmrt.vm.context.ExecutionLimits`, found with
:func:`~vmrt.vm.context.current_limits`).

* Emulated workgroups run with a unicorn timeout of what is left until the
  deadline and an instruction count of what is left of the budget; the
  guest instructions they run are counted (``count_instructions``) and
  charged to the budget.  A cancel stops a workgroup in flight
  (``machine.cancel``).
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

__all__ = ["ExecutionLimits", "before_workgroup", "current_limits", "guest_workgroup", "stop_error",
           "stopping_guest"]


def before_workgroup(where: str, deadline: float | None, limits: ExecutionLimits | None) -> None:
    """Raise if the invocation was cancelled or the deadline passed."""
    if limits is not None and limits.cancel_requested():
        raise Cancelled(f"{where}: the invocation was cancelled", StatusCode.CANCELLED)
    if deadline is not None and deadline - time.monotonic() <= 0:
        raise BudgetExceeded(f"{where}: execution timed out", StatusCode.DEADLINE_EXCEEDED)


def guest_workgroup(fn: Any, machine: Any, args: tuple[int, int, int], where: str,
                    deadline: float | None, limits: ExecutionLimits | None) -> int:
    """One emulated workgroup under the invocation's limits."""
    before_workgroup(where, deadline, limits)
    left = None if deadline is None else deadline - time.monotonic()
    budget = None if limits is None else limits.remaining
    if limits is None or budget is None:
        machine.count_instructions(False)       # no-op unless a budgeted call left it on
        return int(fn(*args, timeout=left))
    if budget <= 0:
        raise BudgetExceeded(f"{where}: instruction budget of {limits.budget} exhausted",
                             StatusCode.RESOURCE_EXHAUSTED)
    machine.count_instructions(True)
    start = machine.instructions
    try:
        return int(fn(*args, timeout=left, budget=budget))
    finally:
        limits.left -= machine.instructions - start       # charged; raised by the next tick


def stop_error(e: elfkit.CallTimeout, where: str, limits: ExecutionLimits | None) -> VmError:
    """The VM error for a guest call stopped by its timeout, budget or a cancel."""
    if e.reason == "cancel" or limits is not None and limits.cancel_requested():
        return Cancelled(f"{where}: the invocation was cancelled", StatusCode.CANCELLED)
    if e.reason == "budget":
        n = None if limits is None else limits.budget
        return BudgetExceeded(f"{where}: instruction budget of {n} exhausted",
                              StatusCode.RESOURCE_EXHAUSTED)
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
