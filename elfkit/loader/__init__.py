"""The loader: parse (bounds-checked) -> lay out -> place in a machine ->
relocate -> bind imports -> protect -> run init."""
from .imports import Imports, SystemLibrary
from .parse import DEFAULT_LIMITS, ElfFile, Limits, parse

__all__ = ["Imports", "SystemLibrary", "ElfFile", "Limits", "DEFAULT_LIMITS", "parse"]
