"""Denormals as IREE computes them (issue 24 item 1): dispatches run with
denormal inputs and results flushed to zero on x86 (MXCSR FTZ|DAZ), aarch64
(FPCR FZ|FZ16) and arm (FPSCR FZ), kept on RISC-V; the host's own FPU state
is restored after every dispatch.

programs/denormals.mlir (mulf, an addf of denormals to normal numbers, and a
mulf whose intermediate is denormal) is compiled for every CPU and vmvx.  On
the host (x86_64 and vmvx) vmrt prints what iree-run-module prints; the
other CPUs (emulated) are checked against IREE's rule for that CPU computed
with numpy: inputs and every result flushed where the CPU flushes.  i386 is
the exception that proves the rule: iree-compile's ``generic`` i386 code
computes with the x87 unit, which MXCSR does not govern, so on that CPU
nothing is flushed (and the x87 keeps the intermediate in its 80-bit
registers).
"""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from elfkit.arch import host
from tests.vmrt.hal.hal_testutil import iree_run, run_args, vmrt_run
from vmrt.hal.local.task_pool import run_workers

needs_x86_64_host = pytest.mark.skipif(
    getattr(host(), "name", None) != "x86_64",
    reason="compares with iree-run-module on an x86_64 host")

N = 65536                 # several workgroups: local-task runs them on its workers
TINY = np.finfo(np.float32).tiny
DEVICES = ("local-sync", "local-task")

#: function -> its f32 inputs (a 4-element pattern repeated)
INPUTS = {
    # denormal products of normal numbers
    "mul": ([1e-20, 1e-20, 3, 1e-30], [1e-20, 1e-19, 2, 1e-10]),
    # denormal inputs added to normal numbers (flushed: the normal number is
    # the sum) and to each other (a denormal sum)
    "add": ([1e-39, 2e-39, 1e-39, -1e-39], [2e-38, 1, 1e-39, 3e-38]),
    # (a * b) * c: a denormal intermediate scaled back into the normal range
    "rescale": ([1e-20, 1e-20, 1, 1e-25], [1e-20, 1e-19, 2, 1e-15], [1e30, 1e30, 3, 1e35]),
}
#: CPUs whose dispatches flush denormals under IREE
FLUSHING = {"x86_64", "aarch64", "arm"}


def _inputs(fn: str) -> list[np.ndarray]:
    return [np.tile(np.array(v, np.float32), N // 4) for v in INPUTS[fn]]


def _flush(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < TINY, np.float32(0) * np.sign(x), x).astype(np.float32)


def expected(fn: str, arch: str) -> np.ndarray:
    """IREE's result of ``fn`` on ``arch``, computed with numpy."""
    args = _inputs(fn)
    if arch in FLUSHING:
        f = _flush
        a = [f(x) for x in args]
        if fn == "mul":
            return f(a[0] * a[1])
        if fn == "add":
            return f(a[0] + a[1])
        return f(f(a[0] * a[1]) * a[2])
    if fn == "mul":
        return args[0] * args[1]
    if fn == "add":
        return args[0] + args[1]
    if arch == "i386":          # the x87 keeps the product in an 80-bit register
        wide = [x.astype(np.float64) for x in args]
        return (wide[0] * wide[1] * wide[2]).astype(np.float32)
    return (args[0] * args[1]) * args[2]


def _write_inputs(tmp_path, fn: str) -> list[str]:
    out = []
    for i, x in enumerate(_inputs(fn)):
        path = tmp_path / f"{fn}_{i}.npy"
        np.save(path, x)
        out.append(f"@{path}")
    return out


@needs_x86_64_host
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arch", ["x86_64", "vmvx"])
def test_host_gives_what_iree_run_module_gives(hal_compile, iree_run_module, tmp_path, arch,
                                               device):
    vmfb = hal_compile("denormals.mlir", arch)
    for fn in INPUTS:
        ours, peer = tmp_path / f"{fn}_ours.npy", tmp_path / f"{fn}_peer.npy"
        args = run_args(vmfb, fn, _write_inputs(tmp_path, fn), device=device)
        theirs = iree_run(iree_run_module, [*args, f"--output=@{peer}"])
        assert theirs.rc == 0, theirs.stderr
        got = vmrt_run([*args, f"--output=@{ours}"])
        assert got.rc == 0, got.stderr
        np.testing.assert_array_equal(np.load(ours), np.load(peer))
        # iree-run-module flushes as IREE's rule for x86 says (numpy)
        np.testing.assert_array_equal(np.load(peer), expected(fn, "x86_64"))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arch", ["aarch64", "arm", "i386", "riscv64", "riscv32"])
def test_emulated_cpus_follow_their_rule(hal_compile, emulation, arch, device):
    with vmrt.load(hal_compile("denormals.mlir", arch), device=device) as prog:
        for fn in INPUTS:
            got = prog[fn](*_inputs(fn))
            np.testing.assert_array_equal(got, expected(fn, arch), err_msg=f"{arch} {fn}")
    if arch not in FLUSHING:        # (the test is not vacuous)
        assert (np.abs(expected("mul", arch)) < TINY).any()


def _host_product() -> np.float32:
    return np.float32(1e-20) * np.float32(1e-20)


@needs_x86_64_host
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("arch", ["x86_64", "vmvx"])
def test_the_host_fpu_is_restored(hal_compile, arch, device):
    """What a dispatch sets is undone on every thread that ran workgroups:
    host float code sees denormals again, and the control register holds
    what it held (its sticky exception flags aside)."""
    from elfkit.exec.fpu import host_fpu
    fpu = host_fpu()
    assert fpu is not None
    flags = 0x3F if fpu.control.register == "MXCSR" else 0
    before = fpu.get() & ~flags
    with vmrt.load(hal_compile("denormals.mlir", arch), device=device) as prog:
        out = prog["mul"](*_inputs("mul"))
        assert not out[0]                                   # flushed inside
        assert _host_product() != 0                         # not out here
        assert fpu.get() & ~flags == before
        if device == "local-task" and arch == "x86_64":     # nor on the workers
            got = [0.0] * 4                                 # on the worker threads too

            def product(t: int) -> None:
                got[t] = _host_product()
            assert run_workers(4, product) == []
            assert all(got)


@needs_x86_64_host
def test_workers_started_during_a_dispatch_keep_denormals():
    """A thread starts with its creator's FPU state: local-task workers
    started while the calling thread flushes denormals (inside a
    submission) must not flush them for good."""
    from vmrt.hal.local.fpu_state import pop, push
    from vmrt.hal.local.task_pool import started_workers
    count = started_workers() + 3          # at least two new worker threads
    got = [np.float32(0)] * count
    token = push()
    try:
        assert _host_product() == 0        # flushed on this thread meanwhile

        def product(t: int) -> None:
            got[t] = _host_product()
        assert run_workers(count, product) == []
    finally:
        pop(token)
    assert all(got[1:])                    # every worker, new ones included
    assert _host_product() != 0
