"""Several Python threads calling one program, one context, one executable.

Issue 29: 8 threads calling one ``vmrt.load`` program compiled for aarch64
got wrong results (most of them), guest faults, and with ``local-task`` a
heap corruption.  An emulated dispatch staged its bindings in the
executable's machine and kept them on the executable (``_staged``): two
dispatches interleaving on one machine copied back, or released, each
other's guest copies.  A context's invocations also shared its limits and
module states (a mutable global's read-modify-write).  Now a context runs
one invocation at a time and an emulated machine one dispatch at a time;
every result here is checked with numpy.  Threads start together at a
barrier; nothing depends on timing."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import vmrt
from vmrt import Context, Instance, NativeModule, StatusCode, export
from vmrt.hal.local.device import Device
from vmrt.hal.local.emulated_workers import EmulatedWorkers

THREADS = 8
CALLS = 40


def _run_threads(work, threads: int = THREADS) -> list[BaseException]:
    """``work(t)`` on ``threads`` threads started together; the errors."""
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def main(t: int) -> None:
        barrier.wait()
        try:
            work(t)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)
    pool = [threading.Thread(target=main, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return errors


def _ints(rng, shape) -> np.ndarray:
    """Small integer-valued floats: every result below is exact."""
    return rng.integers(-4, 5, shape).astype(np.float32)


@pytest.fixture
def two_workers(monkeypatch):
    """local-task with 2 dispatch threads whatever the CPU count; records
    the emulated dispatches that ran on worker machines."""
    init = Device.__init__

    def two(self, *a, **k):
        init(self, *a, **k)
        if self.dispatch_threads > 1:
            self.dispatch_threads = 2
    monkeypatch.setattr(Device, "__init__", two)
    used: list[int] = []
    orig = EmulatedWorkers.dispatch

    def spy(self, exp, wc, *a, **k):
        used.append(wc[0] * wc[1] * wc[2])
        return orig(self, exp, wc, *a, **k)
    monkeypatch.setattr(EmulatedWorkers, "dispatch", spy)
    return used


@pytest.mark.parametrize("device", ["local-sync", "local-task"])
@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_one_program_called_from_eight_threads(hal_compile, emulation, two_workers, arch,
                                               device):
    """8 threads x 40 calls of one program with different inputs (elementwise,
    dynamic shapes, a multi-workgroup matmul, a mutable global): every result
    is right, and the counter saw every call exactly once."""
    vmfb = hal_compile("threads.mlir", arch)
    wrong: list[str] = []
    bumps: list[int] = []
    with vmrt.load(vmfb, device=device) as prog:
        def work(t: int) -> None:
            rng = np.random.default_rng(1000 + t)
            for i in range(CALLS):
                kind = (t + i) % 4
                if kind == 0:
                    a, b = _ints(rng, 8), _ints(rng, 8)
                    got, want = prog.add(a, b), a + b
                elif kind == 1:
                    n = 1 + (7 * t + i) % 97
                    a, b = _ints(rng, n), _ints(rng, n)
                    got, want = prog.mul_add(a, b), a * b + a
                elif kind == 2:
                    a, b = _ints(rng, (64, 64)), _ints(rng, (64, 64))
                    got, want = prog.matmul(a, b), a @ b
                else:
                    bumps.append(prog.bump())
                    continue
                if got.shape != want.shape or not np.array_equal(got, want):
                    wrong.append(f"thread {t} call {i} (kind {kind})")
        errors = _run_threads(work)
        assert not errors, errors[:3]
        assert not wrong, f"{len(wrong)} wrong results: {wrong[:5]}"
        # each bump read the value the previous one stored
        assert sorted(bumps) == list(range(1, THREADS * CALLS // 4 + 1))
        assert prog.bump() == THREADS * CALLS // 4 + 1
    if device == "local-task" and arch == "aarch64":
        assert two_workers, "the matmul never ran on worker machines"


class _Gate(NativeModule):
    """``gate.hold()``: counts the calls inside it at once; the first call
    that finds ``wait`` set waits for ``release``."""

    name = "gate"

    def __init__(self):
        super().__init__()
        self.inside = 0
        self.most = 0
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        self.wait = False
        self.lock = threading.Lock()

    @export("hold", "0v_i")
    def hold(self, state):
        with self.lock:
            self.inside += 1
            self.calls += 1
            self.most = max(self.most, self.inside)
            wait, self.wait = self.wait, False
        try:
            if wait:
                self.entered.set()
                assert self.release.wait(300), "never released"
            else:
                for _ in range(200):        # give other threads the GIL meanwhile
                    threading.Event().wait(0)
            return self.calls
        finally:
            with self.lock:
                self.inside -= 1


def test_one_context_invoked_from_threads():
    """Invocations of one context from several threads run one at a time
    (module state and limits belong to the running one): never two inside
    the module at once, a per-call budget does not leak into another
    thread's call, and the context's own limits are the same afterwards."""
    gate = _Gate()
    ctx = Context(Instance(), [gate])
    limits = ctx.limits

    def work(t: int) -> None:
        for i in range(25):
            if (t + i) % 2:
                ctx.invoke("gate.hold", budget=10**9)
            else:
                ctx.invoke("gate.hold", timeout=600.0)
            ctx.invoke("gate.hold")
    errors = _run_threads(work)
    assert not errors, errors[:3]
    assert gate.calls == THREADS * 25 * 2
    assert gate.most == 1
    assert ctx.limits is limits
    ctx.close()


def test_closing_a_context_while_another_thread_calls_it_is_refused():
    gate = _Gate()
    ctx = Context(Instance(), [gate])
    gate.wait = True
    box: list = []
    th = threading.Thread(target=lambda: box.append(ctx.invoke("gate.hold")))
    th.start()
    try:
        assert gate.entered.wait(300)
        with pytest.raises(vmrt.VmError, match="while an invocation runs") as e:
            ctx.close()
        assert e.value.code == StatusCode.FAILED_PRECONDITION
    finally:
        gate.release.set()
        th.join(300)
    assert box == [[1]]
    hold = ctx.resolve_function("gate.hold")
    assert ctx.invoke(hold) == [2]               # still open and usable
    ctx.close()
    ctx.close()
    with pytest.raises(vmrt.VmError, match="closed context") as e:   # (a thread that waited)
        ctx.invoke(hold)
    assert e.value.code == StatusCode.FAILED_PRECONDITION


def _index(n: int) -> list[int]:
    return [n & 0xFFFFFFFF, n >> 32]


@pytest.mark.parametrize("shared", [False, True], ids=["one-executable", "two-on-one-machine"])
def test_emulated_executable_dispatched_from_threads(iree, emulation, shared):
    """The lower level: ``Executable.dispatch`` of an emulated executable from
    8 threads, and two executables loaded into one machine dispatched from
    8 threads (one machine runs one dispatch at a time)."""
    lib = iree.compile("codegen", "riscv64").library
    with vmrt.Executable.load(lib) as first:
        second = vmrt.Executable.load(lib, machine=first.machine) if shared else first
        try:
            wrong: list[str] = []

            def work(t: int) -> None:
                rng = np.random.default_rng(t)
                exe = second if t % 2 else first
                for i in range(20):
                    n = 32 * (1 + (t + i) % 6) + t
                    x, y = _ints(rng, n), _ints(rng, n)
                    out = np.zeros(n, np.float32)
                    alpha = float(t - i % 3)
                    exe.dispatch("saxpy", -(-n // 32), [x, y, out], [alpha, *_index(n)])
                    if not np.array_equal(out, alpha * x + y):
                        wrong.append(f"thread {t} dispatch {i}")
            errors = _run_threads(work)
            assert not errors, errors[:3]
            assert not wrong, f"{len(wrong)} wrong: {wrong[:5]}"
        finally:
            if shared:
                second.close()
