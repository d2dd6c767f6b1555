"""An exception at any point of an emulated call (a KeyboardInterrupt that
Python's signal check raises, an error of a hook) leaves the machine usable:
its stop lock free, no call marked as running or active, the watchdog's
main-thread runner as before.

The generated caller's frame is traced opcode by opcode (``sys.settrace``
with ``f_trace_opcodes``) and a KeyboardInterrupt is raised at the N-th
eligible instruction, for every N: every instruction, except inside the two
``with _slock:`` blocks (taking the stop lock to start and to end a run),
where it is raised after each call -- where CPython checks for signals.
(Between the plain loads and stores of a ``with`` block's exit CPython
raises nothing, and ``with`` itself guarantees its exit runs only at those
points: an exception there would leave any ``with`` lock held.)  The old
caller, which took the lock with ``_acq()`` before its ``try``, fails this
at the first instruction after ``_acq()``.
"""
from __future__ import annotations

import dis
import struct
import sys
import threading

import pytest

pytest.importorskip("unicorn")

import elfkit
from elfkit.exec.emulated import _watchdog
from tests.plugins import i64


class _Inject:
    """Trace ``code``'s frames; raise KeyboardInterrupt at eligible
    instruction number ``at`` (None: only count the eligible ones).
    In the ``guarded`` lines, only the instructions right after a call are;
    a NOP (a ``try:``, outside every handler's range) never is: it raises
    nothing and CPython checks for signals only after calls and at jumps
    back and function entries."""

    def __init__(self, code, guarded: set[int], at: int | None) -> None:
        self.code, self.guarded, self.at = code, guarded, at
        self.ops = {i.offset: i.opname for i in dis.get_instructions(code)}
        self.eligible = 0
        self.prev: str | None = None

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code is self.code:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return self.local
        return None

    def local(self, frame, event, arg):
        if event != "opcode":
            return self.local
        after_call, self.prev = self.prev == "CALL", self.ops.get(frame.f_lasti)
        if self.prev == "NOP" or frame.f_lineno in self.guarded and not after_call:
            return self.local
        self.eligible += 1
        if self.eligible - 1 == self.at:
            raise KeyboardInterrupt(f"injected at offset {frame.f_lasti}, line {frame.f_lineno}")
        return self.local


def _guarded(fn) -> set[int]:
    """The lines (in the code object) of the ``with _slock:`` blocks, the
    ``finally`` around the second and the ``with _lock:`` (the machine's
    call lock, held for the whole call)."""
    lines = fn.generated_source.splitlines()
    out: set[int] = set()
    for i, ln in enumerate(lines):
        if ln.strip() == "with _lock:":     # (its exit, after the return)
            out.add(i)
        if ln.strip() != "with _slock:":
            continue
        indent = len(ln) - len(ln.lstrip())
        end = i + 1
        while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
            end += 1
        start = i - 1 if lines[i - 1].strip() == "finally:" else i
        out.update(range(start, end))
    assert len(out) > 15
    first = fn.__code__.co_firstlineno
    return {first + i for i in out}


def _run(fn, at, args, kwargs):
    inject = _Inject(fn.__code__, _guarded(fn), at)
    sys.settrace(inject)
    try:
        return fn(*args, **kwargs), inject.eligible
    finally:
        sys.settrace(None)


def _free_elsewhere(lock) -> bool:
    """Whether another thread can take ``lock`` now."""
    got: list[bool] = []

    def take() -> None:
        got.append(lock.acquire(blocking=False))
        if got[0]:
            lock.release()
    t = threading.Thread(target=take)
    t.start()
    t.join()
    return got == [True]


def _check_usable(fn, main_before, why: object = None) -> None:
    g = fn.__globals__
    assert _free_elsewhere(g["_lock"]), why
    assert not g["_slock"].locked(), why
    assert not g["_s"].running, why
    assert g["_act"] == [], why
    assert _watchdog.MAIN[0] is main_before, why


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
@pytest.mark.parametrize("limited", [False, True], ids=["plain", "timeout"])
def test_an_exception_at_every_step_of_a_call_leaves_the_machine_usable(plugins, arch,
                                                                        limited):
    kwargs = {"timeout": 30.0} if limited else {}
    with elfkit.load(plugins.path("kernels", arch), backend="emulated") as mod:
        add = mod.function("add_i64", "i64(i64,i64)")
        sum_i32 = mod.function("sum_i32", "i64(ptr,i64)")
        values = [7, -3, 1 << 30, 12, -99]
        buf = struct.pack(f"<{len(values)}i", *values)
        add(1, 2)                               # (the watchdog is set up)
        main_before = _watchdog.MAIN[0]
        for fn, args, want in [(add, (1 << 62, 1 << 62), i64(1 << 63)),
                               (sum_i32, (buf, len(values)), sum(values))]:
            got, total = _run(fn, None, args, kwargs)
            assert got == want
            assert total > 60                   # every instruction of the call
            for at in range(total):
                with pytest.raises(KeyboardInterrupt) as info:
                    _run(fn, at, args, kwargs)
                _check_usable(fn, main_before, info.value)
                assert fn(*args, **kwargs) == want, at
                _check_usable(fn, main_before)


NESTED_SOURCE = r"""
#include <stdint.h>
int32_t twice(int32_t x) { return 2 * x; }
int32_t apply(int32_t (*f)(int32_t), int32_t x) { return f(x) + 1; }
"""


def test_an_exception_at_every_step_of_a_nested_call_leaves_the_outer_state(tmp_path):
    """The same for a call a host callback makes while guest code runs
    (``CallRunner.nested``): the outer call ends with the exception, the
    machine's stack pointer, running flag and lock are as before."""
    from elfkit.exec.emulated import _runner
    from elfkit.toolchain import compile_plugin
    (tmp_path / "n.c").write_text(NESTED_SOURCE)
    compile_plugin(tmp_path / "n.c", "aarch64", tmp_path / "n.so",
                   cflags=["-O1", "-fvisibility=default"])
    with elfkit.load(tmp_path / "n.so", backend="emulated") as mod:
        m = mod.machine
        twice = mod.function("twice", "i32(i32)")
        apply = mod.function("apply", "i32(ptr,i32)")
        cb = m.callback(lambda x: twice(x) + 100, "i32(i32)", "nested")
        assert apply(cb, 5) == 111
        g = apply.__globals__
        sp_before = g["_s"].call_sp
        code = _runner.CallRunner.nested.__code__
        src = __import__("inspect").getsource(_runner.CallRunner.nested).splitlines()
        guarded: set[int] = set()
        for i, ln in enumerate(src):
            if ln.strip() == "with state.slock:":
                indent = len(ln) - len(ln.lstrip())
                end = i + 1
                while len(src[end]) - len(src[end].lstrip()) > indent:
                    end += 1
                guarded.update(range(i, end))
        guarded = {code.co_firstlineno + i for i in guarded}

        def run(at):
            inject = _Inject(code, guarded, at)
            sys.settrace(inject)
            try:
                return apply(cb, 5), inject.eligible
            finally:
                sys.settrace(None)
        got, total = run(None)
        assert got == 111 and total > 20
        for at in range(total):
            with pytest.raises(KeyboardInterrupt) as info:
                run(at)
            _check_usable(apply, _watchdog.MAIN[0], info.value)
            assert g["_s"].call_sp == sp_before, info.value
            assert apply(cb, 5) == 111 and twice(7) == 14
