"""A native ``UC_HOOK_BLOCK`` hook that counts executions per translated
block: the fast side of guest profiling (``_profiler``, ``EmulatedMachine.profile``).

A block hook written in Python costs a ctypes callback (GIL, argument
conversion, a dictionary update) per block: 10-25 times the run time of a
tight loop.  ``native_counter`` instead hands unicorn the address of a small
freestanding C function, ``elfkit_count_block``, which counts into an
open-addressed table of ``(address, size) -> executions`` held in a buffer
passed as the hook's ``user_data``.  The function is built for the host by
the project's own toolchain (``elfkit.toolchain.compile_plugin``: zig's
clang from the ``ziglang`` wheel) and loaded natively by ``elfkit.load``;
the built plugin is kept in elfkit's cache directory (``codecache``:
``$ELFKIT_CACHE_DIR``, private files only), so only the first profile on a
machine compiles it (about a second; with ``ELFKIT_NO_CACHE``, the first of
each process).

With ``count_calls``, the function also counts the call edges that
``_callgraph`` turns into call stacks: on a block at a function's entry
(looked up in a hash set of the entry addresses), it reads the return
address (``uc_reg_read``, and on x86 ``uc_mem_read`` at the stack pointer:
unicorn's own functions, whose addresses it is given) and counts the edge in
the same table.

When the table fills up (three quarters of its slots), the C function calls
back into Python once (``spill``), which moves the counts into a dictionary
and clears the table: counts stay exact whatever the number of blocks.

Where the toolchain is missing (``pip install elfkit`` without the
``build`` extra), the host cannot run its own plugins natively, or
``ELFKIT_PROFILE_HOOK=python`` asks for it, profiling falls back to the
Python hook; ``native_counter`` returns None and ``why_not`` says why (the
profiler prints it once).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import sys
import tempfile
import threading

from ..._support.cachebound import touch
from ..._support.codecache import cache_dir, note_written
from ..._support.files import read_private, write_private
from ._callgraph import EDGE

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._callgraph import CallSites

#: The hook.  Header: mask (slots - 1), used slots, spill threshold, the
#: spill callback; the call-edge fields (``_callgraph``: a hash set of
#: function entry addresses, none when ``emask`` is 0; how to read the
#: return address; the runtime page; the previous block); then ``slots``
#: entries of (address, size + 1, count), size + 1 == 0 marking an empty
#: slot; then the numbers of the used slots, in the order they were taken
#: (so that a drain reads only those).  A call edge is an entry whose
#: size + 1 word has bit 63 set: (site, flags | callee, count).
SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;
#define EDGE (1ull << 63)
#define JUMP (1ull << 62)
#define ROOT (1ull << 61)
#define NONE (~0ull)

struct entry { u64 address, size1, count; };
struct table {
    u64 mask, used, limit;
    void (*spill)(struct table *);
    const u64 *entries;         /* open-addressed set of entry addresses (NONE: free) */
    u64 emask;                  /* its size - 1; 0: no call edges */
    int (*reg_read)(void *, int, void *);
    int (*mem_read)(void *, u64, void *, u64);
    u64 ra_reg, ra_bytes;       /* ra_bytes 0: the return address is in register
                                   ra_reg, else ra_bytes at the address in it */
    u64 ra_mask, host_lo, host_hi;
    u64 prev, prev_end;         /* the block run before this one */
    struct entry slots[];       /* mask + 1 of them, then limit slot numbers */
};

static inline u64 mix(u64 a, u64 b) {
    return ((a * 0x9E3779B97F4A7C15ull) ^ b) * 0xC2B2AE3D27D4EB4Full;
}

static inline u64 slot_of(const struct table *t, u64 address, u64 size1) {
    return (mix(address, size1) >> 32) & t->mask;
}

static void add(struct table *t, u64 address, u64 size1) {
    u64 i = slot_of(t, address, size1);
    for (;;) {
        struct entry *e = &t->slots[i];
        if (e->size1 == size1 && e->address == address) {
            e->count++;
            return;
        }
        if (e->size1 == 0)
            break;
        i = (i + 1) & t->mask;
    }
    if (t->used >= t->limit) {       /* full: Python takes the counts, clears */
        t->spill(t);
        i = slot_of(t, address, size1);
    }
    ((u64 *)&t->slots[t->mask + 1])[t->used++] = i;
    t->slots[i].address = address;
    t->slots[i].size1 = size1;
    t->slots[i].count = 1;
}

static inline int is_entry(const struct table *t, u64 address) {
    u64 i = (mix(address, 0) >> 32) & t->emask;
    for (;;) {
        u64 v = t->entries[i];
        if (v == address)
            return 1;
        if (v == NONE)
            return 0;
        i = (i + 1) & t->emask;
    }
}

/* A function's entry block: count the edge from where it came from.  The
   return address says how: the end of the previous block (a call), the
   runtime page (a call from the host), else a jump (a tail call, or a loop
   back to the entry), charged to the previous block. */
static void edge(void *uc, struct table *t, u64 address) {
    u64 ra = 0, at;
    t->reg_read(uc, (int)t->ra_reg, &ra);
    if (t->ra_bytes) {
        at = ra;
        ra = 0;
        if (t->mem_read(uc, at, &ra, t->ra_bytes))
            ra = 0;
    }
    ra &= t->ra_mask;
    if (ra >= t->host_lo && ra < t->host_hi)
        add(t, 0, EDGE | ROOT | address);
    else if (ra == t->prev_end)
        add(t, ra, EDGE | address);
    else
        add(t, t->prev, EDGE | JUMP | address);
}

__attribute__((visibility("default")))
void elfkit_count_block(void *uc, u64 address, u32 size, struct table *t) {
    add(t, address, (u64)size + 1);
    if (t->emask) {
        if (is_entry(t, address))
            edge(uc, t, address);
        t->prev = address;
        t->prev_end = address + size;
    }
}
"""
SYMBOL = "elfkit_count_block"
_FORMAT = b"elfkit block hook 3\0"     # changes when the table layout does
ENV = "ELFKIT_PROFILE_HOOK"            # "python": always the Python hook
DEFAULT_SLOTS = 1 << 12                # table entries of a machine (read at each start)

