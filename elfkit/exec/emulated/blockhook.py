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

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: The hook.  Header: mask (slots - 1), used slots, spill threshold, the
#: spill callback; then ``slots`` entries of (address, size + 1, count),
#: size + 1 == 0 marking an empty slot; then the numbers of the used slots,
#: in the order they were taken (so that a drain reads only those).
SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

struct entry { u64 address, size1, count; };
struct table {
    u64 mask, used, limit;
    void (*spill)(struct table *);
    struct entry slots[];       /* mask + 1 of them, then limit slot numbers */
};

static inline u64 slot_of(const struct table *t, u64 address, u64 size1) {
    u64 h = (address ^ (size1 << 40)) * 0x9E3779B97F4A7C15ull;
    return (h >> 32) & t->mask;
}

__attribute__((visibility("default")))
void elfkit_count_block(void *uc, u64 address, u32 size, struct table *t) {
    (void)uc;
    u64 size1 = (u64)size + 1, i = slot_of(t, address, size1);
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
"""
SYMBOL = "elfkit_count_block"
_FORMAT = b"elfkit block hook 2\0"     # changes when the table layout does
ENV = "ELFKIT_PROFILE_HOOK"            # "python": always the Python hook
DEFAULT_SLOTS = 1 << 12                # table entries of a machine (read at each start)

SPILL = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_HEADER_WORDS = 4

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
    if where is not None:
        write_private(where, name, data)
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
    counts so far as ``{(address, size): executions}`` and clears them."""

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
        self._spilled: dict[tuple[int, int], int] = {}

    def _drain(self) -> dict[tuple[int, int], int]:
        out = self._spilled
        used = self._words[1]
        if used:
            w = self._words
            order = _HEADER_WORDS + 3 * self._slots
            for i in w[order:order + used]:
                e = _HEADER_WORDS + 3 * i
                key = (w[e], w[e + 1] - 1)
                out[key] = out.get(key, 0) + w[e + 2]
                w[e + 1] = 0
            w[1] = 0
        return out

    def _on_spill(self, _table: Any) -> None:
        self._spilled = self._drain()

    def take(self) -> dict[tuple[int, int], int]:
        """The counts so far (the machine must not be running); cleared."""
        out = self._drain()
        self._spilled = {}
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
