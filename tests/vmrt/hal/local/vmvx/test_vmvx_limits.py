"""A context's budget and cancel reach vmvx dispatches (nested VM
contexts): their instructions are charged to the caller's budget and a
cancel of the caller stops them."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.local.vmvx.vmvx_testutil import compile_vmvx, needs_iree

pytestmark = needs_iree

A = np.ones((256, 256), np.float32)     # 256^3 multiply-adds in the Python VM: minutes


def test_budget_counts_vmvx_dispatch_instructions():
    """The matmul's own VM code is a few hundred instructions; its vmvx
    dispatch runs millions in a nested context, charged to the caller."""
    vmfb = compile_vmvx("slow_matmul.mlir")
    with vmrt.load(vmfb, budget=2_000_000) as prog:
        with pytest.raises(vmrt.BudgetExceeded) as e:
            prog.mm(A, A)
        assert e.value.code == vmrt.StatusCode.RESOURCE_EXHAUSTED
        assert prog.context.limits.executed >= 2_000_000


def test_cancel_stops_a_vmvx_dispatch():
    vmfb = compile_vmvx("slow_matmul.mlir")
    with vmrt.load(vmfb) as prog:
        box: list = []

        def run():
            try:
                box.append(prog.mm(A, A))
            except vmrt.VmError as e:
                box.append(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        time.sleep(3)                   # inside the dispatch's nested context
        assert prog.cancel(wait=30)
        t.join(60)
        assert not t.is_alive() and box and isinstance(box[0], vmrt.Cancelled), box
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(prog.small(x), x * 2)
