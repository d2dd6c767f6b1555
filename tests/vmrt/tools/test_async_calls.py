"""Functions compiled with ``iree-compile --iree-execution-model=async-external``
(``iree.abi.model = "coarse-fences"``: a wait and a signal fence after the
arguments).  ``vmrt run`` calls them with just the user's inputs, as
iree-run-module does (compared byte for byte); ``vmrt.load`` too (results
compared with iree.runtime called with its own fences), or with the
caller's :class:`vmrt.Fence` objects; ``vmrt test`` runs async test
functions (iree-check-module refuses them)."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import TOOLS_DATA, iree_run, vmrt_run
from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, require_tool
from tests.vmrt.tools.test_load_api import Compiler
from vmrt.tools.test import run_tests

CPU = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
       *IREE_TARGET_FLAGS["x86_64"]]
ASYNC = [*CPU, "--iree-execution-model=async-external"]

CHECKS = """
func.func @ok() {
  %a = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = arith.addf %a, %a : tensor<2xf32>
  check.expect_almost_eq_const(%b, dense<[2.0, 4.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}
func.func @bad() {
  %a = util.unfoldable_constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = arith.addf %a, %a : tensor<2xf32>
  check.expect_almost_eq_const(%b, dense<[2.0, 5.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}
"""


@pytest.fixture(scope="module")
def programs():
    compile_ = Compiler(require_tool("iree-compile", "iree-base-compiler"))
    return {"chain": compile_(TOOLS_DATA / "chain.mlir", ASYNC, "chain-async"),
            "checks": compile_(CHECKS, ASYNC, "checks-async"),
            "checks_sync": compile_(CHECKS, CPU, "checks-sync")}


def iree_fenced(vmfb, fn, *arrays) -> np.ndarray:
    """iree.runtime's result when called with its own wait and signal fences."""
    ir = pytest.importorskip("iree.runtime")
    config = ir.Config("local-sync")
    inst, dev = config.vm_instance, config.device
    module = ir.VmModule.mmap(inst, str(vmfb))
    ctx = ir.VmContext(inst, modules=[ir.create_hal_module(inst, dev), module])
    args = ir.VmVariantList(len(arrays) + 2)
    for a in arrays:
        args.push_ref(dev.allocator.allocate_buffer_copy(
            memory_type=ir.MemoryType.DEVICE_LOCAL, allowed_usage=ir.BufferUsage.DEFAULT,
            device=dev, buffer=a, element_type=ir.HalElementType.FLOAT_32))
    signal = ir.HalFence.create_at(dev.create_semaphore(0), 1)
    args.push_ref(ir.HalFence(0))
    args.push_ref(signal)
    rets = ir.VmVariantList(1)
    ctx.invoke(module.lookup_function(fn), args, rets)
    assert signal.wait()
    bv = rets.get_as_object(0, ir.HalBufferView)
    return np.array(bv.map().asarray(bv.shape, ir.HalElementType.map_to_dtype(bv.element_type)))


def test_model_is_in_the_reflection(programs):
    with vmrt.load(programs["chain"]) as prog:
        assert prog.module.function_attrs("chain")["iree.abi.model"] == "coarse-fences"
        assert prog.chain.cconv == "0rrrr_r" and prog.chain.fenced


@pytest.mark.parametrize("extra", [[], ["--expected_output=16xf32=0"]])
def test_run_like_iree_run_module(programs, chain_inputs, iree_run_module, extra):
    args = ["--device=local-sync", f"--module={programs['chain']}", *chain_inputs[2], *extra]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert (ours.rc, ours.stdout) == (theirs.rc, theirs.stdout), (ours.stderr, theirs.stderr)
    assert ours.rc == (1 if extra else 0)


def test_compare_with_async_programs(programs, chain_inputs, iree_run_module):
    # --compare_with runs both programs as vmrt run does: the fences are added
    args = ["--device=local-sync", f"--module={programs['chain']}", *chain_inputs[2]]
    same = vmrt_run([*args, f"--compare_with={programs['chain']}"])
    theirs = iree_run(iree_run_module, args)
    assert (same.rc, same.stdout) == (0, theirs.stdout), same.stderr


@pytest.mark.parametrize("count", [1, 3])
def test_run_wrong_input_count_like_iree(programs, chain_inputs, iree_run_module, count):
    inputs = (chain_inputs[2] * 2)[:count]
    args = ["--device=local-sync", f"--module={programs['chain']}", *inputs]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert ours.rc == theirs.rc == 1
    assert ours.stdout == theirs.stdout
    assert f"expected 4 arguments but passed {count + 2}" in ours.stderr
    assert ours.status == theirs.status


def test_load_matches_iree_runtime(programs, chain_inputs):
    a, b, _ = chain_inputs
    want = iree_fenced(programs["chain"], "chain", a, b)
    with vmrt.load(programs["chain"]) as prog:
        got = prog.chain(a, b)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        wait, signal = vmrt.Fence(), vmrt.Fence()
        wait.signal()
        assert not signal.signaled
        again = prog.chain(a, b, wait, signal)
        assert signal.signaled and again.tobytes() == want.tobytes()
        signal = vmrt.Fence()
        assert prog.chain(a, b, None, signal).tobytes() == want.tobytes()
        signal.wait()                                   # signalled: returns


def test_load_fence_errors(programs, chain_inputs):
    a, b, _ = chain_inputs
    with vmrt.load(programs["chain"]) as prog:
        with pytest.raises(vmrt.HalError, match=r"the signal fence of 'chain' \(coarse-fences "
                                                r"ABI\) is a str, expected a vmrt.Fence"):
            prog.chain(a, b, None, "fence")
        with pytest.raises(vmrt.HalError, match="the wait fence of 'chain' .* is a int"):
            prog.chain(a, b, 7, vmrt.Fence())
        with pytest.raises(vmrt.UsageError, match=r"takes 2 arguments \(then, optionally, a "
                                                  r"wait and a signal vmrt.Fence\) but 3 were"):
            prog.chain(a, b, None)
        with pytest.raises(vmrt.HalError, match="waits on a fence that nothing will signal") \
                as info:
            prog.chain(a, b, vmrt.Fence(), vmrt.Fence())         # a pending wait fence
        assert info.value.code == vmrt.StatusCode.DEADLINE_EXCEEDED
        failed = vmrt.Fence()
        failed.fail(int(vmrt.StatusCode.ABORTED))
        with pytest.raises(vmrt.HalError) as info:
            prog.chain(a, b, failed, vmrt.Fence())
        assert info.value.code == vmrt.StatusCode.ABORTED
        assert prog.chain(a, b).shape == (16,)                  # still usable
    pending = vmrt.Fence()
    with pytest.raises(vmrt.HalError, match="not signalled and nothing will signal it"):
        pending.wait()


def _scrub(text: str) -> str:
    return re.sub(r"\(\d+ ms( total)?\)", "(N ms)", text)


def test_vmrt_test_runs_async_functions(programs):
    outs = {}
    for key in ("checks", "checks_sync"):
        buf = io.StringIO()
        run = run_tests(programs[key], device="local-sync", stdout=buf)
        assert [(r.name, r.passed) for r in run.results] == [("ok", True), ("bad", False)]
        outs[key] = _scrub(buf.getvalue())
    assert outs["checks"] == outs["checks_sync"]        # same output as the sync build
    assert "index 1 as the lhs value 4 differs from the rhs value 5" in outs["checks"]
