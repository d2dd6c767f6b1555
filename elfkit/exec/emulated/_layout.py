"""The guest address-space layout every emulated machine uses (constants
shared by the machine, its argument mapping and its fault reports).

Guest address space (all arches)::

    0x0      .. 0x10000     never mapped (null-pointer accesses fault)
    0x10000                 sentinel page: calls return here and the emulator
                            stops before executing it (``until`` address)
    0x11000  .. +64 KiB     callback stubs, 16 bytes each (a return
                            instruction); one code hook covers exactly this
                            range and dispatches to the Python function
    0x100000 .. top         reservations (images), heap arenas, the stack,
                            argument buffers -- each followed by an unmapped
                            guard page; the stack has a guard page below it
"""
from __future__ import annotations

PAGE = 4096
SENTINEL = 0x10000          # return address of every call from the host
STUB_BASE = 0x11000         # first callback stub
STUB_SIZE = 16              # bytes per callback stub
LOW = 0x100000              # lowest address handed out by the address space
DEFAULT_MEMORY_LIMIT = 4 << 30


def round_up(n: int, a: int = PAGE) -> int:
    """``n`` rounded up to a multiple of ``a`` (a power of two; default: a page)."""
    return (n + a - 1) & -a
