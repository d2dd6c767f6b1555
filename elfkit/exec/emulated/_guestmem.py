"""The guest memory of one emulated machine: mappings in the unicorn engine,
kept in step with the ``AddressSpace`` books (``_memory``), the runtime page
(return sentinel and callback stubs), the stack and the heap.

``GuestMemory`` takes no lock and checks nothing about the machine's life:
``EmulatedMachine`` does both before it calls in.  The argument memory and
the guarded spans are given this object to map their own ranges.
"""
from __future__ import annotations

import ctypes
import mmap

from ...errors import LayoutError, MemoryAccessError
from ..base import PROT_EXEC, PROT_READ, PROT_WRITE
from . import _uc
from ._layout import PAGE, SENTINEL, STUB_BASE, STUB_SIZE, round_up
from ._memory import AddressSpace, Heap, Region

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._uc import Engine

C = _uc.C
lib = _uc.lib
_RW = C.UC_PROT_READ | C.UC_PROT_WRITE


class GuestMemory:
    """Maps, protects, reads and writes guest memory of ``engine``; ranges
    come from ``space``.  Sets up the runtime page (room for
    ``max_callbacks`` stubs, see ``_layout``) and a stack of ``stack_size``
    bytes with a guard page below it."""

    def __init__(self, engine: Engine, space: AddressSpace, max_callbacks: int,
                 stack_size: int) -> None:
        self.engine = engine
        self.space = space
        self._h = engine.handle
        # the sentinel page and the callback stubs, all trap instructions
        arch = engine.arch
        stub_bytes = round_up(max_callbacks * STUB_SIZE)
        #: end of the callback stubs (the runtime page is [SENTINEL, stub_end))
        self.stub_end = STUB_BASE + stub_bytes
        self.map(SENTINEL, PAGE + stub_bytes, C.UC_PROT_EXEC)
        trap = arch.trap_insn or arch.ret_insn
        self.write_raw(SENTINEL, (trap * (PAGE // len(trap) + 1))[:PAGE])
        self.write_raw(STUB_BASE, (trap * (stub_bytes // len(trap) + 1))[:stub_bytes])
        # the stack: [guard page][stack_size bytes]
        stack_size = round_up(max(stack_size, PAGE))
        start = space.find(stack_size + PAGE, 16)
        self.stack = space.add(Region(start, stack_size + PAGE, "stack", mapped=stack_size,
                                      map_start=start + PAGE))
        self.map(start + PAGE, stack_size, _RW)
        self.stack_top = start + PAGE + stack_size
        self.heap = Heap(self._heap_range, self._heap_drop)

    # ----------------------------------------------------------- mappings
    def map(self, addr: int, size: int, perms: int) -> None:
        err = lib.uc_mem_map(self._h, addr, size, perms)
        if err:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: {_uc.strerror(err)}")

    def unmap(self, addr: int, size: int, exec_ever: bool = True) -> None:
        if exec_ever and self.engine.ran:
            self.engine.remove_cache(addr, addr + size)
        lib.uc_mem_unmap(self._h, addr, size)

    def drop(self, region: Region) -> None:
        """Forget ``region`` and unmap it (never executable)."""
        self.space.remove(region.start)
        lib.uc_mem_unmap(self._h, region.map_start, region.mapped)

    def new_region(self, size: int, align: int, kind: str, name: str = "", perms: int = _RW,
                   host: bool = False) -> Region:
        """Reserve and map ``size`` bytes (whole pages); ``host``: backed by
        host pages of our own (``map_host``), kept in the region's ``extra``."""
        if size <= 0:
            raise LayoutError(f"cannot reserve {size} bytes")
        size = round_up(size)
        if align & (align - 1):
            raise LayoutError(f"alignment {align:#x} is not a power of two")
        start = self.space.find(size, max(align, PAGE))
        region = self.space.add(Region(start, size, kind, name, mapped=size, map_start=start))
        try:
            if host:
                region.extra = self.map_host(start, size, perms)
            else:
                self.map(start, size, perms)
        except BaseException:
            self.space.remove(start)
            raise
        return region

    def map_host(self, addr: int, size: int, perms: int) -> Any:
        """Map ``size`` bytes at ``addr`` backed by fresh zeroed host pages
        (``uc_mem_map_ptr``); returns the host buffer, to be kept alive for
        as long as the mapping exists.  unicorn splits such a mapping without
        copying its contents when ``protect`` gives part of it other rights
        (it copies the whole of a mapping it allocated itself)."""
        try:
            buf = (ctypes.c_char * size).from_buffer(mmap.mmap(-1, size))
        except OSError as e:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: no host memory "
                                    f"({e.strerror or e})") from None
        err = lib.uc_mem_map_ptr(self._h, addr, size, perms, ctypes.addressof(buf))
        if err:
            raise MemoryAccessError(f"cannot map {size:#x} bytes at {addr:#x}: "
                                    f"{_uc.strerror(err)}")
        return buf

    def protect(self, addr: int, size: int, prot: int) -> int:
        """Set PROT_* rights on a page-aligned range inside a reservation;
        the bytes made executable (whole pages), 0 if none."""
        r = self.space.at(addr)
        if (addr % PAGE or r is None or addr + size > r.end
                or r.kind in ("runtime", "released span")):
            raise MemoryAccessError(f"protect({addr:#x}, {size:#x}): not a page-aligned range "
                                    "inside a reservation")
        if prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC):
            raise MemoryAccessError(f"protect: unknown protection bits {prot:#x}")
        size = round_up(size)
        err = lib.uc_mem_protect(self._h, addr, size, prot)    # PROT_* == UC_PROT_*
        if err:
            raise MemoryAccessError(f"protect({addr:#x}, {size:#x}): {_uc.strerror(err)}")
        r.rights = None                 # (a guarded span's rights are no longer uniform)
        if prot & PROT_EXEC:
            r.exec_ever = True
            return size
        if r.exec_ever and self.engine.ran:
            self.engine.remove_cache(addr, addr + size)
        return 0

    # ------------------------------------------------------- reads, writes
    def write_raw(self, addr: int, data: Any) -> None:
        n = len(data)
        buf: Any
        if isinstance(data, bytes):
            buf = data
        else:
            mv = memoryview(data).cast("B")
            n = mv.nbytes
            buf = (ctypes.c_char * n).from_buffer(mv) if not mv.readonly else bytes(mv)
        err = lib.uc_mem_write(self._h, addr, buf, n)
        if err:
            raise MemoryAccessError(f"cannot write {n} bytes at {addr:#x}: "
                                    f"{self.describe_address(addr, n)}")

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        """``write_raw``, dropping translated code the bytes replace."""
        self.write_raw(addr, data)
        if self.engine.ran:
            r = self.space.at(addr)
            if r is not None and r.exec_ever:
                self.engine.remove_cache(addr, addr + max(len(data), 1))

    def read(self, addr: int, size: int) -> bytes:
        if size < 0:
            raise MemoryAccessError(f"cannot read {size} bytes")
        if size > 1 << 20:
            self._check_covered(addr, size)   # before allocating a host buffer that large
        buf = ctypes.create_string_buffer(size)
        err = lib.uc_mem_read(self._h, addr, buf, size)
        if err:
            raise MemoryAccessError(f"cannot read {size} bytes at {addr:#x}: "
                                    f"{self.describe_address(addr, size)}")
        return buf.raw

    def _check_covered(self, addr: int, size: int) -> None:
        """MemoryAccessError unless mapped regions cover ``[addr, addr + size)``."""
        at, end = addr, addr + size
        while at < end:
            r = self.space.at(at)
            if r is None:
                raise MemoryAccessError(f"cannot read {size} bytes at {addr:#x}: "
                                        f"{self.describe_address(at)}"
                                        + (f" at {at:#x}" if at != addr else ""))
            at = r.end

    def try_read(self, addr: int, size: int) -> bytes | None:
        """``size`` bytes at ``addr``, or None where guest memory is not readable."""
        if addr < 0 or addr + size > 1 << self.engine.arch.bits or size > self.space.used + PAGE:
            return None
        buf = ctypes.create_string_buffer(size)
        return None if lib.uc_mem_read(self._h, addr, buf, size) else buf.raw

    def region_near(self, addr: int, size: int) -> Region | None:
        """The region holding ``addr``, else the first one above it that
        ``[addr, addr+size)`` reaches into, else None."""
        r = self.space.at(addr)
        if r is None:
            r = self.space.near(addr)[1]
            if r is None or r.start >= addr + size:
                return None
        return r

    def describe_address(self, addr: int, size: int = 1) -> str:
        """What lives at ``addr`` (for error messages and fault reports)."""
        if addr < SENTINEL:
            return "unmapped (null-pointer region)"
        if SENTINEL <= addr < self.stub_end:
            return "runtime page (return sentinel / callback stubs)"
        st = self.stack
        if st.start <= addr < st.map_start:
            return f"stack guard page below the stack [{st.map_start:#x}, {self.stack_top:#x}) " \
                   f"(stack overflow?)"
        r = self.space.at(addr)
        if r is not None and r.kind == "zerocopy" and not r.extra[0]:
            return (f"a numpy buffer passed to an earlier call [{r.start:#x}, {r.end:#x}) "
                    f"(closed after that call)")
        if r is not None:
            if addr + size > r.end:
                return f"runs past the end of {r.describe()}"
            return f"in {r.describe()}"
        below, above = self.space.near(addr)
        parts = []
        if below is not None:
            parts.append(f"{addr - below.end:#x} bytes after {below.describe()}")
        if above is not None:
            parts.append(f"{above.start - addr:#x} bytes before {above.describe()}")
        return "unmapped" + (" (" + "; ".join(parts) + ")" if parts else "")

    # ----------------------------------------------------------------- heap
    def _heap_range(self, size: int, align: int) -> int:
        return self.new_region(size, align, "heap").start

    def _heap_drop(self, addr: int) -> None:
        r = self.space.remove(addr)
        self.unmap(r.map_start, r.mapped, False)

    def alloc(self, size: int, align: int) -> int:
        addr = self.heap.alloc(int(size), int(align))
        n = self.heap.size_of(addr) or 0
        if n and n < Heap.BIG:
            self.write_raw(addr, bytes(n))      # arena memory may be reused: zero it
        return addr
