"""A stopped run is never resumed, so every guest load and store happens,
and is observed, exactly once whatever the timing of signals.

Root cause of a flaky ``record_writes`` test (one store recorded twice):
unicorn 2.1 checks for a stop request after every guest load and store
(``check_exit_request`` in ``tcg_gen_qemu_ld/st``) and, when one is pending,
leaves with the PC rewound to the start of that instruction.  The emulated
machine used to stop the main thread's call for every signal and, when the
handlers returned, resume at that PC: the instruction ran again -- its store
hooked twice, ``add [m], 1`` adding twice, ``ldr x0, [x0]`` loading through
the value it had loaded.  A Ctrl-C whose KeyboardInterrupt a hook raised
left the watchdog repeating such stops on later calls for two seconds.
"""
from __future__ import annotations

import os
import signal
import struct
import threading

import pytest

pytest.importorskip("unicorn")

import elfkit
from elfkit.toolchain import compile_plugin

SOURCE = r"""
#include <stdint.h>
extern void host_interrupt(void);
extern void host_started(void);
void put_each(volatile uint8_t *p, int32_t n, int32_t step, uint8_t v) {
    for (int32_t i = 0; i < n; i++) p[i * step] = v;
}
void bump(volatile int32_t *p, int32_t n) { for (int32_t i = 0; i < n; i++) ++*p; }
void bump_when_started(volatile int32_t *p, int32_t n) { host_started(); bump(p, n); }
void *chase(void **p, int32_t n) {          /* p -> q -> p: n steps */
    for (int32_t i = 0; i < n; i++) p = (void **)*p;
    return p;
}
void interrupt_after(volatile uint8_t *p, uint8_t v) { p[0] = v; host_interrupt(); p[1] = v; }
"""

ARCHES = ["riscv64", "aarch64", "arm", "x86_64"]
STARTED = threading.Event()


@pytest.fixture(scope="module", params=ARCHES)
def plugin(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"stop_{request.param}")
    (tmp / "s.c").write_text(SOURCE)
    compile_plugin(tmp / "s.c", request.param, tmp / "s.so",
                   cflags=["-O1", "-fvisibility=default"])
    imports = {"host_interrupt": (lambda: signal.raise_signal(signal.SIGINT), "void()"),
               "host_started": (STARTED.set, "void()")}
    with elfkit.load(tmp / "s.so", backend="emulated", imports=imports) as mod:
        yield mod


