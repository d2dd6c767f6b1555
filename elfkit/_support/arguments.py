"""Argument checks at the public API boundary: a wrong type or value is an
:class:`~elfkit.errors.InvalidArgumentError` (a TypeError) or a
:class:`~elfkit.errors.SignatureError` (a ValueError) naming the argument
and the function, never a foreign exception from deep inside."""
from __future__ import annotations

import math
import operator

from ..errors import InvalidArgumentError, SignatureError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EMULATED_OPTIONS", "buffer", "integer", "machine_options", "timeout"]

#: keyword arguments of ``elfkit.load`` passed on to ``EmulatedMachine``
EMULATED_OPTIONS = frozenset({"memory_limit", "stack_size", "instruction_budget", "timeout",
                              "float_abi", "cpu", "max_callbacks", "trace"})


def integer(value: Any, name: str, where: str, *, minimum: int | None = None) -> int:
    """``value`` as an int (bool excluded; numpy integers accepted)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidArgumentError(f"{where}: {name} must be an integer, not "
                                   f"{type(value).__name__}")
    v = operator.index(value)
    if minimum is not None and v < minimum:
        raise SignatureError(f"{where}: {name} must be >= {minimum}, got {v}")
    return v


def _real(value: Any) -> bool:
    """A real number other than a bool (numbers is imported here, for the
    rarer types: its import costs a command's start-up 0.2 ms)."""
    import numbers
    return not isinstance(value, bool) and isinstance(value, numbers.Real)


def timeout(value: Any, where: str, name: str = "timeout") -> float | None:
    """None, or a finite number of seconds >= 0."""
    if value is None:
        return None
    if value.__class__ not in (int, float) and not _real(value):
        raise InvalidArgumentError(f"{where}: {name} must be a number of seconds or None, not "
                                   f"{type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise SignatureError(f"{where}: {name} must be a finite number of seconds >= 0, got "
                             f"{value!r}")
    return v


def buffer(value: Any, name: str, where: str) -> memoryview:
    """A bytes-like object (bytes, bytearray, memoryview, contiguous numpy
    array) as a flat memoryview of its bytes; str, int and other objects are
    refused."""
    if isinstance(value, str):
        raise InvalidArgumentError(f"{where}: {name} must be bytes-like, not str "
                                   f"(encode it first)")
    try:
        view = memoryview(value)
    except TypeError:
        raise InvalidArgumentError(f"{where}: {name} must be bytes-like (bytes, bytearray, "
                                   f"memoryview or a numpy array), not "
                                   f"{type(value).__name__}") from None
    if view.ndim == 1 and view.format == "B":
        return view
    if not view.c_contiguous:
        raise InvalidArgumentError(f"{where}: {name} must be contiguous in memory")
    return view.cast("B")


def machine_options(options: dict[str, Any], where: str) -> None:
    """Refuse keyword arguments that ``EmulatedMachine`` does not take."""
    unknown = sorted(set(options) - EMULATED_OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"{where}: unexpected keyword argument(s) "
                                   f"{', '.join(unknown)} (machine options are "
                                   f"{', '.join(sorted(EMULATED_OPTIONS))})")
