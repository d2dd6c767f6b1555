"""The batch loop (vmrt.hal.local.batch): several prepared dispatches and
copies in one native call, over a host dispatch function written in Python
that logs what it is given; and command buffers whose submissions run
through it, against the checked path and numpy."""
from __future__ import annotations

import ctypes
import struct
from types import SimpleNamespace

import numpy as np
import pytest

import elfkit
from elfkit.exec import create_machine, host_fpu
from vmrt.errors import StatusCode, VmError
from vmrt.hal.buffer import aligned_memory, new_buffer
from vmrt.hal.command_buffer import MODE_ONE_SHOT, CommandBuffer
from vmrt.hal.dispatch_observer import observe_dispatches
from vmrt.hal.local.batch import Batch
from vmrt.hal.local.library_abi import layout
from vmrt.hal.local.prepared import NativeDispatch
from vmrt.hal.local.workgroup_loop import loop_code
from vmrt.vm.context import ExecutionLimits, running_under

pytestmark = pytest.mark.skipif(
    elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
    reason="the batch loop is x86_64 code")

LAY = layout(8)


class Host:
    """Prepared dispatches of host functions: each workgroup logs
    ``(name, x, its bindings' first floats, their lengths)`` and returns
    ``body(name, x)``."""

    def __init__(self):
        assert loop_code("x86_64")
        self.m = create_machine(elfkit.arch.host(), "native")
        self.log: list[tuple] = []
        self.body = lambda name, x: 0
        self.mxcsr: list[int] = []
        self.procs: list[int] = []
        self.fns = {}

    def dispatch(self, name: str, groups: int, bindings: int, threads: int = 1) -> NativeDispatch:
        def fn(env, ds, ws):
            self.mxcsr.append(host_fpu().set_bits(0))
            (*_, ptrs, lens) = struct.unpack(LAY.ds_fmt, ctypes.string_at(ds, LAY.ds_size))
            p = struct.unpack(f"<{bindings}Q", ctypes.string_at(ptrs, 8 * bindings))
            n = struct.unpack(f"<{bindings}Q", ctypes.string_at(lens, 8 * bindings))
            state = struct.unpack(LAY.ws_fmt, ctypes.string_at(ws, LAY.ws_size))
            x = state[0]
            self.procs.append(state[4])         # the processor id
            firsts = [struct.unpack("<f", ctypes.string_at(a, 4))[0] for a in p]
            self.log.append((name, x, firsts, list(n)))
            return self.body(name, x)
        cb = self.m.callback(fn, _sig())
        self.fns[name] = cb                 # kept alive
        exe = SimpleNamespace(entry=lambda exp: fn, env=77, layout=LAY, imports=[],
                              machine=self.m, closed=False, name="host")
        return NativeDispatch(exe, SimpleNamespace(function=cb), (groups, 1, 1), (1, 1, 1),
                              b"", bindings, f"export '{name}'", threads)


def _sig():
    from vmrt.hal.local.guest import sig
    return sig("i32(u64,u64,u64)")


def _floats(*values: float) -> tuple[memoryview, int]:
    view, addr = aligned_memory(64)
    view[:4 * len(values)] = np.array(values, np.float32).tobytes()
    return view, addr


@pytest.fixture
def host():
    h = Host()
    yield h
    h.m.close()


def test_batch_runs_dispatches_and_copies_in_order(host):
    a, b = host.dispatch("a", 2, 2), host.dispatch("b", 3, 1)
    batch = a.batch((a, None, b))
    assert isinstance(batch, Batch) and a.batch((a, None, b)) is batch     # kept per steps
    (_, pa), (_, pb), (_, pc) = _floats(1.0), _floats(2.0), _floats(3.0)
    before = host_fpu().set_bits(0)
    batch.run([pa, pb, 4, 8, pc, 12, pc, pb, 4])     # a(va, vb); copy vb -> vc; b(vc)
    assert host_fpu().set_bits(0) == before          # the caller's FPU state is back
    assert host.log == [("a", 0, [1.0, 2.0], [4, 8]), ("a", 1, [1.0, 2.0], [4, 8]),
                        ("b", 0, [2.0], [12]), ("b", 1, [2.0], [12]), ("b", 2, [2.0], [12])]
    bits = host_fpu().control.flush_denormals
    assert all(m & bits == bits for m in host.mxcsr)  # dispatches flush denormals
    # the same dispatch twice in one batch: each with its own bindings
    host.log.clear()
    a.batch((a, a)).run([pa, pb, 4, 4, pc, pa, 4, 4])
    assert [e[2] for e in host.log] == [[1.0, 2.0]] * 2 + [[2.0, 1.0]] * 2


