"""Forks and exit while emulated calls run (issue 29 item 7): a child forked
while another thread's call runs gets a clean ModuleClosedError from that
machine instead of a hang, and new machines work; a fork from a host callback
inside a call lets the call finish in both processes; the interpreter exiting
while a daemon thread runs guest code exits normally instead of crashing.
Each case runs in its own process; the children set an alarm, so a hang
ends as a failure, not a stuck test."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("unicorn")

from elfkit.toolchain import compile_plugin

SOURCE = r"""
#include <stdint.h>
extern void host_tick(void);
int64_t spin_with_tick(int64_t n) {
    host_tick();
    volatile int64_t s = 0;
    for (int64_t i = 0; i < n; i++) s += i;
    return s;
}
int64_t add(int64_t a, int64_t b) { return a + b; }
int64_t call_host(void) { host_tick(); return 7; }
"""

PRELUDE = """
import os, signal, sys, threading
import elfkit
SO = {so!r}
ready = threading.Event()
def load(tick):
    return elfkit.load(SO, backend="emulated",
                       imports=elfkit.Imports({{"host_tick": (tick, "void()")}}))
"""

FORK_WHILE_ANOTHER_THREAD_CALLS = PRELUDE + """
m = load(ready.set)
def spin():
    try:
        m.call("spin_with_tick", 1 << 40, timeout=20)
    except elfkit.ElfkitError:
        pass
t = threading.Thread(target=spin, daemon=True)
t.start()
assert ready.wait(60)
pid = os.fork()
if pid == 0:
    signal.alarm(60)
    try:
        m.call("add", 1, 2)
        os.write(1, b"no error\\n")
    except elfkit.ModuleClosedError as e:
        os.write(1, b"closed: " + str(e).encode() + b"\\n")
    m2 = load(lambda: None)
    os.write(1, b"%d\\n" % m2.call("add", 40, 2))
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
m.machine.cancel()
t.join(60)
print("parent", m.call("add", 1, 1))
"""

FORK_FROM_A_CALLBACK = PRELUDE + """
pids, child = [], []
def tick():
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        child.append(True)
    else:
        pids.append(pid)
m = load(tick)
r = m.call("call_host")
if child:
    os.write(1, b"child %d %d\\n" % (r, m.call("add", 1, 2)))
    os._exit(0)
_, status = os.waitpid(pids[0], 0)
print("parent", r, m.call("add", 2, 2), os.waitstatus_to_exitcode(status))
"""

EXIT_WHILE_A_DAEMON_THREAD_CALLS = PRELUDE + """
m = load(ready.set)
threading.Thread(target=lambda: m.call("spin_with_tick", 1 << 40), daemon=True).start()
assert ready.wait(60)
print("exiting", flush=True)
sys.exit(0)
"""


@pytest.fixture(scope="module")
def so(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fork")
    (tmp / "f.c").write_text(SOURCE)
    compile_plugin(tmp / "f.c", "aarch64", tmp / "f.so", cflags=["-O1", "-fvisibility=default"])
    return tmp / "f.so"


def run(script: str, so) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script.format(so=str(so))],
                          capture_output=True, text=True, timeout=300)


def test_fork_while_another_thread_runs_a_call(so):
    proc = run(FORK_WHILE_ANOTHER_THREAD_CALLS, so)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("closed: ") and "forked" in lines[0], proc.stdout
    assert lines[1:] == ["42", "child exit 0", "parent 2"], proc.stdout


def test_fork_from_a_host_callback_inside_a_call(so):
    proc = run(FORK_FROM_A_CALLBACK, so)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(proc.stdout.splitlines()) == ["child 7 3", "parent 7 4 0"], proc.stdout


def test_exit_while_a_daemon_thread_runs_guest_code(so):
    proc = run(EXIT_WHILE_A_DAEMON_THREAD_CALLS, so)
    assert proc.stdout == "exiting\n"
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
