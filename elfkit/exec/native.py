"""The native machine: code runs on the host CPU in this process.

Memory comes from mmap/mprotect through ctypes; calls go through ctypes
function pointers; Python imports are ctypes callbacks kept alive as long
as the machine.  Host-side reads and writes are checked against the ranges
this machine handed out, so a bad address is an error, not a segfault.
"""
from __future__ import annotations

import bisect
import ctypes
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType

from .. import arch as _arch
from ..errors import (
    BackendError,
    ExecutionError,
    MemoryAccessError,
    ModuleClosedError,
    SignatureError,
)
from ..signature import CType, Signature
from . import jit_debug, perf_map
from .base import PROT_NONE, PROT_READ, PROT_WRITE, Machine
from .host_memory import (
    OS_PROTS,
    give_spare,
    keep_runs_apart,
    map_range,
    memcmp,
    mprotect,
    munmap,
    os_prot,
    take_kept,
    take_spare,
)
from .lowmap import map_below
from .threads import thread_frames

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

class _Ptr:
    """ctypes argument type for ``ptr``: ints, None, numpy arrays, writable buffers."""

    @classmethod
    def from_param(cls, v: Any) -> Any:
        if v is None or isinstance(v, int):
            return ctypes.c_void_p(v)
        iface = getattr(v, "__array_interface__", None)
        if iface is not None:
            if not v.flags.c_contiguous:
                raise SignatureError("numpy arrays passed by pointer must be C-contiguous "
                                     "(use np.ascontiguousarray)")
            return ctypes.c_void_p(iface["data"][0])
        if isinstance(v, (bytearray, memoryview)):
            return ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(v)))
        if isinstance(v, (ctypes._SimpleCData, ctypes.Array, ctypes.Structure)):
            return ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
        raise SignatureError(f"cannot pass {type(v).__name__} as ptr (use an int address, a numpy "
                             f"array or a bytearray)")


_CT: dict[CType, Any] = {CType.VOID: None, CType.I8: ctypes.c_int8, CType.I16: ctypes.c_int16,
       CType.I32: ctypes.c_int32, CType.I64: ctypes.c_int64, CType.U8: ctypes.c_uint8,
       CType.U16: ctypes.c_uint16, CType.U32: ctypes.c_uint32, CType.U64: ctypes.c_uint64,
       CType.F32: ctypes.c_float, CType.F64: ctypes.c_double, CType.PTR: _Ptr}
# a callback receives ``ptr`` arguments as ints (NULL is 0, as under emulation)
_CB = {**_CT, CType.PTR: ctypes.c_size_t}


def cfunctype(sig: Signature, callback: bool = False) -> Any:
    """The ctypes function type of ``sig``.  A ``ptr`` result of a call is
    read as ``c_size_t``, so NULL is 0 (an int) as under emulation, not the
    None that ``c_void_p`` gives; a callback gets ``ptr`` arguments the same
    way and returns ``ptr`` as ``c_void_p`` (it accepts an int or None)."""
    table = _CB if callback else _CT
    ret: Any
    if sig.ret is CType.PTR:
        ret = ctypes.c_void_p if callback else ctypes.c_size_t
    else:
        ret = table[sig.ret]
    return ctypes.CFUNCTYPE(ret, *(table[p] for p in sig.params))


#: the ctypes function type of each signature, shared by every machine (a
#: type holds no state; a load's fresh machine then makes none)
_FNTYPES: dict[Signature, Any] = {}


