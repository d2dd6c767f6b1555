"""Dispatch functions named for gdb and perf.

IREE's dispatch libraries are stripped: their only symbol is
``iree_hal_executable_library_query``, so a debugger or profiler looking at
a natively loaded one sees nameless code.  The library's export table
(read by :class:`~vmrt.hal.local.executable.Executable`) pairs each
export's name with its function pointer; :func:`name_exports` hands those
to :meth:`elfkit.Module.add_symbols`, which finds their sizes (``.symtab``
or DWARF when present, else up to the next function) and, for a native
load, registers the names with gdb's JIT interface and perf's map.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import elfkit


def name_exports(module: elfkit.Module, exports: Sequence[Any]) -> None:
    """Add each export (``.name``, ``.function``) inside ``module``'s image
    as a function symbol (exports pointing elsewhere are left out)."""
    start, end = module.address_range
    entries = [(e.function, 0, e.name) for e in exports if start <= e.function < end]
    if entries:
        module.add_symbols(entries)
