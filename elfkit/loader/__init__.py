"""The loader: parse (bounds-checked) -> lay out -> place in a machine ->
relocate -> bind imports -> protect -> run init."""
from .import_report import ImportAnswer, ImportReport, ProviderNote
from .imports import Exports, Imports, SystemLibrary
from .objparse import ObjectFile, parse_object
from .parse import DEFAULT_LIMITS, ElfFile, Limits, parse

__all__ = ["Imports", "SystemLibrary", "Exports", "ImportReport", "ImportAnswer", "ProviderNote",
           "ElfFile", "Limits", "DEFAULT_LIMITS", "parse", "ObjectFile", "parse_object"]
