"""IREE's executable format strings that the local HAL names without loading an
executable (a module of its own so that the loader's import of it stays light:
vmrt.hal.local.local_executable, which re-exports it, defines a typing Protocol)."""
from __future__ import annotations

#: IREE's format string of VM bytecode executables (``vmvx_executable.py``)
VMVX_FORMAT = "vmvx-bytecode-fb"

__all__ = ["VMVX_FORMAT"]
