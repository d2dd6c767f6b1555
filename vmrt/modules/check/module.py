"""The ``check`` module (IREE's ``iree/modules/check``): the imports of the
``check`` dialect's ops, each with the cconv the pip compiler (3.13) emits.

A failing expectation does not stop the function: it is recorded in the
context's state (``state.failures``, also reachable with
:func:`failures`) and passed to the module's ``on_failure`` callback, and
the function goes on, as under googletest's ``EXPECT_*``.  Element types
the comparison cannot handle are errors (``INVALID_ARGUMENT``), which do
stop the function.  The compiler marks every ``check`` import optional, so a
program also runs where no ``check`` module is registered (the expectations
are then skipped, as under iree-run-module).
"""
from __future__ import annotations

from collections.abc import Callable

from elfkit.support import DataRecord, field

from ...errors import HalError, StatusCode
from ...hal.buffer_view import BUFFER_VIEW_TYPE, BufferView
from ...hal.objects import DEVICE_TYPE
from ...vm.instance import Instance
from ...vm.native_module import NativeModule, NativeState, export
from .compare import (
    expect_all_true_message,
    expect_almost_eq_message,
    expect_eq_message,
    expect_true_message,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_VIEWS = (DEVICE_TYPE, BUFFER_VIEW_TYPE, BUFFER_VIEW_TYPE)


class CheckFailure(DataRecord, frozen=True):
    """One failed expectation: the ``check`` function (``expect_eq`` ...) and
    googletest's message for it (the lines iree-check-module prints after
    ``file:line: Failure``)."""

    function: str
    message: str

    def __str__(self) -> str:
        return f"check.{self.function}: Failure\n{self.message}"


def _view(value: Any, what: str) -> BufferView:
    if not isinstance(value, BufferView):
        raise HalError(f"{what} buffer view is null", StatusCode.INVALID_ARGUMENT)
    return value


def _i32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


class CheckState(NativeState):
    """The ``check`` module's state in one context: the failed expectations,
    oldest first."""

    failures: list[CheckFailure] = field(default_factory=list)


class CheckModule(NativeModule[CheckState]):
    """``check`` (version 0).  ``on_failure(failure)`` is called for every
    failed expectation, after it is recorded in the context's state."""

    name = "check"
    version = 0
    state_class = CheckState

    def __init__(self, instance: Instance | None = None,
                 on_failure: Callable[[CheckFailure], None] | None = None):
        super().__init__()
        self.on_failure = on_failure

    def _record(self, state: CheckState, function: str, message: str | None) -> None:
        if message is None:
            return
        failure = CheckFailure(function, message)
        state.failures.append(failure)
        if self.on_failure is not None:
            self.on_failure(failure)

    @export("expect_true", "0i_v")
    def expect_true(self, state: CheckState, operand: int) -> None:
        self._record(state, "expect_true", expect_true_message(_i32(operand), True))

    @export("expect_false", "0i_v")
    def expect_false(self, state: CheckState, operand: int) -> None:
        self._record(state, "expect_false", expect_true_message(_i32(operand), False))

    @export("expect_all_true", "0rr_v", arg_types=_VIEWS[:2])
    def expect_all_true(self, state: CheckState, device: Any, operand: Any) -> None:
        self._record(state, "expect_all_true",
                     expect_all_true_message(_view(operand, "operand")))

    @export("expect_eq", "0rrr_v", arg_types=_VIEWS)
    def expect_eq(self, state: CheckState, device: Any, lhs: Any, rhs: Any) -> None:
        self._record(state, "expect_eq",
                     expect_eq_message(_view(lhs, "lhs"), _view(rhs, "rhs")))

    @export("expect_almost_eq", "0rrrff_v", arg_types=_VIEWS)
    def expect_almost_eq(self, state: CheckState, device: Any, lhs: Any, rhs: Any,
                         atol: float, rtol: float) -> None:
        self._record(state, "expect_almost_eq",
                     expect_almost_eq_message(_view(lhs, "lhs"), _view(rhs, "rhs"), atol, rtol))


def failures(context: Any) -> list[CheckFailure]:
    """The expectations that failed so far in ``context`` (a
    :class:`vmrt.Context`, or a :class:`vmrt.Program`), oldest first; empty
    when no ``check`` module is registered there."""
    ctx = context if hasattr(context, "state_of") else context.context
    out: list[CheckFailure] = []
    for m in ctx.modules:
        if isinstance(m, CheckModule):
            out.extend(ctx.state_of(m).failures)
    return out
