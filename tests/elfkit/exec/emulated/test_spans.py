"""Released guarded spans (``EmulatedMachine.reserve_guarded`` / ``release``)
kept for reuse: a span comes back at the same address reading as fresh
memory, is out of reach while idle, and the pool stays within its bounds,
gives way to the memory limit, leaks nothing and is let go on close."""
from __future__ import annotations

import struct
import sys

import pytest

from elfkit.errors import EmulationFault, MemoryAccessError
from elfkit.exec.base import PROT_EXEC, PROT_READ
from elfkit.exec.emulated import EmulatedMachine

PAGE = 4096
STRB = struct.pack("<2I", 0x39000001, 0xD65F03C0)     # strb w1, [x0] ; ret
LDRB = struct.pack("<2I", 0x39400000, 0xD65F03C0)     # ldrb w0, [x0] ; ret


def _function(m: EmulatedMachine, code: bytes, sig: str):
    at = m.reserve(PAGE)
    m.write(at, code)
    m.protect(at, PAGE, PROT_READ | PROT_EXEC)
    return m.function(at, sig)


def _virtual_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize in /proc/self/status")


def test_a_reused_span_reads_as_fresh_memory():
    """Whatever the previous owner wrote -- from the host or from guest
    code, anywhere in the span -- reads as zero in the next one."""
    with EmulatedMachine("aarch64") as m:
        store = _function(m, STRB, "void(u64,u32)")
        first = m.reserve_guarded(3 * PAGE - 100)           # three pages
        m.write(first, b"\xee" * (3 * PAGE))
        for off in (0, PAGE + 17, 3 * PAGE - 1):
            store(first + off, 0x5A)
        assert m.read(first + PAGE + 17, 1) == b"\x5a"
        m.release(first)
        again = m.reserve_guarded(3 * PAGE)
        assert again == first                                # the kept span, not a new one
        assert m.read(again, 3 * PAGE) == bytes(3 * PAGE)
        store(again + 5, 1)                                  # writable again, by guest code
        assert m.read(again + 5, 1) == b"\x01"
        with pytest.raises(EmulationFault) as e:             # still followed by its guard page
            store(again + 3 * PAGE, 1)
        assert e.value.address == again + 3 * PAGE


def test_a_released_span_is_out_of_reach_until_taken_again():
    with EmulatedMachine("aarch64") as m:
        load = _function(m, LDRB, "u32(u64)")
        span = m.reserve_guarded(PAGE)
        m.write(span, b"\x07")
        assert load(span) == 7
        m.release(span)
        with pytest.raises(EmulationFault) as e:
            load(span)
        assert e.value.address == span
        with pytest.raises(MemoryAccessError, match="released span"):
            m.read(span, 1)
        with pytest.raises(MemoryAccessError, match="released span"):
            m.write(span, b"\x01")
        assert m.try_read(span, 1) is None
        with pytest.raises(MemoryAccessError, match="not a page-aligned range inside a reservation"):
            m.protect(span, PAGE, PROT_READ)
        with pytest.raises(MemoryAccessError, match="not the start of a reservation"):
            m.release(span)                                  # twice
        assert m.reserve_guarded(2 * PAGE) != span           # another size: a new span
        assert m.reserve_guarded(PAGE) == span


def test_the_pool_keeps_at_most_its_count():
    with EmulatedMachine("aarch64") as m:
        pool = m.idle_spans
        spans = [m.reserve_guarded(PAGE) for _ in range(pool.max_count + 4)]
        for s in spans:
            m.release(s)
        assert pool.count == pool.max_count and pool.bytes == pool.max_count * PAGE
        for s in spans[pool.max_count:]:                     # the rest were unmapped
            assert m.describe_address(s).startswith("unmapped")


def test_the_pool_keeps_at_most_its_bytes():
    with EmulatedMachine("aarch64", memory_limit=64 << 20) as m:
        pool = m.idle_spans
        assert pool.max_bytes == 8 << 20                     # an eighth of the limit
        big = [m.reserve_guarded(3 << 20) for _ in range(3)]
        for b in big:
            m.release(b)
        assert pool.count == 2 and pool.bytes == 6 << 20
        assert m.describe_address(big[2]).startswith("unmapped")


