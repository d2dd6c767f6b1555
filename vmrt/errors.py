"""One exception hierarchy for vmrt.

Every error carries an IREE-style status code, a message and a chain of
annotations (context added while the error travels up).  ``str(err)`` gives
``"CODE; message; annotation1; annotation2"``, the form ``iree-run-module``
prints without its ``file:line:`` prefix.
"""
from __future__ import annotations

import enum
from collections.abc import Sequence

from elfkit.support import IntEnumBody, quick_enum

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


@quick_enum(enum.IntEnum)      # ~0.1 ms less start-up than the class statement's enum
class StatusCode(IntEnumBody):
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16
    DEFERRED = 17
    INCOMPATIBLE = 18

    @classmethod
    def from_int(cls, value: int) -> StatusCode:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    @classmethod
    def from_errno(cls, err: int | None) -> StatusCode:
        """The status of a failed system call, as IREE maps ``errno``."""
        import errno as e
        table = {e.ENOENT: cls.NOT_FOUND, e.ENOTDIR: cls.NOT_FOUND,
                 e.EEXIST: cls.ALREADY_EXISTS, e.EISDIR: cls.FAILED_PRECONDITION,
                 e.EACCES: cls.PERMISSION_DENIED, e.EPERM: cls.PERMISSION_DENIED,
                 e.EROFS: cls.PERMISSION_DENIED, e.ENOSPC: cls.RESOURCE_EXHAUSTED,
                 e.EDQUOT: cls.RESOURCE_EXHAUSTED, e.EFBIG: cls.RESOURCE_EXHAUSTED,
                 e.ENOMEM: cls.RESOURCE_EXHAUSTED, e.EMFILE: cls.RESOURCE_EXHAUSTED,
                 e.EINVAL: cls.INVALID_ARGUMENT, e.EPIPE: cls.UNAVAILABLE,
                 e.EIO: cls.DATA_LOSS, e.EINTR: cls.CANCELLED}
        return table.get(err or 0, cls.UNKNOWN)


class VmError(Exception):
    """Base class of every error raised by vmrt."""

    default_code = StatusCode.UNKNOWN

    def __init__(self, message: str, code: StatusCode | int | None = None,
                 annotations: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.code = StatusCode.from_int(int(code)) if code is not None else self.default_code
        self.annotations: list[str] = list(annotations or [])

    def annotate(self, note: str) -> VmError:
        """Append context (innermost first, like IREE) and return self."""
        self.annotations.append(note)
        return self

    def __str__(self) -> str:
        return "; ".join([self.code.name, self.message, *self.annotations])


class LoadError(VmError):
    """A module file is malformed, truncated or of an unsupported version."""

    default_code = StatusCode.INVALID_ARGUMENT


class VerifyError(LoadError):
    """Bytecode failed verification (bad register, branch, opcode ...)."""

    default_code = StatusCode.INVALID_ARGUMENT


class LinkError(VmError):
    """Import resolution failed (missing module/function, signature mismatch)."""

    default_code = StatusCode.NOT_FOUND


class TypeRegistryError(VmError):
    """Ref type registration or lookup failed."""

    default_code = StatusCode.NOT_FOUND


class InvocationError(VmError):
    """A failure while a function runs in the VM (``vm.fail``, an
    out-of-bounds buffer access, a native function's bug).  Failures of
    guest machine code are elfkit's ``ExecutionError``."""

    default_code = StatusCode.UNKNOWN


class BudgetExceeded(InvocationError):
    """The instruction budget or the wall-clock deadline ran out."""

    default_code = StatusCode.DEADLINE_EXCEEDED


class Cancelled(InvocationError):
    """The invocation was cancelled (``Context.cancel()``, ``Program.cancel()``)."""

    default_code = StatusCode.CANCELLED


def os_error(e: OSError, what: str) -> VmError:
    """A failed system call as vmrt's error: the status ``errno`` maps to and
    ``what`` was being done (``"cannot write 'x.npy'"``), with the reason."""
    return VmError(f"{what}: {e.strerror or e}", StatusCode.from_errno(e.errno))


class UsageError(VmError):
    """Bad command-line flags or input specifications."""

    default_code = StatusCode.INVALID_ARGUMENT


class ArgumentError(VmError):
    """A value passed to a function has the wrong type, count or range."""

    default_code = StatusCode.INVALID_ARGUMENT


class FunctionNotFoundError(VmError, KeyError, AttributeError):
    """No function of that name is exported by the module or context (also a
    ``KeyError`` for ``program[name]`` and an ``AttributeError`` for
    ``program.name``, so ``hasattr`` and ``getattr(..., default)`` work)."""

    default_code = StatusCode.NOT_FOUND


class DefinitionError(VmError):
    """A module or function is defined wrongly (a native module's exports,
    a calling-convention string)."""

    default_code = StatusCode.INVALID_ARGUMENT


class ParameterError(VmError):
    """A parameter file (``--parameters``) is missing, truncated or corrupt,
    or a program asks for a parameter scope or key that is not there, or
    for more bytes than the parameter has."""

    default_code = StatusCode.INVALID_ARGUMENT


class HalError(VmError):
    """A HAL object was used wrongly: out-of-range buffer access, a null or
    mistyped buffer, buffer view, fence or command buffer, an unknown
    element type, driver or executable format."""

    default_code = StatusCode.INVALID_ARGUMENT


class ExecutableError(VmError):
    """An executable could not be loaded, or is used wrongly."""

    default_code = StatusCode.FAILED_PRECONDITION


class DispatchError(ExecutableError):
    """A dispatch was malformed, or its code reported a failure."""

    default_code = StatusCode.INVALID_ARGUMENT


class ReplayError(VmError):
    """An IREE device replay capture (``.ireereplay``) is truncated, corrupt,
    of a device or operation vmrt does not replay, or cannot be written."""

    default_code = StatusCode.DATA_LOSS


class PluginError(VmError):
    """A plugin could not be loaded, or failed while resolving."""

    default_code = StatusCode.FAILED_PRECONDITION


class ImportResolutionError(PluginError):
    """Required imports that no registered plugin provides.  ``missing`` lists
    every such name; ``asked`` says which plugins were asked (newest first)
    and what each answered; ``report`` (an ``elfkit.ImportReport``, when
    plugins were registered) what every plugin would answer for every import."""

    default_code = StatusCode.NOT_FOUND

    def __init__(self, message: str, missing: Sequence[str], asked: Sequence[str],
                 code: int | None = None, *, report: Any = None):
        super().__init__(message, code)
        self.missing = list(missing)
        self.asked = list(asked)
        self.report = report


__all__ = [
    "StatusCode", "VmError", "LoadError", "VerifyError", "LinkError",
    "TypeRegistryError", "InvocationError", "BudgetExceeded", "Cancelled", "UsageError",
    "ArgumentError", "FunctionNotFoundError", "DefinitionError", "HalError",
    "ExecutableError", "DispatchError", "PluginError", "ImportResolutionError", "os_error",
    "ReplayError",
]
