"""Buffer views parse and print the plain element types without numpy: the
bytes and the text must be those numpy (and ml_dtypes) give."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from vmrt.hal.buffer import HalBuffer, new_buffer
from vmrt.hal.buffer_view import BufferView, format_buffer_view, parse_buffer_view

FLOATS = [("f16", np.float16), ("f32", np.float32), ("f64", np.float64),
          ("bf16", ml_dtypes.bfloat16)]
INTS = [("i8", np.int8), ("si8", np.int8), ("ui8", np.uint8), ("i16", np.int16),
        ("ui16", np.uint16), ("si32", np.int32), ("ui32", np.uint32), ("i64", np.int64),
        ("ui64", np.uint64)]


def _floats(n: int) -> list[float]:
    rng = np.random.default_rng(5)
    mags = np.exp(rng.uniform(-120, 120, n)) * rng.choice([-1, 1], n)
    edge = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 65504.0, 65520.0, 1e39,
            -1e39, 3.4028235e38, 3.4028236e38, 6e-8, 2.9e-8, 1e-46, 1.00390625, 1.01171875]
    return edge + mags.tolist()


@pytest.mark.parametrize("elem,dtype", FLOATS, ids=[e for e, _ in FLOATS])
def test_float_parsing_rounds_like_numpy(elem, dtype):
    vals = _floats(300)
    text = " ".join(repr(v) for v in vals)
    bv = parse_buffer_view(f"{len(vals)}x{elem}={text}")
    with np.errstate(all="ignore"):
        want = np.array(vals, np.float64)
        if elem == "bf16":          # IREE rounds to f32 first
            want = want.astype(np.float32)
        want = want.astype(dtype)
    assert bytes(bv.storage) == want.tobytes()
    assert bv.address is not None and bv.address % 64 == 0


@pytest.mark.parametrize("elem,dtype", FLOATS + INTS, ids=[e for e, _ in FLOATS + INTS])
def test_printing_matches_numpy_values(elem, dtype):
    rng = np.random.default_rng(9)
    raw = rng.integers(0, 256, 64 * np.dtype(dtype).itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(4, 16)
    text = format_buffer_view(BufferView.over(memoryview(raw.tobytes()), elem, (4, 16)))
    body = []
    for row in arr:
        items = []
        for v in row:
            if elem[0] in "bf":
                f = float(v)
                items.append(("-NAN" if np.signbit(v) else "NAN") if f != f else f"{f:G}")
            else:
                items.append(str(int(v)))
        body.append("[" + " ".join(items) + "]")
    assert text == f"4x16x{elem}=" + "".join(body)
    # a numpy-made view prints the same
    assert format_buffer_view(BufferView(arr, elem)) == text


@pytest.mark.parametrize("elem,dtype", INTS, ids=[e for e, _ in INTS])
def test_int_parsing_and_splats(elem, dtype):
    info = np.iinfo(dtype)
    vals = [int(info.min), -1 if info.min else 0, 0, 7, int(info.max)]
    bv = parse_buffer_view(f"5x{elem}=" + " ".join(str(v) for v in vals))
    want = np.array([v & ((1 << info.bits) - 1) for v in vals], np.uint64) \
        .astype(f"u{info.bits // 8}").view(dtype)
    assert bytes(bv.storage) == want.tobytes()
    splat = parse_buffer_view(f"2x3x{elem}=7")
    assert bytes(splat.storage) == np.full((2, 3), 7, dtype).tobytes()
    zeros = parse_buffer_view(f"3x{elem}")
    assert bytes(zeros.storage) == bytes(3 * info.bits // 8)


def test_views_share_memory_with_buffers_and_arrays():
    buf = new_buffer(16)
    bv = BufferView.over(buf.bytes, "f32", (2, 2), buf.address)
    bv.array[1, 1] = 2.5                          # numpy view made on demand, no copy
    assert bytes(buf.bytes[12:16]) == np.float32(2.5).tobytes()
    buf.bytes[0:4] = np.float32(-1).tobytes()
    assert format_buffer_view(bv) == "2x2xf32=[-1 0][0 2.5]"
    packed = parse_buffer_view("4xi4=[21 F3]")    # binary hex: storage bytes, packed
    assert bytes(packed.storage) == b"\x21\xf3" and packed.array.tolist() == [1, 2, 3, -1]
    assert format_buffer_view(packed) == "4xi4=21 F3"
    assert format_buffer_view(parse_buffer_view("3xi1=01 00 01")) == "3xi1=01 00 01"
    big = parse_buffer_view("3000xf32=1")
    assert format_buffer_view(big, 3).endswith("=1 1 1...")


@pytest.mark.parametrize("first", [0, 1, 1024])
def test_first_small_allocation_of_a_thread(first):
    # a thread's first small allocation makes its slab, even when it is empty
    # (a zero-byte tensor argument raised KeyError: 'slab')
    import threading
    got: list = []

    def run() -> None:
        try:
            bufs = [new_buffer(first), new_buffer(0), new_buffer(8)]
            got.extend((len(b), b.address % 64) for b in bufs)
            bufs[2].bytes[:] = bytes(range(8))
            got.append(bytes(bufs[2].bytes))
        except Exception as e:  # noqa: BLE001 - reported by the assert below
            got.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got == [(first, 0), (0, 0), (8, 0), bytes(range(8))]


@pytest.mark.parametrize("sizes", [[3136] * 25, [1025, 4096, 1, 4097, 2000, 64] * 8,
                                   [0, 4096, 0, 1024, 1025]])
def test_carved_allocations_are_aligned_zeroed_and_disjoint(sizes):
    # small (<= 1 KiB) and mid-size (<= 4 KiB) allocations are carved from
    # per-thread slabs, larger ones are their own: each 64-byte aligned,
    # zeroed, its own bytes (writing one never shows in another), and the
    # same from a second thread
    import threading
    got: list = []

    def run() -> None:
        try:
            bufs = [new_buffer(n) for n in sizes] + \
                [BufferView.zeros("i8", (n,)) for n in sizes]
            views = [b.bytes if isinstance(b, HalBuffer) else b.storage for b in bufs]
            addrs = [b.address for b in bufs]
            got.append(all(a % 64 == 0 for a, v in zip(addrs, views) if len(v)))
            got.append(all(not any(v) for v in views))
            for i, v in enumerate(views):
                v[:] = bytes([i % 251 + 1]) * len(v)
            got.append(all(bytes(v) == bytes([i % 251 + 1]) * len(v)
                           for i, v in enumerate(views)))
            spans = sorted((a, a + len(v)) for a, v in zip(addrs, views) if len(v))
            got.append(all(e <= s for (_, e), (s, _) in zip(spans, spans[1:])))
        except Exception as e:  # noqa: BLE001 - reported by the assert below
            got.append(e)

    run()
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got == [True] * 8


def test_zero_byte_argument_on_a_fresh_thread(compile_mlir):
    # the same end to end: an empty tensor handed to vmrt.load's function
    # as the first thing a thread allocates
    import threading

    import vmrt
    vmfb = compile_mlir("hal_views.mlir")
    got: list = []

    def run() -> None:
        try:
            with vmrt.load(vmfb, device=None) as prog:
                got.append(prog.sum(np.zeros(0, np.float32)))
        except Exception as e:  # noqa: BLE001 - reported by the assert below
            got.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got == [0.0]
