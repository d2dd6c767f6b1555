"""Reading files a path names, safely: each must be a regular file (a FIFO
would block forever, a device never ends) and is read with a bounded size;
failures are the caller's :class:`~vmrt.errors.VmError` subclass naming the
file, never a hang or a MemoryError.  Used by the public loaders
(``BytecodeModule.load``, ``Executable.load``, the plugin manager) and by
the ``vmrt`` command line."""
from __future__ import annotations

import os

from elfkit.errors import ElfkitError
from elfkit.support import open_regular

from .errors import StatusCode, UsageError, VmError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["MAX_FLAGFILE_SIZE", "MAX_MODULE_SIZE", "check_input", "open_input", "read_input"]
#: the largest module (.vmfb) file read
MAX_MODULE_SIZE = 1 << 30
#: the largest flagfile read
MAX_FLAGFILE_SIZE = 1 << 20


def open_input(path: str, what: str, error: type[VmError] = UsageError) -> tuple[BinaryIO, int]:
    """``(file, size)`` of a regular file opened for binary reading; a
    file that cannot be opened is NOT_FOUND ``failed to open file 'PATH'``
    (IREE's words), a FIFO, device or directory INVALID_ARGUMENT."""
    try:
        fd, size = open_regular(path, what)
    except ElfkitError as e:
        raise error(f"cannot read {what} '{path}': {str(e).split(': ', 1)[-1]}",
                    StatusCode.INVALID_ARGUMENT) from None
    except OSError:
        raise error(f"failed to open file '{path}'", StatusCode.NOT_FOUND) from None
    return os.fdopen(fd, "rb"), size


def read_input(path: str, what: str, limit: int, error: type[VmError] = UsageError) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; a larger one
    is RESOURCE_EXHAUSTED naming the file and the limit."""
    fh, size = open_input(path, what, error)
    with fh:
        if size > limit:
            raise error(f"{what} '{path}' is {size} bytes, more than the {limit} bytes "
                             f"vmrt reads", StatusCode.RESOURCE_EXHAUSTED)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise error(f"{what} '{path}' grew past {limit} bytes while being read",
                         StatusCode.RESOURCE_EXHAUSTED)
    return data


def check_input(path: str, what: str, limit: int, error: type[VmError] = UsageError) -> None:
    """Refuse ``path`` unless it is a regular file of at most ``limit``
    bytes (for files another part of vmrt reads whole)."""
    fh, size = open_input(path, what, error)
    fh.close()
    if size > limit:
        raise error(f"{what} '{path}' is {size} bytes, more than the {limit} bytes vmrt reads",
                    StatusCode.RESOURCE_EXHAUSTED)


