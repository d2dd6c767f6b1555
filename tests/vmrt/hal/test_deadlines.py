"""A context's deadline stops dispatches: an emulated one inside a
workgroup (elfkit's call timeout), a native one between workgroups; the
context stays usable afterwards."""
from __future__ import annotations

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
