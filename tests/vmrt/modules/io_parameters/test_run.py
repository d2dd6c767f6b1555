"""``vmrt run --parameters``: a program whose globals are parameters runs
like under ``iree-run-module`` with the same files and flags (the same
output text), for every file format, on the host CPU and emulated aarch64;
``vmrt.load(parameters=...)`` gives what numpy and iree.runtime give."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import iree_run, vmrt_run
from tests.vmrt.modules.io_parameters.conftest import SPLAT, VALUES, expected

X = np.arange(8, dtype=np.float32).reshape(2, 4) / 4 - 1
INPUT = "2x4xf32=" + " ".join(str(float(v)) for v in X.reshape(-1))

#: --parameters sets: (scope, file name in param_files)
SETS = {
    "irpa+safetensors": [("model", "model.irpa"), ("quant", "quant.safetensors"),
                         ("", "splat.irpa")],
    "gguf+irpa": [("model", "model.gguf"), ("quant", "quant.irpa"), ("", "splat.irpa")],
    "safetensors+irpa": [("model", "model.safetensors"), ("quant", "quant.irpa"),
                         ("", "splat.irpa")],
}


def _flags(files, which: str) -> list[str]:
    return [f"--parameters={scope + '=' if scope else ''}{files[name]}"
            for scope, name in SETS[which]]


@pytest.mark.parametrize("which", sorted(SETS))
def test_cli_matches_iree_run_module(params_vmfb, param_files, iree_run_module, which):
    args = ["--device=local-sync", f"--module={params_vmfb()}", f"--input={INPUT}",
            *_flags(param_files, which)]
    ours, theirs = vmrt_run(args), iree_run(iree_run_module, args)
    assert theirs.rc == 0, theirs.stderr
    assert (ours.rc, ours.stderr) == (0, "")
    assert ours.stdout == theirs.stdout
    assert "4xi8=" not in ours.stdout and "6xi8=" in ours.stdout


@pytest.mark.parametrize(("arch", "mode"), [("aarch64", "file"), ("aarch64", "preload"),
                                           ("vmvx", "file")])
def test_other_targets_and_modes(params_vmfb, param_files, iree_run_module, emulation, arch,
                                 mode):
    """The aarch64 build under emulation prints what iree-run-module prints
    for the host build (it cannot run aarch64 code here), in both
    --parameter_mode values; the vmvx build what it prints for the same
    vmvx build (vmvx rounds the matmul differently)."""
    flags = [f"--input={INPUT}", *_flags(param_files, "irpa+safetensors"),
             f"--parameter_mode={mode}"]
    ours = vmrt_run(["--device=local-sync", f"--module={params_vmfb(arch)}", *flags])
    theirs = iree_run(iree_run_module, [
        "--device=local-sync", f"--module={params_vmfb('vmvx' if arch == 'vmvx' else 'x86_64')}",
        *flags])
    assert theirs.rc == 0, theirs.stderr
    assert (ours.rc, ours.stderr, ours.stdout) == (0, "", theirs.stdout)


def _check(results, want) -> None:
    assert len(results) == len(want)
    for got, exp in zip(results, want):
        assert got.dtype == exp.dtype and got.shape == exp.shape
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)


def test_load_api_files(params_vmfb, param_files):
    params = {"model": param_files["model.gguf"], "quant": [param_files["quant.irpa"]],
              "": param_files["splat.irpa"]}
    with vmrt.load(params_vmfb(), parameters=params) as prog:
        _check(prog.main(X), expected(X))
    flags_form = [f"model={param_files['model.safetensors']}",
                  ("quant", param_files["quant.safetensors"]), param_files["splat.irpa"]]
    with vmrt.load(params_vmfb(), parameters=flags_form, parameter_mode="preload") as prog:
        _check(prog.main(X), expected(X))


def test_load_api_arrays_match_iree_runtime(params_vmfb):
    """In-memory parameters (numpy arrays, a splat) give what iree.runtime
    gives for the same parameter indexes."""
    from vmrt.modules.io_parameters import ParameterIndex
    rt = pytest.importorskip("iree.runtime")
    empty = ParameterIndex("")
    empty.add_splat("s", 32, SPLAT.tobytes())
    with vmrt.load(params_vmfb(), parameters=[VALUES, empty]) as prog:
        ours = prog.main(X)
    _check(ours, expected(X))

    inst, dev = rt.VmInstance(), rt.get_device("local-sync")
    providers = []
    for scope, arrays in VALUES.items():
        idx = rt.ParameterIndex()
        for key, arr in arrays.items():
            idx.add_buffer(key, arr.tobytes())
        providers.append(idx.create_provider(scope=scope))
    idx = rt.ParameterIndex()
    idx.add_splat("s", SPLAT.tobytes(), 32)
    providers.append(idx.create_provider(scope=""))
    modules = [rt.create_hal_module(inst, dev), rt.create_io_parameters_module(inst, *providers),
               rt.VmModule.mmap(inst, str(params_vmfb()))]
    ctx = rt.SystemContext(vm_modules=modules, config=rt.Config(device=dev))
    theirs = [np.asarray(r) for r in ctx.modules.module.main(X)]
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_help_lists_the_flags():
    out = vmrt_run(["--help"]).stdout
    assert "--parameters=[SCOPE=]FILE" in out and "--parameter_mode=file|preload" in out


CHECK_PROGRAM = """
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<2xf32>
func.func @w_is_loaded() {
  %w = util.global.load @w : tensor<2xf32>
  check.expect_almost_eq_const(%w, dense<[1.5, -2.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}
"""


@pytest.mark.parametrize(("value", "rc"), [(-2.0, 0), (-3.0, 1)])
def test_vmrt_test_takes_parameters(compile_mlir, tmp_path, value, rc):
    import io

    from tests.vmrt.modules.io_parameters.conftest import VMVX
    from tests.vmrt.modules.io_parameters.param_files import write_safetensors
    from vmrt.tools.main import main
    vmfb = compile_mlir(CHECK_PROGRAM, *VMVX, name="params_check")
    st = write_safetensors(tmp_path / "w.safetensors", {"w": np.array([1.5, value], np.float32)})
    out, err = io.StringIO(), io.StringIO()
    code = main(["test", "--device=local-sync", f"--module={vmfb}",
                 f"--parameters=model={st}"], stdout=out, stderr=err)
    assert code == rc, err.getvalue()
    assert ("[  PASSED  ] 1 test." in out.getvalue()) == (rc == 0)


def test_provider_indexes_files_once_per_run(param_files):
    """``vmrt test`` makes a context per test: the files are indexed once."""
    from vmrt.modules.io_parameters import PROVIDER
    from vmrt.tools.module_specs import RunOptions
    options = RunOptions(parameters=[f"model={param_files['model.irpa']}"])
    first, second = PROVIDER.create(vmrt.Instance(), options), PROVIDER.create(vmrt.Instance(),
                                                                                options)
    assert first is not second and first.index("model") is second.index("model")
    assert sorted(first.index("model").entries) == ["b", "h", "w"]