@pytest.mark.parametrize("status", [7, -3])
def test_a_failing_workgroup_stops_the_batch_and_is_named(host, status):
    a, b = host.dispatch("a", 2, 1), host.dispatch("b", 4, 1)
    host.body = lambda name, x: status if (name, x) == ("b", 2) else 0
    _, p = _floats(1.0)
    with pytest.raises(VmError) as e:
        a.batch((a, b, a)).run([p, 4, p, 4, p, 4])
    assert str(e.value.message) == f"export 'b' returned catastrophic error {status} in " \
                                   "workgroup (2, 0, 0)"
    assert [(n, x) for n, x, *_ in host.log] == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("b", 2)]


def test_cancel_before_and_during_the_batch(host):
    a, b = host.dispatch("a", 2, 1), host.dispatch("b", 2, 1)
    _, p = _floats(1.0)
    limits = ExecutionLimits()
    limits.cancel()
    with running_under(limits), pytest.raises(VmError) as e:
        a.batch((a, b)).run([p, 4, p, 4])
    assert e.value.message == "export 'a': the invocation was cancelled" and host.log == []
    limits = ExecutionLimits()
    host.body = lambda name, x: limits.cancel() or 0 if (name, x) == ("a", 1) else 0
    with running_under(limits), pytest.raises(VmError) as e:
        a.batch((a, b)).run([p, 4, p, 4])
    assert e.value.message == "export 'b': the invocation was cancelled"
    assert [(n, x) for n, x, *_ in host.log] == [("a", 0), ("a", 1)]


def test_a_grid_for_workers_joins_once_settled_alone(host):
    """A local-task grid (two threads) joins a batch only once its trials
    keep it on the calling thread for good; it then runs every workgroup
    with the states its own run uses (processor id of its thread's range)."""
    a, b = host.dispatch("a", 1, 1), host.dispatch("b", 4, 1, threads=2)
    assert b.threads == 2 and b.settling()
    assert a.batch((a, b)) is None and (a, b) not in a.batches    # asked again later
    b.inline, b.trials = True, 8
    assert not b.settling() and b.joins_batches()
    _, p = _floats(1.0)
    a.batch((a, b)).run([p, 4, p, 4])
    assert [(n, x) for n, x, *_ in host.log] == [("a", 0), ("b", 0), ("b", 1), ("b", 2), ("b", 3)]
    assert host.procs == [0, 0, 0, 1, 1]


def test_a_grid_a_stall_guard_sent_back_runs_in_batches_which_count_its_runs(host):
    """A grid sent back to the calling thread for ``retry`` runs joins
    batches (settling, not trying: a plan holds until the next settled()
    count); each batch run counts one of its runs; after the last it tries
    both ways again, with a new settled() count, and leaves the batches."""
    a, b = host.dispatch("a", 1, 1), host.dispatch("b", 4, 1, threads=2)
    b.inline, b.trials, b.retry = True, 8, 2
    assert b.settling() and not b.trying() and b.joins_batches()
    batch = a.batch((a, b))
    assert batch is not None and batch.counted == (b,)
    _, p = _floats(1.0)
    count = b.settled()
    batch.run([p, 4, p, 4])
    assert b.retry == 1 and b.inline is True and b.settled() == count
    batch.run([p, 4, p, 4])
    assert b.retry == 0 and b.inline is None and b.trials == 0 and b.settled() == count + 1
    assert b.trying() and not b.joins_batches()
    assert [n for n, *_ in host.log] == ["a", "b", "b", "b", "b"] * 2
    # two threads that both saw the last run to count (a shared executable)
    # count it twice: the grid still tries both ways again, never a
    # negative count that would keep it alone for good
    b.inline, b.retry = True, 1
    b.ran_alone()
    b.ran_alone()
    assert b.retry == 0 and b.inline is None and b.trying()


# -- command buffers over a real executable ----------------------------------------------
N = 40
ALPHA = 1.5


def _chain(saxpy, bufs, modes=0, read_only_copy=False) -> CommandBuffer:
    """t = a*x + y; copy t -> u; out = a*u + y; copy out -> last (x, y, t, u,
    out, last: buffers given directly)."""
    device, hexe, ordinal = saxpy
    x, y, t, u, out, last = bufs
    cb = CommandBuffer(device, modes, 3, 0)
    consts = [struct.unpack("<I", struct.pack("<f", ALPHA))[0], N, 0]
    n = 4 * N
    cb.dispatch(hexe, ordinal, (2, 1, 1), consts, [cb.ref(0, b, 0, n) for b in (x, y, t)])
    cb.copy(cb.ref(0, t, 0, n), cb.ref(0, u, 0, n))
    cb.dispatch(hexe, ordinal, (2, 1, 1), consts, [cb.ref(0, b, 0, n) for b in (u, y, out)])
    cb.copy(cb.ref(0, out, 0, n), cb.ref(0, last, 0, n))
    cb.finalize()
    return cb


