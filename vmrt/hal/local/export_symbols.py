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

import contextlib
from collections.abc import Sequence

import elfkit

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def name_exports(module: elfkit.Module, exports: Sequence[Any]) -> None:
    """Add each export (``.name``, ``.function``) inside ``module``'s code
    as a function symbol (exports pointing elsewhere are left out)."""
    start, end = module.address_range
    entries = [(e.function, 0, e.name) for e in exports if start <= e.function < end]
    if not entries:
        return
    try:
        module.add_symbols(entries)
    except elfkit.InvalidArgumentError:
        # an export pointing outside the code (a damaged library, refused
        # when dispatched): a debugging aid does not fail the load, so the
        # others are named one by one
        for entry in entries:
            with contextlib.suppress(elfkit.InvalidArgumentError):
                module.add_symbols([entry])
