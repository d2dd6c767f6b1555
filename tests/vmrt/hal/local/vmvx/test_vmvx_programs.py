"""Programs compiled for the vmvx target (``--iree-hal-local-target-device-
backends=vmvx``) run under ``vmrt run --device=local-sync`` and print what
``iree-run-module --device=local-sync`` prints for the same .vmfb: stdout and
exit code, in the three ways the compiler lowers dispatches (scalar VM code,
vmvx microkernels, data-tiled mmt4d/pack/unpack)."""
from __future__ import annotations

import pytest

from tests.vmrt.hal.local.vmvx.vmvx_testutil import (
    MODES,
    compile_vmvx,
    iree_run,
    needs_iree,
    status_code,
    vmrt_run,
)

pytestmark = needs_iree

OPS = [
    ("add", ["4xf32=1 2 3 4", "4xf32=10 -20 0.5 1e10"]),
    ("mul_i32", ["4x8xi32=[1 2 3 4 5 6 7 8][-1 -2 -3 -4 -5 -6 -7 -8][9 10 11 12 13 14 15 16]"
                 "[65536 65536 -65536 2147483647 0 1 2 3]", "4x8xi32=-7"]),
    ("matmul", ["8x16xf32=0.5", "16x4xf32=1.25"]),
    ("imatmul", ["5x7xi8=1 -2 3 -4 5 -6 7 8 -9 10 11 12 -13 14 15 16 17 -18 19 20 21 -22 23 24 "
                 "25 26 -27 28 29 30 31 -32 33 34 35",
                 "7x3xi8=-128 127 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "5x3xi32=100"]),
    ("dmatmul", ["5x9xf32=[1 2 3 4 5 6 7 8 9][0.5 1 1.5 2 2.5 3 3.5 4 4.5][9 8 7 6 5 4 3 2 1]"
                 "[0 0 1 0 0 1 0 0 1][-1 -2 -3 -4 -5 -6 -7 -8 -9]",
                 "9x3xf32=0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1 1.1 1.2 1.3 1.4 1.5 1.6 1.7 "
                 "1.8 1.9 2.0 2.1 2.2 2.3 2.4 2.5 2.6 2.7"]),
    ("reduce", ["4x8xf32=[0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8][1 2 3 4 5 6 7 8][-1 1 -1 1 -1 1 -1 1]"
                "[1e8 1 -1e8 1 0 0 0 0]"]),
    ("transpose", ["3x5xi16=[1 2 3 4 5][6 7 8 9 10][11 12 13 14 15]"]),
    ("bcast", ["3xf32=1 2 3", "2x3xf32=10 20 30 40 50 60"]),
    ("dyn", ["5xf32=0.1 0.2 0.3 0.4 -50", "5xf32=1"]),
    ("dyn", ["0xf32", "0xf32"]),
    ("conv", ["1x6x6x2xf32=0.5", "3x3x2x4xf32=0.25"]),
    ("scalar", ["4"]),
]

ELEMENTWISE = [
    ("fops", ["3x5xf32=1.5 -2 3.25 4 0.5 6 -7.75 8 9 10 11 12 13 14 15",
              "3x5xf32=0.3 2 -1 7 0.25 3 3 -2 4.5 1e-3 2 5 6 7 100"]),
    ("iops", ["3x5xi32=1 -2 3 400 -5 6 7 8 9 10 11 -12 13 14 2147483647",
              "3x5xi32=3 5 -2 7 2 3 3 -2 4 1 2 5 6 7 -1"]),
    ("shifts", ["6xi32=1 -1024 65535 0 -1 12345", "6xi32=1 3 4 31 33 -1"]),
    ("copy64", ["2x3xi64=1 2 3 4 5 -6"]),
    ("copy8", ["4x3xi8=1 2 3 4 5 6 7 8 9 10 11 12"]),
]

CASES = [(p, m, f, i) for p, cases in (("ops.mlir", OPS), ("elementwise.mlir", ELEMENTWISE))
         for m in MODES for f, i in cases]


@pytest.mark.parametrize("program,mode,fn,inputs", CASES,
                         ids=[f"{m}-{f}-{' '.join(i)[:40]}" for _p, m, f, i in CASES])
def test_vmvx_program_matches_iree(program, mode, fn, inputs):
    vmfb = compile_vmvx(program, mode)
    args = ["--device=local-sync", f"--module={vmfb}", f"--function={fn}",
            *[f"--input={i}" for i in inputs]]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref), err
    if rc:
        # e.g. the compiler's microkernel transposes read past their buffers:
        # both runtimes refuse them with the same status code
        assert status_code(err) == status_code(err_ref)