def _buffers(seed):
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    bufs = [new_buffer(4 * N) for _ in range(6)]
    bufs[0].bytes[:] = x.tobytes()
    bufs[1].bytes[:] = y.tobytes()
    a = np.float32(ALPHA)
    return bufs, a * (a * x + y) + y


def _last(bufs):
    return np.frombuffer(bufs[5].bytes, np.float32)


def test_command_buffer_runs_as_one_batch(saxpy, monkeypatch):
    """Two dispatches and two copies: one batch call, nothing on the checked
    path, numpy's result; the same through a watched submission; a one-shot
    command buffer recorded again reuses the batch."""
    import vmrt.hal.command_buffer as cbmod
    ran, checked = [], []
    orig_run, orig_checked = Batch.run, cbmod.run_dispatch
    monkeypatch.setattr(Batch, "run", lambda self, v: ran.append(self) or orig_run(self, v))
    monkeypatch.setattr(cbmod, "run_dispatch",
                        lambda *a, **k: checked.append(a) or orig_checked(*a, **k))
    for seed in (1, 2):
        bufs, want = _buffers(seed)
        _chain(saxpy, bufs, MODE_ONE_SHOT).execute()
        np.testing.assert_array_equal(_last(bufs), want)
    assert len(ran) == 2 and ran[0] is ran[1] and checked == []
    bufs, want = _buffers(3)
    with observe_dispatches(lambda obs: obs.run()):
        _chain(saxpy, bufs).execute()
    np.testing.assert_array_equal(_last(bufs), want)
    assert len(ran) == 2 and len(checked) == 2


def test_recordings_of_one_shape_share_a_program_that_keeps_no_buffer(saxpy):
    """One-shot command buffers recorded again over other buffers (an LSTM's
    steps): the program made at the first is kept by the first dispatch's
    prepared form, per shape, and reused; it keeps none of the buffers; a
    recording of that shape with an operand the batch cannot take (a
    read-only copy target) still takes the checked path and its error."""
    import gc
    import weakref

    from vmrt.hal.commands import prepare_dispatch
    device = saxpy[0]
    gone = []
    for seed in (5, 6, 7):
        bufs, want = _buffers(seed)
        cb = _chain(saxpy, bufs, MODE_ONE_SHOT)
        cb.execute()
        np.testing.assert_array_equal(_last(bufs), want)
        plans = prepare_dispatch(cb.commands[0], device).plans
        assert len(plans) == 1
        gone.append(weakref.ref(bufs[2]))
        del cb, bufs
    gc.collect()
    assert [r() for r in gone] == [None, None, None]
    bufs, want = _buffers(8)
    bufs[3] = type(bufs[3])(bufs[3].bytes, read_only=True)
    with pytest.raises(VmError) as e:
        _chain(saxpy, bufs, MODE_ONE_SHOT).execute()
    assert e.value.code.name == "PERMISSION_DENIED" and len(plans) == 1


@pytest.fixture
def task_chain(iree, monkeypatch):
    """local-task with two threads or more: ``(record, ran, device)``;
    ``record(seed)`` is a one-shot :func:`_chain` over new buffers ``(cb,
    bufs, want)``, ``ran`` lists the batches run."""
    from vmrt.hal.local.device import Device
    ran = []
    orig_run = Batch.run
    monkeypatch.setattr(Batch, "run", lambda self, v: ran.append(self) or orig_run(self, v))
    device = Device("local-task")
    try:
        if device.dispatch_threads < 2:
            pytest.skip("local-task has one thread on this host")
        lib = iree.compile("codegen", "x86_64").library
        hexe = device.load_executable("embedded-elf-x86_64", lib.read_bytes(), None)
        saxpy = (device, hexe, hexe.exe.export("saxpy").ordinal)

        def record(seed):
            bufs, want = _buffers(seed)
            return _chain(saxpy, bufs, MODE_ONE_SHOT), bufs, want
        yield record, ran, device
    finally:
        device.close()


