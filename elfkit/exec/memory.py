"""A machine with memory but no CPU.

It lays images out in Python buffers at addresses of the target's word
size, so a plugin for any architecture can be loaded and its relocated
bytes examined (``elfkit inspect``-style checks, tests, dry runs) without
running any of its code.  ``call`` refuses.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable

from ..arch import Arch
from ..errors import BackendError, MemoryAccessError
from ..signature import Signature
from .base import PROT_READ, PROT_WRITE, Machine

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class MemoryMachine(Machine):
    backend = "memory"
    can_execute = False

    def __init__(self, arch: Arch, base: int = 0x10000):
        self.arch = arch
        self._next = base
        self._limit = 1 << arch.bits
        self._blocks: list[tuple[int, bytearray, list[int]]] = []   # sorted by start
        self._starts: list[int] = []
        self._allocs: set[int] = set()
        self._callbacks = 0

    def _carve(self, size: int, align: int) -> int:
        start = (self._next + align - 1) & ~(align - 1)
        if start + size > self._limit:
            raise MemoryAccessError(f"address space of the {self.arch.bits}-bit target exhausted")
        self._next = start + size + self.arch.page_size   # a guard gap between blocks
        return start

    def _add(self, start: int, size: int, prot: int) -> None:
        i = bisect.bisect_left(self._starts, start)
        pages = [prot] * max(1, -(-size // self.arch.page_size))
        self._starts.insert(i, start)
        self._blocks.insert(i, (start, bytearray(size), pages))

    def _block(self, addr: int, size: int, what: str) -> tuple[int, bytearray, list[int]]:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            b = self._blocks[i]
            if addr + size <= b[0] + len(b[1]):
                return b
        raise MemoryAccessError(f"{what} of {size} bytes at {addr:#x} is outside every mapped "
                                "range")

    def reserve(self, size: int, align: int) -> int:
        start = self._carve(size, max(align, self.arch.page_size))
        self._add(start, size, PROT_READ | PROT_WRITE)
        return start

    def release(self, addr: int, size: int) -> None:
        i = bisect.bisect_left(self._starts, addr)
        if i < len(self._starts) and self._starts[i] == addr:
            del self._starts[i]
            del self._blocks[i]

    def protect(self, addr: int, size: int, prot: int) -> None:
        start, _buf, pages = self._block(addr, size, "protect")
        page = self.arch.page_size
        for i in range((addr - start) // page, (addr + size - start + page - 1) // page):
            pages[i] = prot

    def prot_at(self, addr: int) -> int:
        start, _buf, pages = self._block(addr, 1, "query")
        return pages[(addr - start) // self.arch.page_size]

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        start, buf, _ = self._block(addr, len(data), "write")
        buf[addr - start:addr - start + len(data)] = data

    def read(self, addr: int, size: int) -> bytes:
        start, buf, _ = self._block(addr, size, "read")
        return bytes(buf[addr - start:addr - start + size])

    def host_view(self, addr: int, size: int) -> memoryview | None:
        start, buf, _ = self._block(addr, size, "view")
        return memoryview(buf)[addr - start:addr - start + size]

    def alloc(self, size: int, align: int = 16) -> int:
        start = self._carve(max(size, 1), max(align, 16))
        self._add(start, max(size, 1), PROT_READ | PROT_WRITE)
        self._allocs.add(start)
        return start

    def free(self, addr: int) -> None:
        if addr not in self._allocs:
            raise MemoryAccessError(f"free({addr:#x}): not an address returned by alloc")
        self._allocs.discard(addr)
        self.release(addr, 0)

    def call(self, addr: int, sig: Signature, args: tuple[Any, ...],
             timeout: float | None = None) -> Any:
        raise BackendError(f"a memory-only machine cannot run code (call to {addr:#x}); "
                           f"use backend='native' or 'emulated'")

    def callback(self, fn: Callable[..., Any], sig: Signature, name: str = "") -> int:
        # Give each callback a distinct, recognisable, non-executable address.
        self._callbacks += 1
        return self._carve(16, 16)

    def close(self) -> None:
        self._blocks.clear()
        self._starts.clear()
