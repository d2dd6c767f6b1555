"""Where the tensors of ``hal.buffer_view.trace`` go (programs compiled with
``iree-compile --iree-flow-trace-dispatch-tensors`` trace each dispatch's
inputs and outputs under a key such as ``main_dispatch_0::... inputs``).

* :class:`TracePrinter`: iree-run-module's text on a stream (stderr there):
  ``=== KEY ===``, one line per tensor in ``--input`` syntax (never elided),
  then an empty line.
* :class:`NpyFolder`: each tensor as ``DIR/NNNN_KEY_I.npy`` (``NNNN`` counts
  the trace calls from 0, ``KEY`` has every character but letters, digits,
  ``_`` and ``-`` replaced by ``_``, ``I`` is the tensor's index in the
  call): ``vmrt run --trace_dispatch_tensors=DIR``.
* :func:`chain`: several sinks in order.

A sink is a callable ``(key, buffer views)``: the ``debug_sink`` of
:class:`vmrt.modules.hal.inline.HalModule`, set through
``RunOptions.extra["debug_sink"]``.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable, Sequence

from ..errors import HalError, StatusCode, UsageError
from ..hal.buffer_view import BufferView, format_buffer_view
from .function_io import output_bytes

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import TextIO

Sink = Callable[[str, list[BufferView]], None]

#: IREE keeps at most this many characters of the key in a file name
MAX_KEY_CHARS = 127
_UNSAFE = r"[^A-Za-z0-9_-]"        # compiled when first used (start-up time)


class TracePrinter:
    """Prints each trace as iree-run-module does; ``stream`` None means
    ``sys.stderr`` at the time of the call."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream

    def __call__(self, key: str, views: list[BufferView]) -> None:
        lines = [f"=== {key} ===", *(format_buffer_view(v, sys.maxsize) for v in views), "", ""]
        out = sys.stderr if self.stream is None else self.stream
        out.write("\n".join(lines))
        out.flush()


def file_key(key: str) -> str:
    """The trace key as it appears in a file name."""
    return re.sub(_UNSAFE, "_", key[:MAX_KEY_CHARS])


class NpyFolder:
    """Writes each traced tensor to ``folder`` as a ``.npy`` file.  The
    folder is created (with its parents) and checked for writing here, so a
    folder that cannot be written fails before the program runs."""

    def __init__(self, folder: str | os.PathLike[str]):
        path = os.fspath(folder)
        if not path:
            raise UsageError("the dispatch tensor trace folder is empty (expected a path)")
        existed = os.path.isdir(path)
        import tempfile  # only when tracing (start-up time of every command)
        try:
            os.makedirs(path, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".vmrt-probe-", dir=path)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            if not existed and os.path.isdir(path):
                try:
                    os.rmdir(path)
                except OSError:
                    pass
            raise UsageError(f"cannot write dispatch tensor traces to folder '{path}': "
                             f"{e.strerror or e}", StatusCode.PERMISSION_DENIED) from None
        self.folder = path
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, key: str, views: list[BufferView]) -> None:
        with self._lock:
            index = self.calls
            self.calls += 1
        stem = os.path.join(self.folder, f"{index:04d}_{file_key(key)}")
        for i, view in enumerate(views):
            path = f"{stem}_{i}.npy"
            data = output_bytes(view, "r", path, True)
            try:
                with open(path, "wb") as fh:
                    fh.write(data)
            except OSError as e:
                raise HalError(f"cannot write traced tensor {i} of '{key}' to '{path}': "
                               f"{e.strerror or e}", StatusCode.PERMISSION_DENIED) from None


def chain(sinks: Sequence[Sink]) -> Sink | None:
    """One sink calling each of ``sinks`` in order (None for none)."""
    live = list(sinks)
    if not live:
        return None
    if len(live) == 1:
        return live[0]

    def both(key: str, views: list[BufferView]) -> None:
        for sink in live:
            sink(key, views)
    return both


__all__ = ["MAX_KEY_CHARS", "NpyFolder", "Sink", "TracePrinter", "chain", "file_key"]