def test_a_kept_program_is_made_again_once_a_grid_settles_alone(task_chain):
    """local-task: a program kept while a grid ran on the workers (out of
    the batches) is not reused once that grid's trials keep it on the
    calling thread: the next recording of the shape runs as one batch."""
    from vmrt.hal.commands import prepare_dispatch
    record, ran, device = task_chain
    cb, bufs, want = record(9)
    grid = prepare_dispatch(cb.commands[0], device)
    assert grid.threads == 2
    grid.inline, grid.trials = False, 8         # settled on the workers
    for seed in (9, 10):
        cb.execute()
        np.testing.assert_array_equal(_last(bufs), want)
        cb, bufs, want = record(seed + 1)
    assert ran == [] and len(grid.plans) == 1
    # trying both ways again; its last trial keeps it alone
    grid.inline, grid.trials, grid.best, grid.long = None, 7, [1.0, float("inf")], False
    cb.execute()
    np.testing.assert_array_equal(_last(bufs), want)
    assert grid.inline is True and ran == []
    cb, bufs, want = record(12)
    cb.execute()
    np.testing.assert_array_equal(_last(bufs), want)
    assert len(ran) == 1


def test_an_odd_operand_takes_the_checked_path(saxpy):
    """A copy into a read-only buffer: the run goes to the checked path,
    which runs the dispatch before it and reports what the watched path
    reports."""
    errors = []
    for watched in (False, True):
        bufs, want = _buffers(4)
        bufs[3] = type(bufs[3])(bufs[3].bytes, read_only=True)
        try:
            if watched:
                with observe_dispatches(lambda obs: obs.run()):
                    _chain(saxpy, bufs).execute()
            else:
                _chain(saxpy, bufs).execute()
        except VmError as e:
            errors.append((e.code.name, e.message))
        a, x, y = np.float32(ALPHA), *(np.frombuffer(b.bytes, np.float32) for b in bufs[:2])
        np.testing.assert_array_equal(np.frombuffer(bufs[2].bytes, np.float32), a * x + y)
    assert len(errors) == 2 and errors[0] == errors[1]
    assert errors[0][0] == "PERMISSION_DENIED"


@pytest.mark.parametrize("two", [False, True])
def test_a_closed_executable_is_refused_before_anything_runs(host, two):
    """A batch checks each executable it runs (one or several) is open first."""
    a = host.dispatch("a", 2, 1)
    b = host.dispatch("b", 2, 1) if two else a
    batch = a.batch((a, b))
    assert len(batch.exes) == (2 if two else 1)
    _, p = _floats(1.0)

    def check_open():
        raise VmError("closed", StatusCode.FAILED_PRECONDITION)
    b.exe.closed, b.exe.check_open = True, check_open
    with pytest.raises(VmError, match="closed"):
        batch.run([p, 4, p, 4])
    assert host.log == []
    b.exe.closed = False
    batch.run([p, 4, p, 4])
    assert [(n, x) for n, x, *_ in host.log] == [("a", 0), ("a", 1), ("b" if two else "a", 0),
                                                 ("b" if two else "a", 1)]


# -- the plain submission (CommandBuffer.plain) through queue.execute's fast caller ------
def _table_chain(saxpy, modes=0, copy=False) -> CommandBuffer:
    """t = a*x + y; out = a*t + y over binding-table slots x, y, t, out (a
    reusable command buffer the compiler memoizes); ``copy``: then out -> x."""
    device, hexe, ordinal = saxpy
    cb = CommandBuffer(device, modes, 3, 4)
    consts = [struct.unpack("<I", struct.pack("<f", ALPHA))[0], N, 0]
    n = 4 * N
    cb.dispatch(hexe, ordinal, (2, 1, 1), consts, [cb.ref(s, None, 0, n) for s in (0, 1, 2)])
    cb.dispatch(hexe, ordinal, (2, 1, 1), consts, [cb.ref(s, None, 0, n) for s in (2, 1, 3)])
    if copy:
        cb.copy(cb.ref(3, None, 0, n), cb.ref(0, None, 0, n))
    cb.finalize()
    return cb


def _table(seed, misaligned=False):
    bufs, want = _buffers(seed)
    if misaligned:                  # x 4 bytes past a 64-byte boundary: staged
        view, _ = aligned_memory(4 * N + 64)
        view[4:4 + 4 * N] = bufs[0].bytes
        bufs[0] = type(bufs[0])(view[4:4 + 4 * N])
    return [(b, 0, 4 * N) for b in bufs[:4]], bufs, want


