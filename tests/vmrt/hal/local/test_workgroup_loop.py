"""The native workgroup loop (vmrt.hal.local.workgroup_loop): one call per
range of workgroups, stopping at the first failing workgroup or at a cancel,
with the results and errors of one ctypes call per workgroup."""
from __future__ import annotations

import struct
import time
from types import SimpleNamespace

import numpy as np
import pytest

import elfkit
import vmrt
from elfkit.exec import PROT_EXEC, PROT_READ, create_machine
from vmrt.errors import BudgetExceeded, Cancelled, DispatchError, VmError
from vmrt.hal.local import prepared, workgroup_loop
from vmrt.hal.local.batch import Batch
from vmrt.hal.local.device import Device
from vmrt.hal.local.guest import sig
from vmrt.hal.local.workgroup_loop import (
    ENV,
    LOOP_SIG,
    WorkgroupRunner,
    loop_address,
    loop_code,
)
from vmrt.vm.context import ExecutionLimits

#: ``int f(env, ds, ws) { u64 *log = ds; log[++log[0]] = ws; return *(i32 *)ws; }``
GUEST_FN = {
    # mov rax,[rsi]; add rax,1; mov [rsi],rax; mov [rsi+rax*8],rdx; mov eax,[rdx]; ret
    "x86_64": bytes.fromhex("488b06" "4883c001" "488906" "488914c6" "8b02" "c3"),
    # ldr x8,[x1]; add x8,x8,#1; str x8,[x1]; str x2,[x1,x8,lsl #3]; ldr w0,[x2]; ret
    "aarch64": struct.pack("<6I", 0xF9400028, 0x91000508, 0xF9000028, 0xF8287822, 0xB9400040,
                           0xD65F03C0),
}
WS = 16         # workgroup state size in these tests


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_loop_code_runs_each_state_and_stops(arch, emulation):
    """Each CPU's loop, run in an emulated machine of that CPU over a guest
    function that logs the states it is given and returns their first word."""
    m = create_machine(elfkit.arch.get(arch), "emulated")
    try:
        page = m.arch.page_size
        code = m.reserve(page, page)
        m.write(code, loop_code(arch))
        m.write(code + 512, GUEST_FN[arch])
        m.protect(code, page, PROT_READ | PROT_EXEC)
        data = m.reserve(page, page)
        log, states, params, cancel = data, data + 1024, data + 2048, data + 2112
        statuses = [0, 0, 0, 0, 9, 0, 0, 0]
        m.write(states, b"".join(struct.pack("<i12x", s) for s in statuses))
        loop = m.function(code, sig(LOOP_SIG))

        def run(start, end, cancelled=0):
            m.write(log, bytes(8))
            m.write(cancel, struct.pack("<i", cancelled))
            m.write(params, struct.pack("<6Q", code + 512, 0x1234, log, states, WS, 0xFFFFFFFF))
            k = loop(params, start, end, cancel)
            n = struct.unpack("<Q", m.read(log, 8))[0]
            ran = [(a - states) // WS for a in struct.unpack(f"<{n}Q", m.read(log + 8, 8 * n))]
            return k, struct.unpack("<i", m.read(params + 40, 4))[0], ran

        assert run(0, 4) == (4, 0, [0, 1, 2, 3])
        assert run(1, 3) == (3, 0, [1, 2])
        assert run(2, 8) == (4, 9, [2, 3, 4])        # stops at the failing workgroup
        assert run(5, 8) == (8, 0, [5, 6, 7])
        assert run(3, 3) == (3, 0, [])
        assert run(0, 8, cancelled=1) == (0, 0, [])  # the cancel word read before each
    finally:
        m.close()


def test_no_loop_where_there_is_no_code():
    assert loop_code("riscv64") is None and loop_code("i386") is None
    assert loop_code("x86_64") and loop_code("aarch64")


# -- WorkgroupRunner over a host function written in Python ------------------------------
class Host:
    """A native machine, a dispatch function calling ``body(k)`` for the
    ``k``-th workgroup state (its status), and states for a grid."""

    def __init__(self, wc=(4, 2, 1)):
        self.m = create_machine(elfkit.arch.host(), "native")
        self.wc = wc
        total = wc[0] * wc[1] * wc[2]
        self.states = np.zeros(total * WS // 8 + 8, np.uint64)
        self.ws = int(self.states.ctypes.data)
        self.ran: list[int] = []
        self.body = lambda k: 0

        def fn(env, ds, ws):
            assert (env, ds) == (77, 88)
            k = (ws - self.ws) // WS
            self.ran.append(k)
            return self.body(k)
        self.fn = self.m.callback(fn, sig("i32(u64,u64,u64)"))
        # one call per workgroup calls fn itself; the loop calls it natively
        self.exe = SimpleNamespace(entry=lambda exp: fn, env=77, layout=SimpleNamespace(ws_size=WS), imports=[],
                                   machine=self.m)

    def runner(self):
        return WorkgroupRunner(self.exe, SimpleNamespace(function=self.fn), self.wc, "export 'x'")

    def outcome(self, start, end, deadline=None, limits=None, index=None):
        self.ran.clear()
        try:
            self.runner().run(88, self.ws, start, end, deadline, limits, index=index)
        except VmError as e:
            return type(e).__name__, e.message, list(self.ran)
        return "ok", "", list(self.ran)


@pytest.fixture(params=["loop", "python"])
def host(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setenv(ENV, "python")
    else:
        monkeypatch.delenv(ENV, raising=False)
    h = Host()
    assert (h.runner().loop is None) == (request.param == "python" or
                                          loop_code(h.m.arch.name) is None)
    yield h
    h.m.close()


def test_runner_runs_every_workgroup_in_order(host):
    assert host.outcome(0, 8) == ("ok", "", list(range(8)))
    assert host.outcome(3, 6) == ("ok", "", [3, 4, 5])
    assert host.outcome(6, 6) == ("ok", "", [])


@pytest.mark.parametrize("status", [7, -3])
def test_runner_names_the_failing_workgroup(host, status):
    host.body = lambda k: status if k == 5 else 0
    assert host.outcome(2, 8) == (
        "DispatchError", f"export 'x' returned catastrophic error {status} in workgroup (1, 1, 0)",
        [2, 3, 4, 5])
    # a batch of states of other workgroups: the error names index[k]
    assert host.outcome(0, 8, index=[7, 6, 5, 4, 3, 2, 1, 0])[1].endswith("workgroup (2, 0, 0)")


def test_runner_cancelled_before_the_range(host):
    limits = ExecutionLimits()
    limits.cancel()
    assert host.outcome(0, 8, limits=limits) == (
        "Cancelled", "export 'x': the invocation was cancelled", [])
    outer = ExecutionLimits()
    outer.cancel()
    assert host.outcome(0, 8, limits=ExecutionLimits(parent=outer))[0::2] == ("Cancelled", [])


def test_runner_cancel_stops_between_workgroups(host):
    """A cancel while the range runs (here by workgroup 3 itself) stops it
    before the next workgroup; the next invocation under the same limits
    runs again."""
    outer = ExecutionLimits()
    for limits, cancel in ((ExecutionLimits(), None), (ExecutionLimits(parent=outer), outer)):
        who = cancel or limits
        host.body = lambda k, who=who: who.cancel() if k == 3 else 0
        assert host.outcome(1, 8, limits=limits) == (
            "Cancelled", "export 'x': the invocation was cancelled", [1, 2, 3])
        who.begin()                     # a new invocation clears the cancel
        host.body = lambda k: 0
        assert host.outcome(0, 8, limits=limits) == ("ok", "", list(range(8)))


def test_runner_deadline_checked_before_each_workgroup(host):
    assert host.outcome(0, 8, deadline=time.monotonic() - 1) == (
        "BudgetExceeded", "export 'x': execution timed out", [])
    assert host.outcome(0, 8, deadline=time.monotonic() + 3600)[0] == "ok"


def test_runner_python_exception_names_its_workgroup(monkeypatch):
    """An executable with imports (which may be Python code) keeps one call
    per workgroup: an exception is reported with its workgroup."""
    monkeypatch.delenv(ENV, raising=False)
    h = Host()
    try:
        h.exe.imports = ["an_import"]
        assert h.runner().loop is None

        def body(k):
            if k == 4:
                raise RuntimeError("boom")
            return 0
        h.body = body
        assert h.outcome(0, 8) == ("DispatchError", "export 'x' failed in workgroup (0, 1, 0): "
                                   "RuntimeError: boom", [0, 1, 2, 3, 4])
    finally:
        h.m.close()


def test_page_refused_falls_back(recwarn):
    """A host refusing an executable page: no loop (a warning at most once)."""
    class Refusing:
        backend = "native"
        arch = elfkit.arch.get("x86_64")

        def reserve(self, size, align):
            return 4096

        def write(self, addr, data):
            pass

        def protect(self, addr, size, prot):
            raise OSError("mprotect refused")

        def release(self, addr, size):
            released.append((addr, size))
    released: list[tuple[int, int]] = []
    assert loop_address(Refusing()) is None
    assert released == [(4096, Refusing.arch.page_size)]
    assert all(issubclass(w.category, RuntimeWarning) for w in recwarn)

    class Emulated(Refusing):
        backend = "emulated"
    assert loop_address(Emulated()) is None


# -- real programs: the same results with and without the loop ---------------------------
def _counting_runs(monkeypatch, native: list[bool]) -> None:
    orig, orig_team = WorkgroupRunner.run, WorkgroupRunner.run_team

    def run(self, ds, ws, start, end, *rest, **kw):
        native.append(self.loop is not None)
        return orig(self, ds, ws, start, end, *rest, **kw)

    def run_team(self, *args):          # local-task's native team runs the loop too
        ran = orig_team(self, *args)
        native.extend([self.loop is not None] if ran is not None else [])
        return ran
    def batch_run(self, values):        # a submission's batch: the native batch loop
        native.append(True)
        return orig_batch(self, values)
    orig_batch = Batch.run
    monkeypatch.setattr(WorkgroupRunner, "run", run)
    monkeypatch.setattr(WorkgroupRunner, "run_team", run_team)
    monkeypatch.setattr(Batch, "run", batch_run)


@pytest.mark.parametrize("device", ["local-sync", "local-task"])
@pytest.mark.parametrize("prepare", [True, False])
def test_programs_same_with_and_without_loop(hal_compile, monkeypatch, device, prepare):
    """task_matmul's dispatches (prepared, or through Executable.dispatch
    when nothing is prepared) give the same bytes with the native loop and
    with one ctypes call per workgroup, and numpy's product."""
    if device == "local-task":
        init = Device.__init__

        def two(self, uri, *a, **k):
            init(self, uri, *a, **k)
            if self.identifier == "local-task":
                self.dispatch_threads = 2
        monkeypatch.setattr(Device, "__init__", two)
    if not prepare:
        monkeypatch.setattr(prepared, "MAX_PREPARED_WORKGROUPS", 0)
    vmfb = hal_compile("task_matmul.mlir")
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal((256, 256), np.float32) for _ in range(2))
    x = rng.standard_normal(65536).astype(np.float32)
    outs = {}
    for mode in ("loop", "python"):
        native: list[bool] = []
        _counting_runs(monkeypatch, native)
        if mode == "python":
            monkeypatch.setenv(ENV, "python")
        else:
            monkeypatch.delenv(ENV, raising=False)
        with vmrt.load(vmfb, device=device) as prog:
            outs[mode] = [prog["matmul"](a, b), prog["scale"](x), prog["matmul"](a, b)]
        assert native and all(native) == (mode == "loop" and loop_code(
            elfkit.arch.host().name) is not None)
        monkeypatch.undo()
        if device == "local-task":
            monkeypatch.setattr(Device, "__init__", two)
        if not prepare:
            monkeypatch.setattr(prepared, "MAX_PREPARED_WORKGROUPS", 0)
    for got, want in zip(outs["loop"], outs["python"]):
        assert got.tobytes() == want.tobytes()
    np.testing.assert_allclose(outs["loop"][0], a @ b, rtol=1e-4, atol=1e-3)


def test_loop_written_once_per_machine():
    m = create_machine(elfkit.arch.host(), "native")
    try:
        first = loop_address(m)
        assert first == loop_address(m)
        if first is not None:
            assert m.read(first, len(loop_code(m.arch.name))) == loop_code(m.arch.name)
    finally:
        m.close()


def test_errors_are_vm_errors():
    assert issubclass(Cancelled, VmError) and issubclass(BudgetExceeded, VmError)
    assert issubclass(DispatchError, VmError)
    assert workgroup_loop.workgroup_failure("e", "(1, 2, 3)", 4).code.name == "INTERNAL"


def test_loop_releases_the_gil():
    """The loop is one CFUNCTYPE call: while its "dispatch function" (libc's
    read, blocking on an empty pipe: fn(env=fd, ds=buffer, ws=count)) waits,
    this thread runs Python and writes to the pipe; read's byte count is
    then the nonzero status that stops the range at its first workgroup."""
    import ctypes
    import faulthandler
    import os
    import threading
    m = create_machine(elfkit.arch.host(), "native")
    try:
        if loop_address(m) is None:
            pytest.skip("no native workgroup loop on this host")
        r, w = os.pipe()
        read = ctypes.cast(ctypes.CDLL(None).read, ctypes.c_void_p).value
        buf = ctypes.create_string_buffer(64)
        exe = SimpleNamespace(entry=lambda exp: None, env=r, layout=SimpleNamespace(ws_size=WS),
                              imports=[], machine=m)
        runner = WorkgroupRunner(exe, SimpleNamespace(function=read), (4, 1, 1), "export 'r'")
        assert runner.loop is not None
        got: list[str] = []

        def run():
            try:
                runner.run(ctypes.addressof(buf), 32, 0, 4, None)
            except VmError as e:
                got.append(e.message)
        t = threading.Thread(target=run)
        # a loop holding the GIL would block this thread for good: end the process then
        faulthandler.dump_traceback_later(120, exit=True)
        t.start()
        time.sleep(0.05)                # (not needed for the outcome: read waits for the write)
        os.write(w, b"abc")
        t.join(60)
        faulthandler.cancel_dump_traceback_later()
        os.close(r)
        os.close(w)
        assert not t.is_alive()
        assert got == ["export 'r' returned catastrophic error 3 in workgroup (0, 0, 0)"]
        assert buf.raw[:3] == b"abc"
    finally:
        m.close()
