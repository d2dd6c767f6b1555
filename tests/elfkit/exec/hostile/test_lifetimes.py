"""Lifetimes: one ``Imports`` reused across many loads keeps working, a module
providing imports stays mapped while its users are open, and ``close()``
while another thread is inside a call waits for it or makes it fail cleanly
-- natively and emulated, never with a signal (issue 16, findings 1 and 3).
Reproducers that used to kill the process run in a child Python."""
from __future__ import annotations

import pytest

import elfkit

HOST = "x86_64"      # the CPU of this test host (native runs are skipped elsewhere)


def _native_ok():
    from elfkit.arch import host
    h = host()
    return h is not None and h.name == HOST


REUSE_CHILD = """
import elfkit
imp = elfkit.Imports({{"host_add": (lambda a, b: a + b, "i32(i32,i32)")}})
for i in range({n}):
    with elfkit.load({path!r}, imports=imp, backend={backend!r}) as m:
        assert m.call("call_host_add", 2, 5, restype="i32") == 7, i
imp.register({{"host_add": (lambda a, b: a * 3 + b, "i32(i32,i32)")}})   # newer provider wins
for i in range({n2}):
    with elfkit.load({path!r}, imports=imp, backend={backend!r}) as m:
        r = m.call("call_host_add", 2, 5, restype="i32")
        assert r == 11, (i, r)
print("ok")
"""


@pytest.mark.parametrize("arch,backend,n", [(HOST, "native", 400), ("riscv64", "emulated", 150),
                                            ("arm", "emulated", 60)])
def test_one_imports_reused_across_many_loads(hostile, run_child, arch, backend, n):
    if backend == "native" and not _native_ok():
        pytest.skip("native run needs an x86_64 host")
    proc = run_child(REUSE_CHILD.format(path=str(hostile(arch)), backend=backend, n=n,
                                        n2=n // 4))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr)


CLOSE_CHILD = """
import threading, time, numpy as np, elfkit
for rnd in range(3):
    m = elfkit.load({path!r}, backend={backend!r},
                    imports={{"host_add": (lambda a, b: a + b, "i32(i32,i32)")}})
    f = m.function("sum_i32", "i64(ptr,i64)")
    n = 2_000_000
    a = np.ones(n, np.int32)
    out, started = [], threading.Event()
    def run():
        try:
            while True:
                started.set()
                assert f(a, n) == n
                out.append(1)
        except (elfkit.ModuleClosedError, elfkit.CallTimeout) as e:
            out.append(type(e).__name__)
    th = threading.Thread(target=run)
    th.start()
    started.wait()
    time.sleep(0.05 * (rnd + 1))
    m.close()
    th.join(30)
    assert not th.is_alive() and out[-1] in ("ModuleClosedError", "CallTimeout"), out[-3:]
    try:
        f(a, n)
    except elfkit.ModuleClosedError:
        pass
    else:
        raise AssertionError("a call after close ran")
print("ok")
"""


@pytest.mark.parametrize("arch,backend", [(HOST, "native"), ("riscv64", "emulated"),
                                          ("arm", "emulated"), (HOST, "emulated")])
def test_close_while_another_thread_calls(hostile, run_child, arch, backend):
    if backend == "native" and not _native_ok():
        pytest.skip("native run needs an x86_64 host")
    proc = run_child(CLOSE_CHILD.format(path=str(hostile(arch)), backend=backend))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr)


@pytest.mark.parametrize("arch,backend", [(HOST, "native"), ("aarch64", "emulated")])
def test_a_provider_module_outlives_its_users(hostile, provider, arch, backend):
    if backend == "native" and not _native_ok():
        pytest.skip("native run needs an x86_64 host")
    prov = elfkit.load(provider(arch), backend=backend)
    machine = {} if backend == "native" else {"machine": prov.machine}
    users = [elfkit.load(hostile(arch), imports=elfkit.Imports(prov), **machine)
             for _ in range(2)]
    assert users[0].call("call_host_add", 4, 2, restype="i32") == 42
    prov.close()                                    # its users still call into it
    with pytest.raises(elfkit.ModuleClosedError):
        prov.call("host_add", 1, 2)
    for u in users:
        assert u.call("call_host_add", 2, 5, restype="i32") == 25
    users[0].close()
    assert users[1].call("call_host_add", 1, 1, restype="i32") == 11
    users[1].close()                                # the last user: the provider goes too
    with pytest.raises(elfkit.ModuleClosedError):
        users[1].call("call_host_add", 1, 1, restype="i32")
    # a closed provider is skipped when binding: the older provider serves
    imp = elfkit.Imports({"host_add": (lambda a, b: a - b, "i32(i32,i32)")}, prov)
    with elfkit.load(hostile(arch), imports=imp, backend=backend) as m:
        assert m.call("call_host_add", 7, 2, restype="i32") == 5
