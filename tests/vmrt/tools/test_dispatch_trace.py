"""Dispatch tensor tracing: programs compiled with ``iree-compile
--iree-flow-trace-dispatch-tensors`` import ``hal.buffer_view.trace``.
``vmrt run`` prints the traces exactly as iree-run-module does (stdout and
stderr compared byte for byte), writes them as ``.npy`` files with
``--trace_dispatch_tensors=DIR``, and ``vmrt.load(...,
trace_dispatch_tensors=callback)`` hands them to Python; both give exactly
the tensors iree.runtime's ``HalModuleDebugSink`` receives."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import TOOLS_DATA, iree_run, vmrt_run
from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, require_tool
from tests.vmrt.tools.test_load_api import Compiler

TRACE = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         *IREE_TARGET_FLAGS["x86_64"], "--iree-flow-trace-dispatch-tensors"]

#: 1600 i32 elements: more than --output_max_element_count's 1024, which
#: the trace never elides
WIDE = """
func.func @wide(%a: tensor<40x40xi32>, %b: tensor<40x40xi32>) -> tensor<40x40xi32> {
  %0 = arith.muli %a, %b : tensor<40x40xi32>
  %1 = arith.addi %0, %a : tensor<40x40xi32>
  return %1 : tensor<40x40xi32>
}
"""

CHAIN_KEYS = [f"chain_dispatch_{n}::chain_dispatch_{n}_{op} {io}"
              for n, op in ((0, "matmul_16x16x32_f32"), (1, "matmul_16x16x16_f32"),
                            (2, "reduction_16x16_f32")) for io in ("inputs", "outputs")]


@pytest.fixture(scope="module")
def traced():
    compile_ = Compiler(require_tool("iree-compile", "iree-base-compiler"))
    return {"chain": compile_(TOOLS_DATA / "chain.mlir", TRACE, "chain-trace"),
            "wide": compile_(WIDE, TRACE, "wide-trace")}


def iree_traces(vmfb, fn, *args) -> list[tuple[str, list[np.ndarray]]]:
    """What iree.runtime's HalModuleDebugSink receives (the oracle)."""
    ir = pytest.importorskip("iree.runtime")
    got: list[tuple[str, list[np.ndarray]]] = []

    def sink(key, views):
        got.append((key, [np.array(v.map().asarray(
            v.shape, ir.HalElementType.map_to_dtype(v.element_type))) for v in views]))
    config = ir.Config("local-sync")
    hal = ir.create_hal_module(config.vm_instance, config.device,
                               debug_sink=ir.HalModuleDebugSink(sink))
    module = ir.VmModule.mmap(config.vm_instance, str(vmfb))
    ctx = ir.VmContext(config.vm_instance, modules=[hal, module])
    ir.FunctionInvoker(ctx, config.device, module.lookup_function(fn))(*args)
    return got


def test_cli_prints_like_iree_run_module(traced, chain_inputs, iree_run_module):
    args = ["--device=local-sync", f"--module={traced['chain']}", *chain_inputs[2]]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert theirs.rc == 0, theirs.stderr
    assert ours.rc == 0, ours.stderr
    assert [ln[4:-4] for ln in theirs.stderr.splitlines() if ln.startswith("===")] == CHAIN_KEYS
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr


def test_cli_trace_is_never_elided(traced, iree_run_module):
    a = " ".join(str(i % 97) for i in range(1600))
    args = ["--device=local-sync", f"--module={traced['wide']}", f"--input=40x40xi32={a}",
            f"--input=40x40xi32={a}"]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert theirs.rc == ours.rc == 0, (theirs.stderr, ours.stderr)
    assert "..." in ours.stdout                       # the result is elided ...
    assert "..." not in ours.stderr                   # ... the traces are not
    assert (ours.stdout, ours.stderr) == (theirs.stdout, theirs.stderr)