SPILL = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_HEADER_WORDS = 15

_lock = threading.Lock()
_loaded: list[Any] = []                # [(module, hook address)] once loaded
_failure: list[str] = []               # why the native hook cannot be had
_warned: list[bool] = []


def _host_arch() -> str | None:
    from ...arch import host
    a = host()
    return a.name if a is not None else None


def _build(arch: str, cached: bool = True) -> bytes:
    """The hook plugin for ``arch``, from the cache (with ``cached``) or
    compiled now (and kept there)."""
    from ...toolchain import compile_plugin
    key = hashlib.sha256(_FORMAT + arch.encode() + b"\0" + SOURCE.encode()).hexdigest()[:24]
    name = f"blockhook-{arch}-{key}.so"
    where = cache_dir("elfkit")
    if where is not None and cached:
        data = read_private(where, name, touch=touch)
        if data:
            return data
    with tempfile.TemporaryDirectory(prefix="elfkit-blockhook-") as tmp:
        src = os.path.join(tmp, "blockhook.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(SOURCE)
        out = compile_plugin(src, arch, os.path.join(tmp, "blockhook.so"),
                             cflags=["-O2", "-fno-stack-protector"])
        data = out.read_bytes()
    if where is not None and write_private(where, name, data):
        note_written(where, len(data))
    return data


def _load() -> int | None:
    """The hook's host address (loading it on first use), else None."""
    with _lock:
        if _loaded:
            return int(_loaded[0][1])
        if _failure:
            return None
        if sys.platform == "win32":
            _failure.append("the native hook follows the System V calling convention, "
                            "not Windows'")
            return None
        arch = _host_arch()
        if arch is None:
            _failure.append(f"elfkit cannot run plugins natively on this host "
                            f"({sys.platform})")
            return None
        try:
            import elfkit  # the public loader; elfkit.load is looked up lazily
            try:
                mod = elfkit.load(_build(arch), backend="native", name="elfkit-blockhook")
            except elfkit.ElfkitError:       # a damaged cache file: built again
                mod = elfkit.load(_build(arch, cached=False), backend="native",
                                  name="elfkit-blockhook")
            addr = mod.symbol(SYMBOL)
        except Exception as e:  # noqa: BLE001 - any failure means the Python hook
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            _failure.append(f"{type(e).__name__}: {first}")
            return None
        _loaded.append((mod, addr))
        return int(addr)


def why_not() -> str | None:
    """Why the native hook is not used (None when it is, or not tried yet)."""
    if os.environ.get(ENV, "") == "python":
        return f"{ENV}=python"
    return _failure[0] if _failure else None


class NativeCounter:
    """One machine's table: ``hook`` (the C function's address) and
    ``user_data`` (the table's) for ``uc_hook_add``; ``take()`` returns the
    counts so far (blocks, and call edges after ``count_calls``) and clears
    them."""

    def __init__(self, hook: int, slots: int = DEFAULT_SLOTS,
                 guard: Callable[[Any], Any] = lambda f: f) -> None:
        if slots < 2 or slots & (slots - 1):
            raise ValueError(f"slots must be a power of two >= 2, not {slots}")
        self.hook = hook
        self._slots = slots
        self._limit = max(1, slots * 3 // 4)
        self._words = (ctypes.c_uint64 * (_HEADER_WORDS + 3 * slots + self._limit))()
        self._spill = SPILL(guard(self._on_spill))   # (a failure ends the call)
        self._words[0] = slots - 1
        self._words[2] = self._limit
        ctypes.cast(ctypes.byref(self._words, 24), ctypes.POINTER(ctypes.c_void_p))[0] = \
            ctypes.cast(self._spill, ctypes.c_void_p).value
        self.user_data = ctypes.addressof(self._words)
        self._blocks: dict[tuple[int, int], int] = {}
        self._edges: dict[tuple[int, int], int] = {}
        self._entries: Any = None

    def count_calls(self, sites: CallSites) -> None:
        """Also count the call edges of ``sites`` (``_callgraph``); before
        the hook is installed."""
        from . import _uc
        table = sites.table()
        self._entries = (ctypes.c_uint64 * len(table))(*table)
        w = self._words
        fns = ctypes.cast(ctypes.byref(w, 6 * 8), ctypes.POINTER(ctypes.c_void_p))
        fns[0] = ctypes.cast(_uc.lib.uc_reg_read, ctypes.c_void_p).value
        fns[1] = ctypes.cast(_uc.lib.uc_mem_read, ctypes.c_void_p).value
        w[4] = ctypes.addressof(self._entries)
        w[5] = len(table) - 1
        w[8], w[9], w[10] = sites.ra_reg, sites.ra_bytes, sites.ra_mask
        w[11], w[12] = sites.host_lo, sites.host_hi

    def _drain(self) -> None:
        used = self._words[1]
        if used:
            w = self._words
            order = _HEADER_WORDS + 3 * self._slots
            blocks, edges = self._blocks, self._edges
            for i in w[order:order + used]:
                e = _HEADER_WORDS + 3 * i
                size1 = w[e + 1]
                if size1 & EDGE:
                    key = (w[e], size1)
                    edges[key] = edges.get(key, 0) + w[e + 2]
                else:
                    key = (w[e], size1 - 1)
                    blocks[key] = blocks.get(key, 0) + w[e + 2]
                w[e + 1] = 0
            w[1] = 0

    def _on_spill(self, _table: Any) -> None:
        self._drain()

    def take(self) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], int]]:
        """The counts so far (the machine must not be running), cleared:
        ``{(address, size): executions}`` and the call edges
        ``{(site, flags | callee): calls}`` (``_callgraph``)."""
        self._drain()
        out = self._blocks, self._edges
        self._blocks, self._edges = {}, {}
        return out


def native_counter(slots: int | None = None,
                   guard: Callable[[Any], Any] = lambda f: f) -> NativeCounter | None:
    """A fresh table for the native hook, or None when the Python hook must
    do (see ``why_not``; the first time, a warning says why).  ``guard``
    marks the spill callback as a hook of the machine (``CallState.guard``)."""
    if os.environ.get(ENV, "") == "python":
        return None
    hook = _load()
    if hook is None:
        if not _warned:
            _warned.append(True)
            import warnings
            warnings.warn(f"elfkit: guest profiling counts blocks with a Python hook (10-25 "
                          f"times slower than a native one): the native counter could not "
                          f"be built or loaded ({_failure[0]}); pip install 'elfkit[build]' "
                          f"brings the toolchain", stacklevel=3)
        return None
    return NativeCounter(hook, DEFAULT_SLOTS if slots is None else slots, guard)