def _storm(signum: int, stop: threading.Event) -> threading.Thread:
    """A thread sending ``signum`` to this process every millisecond."""
    def run() -> None:
        while not stop.wait(0.001):
            os.kill(os.getpid(), signum)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _exact_runs(mod, n: int = 20_000) -> None:
    """Recorded stores, read-modify-write stores and pointer-chasing loads,
    each checked against values computed independently."""
    m = mod.machine
    put_each = mod.function("put_each", "void(ptr,i32,i32,u8)")
    bump = mod.function("bump", "void(ptr,i32)")
    chase = mod.function("chase", "ptr(ptr,i32)")
    p = m.alloc(n)
    with m.record_writes([(p, n)]) as seen:
        put_each(p, n, 1, 7)
        put_each(p, n // 4, 0, 9)            # the same byte again and again
    assert seen == [(p + i, 1) for i in range(n)] + [(p, 1)] * (n // 4)
    counter = m.alloc(4)
    m.write(counter, struct.pack("<i", 0))
    for _ in range(5):
        bump(counter, n)
    assert struct.unpack("<i", m.read(counter, 4))[0] == 5 * n
    w = m.arch.word
    cells = m.alloc(2 * w)
    fmt = "<II" if w == 4 else "<QQ"
    m.write(cells, struct.pack(fmt, cells + w, cells))   # cells[0] -> cells[1] -> cells[0]
    for k in (n, n + 1):
        assert chase(cells, k) == cells + (k % 2) * w
    m.free(p)
    m.free(counter)
    m.free(cells)


def test_signals_whose_handler_returns_do_not_disturb_a_call(plugin):
    """SIGUSR1 every millisecond, its handler returning: no call is stopped
    (the handler runs in a hook or after the call), every result is exact."""
    hits: list[int] = []
    old = signal.signal(signal.SIGUSR1, lambda *_a: hits.append(1))
    stop = threading.Event()
    try:
        t = _storm(signal.SIGUSR1, stop)
        try:
            _exact_runs(plugin)
        finally:
            stop.set()
            t.join()
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert hits                     # the handler ran (between or inside calls)


def test_instruction_counts_are_the_same_under_a_signal_storm(plugin):
    """``count_instructions`` (a block hook) counts a call the same with
    and without signals arriving while it runs."""
    m = plugin.machine
    put_each = plugin.function("put_each", "void(ptr,i32,i32,u8)")
    n = 20_000
    p = m.alloc(n)
    m.count_instructions(True)
    try:
        def counted() -> int:
            before = m.instructions
            put_each(p, n, 1, 1)
            return m.instructions - before
        quiet = counted()
        old = signal.signal(signal.SIGUSR1, lambda *_a: None)
        stop = threading.Event()
        t = _storm(signal.SIGUSR1, stop)
        try:
            stormy = [counted() for _ in range(3)]
        finally:
            stop.set()
            t.join()
            signal.signal(signal.SIGUSR1, old)
    finally:
        m.count_instructions(False)
    assert quiet > n and stormy == [quiet] * 3
    m.free(p)


def test_calls_after_a_ctrl_c_that_ended_a_call_are_not_stopped(plugin):
    """The flaky case, made certain: a KeyboardInterrupt raised while guest
    code runs (the SIGINT handler ran in a host callback) ends that call
    after its first store; the calls right after it run to the end unstopped
    and every store is recorded once."""
    m = plugin.machine
    interrupt_after = plugin.function("interrupt_after", "void(ptr,u8)")
    p = m.alloc(2)
    for _ in range(3):
        m.write(p, b"\0\0")
        with pytest.raises(KeyboardInterrupt), m.record_writes([(p, 2)]) as seen:
            interrupt_after(p, 5)
        assert seen == [(p, 1)] and m.read(p, 2) == b"\x05\0"
        _exact_runs(plugin)
    m.free(p)


def test_a_ctrl_c_caught_before_a_call_does_not_stop_it(plugin):
    """A KeyboardInterrupt raised and caught outside any call: the calls
    right after it run to the end, although the watchdog learns of the
    signal only while they run (it compares the kernel's time stamp of the
    signal with the start of the call)."""
    m = plugin.machine
    put_each = plugin.function("put_each", "void(ptr,i32,i32,u8)")
    n = 200_000
    p = m.alloc(n)
    put_each(p, 1, 1, 0)                     # (the watchdog routes signals from now on)
    for _ in range(5):
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        put_each(p, n, 1, 3)
    assert m.read(p, n) == b"\3" * n
    m.free(p)


def test_ctrl_c_during_a_call_still_stops_it(plugin):
    """SIGINT under Python's default handler stops a long call at once (the
    call ends with KeyboardInterrupt, the machine stays usable)."""
    m = plugin.machine
    bump = plugin.function("bump_when_started", "void(ptr,i32)")
    counter = m.alloc(4)
    m.write(counter, struct.pack("<i", 0))
    STARTED.clear()

    def interrupt() -> None:                # once the guest code runs
        if STARTED.wait(120):
            os.kill(os.getpid(), signal.SIGINT)
    t = threading.Thread(target=interrupt, daemon=True)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        bump(counter, 1 << 30)              # minutes unless stopped
    t.join()
    assert struct.unpack("<i", m.read(counter, 4))[0] < 1 << 30
    _exact_runs(plugin, 2000)
    m.free(counter)


def test_unicorn_rewinds_the_pc_over_a_completed_store():
    """What makes a resumed run unsound (unicorn 2.1): a stop requested
    during a store leaves the PC at the storing instruction, which has
    already run -- resumed there, ``add dword [rdi], 1`` adds twice."""
    import unicorn
    from unicorn import x86_const as x86
    code = bytes.fromhex("8307019090f4")        # add dword [rdi], 1; nop; nop; hlt
    base, data = 0x10000, 0x20000
    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(base, 0x1000)
    uc.mem_map(data, 0x1000)
    uc.mem_write(base, code)
    uc.reg_write(x86.UC_X86_REG_RDI, data)
    uc.hook_add(unicorn.UC_HOOK_MEM_WRITE, lambda uc_, *_a: uc_.emu_stop())
    uc.emu_start(base, base + 5)
    assert struct.unpack("<i", uc.mem_read(data, 4))[0] == 1      # the store happened
    assert uc.reg_read(x86.UC_X86_REG_RIP) == base                # ... and pc is before it