def test_cli_writes_npy_folder(traced, chain_inputs, tmp_path):
    a, b, inputs = chain_inputs
    folder = tmp_path / "deep" / "traces"          # created with its parents
    run = vmrt_run(["--device=local-sync", f"--module={traced['chain']}", *inputs,
                    f"--trace_dispatch_tensors={folder}"])
    assert run.rc == 0, run.stderr
    assert run.stderr.count("===") == 2 * len(CHAIN_KEYS)   # still printed, as IREE does
    want = iree_traces(traced["chain"], "chain", a, b)
    assert [k for k, _ in want] == CHAIN_KEYS
    names = []
    for n, (key, arrays) in enumerate(want):
        stem = f"{n:04d}_{key.replace('::', '__').replace(' ', '_')}"
        for i, arr in enumerate(arrays):
            names.append(f"{stem}_{i}.npy")
            got = np.load(folder / names[-1])
            assert got.dtype == arr.dtype and got.shape == arr.shape
            assert got.tobytes() == arr.tobytes()
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)
    assert names[0] == "0000_chain_dispatch_0__chain_dispatch_0_matmul_16x16x32_f32_inputs_0.npy"


def test_cli_unwritable_folder_is_one_error_line(traced, chain_inputs, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    run = vmrt_run(["--device=local-sync", f"--module={traced['chain']}", *chain_inputs[2],
                    f"--trace_dispatch_tensors={blocker / 'traces'}"])
    assert run.rc == 1
    assert run.stdout == ""                           # nothing ran: no EXEC line
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith("PERMISSION_DENIED; cannot write dispatch tensor traces to "
                                 f"folder '{blocker / 'traces'}'")
    assert blocker.read_text() == "not a folder\n"


def test_cli_empty_folder_value(traced, chain_inputs):
    run = vmrt_run([f"--module={traced['chain']}", *chain_inputs[2],
                    "--trace_dispatch_tensors="])
    assert run.rc == 1 and run.stdout == ""
    assert "trace folder is empty" in run.stderr


def test_load_callback_gets_what_iree_runtime_gets(traced, chain_inputs):
    a, b, _ = chain_inputs
    got: list = []
    with vmrt.load(traced["chain"], trace_dispatch_tensors=lambda k, v: got.append((k, v))) \
            as prog:
        result = prog.chain(a, b)
    want = iree_traces(traced["chain"], "chain", a, b)
    assert [k for k, _ in got] == [k for k, _ in want]
    for (_, ours), (_, theirs) in zip(got, want):
        assert len(ours) == len(theirs)
        for x, y in zip(ours, theirs):
            assert isinstance(x, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape
            assert x.tobytes() == y.tobytes()
    assert result.tobytes() == got[-1][1][0].tobytes()    # the last output is the result


def test_load_default_prints_to_stderr(traced, chain_inputs, capfd):
    a, b, _ = chain_inputs
    with vmrt.load(traced["chain"]) as prog:
        prog.chain(a, b)
    err = capfd.readouterr().err
    assert [ln[4:-4] for ln in err.splitlines() if ln.startswith("===")] == CHAIN_KEYS
    with vmrt.load(traced["chain"], trace_dispatch_tensors=False) as prog:
        prog.chain(a, b)
    assert capfd.readouterr().err == ""


def test_load_folder_and_errors(traced, chain_inputs, tmp_path):
    a, b, _ = chain_inputs
    with vmrt.load(traced["chain"], trace_dispatch_tensors=tmp_path / "t") as prog:
        prog.chain(a, b)
        prog.chain(a, b)                   # the count goes on across calls
    files = sorted(p.name for p in (tmp_path / "t").iterdir())
    per_call = sum(len(v) for _, v in iree_traces(traced["chain"], "chain", a, b))
    assert len(files) == 2 * per_call and files[-1].startswith("0011_chain_dispatch_2_")
    with pytest.raises(vmrt.UsageError, match="must be None, False, a folder or a callable"):
        vmrt.load(traced["chain"], trace_dispatch_tensors=3)
    (tmp_path / "f").write_text("")
    with pytest.raises(vmrt.UsageError, match="cannot write dispatch tensor traces"):
        vmrt.load(traced["chain"], trace_dispatch_tensors=tmp_path / "f" / "sub")

    def boom(key, arrays):
        raise ValueError("nope")
    with vmrt.load(traced["chain"], trace_dispatch_tensors=boom) as prog, \
            pytest.raises(vmrt.VmError, match="callback failed on 'chain_dispatch_0::.*"
                                              "ValueError: nope"):
        prog.chain(a, b)
