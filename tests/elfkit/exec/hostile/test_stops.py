"""Stopping an emulated call: a cancel reaches only the call it was meant for,
timeout=0 stops at once, NaN is refused, Ctrl-C (SIGINT) interrupts a spinning
call within milliseconds, and the module stays usable (issue 16, findings 2,
6 and 13)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import elfkit
from elfkit.errors import InvalidArgumentError, SignatureError


def test_cancel_never_cuts_the_next_call_short(m):
    spin = m.function("spin", "void()")
    total = m.function("sum_i32", "i64(ptr,i64)")
    ones = np.ones(200_000, np.int32)
    for _ in range(8):
        t = threading.Timer(0.02, m.machine.cancel)
        t.start()
        with pytest.raises(elfkit.CallTimeout):
            spin(timeout=10)
        t.join()
        assert total(ones, len(ones)) == len(ones)


def test_cancel_without_a_running_call_is_a_no_op(m):
    assert m.machine.cancel() is False
    assert m.function("fmul", "f64(f64,f64)")(2.0, 4.0) == 8.0


def test_timeout_zero_stops_at_once(m):
    t0 = time.monotonic()
    with pytest.raises(elfkit.CallTimeout):
        m.function("spin", "void()")(timeout=0)
    assert time.monotonic() - t0 < 1.0
    m.machine.timeout = 0                           # as the default, too
    with pytest.raises(elfkit.CallTimeout):
        m.call("spin", restype="void")
    m.machine.timeout = None
    assert m.function("fmul", "f64(f64,f64)")(2.0, 4.0) == 8.0


@pytest.mark.parametrize("bad", [float("nan"), -1.0, "1"])
def test_bad_timeouts_are_refused(m, bad):
    # a str is an InvalidArgumentError (a TypeError), NaN or negative a SignatureError
    with pytest.raises((SignatureError, InvalidArgumentError)):
        m.function("spin", "void()")(timeout=bad)
    with pytest.raises((SignatureError, InvalidArgumentError)):
        m.machine.timeout = bad


SIGINT_CHILD = """
import os, signal, threading, time, numpy as np, elfkit
m = elfkit.load({path!r}, backend="emulated",
                imports={{"host_add": (lambda a, b: a + b, "i32(i32,i32)")}})
# a handler that returns: the interrupted call carries on, correctly
hits = []
signal.signal(signal.SIGUSR1, lambda *a: hits.append(1))
def usr1():
    for _ in range(10):
        time.sleep(0.005)
        os.kill(os.getpid(), signal.SIGUSR1)
n = 4_000_000
threading.Thread(target=usr1).start()
assert m.function("sum_i32", "i64(ptr,i64)")(np.ones(n, np.int32), n) == n
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    m.function("spin", "void()")()
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - t0 - 0.3, 3))
assert m.function("fmul", "f64(f64,f64)")(2.0, 4.0) == 8.0
m.close()
print("ok")
"""


@pytest.mark.parametrize("arch", ["riscv64", "arm", "x86_64"])
def test_ctrl_c_interrupts_a_spinning_call(hostile, run_child, arch):
    proc = run_child(SIGINT_CHILD.format(path=str(hostile(arch))), timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0].startswith("interrupted after") and lines[1] == "ok", proc.stdout
    assert float(lines[0].split()[-1]) < 0.2


def test_counted_instructions_match_the_budget_unicorn_enforces(m):
    """count_instructions() counts what a call runs exactly: a budget of that
    count lets the call finish, one less stops it (unicorn's own count)."""
    mc = m.machine
    assert mc.instructions == 0
    f = m.function("sum_i32", "i64(ptr,i64)")
    x = np.arange(300, dtype=np.int32)
    mc.count_instructions(True)
    for n in (1, 300):
        start = mc.instructions
        assert f(x, n) == x[:n].sum()
        used = mc.instructions - start
        assert used > n
        assert f(x, n, budget=used) == x[:n].sum()
        with pytest.raises(elfkit.CallTimeout) as e:
            f(x, n, budget=used - 1)
        assert e.value.reason == "budget"
    mc.count_instructions(False)
    before = mc.instructions
    assert f(x, 300) == x.sum() and mc.instructions == before     # off: not counted
