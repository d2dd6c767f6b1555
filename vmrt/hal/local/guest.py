"""Guest memory helpers shared by plugins and executables.

``GuestMemory`` wraps an elfkit ``Machine`` (native or emulated) with the
word size of its architecture: allocate structs, C strings and word arrays
the guest code can address, and read them back.  Per-machine singletons
(the import thunk, the host allocator callback) are cached here so that
every plugin and executable sharing a machine shares them too.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence

from elfkit import ElfkitError
from elfkit.exec import PROT_EXEC, PROT_READ
from elfkit.signature import Signature
from elfkit.signature import parse as parse_signature

from ...errors import StatusCode, VmError
from . import library_abi as abi

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_SIGS: dict[str, Signature] = {}


def sig(text: str) -> Signature:
    s = _SIGS.get(text)
    if s is None:
        s = _SIGS[text] = parse_signature(text)
    return s


class GuestMemory:
    """Allocation and typed access to one machine's memory."""

    def __init__(self, machine: Any, *, raw: bool = False):
        self.machine = machine
        self.word = machine.arch.bits // 8
        self.layout = abi.layout(self.word)
        self._owned: list[int] = []
        # raw: read/write any host address (native machines only), for
        # memory the guest code owns (its stack, the caller's numpy arrays)
        # that the machine's bounds-checked accessors do not know about.
        self.raw = raw and machine.backend == "native"

    # -- allocation ---------------------------------------------------------
    def alloc(self, size: int, align: int = 16) -> int:
        addr = self.machine.alloc(max(size, 1), align)
        self._owned.append(addr)
        return addr

    def alloc_bytes(self, data: bytes, align: int = 16) -> int:
        addr = self.alloc(len(data), align)
        if data:
            self.machine.write(addr, data)
        return addr

    def alloc_cstr(self, text: str | bytes) -> int:
        raw = text.encode() if isinstance(text, str) else bytes(text)
        return self.alloc_bytes(raw + b"\0", 1)

    def alloc_words(self, values: list[int] | tuple[int, ...]) -> int:
        return self.alloc_bytes(self.layout.pack_words(*values) if values else b"",
                                self.word)

    def alloc_dispatch_state(self, cbytes: bytes, ptrs: list[int], sizes: list[int],
                             ws3: tuple[int, int, int], wc: tuple[int, int, int],
                             threads: int) -> int:
        """A dispatch state and what it points to (constants, binding
        pointers and lengths) in one block, written at once: the state
        (16-byte aligned), then the constants, then the pointers and the
        lengths (word-aligned).  Returns the state's address."""
        lay = self.layout
        n = len(ptrs)
        c_off = -(-lay.ds_size // 16) * 16
        b_off = c_off + -(-len(cbytes) // lay.word) * lay.word
        l_off = b_off + n * lay.word
        base = self.alloc(l_off + n * lay.word, 16)
        state = lay.dispatch_state(ws3, len(cbytes) // 4, wc, threads, n,
                                   base + c_off if cbytes else 0, base + b_off if n else 0,
                                   base + l_off if n else 0)
        block = state + bytes(c_off - len(state)) + cbytes + bytes(b_off - c_off - len(cbytes))
        if n:
            block += lay.pack_words(*ptrs, *sizes)
        self.write(base, block)
        return base

    def free(self, addr: int) -> None:
        """Release one allocation made here, before the others."""
        self._owned.remove(addr)
        self.machine.free(addr)

    def free_all(self) -> None:
        owned, self._owned = self._owned, []
        for addr in reversed(owned):
            try:
                self.machine.free(addr)
            except ElfkitError:       # already released with its machine: nothing to free
                pass

    # -- access -------------------------------------------------------------
    def read(self, addr: int, size: int) -> bytes:
        if self.raw:
            return self.machine.read_unchecked(addr, size)
        return self.machine.read(addr, size)

    def write(self, addr: int, data: bytes) -> None:
        if self.raw:
            self.machine.write_unchecked(addr, data)
        else:
            self.machine.write(addr, data)

    def words(self, addr: int, count: int) -> tuple[int, ...]:
        if count == 0:
            return ()
        return self.layout.unpack_words(self.read(addr, count * self.word), count)

    def word_at(self, addr: int) -> int:
        return self.words(addr, 1)[0]

    def write_words(self, addr: int, values: list[int] | tuple[int, ...]) -> None:
        self.write(addr, self.layout.pack_words(*values))

    def cstr(self, addr: int, limit: int = 4096) -> str:
        return read_cstr(self.read, addr, limit)

    def cstrs(self, addrs: Sequence[int], limit: int = 4096) -> list[str]:
        """``cstr`` of each address (one read when they lie close together)."""
        return read_cstrs(self.read, addrs, limit)


def read_cstr(read: Callable[[int, int], bytes], addr: int, limit: int = 4096) -> str:
    """A NUL-terminated string at ``addr`` (at most ``limit`` bytes), read in
    chunks that fall back to single bytes near the end of a mapping."""
    if addr == 0:
        return ""
    out = bytearray()
    while len(out) < limit:
        try:
            chunk = read(addr + len(out), 64)
        except ElfkitError:           # the string ends near the end of a mapping
            chunk = read(addr + len(out), 1)
        nul = chunk.find(b"\0")
        if nul >= 0:
            out += chunk[:nul]
            break
        out += chunk
    return bytes(out[:limit]).decode("utf-8", errors="replace")


#: the widest span of strings :func:`read_cstrs` reads at once
CSTR_WINDOW = 1 << 16


def read_cstrs(read: Callable[[int, int], bytes], addrs: Sequence[int],
               limit: int = 4096) -> list[str]:
    """:func:`read_cstr` of each of ``addrs``, with the same answers: when
    the strings start within :data:`CSTR_WINDOW` bytes of each other (a
    library's names, side by side in its read-only data), one read covers
    them; a string not ended inside that read, or a read that fails (the
    span ends near the end of a mapping), is read alone as before."""
    starts = [a for a in addrs if a]
    blob, lo = None, 0
    if len(starts) > 1:
        lo, hi = min(starts), max(starts)
        if hi - lo <= CSTR_WINDOW:
            try:
                blob = read(lo, hi - lo + 64)
            except ElfkitError:
                blob = None
    out = []
    for addr in addrs:
        if blob is not None and addr:
            at = addr - lo
            nul = blob.find(b"\0", at, at + limit)
            if nul >= 0:
                out.append(blob[at:nul].decode("utf-8", errors="replace"))
                continue
        out.append(read_cstr(read, addr, limit))
    return out


# ---------------------------------------------------------------------------
# Per-machine singletons
# ---------------------------------------------------------------------------

_THUNKS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_ALLOCATORS: weakref.WeakKeyDictionary[Any, HostAllocator] = weakref.WeakKeyDictionary()
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def machine_lock(machine: Any) -> threading.RLock:
    """The lock of ``machine``'s multi-step guest work (one per machine,
    re-entrant): an emulated dispatch holds it from staging its bindings to
    copying them back, so that dispatches from several threads, or from
    several contexts whose executables share the machine, run one after
    another instead of interleaving their guest memory.  (Each single
    machine operation is atomic on its own; a sequence of them is not.)"""
    lock = _LOCKS.get(machine)
    if lock is None:
        with _LOCKS_LOCK:
            lock = _LOCKS.get(machine)
            if lock is None:
                lock = _LOCKS[machine] = threading.RLock()
    return lock


def import_thunk(machine: Any) -> int:
    """Address of the import thunk in ``machine`` (written once per machine):
    a few instructions of the machine's own architecture, mapped read+exec."""
    addr = _THUNKS.get(machine)
    if addr is None:
        with machine_lock(machine):
            addr = _THUNKS.get(machine)
            if addr is None:
                code = abi.import_thunk_code(machine.arch.name)
                page = machine.arch.page_size
                addr = machine.reserve(page, page)
                machine.write(addr, code)
                machine.protect(addr, page, PROT_READ | PROT_EXEC)
                _THUNKS[machine] = addr
    return addr


class HostAllocator:
    """The host allocator handed to plugins: ``ctl(self, command, params,
    inout_ptr)`` served by a Python callback over the machine's heap, so the
    blocks are memory the plugin can address (guest memory when emulated)."""

    def __init__(self, machine: Any):
        self.machine = machine
        self.mem = GuestMemory(machine, raw=True)   # params live on the plugin's stack
        self.blocks: dict[int, int] = {}
        self.calls = 0
        self.last_error: BaseException | None = None
        self.ctl = machine.callback(self._ctl, sig("ptr(ptr,i32,ptr,ptr)"), "vmrt_host_allocator")

    def _ctl(self, _self: int, command: int, params: int, inout_ptr: int) -> int:
        self.calls += 1
        try:
            if not inout_ptr:
                return int(StatusCode.INVALID_ARGUMENT)
            mem = self.mem
            cmd = command & 0xFFFFFFFF
            if cmd in (abi.AllocatorCommand.MALLOC, abi.AllocatorCommand.CALLOC,
                       abi.AllocatorCommand.REALLOC):
                if not params:
                    return int(StatusCode.INVALID_ARGUMENT)
                size = mem.word_at(params)
                old = mem.word_at(inout_ptr) if cmd == abi.AllocatorCommand.REALLOC else 0
                if old and old not in self.blocks:
                    return int(StatusCode.INVALID_ARGUMENT)
                new = self.machine.alloc(max(size, 1), 16)   # zero-filled
                self.blocks[new] = size
                if old:
                    keep = min(size, self.blocks.pop(old))
                    if keep:
                        self.machine.write(new, self.machine.read(old, keep))
                    self.machine.free(old)
                mem.write_words(inout_ptr, [new])
                return 0
            if cmd == abi.AllocatorCommand.FREE:
                ptr = mem.word_at(inout_ptr)
                if ptr:
                    if ptr not in self.blocks:
                        return int(StatusCode.INVALID_ARGUMENT)
                    del self.blocks[ptr]
                    self.machine.free(ptr)
                mem.write_words(inout_ptr, [0])
                return 0
            return int(StatusCode.UNIMPLEMENTED)
        except Exception as e:  # noqa: BLE001 - never unwind through guest frames
            self.last_error = e
            return int(StatusCode.RESOURCE_EXHAUSTED)

    @property
    def self_ptr(self) -> int:
        return 0


def host_allocator(machine: Any) -> HostAllocator:
    a = _ALLOCATORS.get(machine)
    if a is None:
        with machine_lock(machine):
            a = _ALLOCATORS.get(machine)
            if a is None:
                a = _ALLOCATORS[machine] = HostAllocator(machine)
    return a


def status_code(value: Any) -> int:
    """The code of a status returned across the ABI (a pointer-sized value
    whose low five bits are the code; 0 is OK)."""
    v = int(value or 0)
    return 0 if v == 0 else (v & abi.STATUS_CODE_MASK) or int(StatusCode.UNKNOWN)


def code_name(code: int) -> str:
    return StatusCode.from_int(code).name


def fail(code: int, message: str) -> VmError:
    return VmError(message, code)
