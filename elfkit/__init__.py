"""elfkit: load, pack and run bare-metal ELF plugins.

    import elfkit
    with elfkit.load("plugin.so") as m:          # native on the host's arch
        m.call("add", 2, 3)
    m = elfkit.load("plugin.sos", arch="riscv64")  # a FatELF slice, emulated

``import elfkit`` is cheap: lief, unicorn and capstone are imported only by
the parts that use them.
"""
from ._version import __version__
from .arch import Arch
from .errors import (ArchError, BackendError, CallTimeout, ElfkitError, EmulationFault,
                     ExecutionError, FatElfError, LayoutError, LazyImportError, MemoryAccessError,
                     ModuleClosedError, ParseError, RelocationError, SignatureError,
                     SymbolNotFoundError, UnresolvedImportError, UnsupportedError)
from .loader import Imports, Limits, SystemLibrary
from .module import Module, load
from .signature import CType, Signature

__all__ = [
    "__version__", "load", "Module", "Imports", "SystemLibrary", "Limits", "Arch", "CType",
    "Signature", "ElfkitError", "ParseError", "UnsupportedError", "ArchError", "LayoutError",
    "RelocationError", "UnresolvedImportError", "SymbolNotFoundError", "SignatureError",
    "BackendError", "MemoryAccessError", "ModuleClosedError", "LazyImportError",
    "ExecutionError", "EmulationFault", "CallTimeout", "FatElfError",
]
