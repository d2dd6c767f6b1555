"""Output files of the ``vmrt`` command line (staged, never partial) and
the checks of the files it names; reading them is :mod:`vmrt.files`."""
from __future__ import annotations

import contextlib
import os
import stat

from elfkit.support import replace_file

from ..files import MAX_FLAGFILE_SIZE, MAX_MODULE_SIZE, check_input, open_input, read_input

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["MAX_FLAGFILE_SIZE", "MAX_MODULE_SIZE", "StagedOutputs", "check_input",
           "check_plugin_specs", "open_input", "read_input"]


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
        """Put every staged file in place of its target (atomically, as
        elfkit's FatELF outputs are)."""
        for tmp, path in self._renames:
            replace_file(tmp, path)
        self._renames.clear()
        self._appends.clear()

    def discard(self) -> None:
        """Remove staged files and undo appends."""
        for tmp, _path in self._renames:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        # newest first: a file appended to twice (or through two names) is cut
        # back to the size it had before the first append, never extended
        for path, size in reversed(self._appends):
            with contextlib.suppress(OSError):
                if size is None:
                    os.unlink(path)
                else:
                    os.truncate(path, size)
        self._renames.clear()
        self._appends.clear()


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
