"""elfkit's per-user cache directory (the gdb JIT helper library, the DWARF
address sites of plugins): ``$ELFKIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/elfkit``, else ``~/.cache/elfkit``."""
from __future__ import annotations

from .._support.files import user_cache_dir

__all__ = ["cache_dir"]


def cache_dir() -> str:
    """The directory's path."""
    return user_cache_dir("ELFKIT_CACHE_DIR", "elfkit")
