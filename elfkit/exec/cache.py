"""elfkit's per-user cache directory (the gdb JIT helper library, the DWARF
address sites of plugins): ``$ELFKIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/elfkit``, else ``~/.cache/elfkit``."""
from __future__ import annotations

import os

__all__ = ["cache_dir"]


def cache_dir() -> str:
    """The directory's path (a string: pathlib costs a native run's start-up ~2 ms)."""
    env = os.environ.get("ELFKIT_CACHE_DIR")
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME")
    return os.path.join(xdg, "elfkit") if xdg else os.path.join(
        os.path.expanduser("~"), ".cache", "elfkit")
