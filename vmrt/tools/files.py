"""Reading the files named on the ``vmrt`` command line safely: each must
be a regular file (a FIFO would block forever, a device never ends) and is
read with a bounded size; failures are :class:`~vmrt.errors.UsageError`
statuses naming the file, never a hang or a MemoryError."""
from __future__ import annotations

import contextlib
import os
import stat
from typing import BinaryIO

from elfkit.errors import ElfkitError
from elfkit.fatelf.files import open_regular

from ..errors import StatusCode, UsageError, VmError

__all__ = ["MAX_FLAGFILE_SIZE", "MAX_MODULE_SIZE", "StagedOutputs", "check_input",
           "check_plugin_specs", "open_input", "read_input"]

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


class StagedOutputs:
    """Output files of one run, made visible only when every one was
    written: ``@`` (replace) targets go to a temporary file next to the
    target, renamed over it by :meth:`commit`; ``+`` (append) targets are
    cut back to their old size (or removed, if the run created them) by
    :meth:`discard`.  Special files (``/dev/stdout``, a FIFO) are written
    as streams, never replaced."""

    def __init__(self) -> None:
        self._renames: list[tuple[str, str]] = []
        self._appends: list[tuple[str, int | None]] = []

    def open(self, path: str, append: bool) -> BinaryIO:
        try:
            st: os.stat_result | None = os.stat(path)
        except OSError:
            st = None
        regular = st is None or stat.S_ISREG(st.st_mode)
        if append or not regular:
            if append and regular:
                self._appends.append((path, None if st is None else st.st_size))
            return open(path, "ab" if append else "wb")
        directory, base = os.path.split(os.path.abspath(path))
        tmp = os.path.join(directory, f".{base}.{os.urandom(4).hex()}.tmp")
        fh = open(tmp, "xb")  # noqa: SIM115 - the caller closes it
        self._renames.append((tmp, path))
        return fh

    def commit(self) -> None:
        """Rename every staged file over its target."""
        for tmp, path in self._renames:
            os.replace(tmp, path)
        self._renames.clear()
        self._appends.clear()

    def discard(self) -> None:
        """Remove staged files and undo appends."""
        for tmp, _path in self._renames:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for path, size in self._appends:
            with contextlib.suppress(OSError):
                if size is None:
                    os.unlink(path)
                else:
                    os.truncate(path, size)
        self._renames.clear()
        self._appends.clear()


def check_input(path: str, what: str, limit: int, error: type[VmError] = UsageError) -> None:
    """Refuse ``path`` unless it is a regular file of at most ``limit``
    bytes (for files another part of vmrt reads whole)."""
    fh, size = open_input(path, what, error)
    fh.close()
    if size > limit:
        raise error(f"{what} '{path}' is {size} bytes, more than the {limit} bytes vmrt reads",
                    StatusCode.RESOURCE_EXHAUSTED)


def check_plugin_specs(specs: list[str]) -> None:
    """``--executable_plugin`` files: regular and bounded (a FIFO would hang
    the plugin manager's read)."""
    if not specs:
        return
    from ..hal.local.plugins.manager import PluginSpec
    for text in specs:
        spec = PluginSpec.parse(text)
        if spec.kind != "system" and os.path.exists(spec.path):
            check_input(spec.path, "executable plugin", MAX_MODULE_SIZE)
