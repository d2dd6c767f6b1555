"""Calls of functions compiled with ``iree-compile
--iree-execution-model=async-external``: their reflection says
``iree.abi.model = "coarse-fences"`` and they take, after the user's
arguments, a wait fence (the inputs are ready when it is signalled) and a
signal fence (the results are ready when it is signalled).

iree-run-module and vmrt run them as synchronous functions: a null wait
fence, a new signal fence, the call, then a wait on the signal fence
(:func:`invoke`).  A Python caller may pass its own :class:`vmrt.Fence`
objects instead (:func:`check_fence`)."""
from __future__ import annotations

from collections.abc import Sequence

from ..errors import HalError, StatusCode

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ..hal.objects import Fence

# vmrt.hal.objects (Fence) is imported by the calls that use it: a program whose
# functions take no fences (most; a host-only run's) never needs it

MODEL_ATTR = "iree.abi.model"
COARSE_FENCES = "coarse-fences"


def takes_fences(module: Any, name: str) -> bool:
    """Whether export ``name`` of ``module`` uses the coarse-fences ABI."""
    return module.function_attrs(name).get(MODEL_ATTR) == COARSE_FENCES


def check_fence(value: Any, role: str, function: str) -> Fence | None:
    """A caller's wait or signal fence: None or a :class:`vmrt.Fence`."""
    from ..hal.objects import Fence
    if value is None or isinstance(value, Fence):
        return value
    raise HalError(f"the {role} fence of '{function}' (coarse-fences ABI) is a "
                   f"{type(value).__name__}, expected a vmrt.Fence or None",
                   StatusCode.INVALID_ARGUMENT)


def invoke(context: Any, function: Any, args: Sequence[Any], name: str) -> list[Any]:
    """Call a coarse-fences ``function`` with ``args`` (the user's) plus a
    null wait fence and a new signal fence, then wait on that fence."""
    from ..hal.objects import Fence
    signal = Fence()
    results = context.invoke(function, [*args, None, signal])
    signal.wait(f"the signal fence of '{name}'")
    return results


__all__ = ["COARSE_FENCES", "MODEL_ATTR", "check_fence", "invoke", "takes_fences"]
