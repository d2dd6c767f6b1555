"""Fuzz target ``plugin-emulated``: hostile guest code under emulation.

The input is a plugin ELF (the seeds are the catalogue plugins of
tests/plugins.py for the five foreign CPUs, built with the tests' builder).
From a hash of the input, the target derives (so a saved input replays
exactly):

* extra byte edits inside the executable PT_LOAD segment (the code), on top
  of whatever the driver's byte mutations already changed;
* 1-4 calls of exports the catalogue knows a signature for, with random
  scalars (edge values, out-of-range ints, NaN/inf) and random numpy buffers:
  small views, often unaligned and sometimes strided or read-only, of a
  larger base array whose bytes around the view are random canaries;
* a short per-call timeout and instruction budget.

Invariants (anything else raises ``Finding``, or crashes/hangs the process,
which fuzz/run.py's watchdog records):

* every load and call ends normally or in an ``elfkit.ElfkitError``;
* the canary bytes outside each passed view are never changed, and a
  read-only view is never changed (the sandbox promise: a guest reaches only
  the bytes it was given).
"""
from __future__ import annotations

import hashlib
import math
import random
import struct
from typing import Any

import numpy as np

import elfkit
import elfkit.signature

#: per-call limits: short, so that endless loops cost little
CALL_TIMEOUT = 0.25
LOAD_OPTIONS = {"instruction_budget": 2_000_000, "timeout": 1.0}

_INTS = [0, 1, -1, 2, 7, 64, 255, 4096, 65536, 2**31 - 1, -2**31, 2**32 - 1, 2**63 - 1,
         -2**63, 2**64 - 1, 0x10, 0x1000, 0xDEADBEEF]
_FLOATS = [0.0, -0.0, 1.0, -1.5, 1e300, -1e-300, math.inf, -math.inf, math.nan, 3.4e38]
_DTYPES = [np.uint8, np.int32, np.float32, np.float64, np.int64]


class Finding(AssertionError):
    """An invariant of the sandbox did not hold."""


def signatures() -> dict[str, str]:
    """Export name -> signature, over the whole catalogue (names are unique
    up to identical signatures; data objects left out)."""
    from tests.plugins import PLUGINS
    out: dict[str, str] = {}
    for p in PLUGINS.values():
        for name, e in p.exports.items():
            if e.signature != "data":
                out[name] = e.signature
    return out


_SIGS: dict[str, str] | None = None


def _host_imports() -> elfkit.Imports:
    # deliberately sloppy host functions: no wrapping, so results may not fit
    return elfkit.Imports({
        "host_add": (lambda a, b: a + b, "i32(i32,i32)"),
        "host_log": (lambda code: None, "void(i32)"),
        "host_scale": (lambda x, s: x * s, "f64(f64,f32)"),
        "host_optional": (lambda x: -x, "i32(i32)"),
    })


