"""The names users import from here, now defined where each belongs:

* :class:`Executable` (``vmrt.Executable``): an ELF dispatch library,
  :class:`~vmrt.hal.local.elf_executable.ElfExecutable` (loading, queries,
  imports); its dispatch walk is :mod:`vmrt.hal.local.dispatch`;
* :class:`~vmrt.hal.local.local_executable.LocalExecutable`: what every
  kind of executable offers (ELF library, vmvx module);
* :class:`ExportInfo`, :class:`ImportInfo`, :func:`find_export`
  (:mod:`vmrt.hal.local.exports`), the errors, :data:`VMVX_FORMAT`.
"""
from __future__ import annotations

from ...errors import DispatchError, ExecutableError
from .elf_executable import ElfExecutable, Executable
from .exports import ExportInfo, ImportInfo, find_export
from .local_executable import VMVX_FORMAT, LocalExecutable

__all__ = ["DispatchError", "ElfExecutable", "Executable", "ExecutableError", "ExportInfo",
           "ImportInfo", "LocalExecutable", "VMVX_FORMAT", "find_export"]