def test_kept_spans_give_way_to_the_memory_limit():
    """Kept spans count against the memory limit; a reservation that needs
    their room gets it."""
    with EmulatedMachine("aarch64", memory_limit=6 << 20) as m:
        m.idle_spans.max_bytes = 4 << 20
        big = m.reserve_guarded(3 << 20)
        m.release(big)
        assert m.idle_spans.count == 1
        other = m.reserve_guarded((3 << 20) + PAGE)          # fits only without the kept span
        assert m.idle_spans.count == 0
        m.write(other, b"\x01" * PAGE)
        m.release(other)
        image = m.reserve((3 << 20) + 2 * PAGE)              # an image likewise
        assert m.idle_spans.count == 0
        m.release(image)
        with pytest.raises(MemoryAccessError, match="memory limit"):
            m.reserve_guarded(8 << 20)                        # nothing to give back: still refused


def _close_drop(keep: int) -> int:
    """How much the process's virtual size drops when a machine holding
    ``keep`` idle 512 KiB spans (touched) closes."""
    m = EmulatedMachine("aarch64", memory_limit=64 << 20)
    spans = [m.reserve_guarded(512 << 10) for _ in range(keep)]
    for s in spans:
        m.write(s, b"\x01" * (512 << 10))
        m.release(s)
    assert m.idle_spans.count == keep
    held = _virtual_size()
    m.close()
    assert m.idle_spans.count == 0 and m.idle_spans.bytes == 0
    drop = held - _virtual_size()
    del m
    return drop


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_closing_gives_the_kept_spans_back():
    """The host pages of kept spans are let go when the machine closes (not
    when the machine object goes away): closing frees them on top of what
    closing a machine that keeps none frees."""
    _close_drop(0)                                           # (warm up)
    base = _close_drop(0)
    assert _close_drop(16) >= base + 16 * (512 << 10) - (1 << 20)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_many_cycles_leak_nothing():
    """Hundreds of reserve/release rounds of changing sizes: guest memory
    accounting and host memory both stay within what the pool may keep,
    and closing the machine gives the kept spans back."""
    limit = 32 << 20
    m = EmulatedMachine("aarch64", memory_limit=limit)
    pool = m.idle_spans
    before = _virtual_size()
    for i in range(400):
        spans = [m.reserve_guarded((1 + (i * 7 + k) % 97) * PAGE) for k in range(3)]
        for s in spans:
            m.write(s, b"\x01")
            m.release(s)
        assert pool.count <= pool.max_count and pool.bytes <= pool.max_bytes
    grown = _virtual_size() - before
    assert grown < pool.max_bytes + (16 << 20), grown        # a leak would be ~200 MiB
    # every byte of the limit not held by the stack can still be had at once
    whole = m.reserve_guarded(limit - (2 << 20))
    assert pool.count == 0
    m.release(whole)
    assert pool.count == 0                                   # (too big to keep)
    m.close()


@pytest.mark.parametrize("reused", [False, True])
def test_span_memory_and_read_only_spans(reused):
    """``span_memory`` is the span's memory as guest code sees it, writable
    by the host; a ``read_only`` span (new or taken from the pool) may be
    read by guest code, and a guest store into it faults as a write."""
    with EmulatedMachine("aarch64") as m:
        store = _function(m, STRB, "void(u64,u32)")
        load = _function(m, LDRB, "u32(u64)")
        if reused:
            m.release(m.reserve_guarded(PAGE))          # kept in the pool
        base = m.reserve_guarded(PAGE, read_only=True)
        pages = m.span_memory(base)
        assert len(pages) == PAGE and bytes(pages) == bytes(PAGE)
        pages[10:12] = b"\x07\x09"
        assert m.read(base + 10, 2) == b"\x07\x09"
        assert load(base + 11) == 9
        with pytest.raises(EmulationFault) as e:
            store(base + 10, 1)
        assert e.value.access == "write" and e.value.address == base + 10
        assert pages[10] == 7
        with pytest.raises(MemoryAccessError):
            m.span_memory(base + 64)                    # not the start of a span
        m.release(base)
        with pytest.raises(MemoryAccessError):
            m.span_memory(base)                         # released: idle in the pool
        again = m.reserve_guarded(PAGE)                 # writable again, zero-filled
        assert again == base and bytes(m.span_memory(again)) == bytes(PAGE)
        store(again, 5)
        assert m.span_memory(again)[0] == 5


