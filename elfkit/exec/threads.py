"""What the other threads of the process are running, safely."""
from __future__ import annotations

import gc
import sys

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from types import FrameType


def thread_frames() -> dict[int, FrameType]:
    """``sys._current_frames()`` with the garbage collector off: before CPython
    3.11.9 a collection inside it (one freeing a ``threading.local``) takes the
    runtime's thread-list lock that the call already holds, and the process
    hangs for good (CPython gh-106883; seen in this suite on 3.11.7)."""
    if not gc.isenabled():
        return sys._current_frames()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        gc.enable()


__all__ = ["thread_frames"]
