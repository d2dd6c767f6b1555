"""The host-side hal module: buffer-view programs compiled host-only, run by
vmrt and by iree-run-module (whose hal module is the oracle)."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, status_head, vmrt_run
from vmrt.hal.buffer_view import BufferView
from vmrt.hal.element_types import element_type_code, element_type_name
from vmrt.modules.hal.inline import HalModule

pytestmark = needs_iree

CASES = [
    ("info", ["2x3xf32=1"]), ("info", ["7xi8=1"]), ("info", ["2x2x2xui16=3"]),
    ("info", ["4xsi64=1"]),
    ("sum", ["2x3xf32=1 2 3 4 5 6.5"]), ("sum", ["0xf32"]), ("sum", ["5xf32=1e30 1e30 -1e30 1 2"]),
    ("fill", ["4xi32=1 2 3 4", "9"]), ("fill", ["2x2xi32=[1 2][3 4]", "-1"]),
    ("fill", ["8xi8=1", "258"]),
    ("mk", ["4xf32=1 2 3 4"]), ("mk", ["2xf32=5 6"]), ("mk", ["1xf32=5"]),
    # a view smaller than its range is fine, a larger one OUT_OF_RANGE, a
    # range past the buffer an invalid subspan
    ("mkn", ["4xf32=1 2 3 4", "2", "12"]), ("mkn", ["4xf32=1 2 3 4", "0", "16"]),
    ("mkn", ["4xf32=1 2 3 4", "6", "12"]), ("mkn", ["4xf32=1 2 3 4", "3", "8"]),
    ("mkn", ["4xf32=1 2 3 4", "1", "20"]), ("mkn", ["4xf32=1 2 3 4", "4", "16"]),
    ("mklen", ["4xf32=1 2 3 4", "1", "4", "12"]), ("mklen", ["4xf32=1 2 3 4", "4", "0", "16"]),
    ("mklen", ["4xf32=1 2 3 4", "0", "8", "0"]),
]


@pytest.mark.parametrize("fn,inputs", CASES, ids=[f"{f}-{' '.join(i)}" for f, i in CASES])
def test_hal_programs_match_iree(compile_mlir, fn, inputs):
    vmfb = compile_mlir("hal_views.mlir")
    args = [f"--module={vmfb}", f"--function={fn}", *[f"--input={i}" for i in inputs]]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref)
    if rc:
        assert status_head(err).split(";")[0] == status_head(err_ref).split(";")[0]


@pytest.mark.parametrize("n,length", [(6, 12), (3, 8), (1, 20)])
def test_view_larger_than_range_has_irees_message(compile_mlir, n, length):
    # IREE: OUT_OF_RANGE "buffer view byte length 24 exceeds backing buffer
    # byte length 12" (vmrt said INVALID_ARGUMENT, and refused smaller views)
    vmfb = compile_mlir("hal_views.mlir")
    args = [f"--module={vmfb}", "--function=mkn", "--input=4xf32=1 2 3 4", f"--input={n}",
            f"--input={length}"]
    rc_ref, _, err_ref = iree_run(*args)
    rc, _, err = vmrt_run(*args)
    assert rc == rc_ref == 1
    assert status_head(err) == status_head(err_ref)
    assert status_head(err).startswith("OUT_OF_RANGE; ")


def test_dim_of_rank0_view_is_checked(compile_mlir):
    # IREE's hal.buffer_view.dim does not check the index (it returned 81 here);
    # vmrt reports OUT_OF_RANGE instead of reading past the shape
    vmfb = compile_mlir("hal_views.mlir")
    rc, out, err = vmrt_run(f"--module={vmfb}", "--function=info", "--input=i32=4")
    assert (rc, out) == (1, "EXEC @info\n")
    assert err.startswith("OUT_OF_RANGE; dimension index 0 out of bounds (rank 0)")


def test_hal_module_in_process(compile_mlir):
    vmfb = compile_mlir("hal_views.mlir")
    inst = vmrt.Instance()
    hal = HalModule(inst)
    prog = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [hal, prog]) as ctx:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        assert ctx.invoke("module.sum", [BufferView(a)]) == [66.0]
        assert ctx.invoke("module.info", [BufferView(a)]) == [2, 3, element_type_code("f32")]
        b = np.zeros(4, np.int32)
        out = ctx.invoke("module.fill", [BufferView(b), 77])[0]
        assert b.tolist() == [77, 0, 0, 0]          # the store reached the caller's array
        assert out.array is b or np.shares_memory(out.array, b)


def test_element_type_codes():
    assert element_type_code("f32") == 0x21000020 == 553648160   # value seen from iree
    for name in ("i8", "si32", "ui16", "f16", "f64", "i1", "bf16"):
        assert element_type_name(element_type_code(name)) == name
