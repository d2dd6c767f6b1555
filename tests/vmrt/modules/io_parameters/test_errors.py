"""Bad parameter files and missing parameters end in vmrt's own error with
the status code iree-run-module gives for the same file, one line on
stderr, exit code 1; the message names the file, the key or the scope."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import iree_run, vmrt_run
from tests.vmrt.modules.io_parameters.conftest import VALUES
from tests.vmrt.modules.io_parameters.param_files import write_gguf, write_irpa, write_safetensors
from vmrt import ParameterIndex


def _run(vmfb, files, exe=None):
    args = ["--device=local-sync", f"--module={vmfb}", "--input=2x4xf32=0",
            *(f"--parameters={f}" for f in files)]
    return vmrt_run(args) if exe is None else iree_run(exe, args)


def _good(param_files, **replace):
    files = {"model": param_files["model.irpa"], "quant": param_files["quant.irpa"],
             "": param_files["splat.irpa"], **replace}
    return [f"{scope}={path}" if scope else str(path) for scope, path in files.items()]


def _bad_files(d, param_files):
    """name -> (scope it replaces, path, words the message must contain)."""
    model = param_files["model.irpa"].read_bytes()
    out = {}

    def add(name, scope, data, *words):
        path = d / name
        path.write_bytes(data)
        out[name] = (scope, path, words)

    add("truncated.irpa", "model", model[:100], "truncated", "truncated.irpa")
    add("magic.irpa", "model", b"XRPA" + model[4:], "magic", "magic.irpa")
    add("empty.irpa", "model", b"", "truncated", "empty.irpa")
    add("data_cut.irpa", "model", model[:460], "truncated", "data_cut.irpa")
    small = dict(VALUES["model"], w=VALUES["model"]["w"][:2])
    out["small.irpa"] = ("model", write_irpa(d / "small.irpa", small),
                         ("`w`", "out of bounds", "small.irpa"))
    missing = {k: v for k, v in VALUES["model"].items() if k != "h"}
    out["missing.irpa"] = ("model", write_irpa(d / "missing.irpa", missing),
                           ("'h'", "model", "missing.irpa"))
    gguf = write_gguf(d / "full.gguf", VALUES["model"]).read_bytes()
    add("truncated.gguf", "model", gguf[:200], "truncated", "truncated.gguf")
    add("version.gguf", "model", gguf[:4] + struct.pack("<I", 9) + gguf[8:], "version 9")
    st = write_safetensors(d / "full.safetensors", VALUES["model"]).read_bytes()
    add("json.safetensors", "model", st[:8] + b"X" + st[9:], "JSON", "json.safetensors")
    add("cut.safetensors", "model", st[:-4], "outside", "cut.safetensors")
    add("huge.safetensors", "model", struct.pack("<Q", 1 << 40) + st[8:], "header length")
    add("model.bin", "model", model, "format", "model.bin")
    out["absent.irpa"] = ("model", d / "absent.irpa", ("absent.irpa",))
    return out


@pytest.fixture(scope="module")
def bad(tmp_path_factory, param_files):
    return _bad_files(tmp_path_factory.mktemp("bad"), param_files)


CASES = ["truncated.irpa", "magic.irpa", "empty.irpa", "data_cut.irpa", "small.irpa",
         "missing.irpa", "truncated.gguf", "version.gguf", "json.safetensors",
         "cut.safetensors", "huge.safetensors", "model.bin", "absent.irpa"]


@pytest.mark.parametrize("case", CASES)
def test_bad_file(params_vmfb, param_files, iree_run_module, bad, case):
    scope, path, words = bad[case]
    files = _good(param_files, **{scope: path})
    ours = _run(params_vmfb(), files)
    assert ours.rc == 1 and ours.stdout == ""
    assert len(ours.stderr.splitlines()) == 1, ours.stderr
    for w in words:
        assert w in ours.stderr, (w, ours.stderr)
    theirs = _run(params_vmfb(), files, iree_run_module)
    assert theirs.rc != 0
    if case != "empty.irpa":      # IREE fails to map an empty file (INVALID_ARGUMENT)
        assert ours.status.split(";")[0] == theirs.status.split(";")[0], (ours, theirs)


def test_missing_scope_and_no_parameters(params_vmfb, param_files, iree_run_module):
    files = [f"model={param_files['model.irpa']}", str(param_files["splat.irpa"])]
    ours = _run(params_vmfb(), files)
    theirs = _run(params_vmfb(), files, iree_run_module)
    assert ours.rc == 1 and theirs.rc != 0
    assert ours.status.startswith("NOT_FOUND; no parameters registered for scope 'quant'")
    assert theirs.status.startswith("NOT_FOUND")
    none = _run(params_vmfb(), [])
    assert none.rc == 1 and "scope 'model'" in none.stderr


def test_cli_usage_errors(params_vmfb, param_files):
    r = vmrt_run([f"--module={params_vmfb()}", "--parameter_mode=mmap"])
    assert r.rc == 1 and "--parameter_mode= value 'mmap'" in r.stderr
    fifo = param_files["model.irpa"].parent / "fifo.irpa"
    if not fifo.exists():
        os.mkfifo(fifo)
    r = _run(params_vmfb(), _good(param_files, model=fifo))
    assert r.rc == 1 and "not a regular file" in r.stderr


def test_python_errors(params_vmfb, param_files, bad):
    with pytest.raises(vmrt.ParameterError, match="'h'") as e:
        vmrt.load(params_vmfb(), parameters=_good(param_files, model=bad["missing.irpa"][1]))
    assert e.value.code == vmrt.StatusCode.NOT_FOUND
    with pytest.raises(vmrt.ParameterError, match="magic") as e:
        ParameterIndex("model").load(bad["magic.irpa"][1])
    assert "magic.irpa" in str(e.value)
    with pytest.raises(vmrt.ParameterError, match="cannot use a int"):
        vmrt.load(params_vmfb(), parameters=[5])
    small = {"model": dict(VALUES["model"], b=np.zeros(2, np.float32)), "quant": VALUES["quant"]}
    with pytest.raises(vmrt.ParameterError, match=r"`b` range out of bounds") as e:
        vmrt.load(params_vmfb(), parameters=[small, {"": {"s": np.zeros(8, np.float32)}}])
    assert e.value.code == vmrt.StatusCode.OUT_OF_RANGE