def exec_ranges(data: bytes) -> list[tuple[int, int]]:
    """(file offset, size) of every executable PT_LOAD, read independently of
    elfkit (empty when the headers are not readable)."""
    try:
        if data[:4] != b"\x7fELF" or len(data) < 0x40:
            return []
        is64 = data[4] == 2
        if is64:
            phoff, = struct.unpack_from("<Q", data, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        else:
            phoff, = struct.unpack_from("<I", data, 0x1C)
            phentsize, phnum = struct.unpack_from("<HH", data, 0x2A)
        out = []
        for i in range(min(phnum, 64)):
            o = phoff + i * phentsize
            if is64:
                p_type, p_flags, p_offset = struct.unpack_from("<IIQ", data, o)
                p_filesz, = struct.unpack_from("<Q", data, o + 0x20)
            else:
                p_type, p_offset = struct.unpack_from("<II", data, o)
                p_filesz, = struct.unpack_from("<I", data, o + 0x10)
                p_flags, = struct.unpack_from("<I", data, o + 0x18)
            if p_type == 1 and p_flags & 1 and p_filesz and p_offset < len(data):
                out.append((p_offset, min(p_filesz, len(data) - p_offset)))
        return out
    except (struct.error, IndexError, OverflowError):   # a mutated header: no code to edit
        return []


def mutate_code(rng: random.Random, data: bytes) -> bytes:
    """A few byte, word or run edits inside the executable segment."""
    ranges = exec_ranges(data)
    if not ranges:
        return data
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        off, size = rng.choice(ranges)
        i = off + rng.randrange(size)
        op = rng.random()
        if op < 0.5:
            b[i] = rng.randrange(256)
        elif op < 0.8:                                  # an aligned instruction word
            i &= ~3
            b[i:i + 4] = rng.randbytes(4)
        else:                                           # a run of one value (0, ff, a trap)
            n = rng.randint(2, 32)
            b[i:i + n] = bytes([rng.choice([0, 0xFF, 0xCC, 0x90])]) * n
    return bytes(b[:len(data)])


class Buffer:
    """A view of ``size`` elements at a byte offset inside a larger random
    base array; ``check()`` raises Finding if a byte outside the view, or a
    read-only view, changed."""

    def __init__(self, rng: random.Random):
        dtype = np.dtype(rng.choice(_DTYPES))
        n = rng.choice([0, 1, 2, 3, 4, 8, 16, 33, 64])
        stride = 2 if rng.random() < 0.1 else 1
        off = rng.randrange(0, 24)                      # often unaligned
        span = n * dtype.itemsize * stride
        self.base = np.frombuffer(bytearray(rng.randbytes(off + span + rng.randint(1, 40))),
                                  dtype=np.uint8)
        self.lo, self.hi = off, off + span
        view = self.base[self.lo:self.hi].view(dtype)
        self.view = view[::stride] if stride > 1 else view
        self.readonly = rng.random() < 0.15
        if self.readonly:
            self.view.flags.writeable = False
        self.before = self.base.copy()

    def check(self, what: str) -> None:
        changed = np.flatnonzero(self.base != self.before)
        if self.readonly and changed.size:
            raise Finding(f"{what}: a read-only view was written (bytes {changed[:8].tolist()} "
                          f"of a base array, view [{self.lo}, {self.hi}))")
        outside = changed[(changed < self.lo) | (changed >= self.hi)]
        if self.view.strides[0] > self.view.itemsize and changed.size:
            # strided: bytes between the elements are outside the view too
            item, step = self.view.itemsize, self.view.strides[0]
            rel = changed - self.lo
            outside = np.union1d(outside, changed[(rel >= 0) & (rel % step >= item)])
        if outside.size:
            raise Finding(f"{what}: canary bytes outside the passed view changed: offsets "
                          f"{outside[:8].tolist()} (view [{self.lo}, {self.hi}) of "
                          f"{self.base.size} bytes)")


def _scalar(rng: random.Random, t: str, module: Any) -> Any:
    if t in ("f32", "f64"):
        return rng.choice(_FLOATS) if rng.random() < 0.6 else rng.uniform(-1e6, 1e6)
    if t == "ptr":
        r = rng.random()
        if r < 0.3:
            return None
        if r < 0.6 and module.exports:                 # somewhere inside the image
            return rng.choice(list(module.exports.values())) + rng.randint(-64, 64)
        return rng.choice(_INTS) & (2**64 - 1)
    if rng.random() < 0.05:                            # does not fit: must be refused cleanly
        return rng.choice([2**70, -2**70])
    bits = int(t[1:])
    v = rng.choice(_INTS) if rng.random() < 0.5 else rng.getrandbits(bits)
    return elfkit_wrap(v, bits, t[0] == "i") if rng.random() < 0.9 else v


def elfkit_wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def plugin_emulated(data: bytes) -> None:
    global _SIGS
    if _SIGS is None:
        _SIGS = signatures()
    rng = random.Random(hashlib.sha1(data).digest())
    if rng.random() < 0.7:
        data = mutate_code(rng, data)
    try:
        m = elfkit.load(data, backend="emulated", imports=_host_imports(), lazy=True,
                        **LOAD_OPTIONS)
    except elfkit.ElfkitError:
        return
    try:
        names = sorted(n for n in m.exports if n in _SIGS)
        for _ in range(rng.randint(1, 4) if names else 0):
            name = rng.choice(names)
            sig = elfkit.signature.parse(_SIGS[name])
            buffers: list[Buffer] = []
            args: list[Any] = []
            for p in sig.params:
                if p.value == "ptr" and rng.random() < 0.6:
                    if buffers and rng.random() < 0.15:  # the same buffer twice (aliasing)
                        args.append(buffers[-1].view)
                        continue
                    buf = Buffer(rng)
                    buffers.append(buf)
                    args.append(buf.view)
                else:
                    args.append(_scalar(rng, p.value, m))
            try:
                fn = m.function(name, sig)
                fn(*args, timeout=CALL_TIMEOUT, budget=rng.choice([10_000, 1_000_000]))
            except elfkit.ElfkitError:
                pass
            for buf in buffers:
                buf.check(f"{name}{tuple(type(a).__name__ for a in args)}")
    finally:
        try:
            m.close()
        except elfkit.ElfkitError:
            pass


def default_seeds() -> list[bytes]:
    """The catalogue plugins that have code worth running, for the five
    CPUs that are foreign to an x86_64 host (all six but the host's)."""
    from tests.plugins import ARCHES, build_plugins
    ps = build_plugins()
    return [ps.data(name, arch) for name in ("kernels", "relocs", "imports", "standalone")
            for arch in ARCHES if arch != ps.host_arch]