# stp x29, x30, [sp, #-32]! ; str x19, [sp, #16] ; mov x19, x0 ; blr x1 ;
# ldrb w0, [x19] ; ldr x19, [sp, #16] ; ldp x29, x30, [sp], #32 ; ret
CALL_THEN_LOAD = struct.pack("<8I", 0xA9BE7BFD, 0xF9000BF3, 0xAA0003F3, 0xD63F0020,
                             0x39400260, 0xF9400BF3, 0xA8C27BFD, 0xD65F03C0)


def test_a_span_released_outside_a_call_is_sealed_before_guest_code_runs():
    """Released between calls, a span keeps its rights until the next call
    starts (taken back meanwhile, it needs no change of rights), but guest
    code never reaches it while it is idle, and the host is refused at once."""
    with EmulatedMachine("aarch64") as m:
        load = _function(m, LDRB, "u32(u64)")
        store = _function(m, STRB, "void(u64,u32)")
        span = m.reserve_guarded(PAGE)
        store(span, 3)
        for _ in range(3):                          # released and taken back between calls
            m.release(span)
            with pytest.raises(MemoryAccessError, match="released span"):
                m.read(span, 1)
            assert m.reserve_guarded(PAGE) == span
            assert load(span) == 0                  # fresh, and readable by guest code
            store(span, 3)
        m.release(span)
        with pytest.raises(EmulationFault) as e:    # idle at the call: out of reach
            load(span)
        assert e.value.address == span
        assert m.reserve_guarded(PAGE) == span      # and back in reach once taken again
        store(span, 4)
        assert load(span) == 4


def test_a_span_released_by_a_host_callback_is_out_of_reach_at_once():
    """Guest code that goes on running after a callback released a span
    faults on it, as it would have after the call."""
    with EmulatedMachine("aarch64") as m:
        f = _function(m, CALL_THEN_LOAD, "u32(u64,u64)")
        span = m.reserve_guarded(PAGE)
        m.write(span, b"\x09")
        keep = m.callback(lambda: None, "void()")
        assert f(span, keep) == 9
        drop = m.callback(lambda: m.release(span), "void()")
        with pytest.raises(EmulationFault) as e:
            f(span, drop)
        assert e.value.address == span and e.value.access == "read"


def test_a_span_whose_rights_were_changed_comes_back_whole():
    """A span given other rights in part (``protect``) is sealed whole when
    released, and comes back readable and writable everywhere."""
    with EmulatedMachine("aarch64") as m:
        store = _function(m, STRB, "void(u64,u32)")
        span = m.reserve_guarded(2 * PAGE)
        m.protect(span, PAGE, PROT_READ)
        with pytest.raises(EmulationFault):
            store(span, 1)
        m.release(span)
        assert m.reserve_guarded(2 * PAGE) == span
        store(span, 1)
        store(span + PAGE, 2)
        assert m.read(span, 1) == b"\x01" and m.read(span + PAGE, 1) == b"\x02"


def test_function_is_made_once_per_address_signature_and_name():
    with EmulatedMachine("aarch64") as m:
        at = m.reserve(PAGE)
        m.write(at, LDRB)
        m.protect(at, PAGE, PROT_READ | PROT_EXEC)
        f = m.function(at, "u32(u64)")
        assert m.function(at, "u32(u64)") is f
        assert m.function(at, "u32(u64)", "load") is not f
        assert m.function(at, "u64(u64)") is not f
        span = m.reserve_guarded(PAGE)
        m.write(span, b"\x05")
        assert f(span) == 5 and m.function(at, "u32(u64)", "load")(span) == 5
