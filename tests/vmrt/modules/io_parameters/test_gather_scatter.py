"""``io_parameters.gather`` and ``.scatter`` (which the compiler emits only
in parameter-encoding flows) from a hand-written VM program: gather reads
what iree-run-module reads; scatter into a file is refused as IREE refuses
it, into arrays given from Python it writes them."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import iree_run, vmrt_run
from tests.vmrt.modules.io_parameters.conftest import VALUES
from vmrt.modules.io_parameters import ParameterIndex

PROGRAM = Path(__file__).resolve().parent / "programs" / "gather_scatter.mlir"


@pytest.fixture(scope="module")
def vmfb(hal_compile):
    return hal_compile(str(PROGRAM))


def _model() -> np.ndarray:
    m = VALUES["model"]
    return np.concatenate([m["w"].reshape(-1), m["b"]])


@pytest.mark.parametrize("name", ["model.irpa", "model.safetensors", "model.gguf"])
def test_gather_matches_iree_run_module(vmfb, param_files, iree_run_module, name):
    args = ["--device=local-sync", f"--module={vmfb}", "--function=gather",
            f"--parameters=model={param_files[name]}"]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert theirs.rc == 0, theirs.stderr
    assert (ours.rc, ours.stderr, ours.stdout) == (0, "", theirs.stdout)


def test_scatter_into_a_file_is_refused(vmfb, param_files, iree_run_module):
    args = ["--device=local-sync", f"--module={vmfb}", "--function=scatter",
            "--input=3xf32=7 8 9", f"--parameters=model={param_files['model.irpa']}"]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert ours.rc == 1 and theirs.rc != 0
    assert ours.status.split(";")[0] == theirs.status.split(";")[0] == "PERMISSION_DENIED"
    assert "`b`" in ours.stderr and "model.irpa" in ours.stderr


def test_scatter_then_gather_arrays(vmfb):
    """scatter writes into the caller's array; a later gather sees it."""
    arrays = {k: v.copy() for k, v in VALUES["model"].items()}
    with vmrt.load(vmfb, parameters={"model": arrays}) as prog:
        np.testing.assert_array_equal(prog.gather(), _model())
        new = np.array([7, 8, 9], np.float32)
        prog.scatter(new)
        np.testing.assert_array_equal(arrays["b"], new)
        np.testing.assert_array_equal(prog.gather()[12:], new)


def test_scatter_into_a_splat_or_read_only_array(vmfb):
    idx = ParameterIndex("model", {"w": VALUES["model"]["w"]})
    idx.add_splat("b", 12, b"\x01\x00\x00\x00")
    with vmrt.load(vmfb, parameters=idx) as prog:
        got = prog.gather()
        np.testing.assert_array_equal(got[:12], VALUES["model"]["w"].reshape(-1))
        np.testing.assert_array_equal(got[12:].view(np.int32), [1, 1, 1])
        with pytest.raises(vmrt.ParameterError, match="splat") as e:
            prog.scatter(np.zeros(3, np.float32))
        assert e.value.code == vmrt.StatusCode.PERMISSION_DENIED
    frozen = VALUES["model"]["b"].copy()
    frozen.flags.writeable = False
    with vmrt.load(vmfb, parameters={"model": dict(VALUES["model"], b=frozen)}) as prog, \
            pytest.raises(vmrt.ParameterError, match="read-only"):
        prog.scatter(np.zeros(3, np.float32))


def test_gather_span_past_the_parameter(vmfb):
    short = dict(VALUES["model"], b=np.zeros(2, np.float32))
    with vmrt.load(vmfb, parameters={"model": short}) as prog:
        with pytest.raises(vmrt.ParameterError, match=r"`b` range out of bounds \(offset=0, "
                           r"length=12, size=8\)") as e:
            prog.gather()
        assert e.value.code == vmrt.StatusCode.OUT_OF_RANGE

