"""``EmulatedMachine.record_writes``: the guest stores seen by a memory write
hook, checked against addresses computed from the C source and arguments."""
from __future__ import annotations

import struct

import pytest

pytest.importorskip("unicorn")

import elfkit
from elfkit.toolchain import compile_plugin

SOURCE = r"""
#include <stdint.h>
void put_u32(uint32_t *p, int32_t i, uint32_t v) { p[i] = v; }
void put_each(volatile uint8_t *p, int32_t n, int32_t step, uint8_t v) {
    for (int32_t i = 0; i < n; i++) p[i * step] = v;
}
void put_u64(volatile uint64_t *p, int32_t i, uint64_t v) { p[i] = v; }
"""


@pytest.fixture(scope="module", params=["aarch64", "riscv64", "x86_64"])
def plugin(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"rw_{request.param}")
    (tmp / "w.c").write_text(SOURCE)
    compile_plugin(tmp / "w.c", request.param, tmp / "w.so", cflags=["-O1", "-fvisibility=default"])
    with elfkit.load(tmp / "w.so", backend="emulated") as mod:
        yield mod


def test_each_store_is_recorded_even_when_the_value_is_unchanged(plugin):
    m = plugin.machine
    put_u32 = plugin.function("put_u32", "void(ptr,i32,u32)")
    p = m.alloc(64)
    m.write(p, struct.pack("<16I", *range(16)))
    with m.record_writes([(p, 64)]) as seen:
        put_u32(p, 3, 3)            # the value already there
        put_u32(p, 9, 0xDEAD)
    assert seen == [(p + 12, 4), (p + 36, 4)]
    assert struct.unpack("<16I", m.read(p, 64))[9] == 0xDEAD
    m.free(p)


def test_only_stores_inside_the_ranges_count_clipped_to_them(plugin):
    m = plugin.machine
    put_each = plugin.function("put_each", "void(ptr,i32,i32,u8)")
    put_u64 = plugin.function("put_u64", "void(ptr,i32,u64)")
    p = m.alloc(256)
    ranges = [(p + 16, 8), (p + 100, 20)]
    with m.record_writes(ranges) as seen:
        put_each(p, 40, 5, 7)       # bytes 0, 5, 10, ..., 195
        put_u64(p, 12, 1)           # bytes [96, 104): reaches into the second range
    want = [(p + a, 1) for a in range(0, 200, 5)
            if any(lo <= p + a < lo + n for lo, n in ranges)]
    assert seen == want + [(p + 100, 4)]
    # outside the block nothing is recorded any more
    put_u64(p, 2, 5)
    assert len(seen) == len(want) + 1
    m.free(p)


def test_no_ranges_record_nothing(plugin):
    m = plugin.machine
    p = m.alloc(16)
    with m.record_writes([]) as seen:
        plugin.function("put_u32", "void(ptr,i32,u32)")(p, 0, 1)
    assert seen == []
    m.free(p)


def test_ctrl_c_during_a_recorded_call_is_not_lost(plugin):
    """issue 29: Ctrl-C during ``vmrt run --check_races`` was sometimes
    swallowed: on a store-heavy call the KeyboardInterrupt is raised in the
    write hook, where ctypes printed "Exception ignored" and dropped it.  The
    signal is sent once the hook is seen running (not after a delay), so the
    interrupt lands while the call stores; the call must end with it, and
    the machine stays usable."""
    import os
    import signal
    import threading
    import time
    m = plugin.machine
    put_each = plugin.function("put_each", "void(ptr,i32,i32,u8)")
    n = 1 << 24
    p = m.alloc(n)
    box: list[str] = []

    def interrupt(seen: list) -> None:
        end = time.monotonic() + 120
        while not seen and time.monotonic() < end:
            time.sleep(0.001)
        box.append("sent")
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt), m.record_writes([(p, n)]) as seen:
        t = threading.Thread(target=interrupt, args=(seen,), daemon=True)
        t.start()
        put_each(p, n, 1, 7)            # 16 Mi stores through the hook: minutes
        t.join(120)                     # (not reached when interrupted)
    assert box == ["sent"]
    assert 0 < len(seen) < n
    put_each(p, 4, 1, 9)                    # still usable
    assert m.read(p, 4) == b"\t" * 4
    m.free(p)