class NativeMachine(Machine):
    backend = "native"

    def __init__(self, arch: _arch.Arch | None = None):
        host = _arch.host()
        if host is None:
            raise BackendError("this host CPU is not one elfkit can run natively")
        if arch is not None and arch is not host:
            raise BackendError(f"cannot run {arch.name} code natively on this {host.name} host; "
                               f"use backend='emulated'")
        self.arch = host
        self._regions: list[tuple[int, int]] = []   # sorted (start, end) of reservations/allocs
        self._prot: dict[int, list[int]] = {}       # reservation start -> per-page prot
        self._allocs: dict[int, tuple[Any, int]] = {}
        self._callbacks: list[Any] = []
        self._fns: dict[tuple[int, Signature], Any] = {}
        # call(): (addr, sig) -> (guarded callable, its range's alive cell)
        self._calls: dict[tuple[int, Signature], tuple[Callable[..., Any], list[bool]]] = {}
        # lifetimes: a call checks that its code's range is still alive;
        # release/free/close mark a range dead, then wait until no thread's
        # Python stack holds a call of this machine (see _inside_call)
        self._alive: dict[int, list[bool]] = {}     # range start -> [alive]
        # whether a guarded callable of this machine was ever made: until
        # then no thread can be inside one of its calls (no frame to look for)
        self._guarded = False
        self.pending: BaseException | None = None
        self.closed = False
        self._jit: dict[int, jit_debug.Registration] = {}   # id(module) -> gdb registration
        # id(module) -> module attached but not registered with gdb yet: built
        # and registered before its code first runs (see jit_debug)
        self._jit_waiting: dict[int, Any] = {}
        self._runs_apart: set[int] = set()   # reused ranges: runs already kept apart

    # -- regions ---------------------------------------------------------
    def _add_region(self, start: int, size: int) -> None:
        bisect.insort(self._regions, (start, start + size))

    def _drop_region(self, start: int) -> None:
        i = bisect.bisect_left(self._regions, (start, 0))
        if i < len(self._regions) and self._regions[i][0] == start:
            del self._regions[i]

    def _find(self, addr: int, size: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self._regions, (addr, 1 << 65)) - 1
        if i >= 0:
            s, e = self._regions[i]
            if s <= addr and addr + size <= e:
                return s, e
        return None

    def _check(self, addr: int, size: int, need: int, what: str) -> None:
        r = self._find(addr, size)
        if r is None:
            raise MemoryAccessError(f"{what} of {size} bytes at {addr:#x} is outside every range "
                                    "this machine mapped or allocated")
        prots = self._prot.get(r[0])
        if prots is not None and size:
            page = self.arch.page_size
            first, end = (addr - r[0]) // page, (addr + size - 1 - r[0]) // page + 1
            if all(map(need.__and__, prots[first:end])):
                return
            for i in range(first, end):
                if not prots[i] & need:
                    raise MemoryAccessError(f"{what} of {size} bytes at {addr:#x}: page "
                                            f"{r[0] + i * page:#x} is not "
                                            f"{'writable' if need == PROT_WRITE else 'readable'}")

    # -- Machine ---------------------------------------------------------
    def reserve(self, size: int, align: int) -> int:
        page = self.arch.page_size
        size = (size + page - 1) & ~(page - 1)
        align = max(align, page)
        base = take_spare(size, align)
        if base is None:
            base = map_range(size, align, page)
        return self._reserved(base, size)

    def reserve_low(self, size: int, align: int, limit: int) -> int | None:
        size = -(-size // self.arch.page_size) * self.arch.page_size
        base = map_below(size, max(align, self.arch.page_size), limit)
        return None if base is None else self._reserved(base, size)

    def _reserved(self, base: int, size: int) -> int:
        self._add_region(base, size)
        self._prot[base] = [PROT_READ | PROT_WRITE] * (size // self.arch.page_size)
        self._alive[base] = [True]
        return base

    def _retire(self, start: int, what: str) -> None:
        """Mark the range at ``start`` dead (new calls into it fail) and wait
        until no other thread is inside a call of this machine."""
        cell = self._alive.pop(start, None)
        if cell is not None:
            cell[0] = False
        self.wait_idle(what)

    def wait_idle(self, what: str = "close") -> None:
        """Wait until no other thread is inside a call of this machine;
        raise ``ExecutionError`` from inside one of its calls (a callback)."""
        self._refuse_inside(what, sys._getframe(1))
        self._wait_others()

    def _refuse_inside(self, what: str, frame: FrameType) -> None:
        if self._guarded and _inside_call(self, frame):
            raise ExecutionError(f"cannot {what} from inside a call of this native machine (a "
                                 f"host callback): its code is still running")

    def _wait_others(self) -> None:
        """Wait until no other thread is inside a call of this machine."""
        while self._guarded and self._others_inside():
            time.sleep(0.0005)

    def _others_inside(self) -> bool:
        """Whether another thread is inside a call of this machine now."""
        frames = thread_frames()
        me = threading.get_ident()
        try:        # with this thread alone, nothing to look at
            return len(frames) > 1 and any(t != me and _inside_call(self, frame)
                                           for t, frame in frames.items())
        finally:
            # the dict holds this very frame, whose locals hold the dict: a
            # cycle that would keep every caller's frame (the module being
            # closed, its machine) alive until a garbage collection
            frames.clear()

    def reuse(self, addr: int, size: int, content: bytes) -> bool:
        page = self.arch.page_size
        if size & (page - 1) or not take_kept(addr, size, content):
            return False
        self._add_region(addr, size)
        self._prot[addr] = [PROT_NONE] * (size // page)
        self._alive[addr] = [True]
        self._runs_apart.add(addr)
        return True

    def release(self, addr: int, size: int) -> None:
        self._release(addr, None)

    def release_image(self, addr: int, size: int, content: bytes | None) -> None:
        self._release(addr, content)

    def _release(self, addr: int, content: bytes | None) -> None:
        if addr in self._prot:
            self._retire(addr, "release an image")
            prots = self._prot.pop(addr)
            size = len(prots) * self.arch.page_size
            if content is not None and (len(content) != size
                                        or not all(map(PROT_READ.__and__, prots))
                                        or memcmp(addr, content, size) != 0):
                content = None       # changed since (or unreadable): cleared at reuse
            if content is not None and addr not in self._runs_apart and size < 2 << 20:
                keep_runs_apart(addr, prots, self.arch.page_size)
            self._runs_apart.discard(addr)
            if not give_spare(addr, size, content):
                munmap(addr, size)
            self._drop_region(addr)
            for cache in (self._fns, self._calls):
                if cache:
                    for key in [k for k in cache if addr <= k[0] < addr + size]:
                        del cache[key]

    def protect(self, addr: int, size: int, prot: int) -> None:
        r = self._find(addr, size)
        if r is None or r[0] not in self._prot:
            raise MemoryAccessError(f"protect {addr:#x}+{size:#x}: not inside a reservation")
        if mprotect(addr, size, OS_PROTS[prot] if 0 <= prot < len(OS_PROTS)
                     else os_prot(prot)) != 0:
            raise MemoryAccessError(f"mprotect({addr:#x}, {size:#x}) failed: errno "
                                    f"{ctypes.get_errno()}")
        page = self.arch.page_size
        first, end = (addr - r[0]) // page, (addr + size - r[0]) // page
        self._prot[r[0]][first:end] = [prot] * (end - first)

    def write(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        n = len(data)
        self._check(addr, n, PROT_WRITE, "write")
        if isinstance(data, (bytearray, memoryview)) and not (isinstance(data, memoryview)
                                                              and data.readonly):
            ctypes.memmove(addr, (ctypes.c_char * n).from_buffer(data), n)
        else:
            ctypes.memmove(addr, bytes(data), n)

    def read(self, addr: int, size: int) -> bytes:
        self._check(addr, size, PROT_READ, "read")
        return ctypes.string_at(addr, size)

    def host_view(self, addr: int, size: int) -> memoryview | None:
        self._check(addr, size, PROT_WRITE, "view")
        return memoryview((ctypes.c_char * size).from_address(addr)).cast("B")

    def alloc(self, size: int, align: int = 16) -> int:
        if size < 0 or align <= 0 or align & (align - 1):
            raise MemoryAccessError(f"alloc({size}, align={align}): size must be >= 0 and align a "
                                    f"power of two")
        try:
            buf = ctypes.create_string_buffer(max(size, 1) + align)
        except (MemoryError, OverflowError):
            raise MemoryAccessError(f"alloc({size}, align={align}): out of host memory") from None
        addr = (ctypes.addressof(buf) + align - 1) & ~(align - 1)
        self._allocs[addr] = (buf, size)
        self._add_region(addr, max(size, 1))
        self._alive[addr] = [True]
        return addr

    def free(self, addr: int) -> None:
        if addr not in self._allocs:
            raise MemoryAccessError(f"free({addr:#x}): not an address returned by alloc")
        cell = self._alive.pop(addr, None)       # data: freed at once, also from a callback
        if cell is not None:
            cell[0] = False
        del self._allocs[addr]
        self._drop_region(addr)

    def _fn(self, addr: int, sig: Signature) -> Any:
        """The ctypes function for ``addr`` with ``sig`` (made once per pair)."""
        f = self._fns.get((addr, sig))
        if f is None:
            t = _FNTYPES.get(sig)
            if t is None:
                t = _FNTYPES[sig] = cfunctype(sig)
            f = self._fns[(addr, sig)] = t(addr)
        return f

    def _alive_cell(self, addr: int, what: str) -> list[bool]:
        r = self._find(addr, 1)
        cell = self._alive.get(r[0]) if r is not None else None
        if cell is None:
            raise MemoryAccessError(f"{what} {addr:#x}: not inside any loaded image")
        return cell

    def call(self, addr: int, sig: Signature, args: tuple[Any, ...],
             timeout: float | None = None) -> Any:
        if timeout is not None:
            raise BackendError("native calls cannot be interrupted; timeouts need "
                               "backend='emulated'")
        if len(args) != len(sig.params):
            raise SignatureError(f"{sig} takes {len(sig.params)} argument(s), got {len(args)}")
        self._check_open()
        hit = self._calls.get((addr, sig))
        if hit is None or not hit[1][0]:     # first call, or its range was released since
            cell = self._alive_cell(addr, "call to")
            if self._jit_waiting:
                self.register_waiting()
            self._guarded = True
            hit = self._calls[(addr, sig)] = (_guard(self, self._fn(addr, sig), cell, addr), cell)
        try:
            return hit[0](*args)
        except ctypes.ArgumentError as e:
            raise SignatureError(f"argument does not fit {sig}: {e}") from None

    def function(self, addr: int, sig: Signature, *, jit: bool = True) -> Callable[..., Any]:
        """A typed callable for ``addr``; ``jit=False`` leaves the modules
        waiting for gdb (see jit_debug) waiting: for code run at load that is
        not the module's work (a library's query), the module is then
        registered before its next code runs through this machine."""
        self._check_open()
        cell = self._alive_cell(addr, "function at")
        if self._jit_waiting and jit:
            self.register_waiting()
        self._guarded = True
        return _guard(self, self._fn(addr, sig), cell, addr)

    def in_call(self) -> bool:
        return self._guarded and _inside_call(self, sys._getframe(1))

    def _check_open(self) -> None:
        if self.closed:
            raise ModuleClosedError("the native machine was closed")

    # -- host code and memory this machine did not map ---------------------
    # A native machine shares the process with other code: a system library's
    # functions, or a pointer a native callback received (e.g. a struct on the
    # caller's stack).  These are for callers that know the address is valid;
    # they are not range-checked.
    def foreign_function(self, addr: int, sig: Signature) -> Callable[..., Any]:
        """A typed callable for host code outside this machine (e.g. from
        ``SystemLibrary.address``); Python callbacks' exceptions surface as
        with ``function``."""
        if not addr:
            raise MemoryAccessError("foreign_function: NULL function address")
        self._guarded = True
        return _guard(self, self._fn(addr, sig), [True], addr)

    def read_unchecked(self, addr: int, size: int) -> bytes:
        """Read host memory this machine did not map (NULL is refused)."""
        if not addr:
            raise MemoryAccessError(f"read of {size} bytes at NULL")
        return ctypes.string_at(addr, size)

    def write_unchecked(self, addr: int, data: bytes | bytearray | memoryview) -> None:
        """Write host memory this machine did not map (NULL is refused)."""
        if not addr:
            raise MemoryAccessError(f"write of {len(data)} bytes at NULL")
        ctypes.memmove(addr, bytes(data), len(data))

    def _raise_pending(self) -> None:
        e = self.pending
        if e is not None:
            self.pending = None
            raise e

    def callback(self, fn: Callable[..., Any], sig: Signature, name: str = "") -> int:
        machine = self
        is_void = sig.ret is CType.VOID
        is_float = sig.ret.is_float

        def tramp(*args: Any) -> Any:
            try:
                r = fn(*args)
            except BaseException as e:  # noqa: BLE001 - surfaced when the outer call returns
                if machine.pending is None:
                    machine.pending = e
                return None if is_void else (0.0 if is_float else 0)
            if is_void:
                return None
            if r is None:
                return 0.0 if is_float else 0
            return r
        cb = cfunctype(sig, callback=True)(tramp)
        self._callbacks.append(cb)
        return ctypes.cast(cb, ctypes.c_void_p).value or 0

    # -- tools: gdb's JIT interface and perf's map -------------------------------
    def attach(self, module: Any) -> None:
        """Remember a module, and show it to gdb (now when a debugger
        watches, else before its code first runs: see jit_debug) and (when
        on) perf."""
        super().attach(module)
        if getattr(module, "elf", None) is None:      # not a loaded ELF (nothing to show)
            return
        key = id(module)
        now = jit_debug.at_load()
        if now is not None:
            if now or key in self._jit:
                self._register(module)      # attached again: registered again
            else:
                self._jit_waiting[key] = module
                jit_debug.wait(self)
        perf_map.record(module)

    def _register(self, module: Any, replace_first: bool = False) -> None:
        """Register ``module`` (again: its old entry goes, after the new one
        is in, or first with ``replace_first``: gdb then sets pending
        breakpoints in the new symfile alone)."""
        old = self._jit.pop(id(module), None)
        if old is not None and replace_first:
            old.unregister()
            old = None
        reg = jit_debug.register(module)
        if reg is not None:
            self._jit[id(module)] = reg
        if old is not None:     # its first entry must not outlive its buffer
            old.unregister()

    def register_waiting(self) -> int:
        """Register this machine's modules waiting for gdb (the number registered)."""
        n = 0
        with _waiting_lock:
            while self._jit_waiting:
                _key, module = self._jit_waiting.popitem()
                self._register(module)
                n += 1
        return n

    def symbols_added(self, module: Any, symbols: list[Any]) -> None:
        """Register the module again with gdb (its symfile now names them)
        and append them to perf's map."""
        if id(module) in self._jit:
            self._register(module, replace_first=True)
        perf_map.record(module, symbols)

    def detach(self, module: Any) -> None:
        super().detach(module)
        self._jit_waiting.pop(id(module), None)
        reg = self._jit.pop(id(module), None)
        if reg is not None:
            reg.unregister()

    def close(self) -> None:
        if self.closed:
            return
        self._refuse_inside("close the machine", sys._getframe(1))
        self.closed = True
        for cell in self._alive.values():
            cell[0] = False
        self._alive.clear()
        self._wait_others()         # calls already running end before what they use goes
        if self._prot:
            for start, prots in list(self._prot.items()):
                munmap(start, len(prots) * self.arch.page_size)
            self._prot.clear()
            self._runs_apart.clear()
        self._regions.clear()
        self._allocs.clear()
        self._callbacks.clear()
        self._fns.clear()
        self._calls.clear()
        self._jit_waiting.clear()
        if self._jit:
            for reg in self._jit.values():
                reg.unregister()
            self._jit.clear()


#: held while a machine registers its waiting modules (two threads calling
#: into them at once register each once)
_waiting_lock = threading.RLock()


# -- calls in flight ---------------------------------------------------------
# A call registers nothing: while it runs (in the foreign code, or in a Python
# callback of it) its thread's Python stack holds the frame of the wrapper
# below (NativeMachine.call goes through one too) from before the wrapper's
# liveness check until it returns.  release/close mark the range dead first,
# then wait until no other thread's stack (sys._current_frames) holds such a
# frame of their machine; one on the caller's own stack means it runs in a
# callback.  This keeps the per-call cost to the liveness and pending checks.
def _guard(machine: NativeMachine, f: Callable[..., Any], cell: list[bool],
           addr: int) -> Callable[..., Any]:
    """Wrap a ctypes function: refused once its range was released (no jump
    into unmapped code), seen as a call of ``machine`` while it runs (so
    release and close wait for it), and a Python callback's exception
    re-raises."""
    def call(*args: Any) -> Any:
        if not cell[0]:
            raise ModuleClosedError(f"call to {addr:#x}: its module was closed")
        r = f(*args)
        if machine.pending is not None:
            machine._raise_pending()
        return r
    return call


_GUARD_CODE = next(c for c in _guard.__code__.co_consts if isinstance(c, CodeType))


def _inside_call(machine: NativeMachine, frame: FrameType | None) -> bool:
    """Whether ``frame`` or one of its callers is a call of ``machine``."""
    while frame is not None:
        if frame.f_code is _GUARD_CODE and frame.f_locals.get("machine") is machine:
            return True
        frame = frame.f_back
    return False
