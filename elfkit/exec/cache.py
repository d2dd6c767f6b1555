"""elfkit's per-user cache directory (the gdb JIT helper library, the DWARF
address sites of plugins): ``$ELFKIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/elfkit``, else ``~/.cache/elfkit``."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    env = os.environ.get("ELFKIT_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "elfkit" if xdg else Path.home() / ".cache" / "elfkit"
