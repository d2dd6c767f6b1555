"""elfkit: load, pack and run bare-metal ELF plugins.

    import elfkit
    with elfkit.load("plugin.so") as m:          # native on the host's arch
        m.call("add", 2, 3)
    m = elfkit.load("plugin.sos", arch="riscv64")  # a FatELF slice, emulated

``import elfkit`` is cheap: the architecture tables, lief, unicorn and
capstone are imported only by the parts that use them.
"""
from __future__ import annotations

import sys

from ._support import lazy_names
from ._version import __version__
from .errors import (
    ArchError,
    BackendError,
    CallTimeout,
    ElfkitError,
    EmulationFault,
    ExecutionError,
    FatElfArchError,
    FatElfError,
    FatElfFormatError,
    InvalidArgumentError,
    LayoutError,
    LazyImportError,
    MemoryAccessError,
    ModuleClosedError,
    ParseError,
    RelocationError,
    SignatureError,
    SymbolNotFoundError,
    ToolchainError,
    UnresolvedImportError,
    UnsupportedError,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)

if TYPE_CHECKING:
    from typing import Any

    from .arch import Arch
    from .signature import CType, Signature

# The loader, Module and the architecture tables are imported on first use, so
# that commands that do not load anything (``elfkit fatelf list``, a host-only
# ``vmrt run``) start fast.
_LAZY = {"load": "module", "Module": "module", "Imports": "loader", "SystemLibrary": "loader",
         "Limits": "loader", "ImportReport": "loader", "Arch": "arch", "CType": "signature",
         "Signature": "signature"}


_SUBPACKAGES = ("loader", "exec", "fatelf", "module", "tools", "toolchain", "arch")


_lazy = lazy_names(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:      # ``elfkit.loader.parse(...)`` without importing it first
        module = f"{__name__}.{name}"
        __import__(module)     # importlib.import_module without importing importlib
        return sys.modules[module]
    return _lazy(name)

__all__ = [
    "__version__", "load", "Module", "Imports", "SystemLibrary", "Limits", "ImportReport", "Arch",
    "CType",
    "Signature", "ElfkitError", "ParseError", "UnsupportedError", "ArchError", "LayoutError",
    "RelocationError", "UnresolvedImportError", "SymbolNotFoundError", "SignatureError",
    "BackendError", "MemoryAccessError", "ModuleClosedError", "LazyImportError",
    "ExecutionError", "EmulationFault", "CallTimeout", "FatElfError", "FatElfFormatError",
    "FatElfArchError", "InvalidArgumentError", "ToolchainError",
]
