"""One exception hierarchy for elfkit.

Every error says *what* was wrong and *where* (file offset, relocation index
and type name, symbol name, guest address).  Callers catch ``ElfkitError``.
"""
from __future__ import annotations

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class ElfkitError(Exception):
    """Base class of every error raised by elfkit."""


class ParseError(ElfkitError):
    """The bytes are not a well-formed ELF (or FatELF) file."""


class UnsupportedError(ElfkitError):
    """Well-formed, but uses a feature bare-metal plugins must not use
    (TLS, TEXTREL, W+X segments, a foreign class or byte order ...)."""


class ArchError(ElfkitError):
    """Unknown architecture, or an architecture that does not match."""


class LayoutError(ElfkitError):
    """The segments cannot be laid out (overlap, absurd sizes, limits)."""


class RelocationError(ElfkitError):
    """One or more relocations could not be applied.

    ``problems`` lists every offending relocation, not just the first.
    """

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems or [])
        if self.problems:
            shown = self.problems[:50]
            more = len(self.problems) - len(shown)
            message = message + ":\n  " + "\n  ".join(shown)
            if more > 0:
                message += f"\n  ... and {more} more"
        super().__init__(message)


class UnresolvedImportError(ElfkitError):
    """Required imports that no provider has; ``names`` lists all of them,
    ``report`` (an ``elfkit.ImportReport``) says what every provider answered."""

    def __init__(self, message: str, names: list[str] | None = None, report: Any = None):
        self.names = list(names or [])
        self.report = report
        super().__init__(message)


class SymbolNotFoundError(ElfkitError, KeyError):
    """An export that the module does not have."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class SignatureError(ElfkitError, ValueError):
    """A malformed call signature or an argument that does not fit it."""


class BackendError(ElfkitError):
    """The requested backend cannot run this module (or is unavailable)."""


class MemoryAccessError(ElfkitError):
    """A host-side read/write/alloc outside the module's memory."""


class ModuleClosedError(ElfkitError):
    """The module was closed."""


class LazyImportError(ElfkitError):
    """A lazily bound import that no provider had was called."""


class ExecutionError(ElfkitError):
    """Guest code stopped abnormally (base of faults and timeouts)."""


class EmulationFault(ExecutionError):
    """Guest code faulted under emulation; ``str()`` is a readable report."""


class CallTimeout(ExecutionError):
    """A call ran past its wall-clock timeout, budget, or was cancelled;
    ``reason`` says which: ``"timeout"``, ``"budget"`` or ``"cancel"``."""

    reason = "timeout"


class FatElfError(ElfkitError):
    """A FatELF container is malformed or has no suitable slice."""


class FatElfFormatError(FatElfError, ParseError):
    """The bytes cannot be read as a FatELF or an ELF at all: neither magic,
    a truncated header or record table, an unsupported FatELF version, an
    invalid ELF class or data encoding (what ``fatelf.verify`` calls *fatal*)."""


class FatElfArchError(FatElfError, ArchError):
    """An unknown architecture name, or no slice for the requested one."""


class InvalidArgumentError(ElfkitError, TypeError):
    """An API was called with an argument of the wrong type, or with an
    impossible combination of arguments (a bug in the caller, not the file)."""


class ToolchainError(ElfkitError):
    """A plugin could not be built (elfkit.toolchain): names the command that
    failed and carries the end of its output."""
