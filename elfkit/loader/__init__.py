"""The loader: parse (bounds-checked) -> lay out -> place in a machine ->
relocate -> bind imports -> protect -> run init."""
from __future__ import annotations

from .._support import lazy_names
from .parse import DEFAULT_LIMITS, ElfFile, Limits, parse

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .import_report import ImportAnswer, ImportReport, ProviderNote
    from .imports import Exports, Imports, SystemLibrary
    from .objparse import ObjectFile, parse_object

# import resolution (ctypes, the FatELF reader, signatures) is imported on first use:
# ``elfkit inspect`` of a plugin needs it only for --imports-from; the relocatable
# object parser on first use too (loading a shared object never needs it)
_lazy = lazy_names(__name__, {
    "ObjectFile": "objparse", "parse_object": "objparse",
    "ImportAnswer": "import_report", "ImportReport": "import_report",
    "ProviderNote": "import_report", "Exports": "imports", "Imports": "imports",
    "SystemLibrary": "imports"}, globals())


def __getattr__(name: str) -> Any:
    return _lazy(name)


__all__ = ["Imports", "SystemLibrary", "Exports", "ImportReport", "ImportAnswer", "ProviderNote",
           "ElfFile", "Limits", "DEFAULT_LIMITS", "parse", "ObjectFile", "parse_object"]