def test_a_reusable_single_batch_submission_runs_in_one_plain_call(saxpy, monkeypatch):
    """The fast caller of queue.execute.indirect submits a reusable command
    buffer whose submission is one batch through ``cb.plain``: one call,
    neither Batch.run nor the checked path, numpy's result, counted and
    signalled; a watched submission or an odd operand (a misaligned buffer)
    is refused by it (False, nothing run) and takes execute(), with the same
    results; a one-shot command buffer or one with a copy has none."""
    import vmrt.hal.command_buffer as cbmod
    from vmrt.hal.objects import Fence
    from vmrt.modules.hal import fast
    ran, checked = [], []
    orig_run, orig_checked = Batch.run, cbmod.run_dispatch
    monkeypatch.setattr(Batch, "run", lambda self, v: ran.append(self) or orig_run(self, v))
    monkeypatch.setattr(cbmod, "run_dispatch",
                        lambda *a, **k: checked.append(a) or orig_checked(*a, **k))
    device = saxpy[0]
    call = fast.FAST["device.queue.execute.indirect"](None, None, "where", "note")
    cb = _table_chain(saxpy)
    assert cb.plain is None
    for seed in (1, 2, 3):
        table, bufs, want = _table(seed)
        signal = Fence()
        assert call(device, -1, Fence(0), signal, cb, 0, table) == () and signal.status == 0
        np.testing.assert_array_equal(np.frombuffer(bufs[3].bytes, np.float32), want)
    assert cb.plain is not None and cb.submitted == 3
    assert len(ran) == 1 and checked == []          # only the first went through execute()
    table, bufs, want = _table(4)
    seen = []
    with observe_dispatches(lambda obs: seen.append(obs) or obs.run()):
        assert cb.plain(table) is False and len(seen) == 0
        call(device, -1, Fence(0), Fence(), cb, 0, table)
    assert len(seen) == 2 and cb.submitted == 4
    np.testing.assert_array_equal(np.frombuffer(bufs[3].bytes, np.float32), want)
    table, bufs, want = _table(5, misaligned=True)
    assert cb.plain(table) is False and not bufs[3].bytes.tobytes().strip(b"\0")
    call(device, -1, Fence(0), Fence(), cb, 0, table)
    np.testing.assert_array_equal(np.frombuffer(bufs[3].bytes, np.float32), want)
    assert len(checked) == 4 and len(ran) == 1      # (2 watched, 2 misaligned)
    for other in (_table_chain(saxpy, MODE_ONE_SHOT), _table_chain(saxpy, copy=True)):
        other.execute(_table(6)[0])
        assert other.plain is None


def test_a_plain_submission_reports_what_execute_reports(saxpy):
    """A table slot out of range (the plain call refuses it) and a failing
    workgroup under a cancelled invocation: the fast caller fails the signal
    fence and raises execute()'s error, annotated."""
    from vmrt.hal.objects import Fence
    from vmrt.modules.hal import fast
    device = saxpy[0]
    call = fast.FAST["device.queue.execute.indirect"](None, None, "where", "note")
    cb = _table_chain(saxpy)
    table = _table(1)[0]
    call(device, -1, Fence(0), Fence(), cb, 0, table)
    assert cb.plain is not None
    signal = Fence()
    with pytest.raises(VmError) as e:
        call(device, -1, Fence(0), signal, cb, 0, table[:3])
    assert e.value.code == StatusCode.OUT_OF_RANGE and "binding table slot 3" in e.value.message
    assert signal.status == int(StatusCode.ABORTED)
    limits = ExecutionLimits()
    limits.cancel()
    signal = Fence()
    with running_under(limits), pytest.raises(VmError) as e:
        call(device, -1, Fence(0), signal, cb, 0, table)
    assert e.value.code == StatusCode.CANCELLED and signal.status == int(StatusCode.ABORTED)


def test_a_program_holding_a_grid_sent_back_is_kept_until_its_last_run_alone(task_chain):
    """local-task: a grid a stall guard sent back runs in the batches of
    one-shot recordings of a shape (their program kept per shape, not for
    good on a command buffer) and its runs there count down; after the
    last it tries both ways again, out of the batches."""
    from vmrt.hal.commands import prepare_dispatch
    record, ran, device = task_chain
    cb, bufs, want = record(20)
    grid = prepare_dispatch(cb.commands[0], device)
    assert grid.threads == 2
    grid.inline, grid.trials, grid.retry = True, 8, 4     # sent back for 4 runs
    for seed in (21, 22):       # each recording: 2 runs of the grid, in one batch
        cb.execute()
        np.testing.assert_array_equal(_last(bufs), want)
        assert cb.plain is None and len(grid.plans) == 1
        cb, bufs, want = record(seed)
    assert len(ran) == 2 and ran[0] is ran[1] and grid.retry == 0 and grid.inline is None
    cb.execute()                # trying both ways: out of the batches
    np.testing.assert_array_equal(_last(bufs), want)
    assert len(ran) == 2 and grid.trials == 2
