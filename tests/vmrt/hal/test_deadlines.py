"""A context's deadline stops dispatches: an emulated one inside a
workgroup (elfkit's call timeout), a native one between workgroups; the
context stays usable afterwards."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import vmrt_run

PROGRAM = "slow_matmul.mlir"       # a 1024^3 f32 matmul: seconds of emulated work


@pytest.mark.parametrize("arch", ["aarch64", "riscv64"])
def test_timeout_stops_an_emulated_dispatch(hal_compile, emulation, arch):
    vmfb = hal_compile(PROGRAM, arch)
    got = vmrt_run(["--device=local-sync", f"--module={vmfb}", "--function=mm",
                    "--input=1024x1024xf32=1", "--input=1024x1024xf32=1", "--timeout=0.5"])
    assert got.rc == 1
    assert got.status.startswith("DEADLINE_EXCEEDED; executable 'slow_matmul_linked' export "
                                 "'mm_dispatch_0_matmul_1024x1024x1024_f32': execution timed out")


def test_context_usable_after_a_timed_out_dispatch(hal_compile, emulation):
    vmfb = hal_compile(PROGRAM, "aarch64")
    a = np.ones((1024, 1024), np.float32)
    with vmrt.load(vmfb, timeout=0.5) as prog:
        with pytest.raises(vmrt.BudgetExceeded) as e:
            prog.mm(a, a)
        assert e.value.code == vmrt.StatusCode.DEADLINE_EXCEEDED
        np.testing.assert_array_equal(prog.small(np.arange(4, dtype=np.float32)),
                                      [0, 2, 4, 6])


def test_no_deadline_no_interference(hal_compile):
    """Without a deadline the same program computes (natively on x86_64)."""
    vmfb = hal_compile(PROGRAM, "x86_64")
    a = np.ones((1024, 1024), np.float32)
    with vmrt.load(vmfb) as prog:
        out = prog.mm(a, a)
    assert out.shape == (1024, 1024) and (out == 1024).all()


def _in_thread(fn, *args):
    """Start ``fn(*args)`` in a thread; returns (thread, box) where box gets
    ("ok", result) or ("error", exception)."""
    box: list = []

    def run():
        try:
            box.append(("ok", fn(*args)))
        except BaseException as e:  # noqa: BLE001 - inspected by the test
            box.append(("error", e))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


@pytest.mark.parametrize("arch", ["aarch64", "riscv64"])
def test_cancel_stops_an_emulated_dispatch_in_flight(hal_compile, emulation, arch):
    """Program.cancel() from another thread stops the 1024^3 matmul inside
    its workgroup with CANCELLED; the next call works and is right."""
    vmfb = hal_compile(PROGRAM, arch)
    a = np.ones((1024, 1024), np.float32)
    with vmrt.load(vmfb) as prog:
        assert prog.cancel() is False                   # nothing running
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(prog.small(x), x * 2)     # executables loaded
        t, box = _in_thread(prog.mm, a, a)
        time.sleep(3)           # well inside the dispatch (it runs for minutes)
        assert prog.cancel(wait=30) is True
        t.join(60)
        assert not t.is_alive() and box, "the cancelled call did not end"
        kind, err = box[0]
        assert kind == "error" and isinstance(err, vmrt.Cancelled), err
        assert err.code == vmrt.StatusCode.CANCELLED and "mm_dispatch_0" in str(err)
        np.testing.assert_array_equal(prog.small(x), x * 2)
        assert prog.cancel() is False                   # the cancel did not linger
        np.testing.assert_array_equal(prog.small(x + 1), (x + 1) * 2)


@pytest.mark.parametrize("arch", ["aarch64", "riscv64"])
def test_instruction_budget_bounds_an_emulated_dispatch(hal_compile, emulation, arch):
    """--instruction_budget counts the guest instructions of emulated
    dispatches: the matmul (about 10^9 of them) stops with
    RESOURCE_EXHAUSTED inside its dispatch."""
    vmfb = hal_compile(PROGRAM, arch)
    got = vmrt_run(["--device=local-sync", f"--module={vmfb}", "--function=mm",
                    "--input=1024x1024xf32=1", "--input=1024x1024xf32=1",
                    "--instruction_budget=5000000"])
    assert got.rc == 1
    assert got.status.startswith("RESOURCE_EXHAUSTED; executable 'slow_matmul_linked' export "
                                 "'mm_dispatch_0_matmul_1024x1024x1024_f32': instruction budget "
                                 "of 5000000 exhausted"), got.status


def test_budget_charges_guest_instructions(hal_compile, emulation):
    """What a call spends is its VM instructions plus the guest instructions
    of its emulated dispatches: more on aarch64 than the same program
    spends natively (where only VM instructions count), and a budget just
    below what the call spent stops it."""
    x = np.arange(4, dtype=np.float32)
    spent = {}
    for arch in ("x86_64", "aarch64"):
        with vmrt.load(hal_compile(PROGRAM, arch), budget=10**9) as prog:
            before = prog.context.limits.executed
            np.testing.assert_array_equal(prog.small(x), x * 2)
            spent[arch] = prog.context.limits.executed - before
    assert spent["aarch64"] > spent["x86_64"] > 0
    with vmrt.load(hal_compile(PROGRAM, "aarch64")) as prog:
        ctx = prog.context
        fn = ctx.resolve_function(f"{prog.module.name}.small")
        with pytest.raises(vmrt.BudgetExceeded) as e:
            ctx.invoke(fn, [x], budget=spent["aarch64"] - spent["x86_64"])
        assert e.value.code == vmrt.StatusCode.RESOURCE_EXHAUSTED
        np.testing.assert_array_equal(prog.small(x), x * 2)


def test_ctrl_c_stops_vmrt_run_inside_an_emulated_dispatch(hal_compile, emulation, tmp_path):
    """SIGINT while `vmrt run` is inside the emulated matmul: one CANCELLED
    line, exit 1, no output file -- without waiting for the dispatch."""
    import os
    import signal
    import subprocess
    import sys

    from tests.plugins import REPO
    vmfb = hal_compile(PROGRAM, "aarch64")
    out = tmp_path / "mm.npy"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "vmrt", "run", "--device=local-sync",
                             f"--module={vmfb}", "--function=mm", "--input=1024x1024xf32=1",
                             "--input=1024x1024xf32=1", f"--output=@{out}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            # a shell's background job inherits SIGINT ignored: undo that
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(4)                   # well inside the dispatch (it runs for minutes)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1 and stderr == "CANCELLED; interrupted\n", stderr
    assert stdout == "EXEC @mm\n" and not list(tmp_path.iterdir())
