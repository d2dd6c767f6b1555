"""The inline HAL (``hal_inline`` + ``hal_loader``): programs compiled with
``--iree-execution-model=inline-static`` (vmvx-inline) and ``inline-dynamic``
(embedded ELF executables, llvm-cpu) run in ``vmrt run``, ``vmrt test`` and
``vmrt.load``.  The oracle is the pip ``iree-run-module`` on the same
program and inputs (stdout and exit code byte for byte); the programs built
for the other five CPUs, which only vmrt runs (emulated), must give the host
build's results; bad input ends with IREE's status code."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import vmrt
from tests.vmrt.modules.inline_testutil import iree_cli, status, vmrt_cli
from tests.vmrt.modules.inline_testutil import run_args as _args

MODELS = ("static", "dynamic")
FOREIGN = ("aarch64", "riscv64", "arm", "i386", "riscv32")

_ROWS = " ".join(str(i) for i in range(1, 33))
#: (program, function, --input values): every op family of programs/inline_*.mlir
CASES = [
    ("inline_elementwise", "add", ["4xf32=1,2,3,4", "4xf32=10,20,30,40"]),
    ("inline_elementwise", "fma_relu", ["2x8xf32=1 -2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",
                                         "2x8xf32=0.5", "2x8xf32=-3"]),
    ("inline_elementwise", "int_ops", ["6xi32=1,-2,3,4,5,6", "6xi32=6,5,-4,3,2,1"]),
    ("inline_matmul", "matmul", [f"4x8xf32={_ROWS}", "8x3xf32=0.5",
                                 "4x3xf32=1 2 3 4 5 6 7 8 9 10 11 12"]),
    ("inline_reduce", "row_sum", ["3x5xf32=1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"]),
    ("inline_reduce", "max_all", ["4x6xi32=1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 -20 "
                                  "21 22 23 4"]),
    ("inline_multi", "scaled", ["4xf32=1,1,1,1"]),
    ("inline_multi", "pipeline", ["4xf32=1,2,3,4", "4xf32=1,1,1,1"]),
    ("inline_dynamic", "axpy", ["f32=2", "5xf32=1,2,3,4,5", "5xf32=10,10,10,10,10"]),
    ("inline_dynamic", "axpy", ["f32=-1", "1xf32=3", "1xf32=4"]),
]
IDS = [f"{p.removeprefix('inline_')}-{f}-{i}" for i, (p, f, _x) in enumerate(CASES)]


# -- the oracle: iree-run-module on the host's builds -------------------------------------
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("program", "function", "inputs"), CASES, ids=IDS)
def test_run_matches_iree_run_module(inline, iree_run_module, model, program, function, inputs):
    args = _args(inline(program, model), function, inputs)
    want = iree_cli(iree_run_module, args)
    assert want[0] == 0, want[2]
    got = vmrt_cli("run", args)
    assert got[:2] == want[:2], got[2]


def test_imports_are_the_inline_hal(inline):
    """What the pip compiler emits: hal_inline only for inline-static,
    hal_inline and hal_loader >= 1 for inline-dynamic; no ``hal``."""
    from vmrt.bytecode.module import BytecodeModule
    from vmrt.vm.instance import Instance

    def deps(vmfb: Path) -> dict[str, int]:
        inst = Instance()
        for prov in vmrt.tools.module_specs.builtin_providers():
            prov.register_types(inst)
        return {d.name: d.minimum_version
                for d in BytecodeModule(inst, vmfb.read_bytes()).dependencies()}
    assert deps(inline("inline_matmul", "static")) == {"hal_inline": 0}
    assert deps(inline("inline_matmul", "dynamic")) == {"hal_inline": 0, "hal_loader": 1}


def test_inline_modules_export_what_iree_does():
    """The export tables of IREE's hal_inline (version 0) and hal_loader (version 1)."""
    from vmrt.modules.hal_inline import HalInlineModule
    from vmrt.modules.hal_loader import HalLoaderModule
    inline = {e.name: e.cconv for e in HalInlineModule().exports}
    assert inline == {
        "buffer.allocate": "0iI_rr", "buffer.allocate.initialized": "0irII_rr",
        "buffer.length": "0r_I", "buffer.storage": "0r_r", "buffer.subspan": "0rII_r",
        "buffer.wrap": "0rII_r", "buffer_view.assert": "0rriiCID_v",
        "buffer_view.buffer": "0r_r", "buffer_view.create": "0rIIiiCID_r",
        "buffer_view.dim": "0ri_I", "buffer_view.element_type": "0r_i",
        "buffer_view.encoding_type": "0r_i", "buffer_view.rank": "0r_i",
        "buffer_view.trace": "0rCrD_v", "device.query.i64": "0rr_iI"}
    loader = {e.name: e.cconv for e in HalLoaderModule().exports}
    assert loader == {"executable.dispatch": "0rIiiiCiDCrIID_v", "executable.load": "0rrr_r",
                      "executable.lookup.function": "0rr_I",
                      "executable.query_support": "0r_i"}
    assert (HalInlineModule.version, HalLoaderModule.version) == (0, 1)


# -- the other CPUs: only vmrt runs them (emulated) -----------------------------------------
@pytest.mark.parametrize("arch", FOREIGN)
def test_foreign_cpus_match_the_host(inline, emulation, arch):
    """Every program built inline-dynamic for ``arch`` gives, in one vmrt run
    per function, exactly the host build's output (which the test above
    holds to iree-run-module's); iree-run-module refuses these programs."""
    for program, function, inputs in CASES:
        host = vmrt_cli("run", _args(inline(program, "dynamic"), function, inputs))
        got = vmrt_cli("run", _args(inline(program, "dynamic", arch), function, inputs))
        assert host[0] == 0, host[2]
        assert got[:2] == host[:2], (program, function, got[2])


def test_iree_run_module_refuses_a_foreign_program(inline, iree_run_module):
    rc, _out, err = iree_cli(iree_run_module, _args(inline("inline_dynamic", "dynamic",
                                                           "aarch64"), "axpy", CASES[-1][2]))
    assert rc == 1 and "UNAVAILABLE" in err and "none of the executable binaries" in err


# -- vmrt.load --------------------------------------------------------------------------
@pytest.mark.parametrize("model", [*MODELS, "aarch64"])
def test_load_returns_what_iree_run_module_writes(inline, iree_run_module, model, tmp_path):
    """``vmrt.load(program)[fn](numpy...)`` equals the .npy files
    iree-run-module writes for the host build (iree.runtime has no inline
    HAL: its create_hal_module makes the full ``hal`` only)."""
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, (4, 8)).astype(np.float32)
    b = rng.integers(-8, 8, (8, 3)).astype(np.float32)
    bias = rng.integers(-8, 8, (4, 3)).astype(np.float32)
    for name, arr in (("a", a), ("b", b), ("bias", bias)):
        np.save(tmp_path / f"{name}.npy", arr)
    host = inline("inline_matmul", "dynamic")
    rc, _out, err = iree_cli(iree_run_module, _args(host, "matmul", ["@a.npy", "@b.npy",
                                                                     "@bias.npy"],
                                                    ("--output=@out.npy",)), cwd=tmp_path)
    assert rc == 0, err
    want = np.load(tmp_path / "out.npy")
    vmfb = inline("inline_matmul", *(("dynamic", "aarch64") if model == "aarch64" else (model,)))
    with vmrt.load(vmfb) as prog:       # (closed: its executables are freed in order)
        got = prog["matmul"](a, b, bias)
    assert got.dtype == np.float32 and got.shape == (4, 3)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, a @ b + bias)
    with vmrt.load(inline("inline_multi", model if model in MODELS else "dynamic")) as prog:
        x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
        d, n = prog["pipeline"](x, y)
    np.testing.assert_array_equal(d, x * [1, 2, 3, 4] - y)
    np.testing.assert_array_equal(n, -d)


def test_iree_runtime_has_no_inline_hal(inline):
    """Why the oracle of vmrt.load is iree-run-module: iree.runtime (3.13)
    registers the full ``hal`` module only, so its load of an inline
    program fails to link."""
    rt = pytest.importorskip("iree.runtime")
    for model, missing in (("static", "hal_inline"), ("dynamic", "hal_loader")):
        with pytest.raises(ValueError, match=f"required module '{missing}' not registered"):
            rt.load_vm_flatbuffer_file(str(inline("inline_elementwise", model)),
                                       driver="local-sync")


# -- vmrt test --------------------------------------------------------------------------
@pytest.mark.parametrize("model", MODELS)
def test_vmrt_test_runs_check_functions(inline, model):
    """Each test function in its own context, as iree-check-module runs them:
    two pass, the one whose expectation is false fails, the run exits 1."""
    rc, out, _err = vmrt_cli("test", [f"--module={inline('inline_check', model)}"])
    assert rc == 1
    assert "[       OK ] module.square_ok" in out and "[       OK ] module.sum_ok" in out
    assert "[  FAILED  ] module.double_wrong" in out
    assert "[  PASSED  ] 2 tests." in out and "1 FAILED TEST" in out


# -- executable plugins -----------------------------------------------------------------
@pytest.mark.parametrize("function", ["plugin_mul", "mixed_invocation"])
def test_plugin_imports_match_iree_run_module(inline, iree_run_module, plugins, function):
    """The sample's dispatches that call into our standalone plugin, loaded by
    hal_loader with ``--executable_plugin``, natively."""
    so = plugins.path("standalone", "x86_64")
    args = _args(inline("simple_mul", "dynamic"), function, ["8xf32=2", "8xf32=4"],
                 (f"--executable_plugin={so}",))
    want = iree_cli(iree_run_module, args)
    assert want[0] == 0, want[2]
    assert vmrt_cli("run", args)[:2] == want[:2]


def test_plugin_imports_emulated(inline, plugins, emulation):
    """The aarch64 build with the aarch64 plugin (both emulated) gives the
    host build's output."""
    inputs = ["8xf32=2", "8xf32=4"]
    host = vmrt_cli("run", _args(inline("simple_mul", "dynamic"), "plugin_mul", inputs,
                                 (f"--executable_plugin={plugins.path('standalone', 'x86_64')}",)))
    got = vmrt_cli("run", _args(inline("simple_mul", "dynamic", "aarch64"), "plugin_mul", inputs,
                                (f"--executable_plugin={plugins.path('standalone', 'aarch64')}",)))
    assert host[0] == 0 and got[:2] == host[:2], got[2]


def test_missing_plugin_import_fails_like_iree(inline, iree_run_module):
    args = _args(inline("simple_mul", "dynamic"), "plugin_mul", ["8xf32=2", "8xf32=4"])
    want, got = iree_cli(iree_run_module, args), vmrt_cli("run", args)
    assert want[0] != 0 and got[0] != 0
    assert status(got[2]).split(";")[0] == status(want[2]).split(";")[0]


@pytest.mark.parametrize("build", [("static",), ("dynamic",), ("dynamic", "riscv64")])
def test_dynamic_sizes_in_one_context(inline, build, request):
    """One program called with vectors of several lengths (a grid and
    bindings of another size each time: the prepared dispatches of the
    native build are per grid) computes each as numpy does."""
    if len(build) > 1:
        request.getfixturevalue("emulation")
    rng = np.random.default_rng(3)
    with vmrt.load(inline("inline_dynamic", *build)) as prog:
        for n in (1, 5, 1000, 5, 4097):
            x = rng.integers(-100, 100, n).astype(np.float32)
            y = rng.integers(-100, 100, n).astype(np.float32)
            got = prog["axpy"](np.float32(3), x, y)
            np.testing.assert_array_equal(got, 3 * x + y)


def test_dispatch_tools_see_inline_dispatches(inline, tmp_path):
    """``--dump_dispatches`` writes for an inline-dynamic program exactly what
    it writes for the same source compiled for the full HAL (local-sync):
    each dispatch's bindings before and after, its description and its
    executable."""
    from tests.vmrt.iree_tools import IREE_TARGET_FLAGS
    src = inline.source("inline_elementwise")
    full = inline.compile(src, ["--iree-hal-target-device=local",
                                "--iree-hal-local-target-device-backends=llvm-cpu",
                                *IREE_TARGET_FLAGS["x86_64"]], "inline_elementwise-full")
    inputs = CASES[2][2]
    dumps = {}
    for name, vmfb, extra in (("inline", inline("inline_elementwise", "dynamic"), ()),
                              ("full", full, ("--device=local-sync",))):
        out = tmp_path / name
        rc, _out, err = vmrt_cli("run", _args(vmfb, "int_ops", inputs,
                                              (*extra, f"--dump_dispatches={out}")))
        assert rc == 0, err
        dumps[name] = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*"))
                       if p.is_file()}
    assert len(dumps["inline"]) >= 2 * 5
    assert dumps["inline"] == dumps["full"]


@pytest.mark.parametrize(("model", "allowed"), [
    ("static", {"vmrt.modules.hal_inline.provider"}),
    ("dynamic", {"elfkit.fatelf", "vmrt.modules.hal_inline.provider",
                 "vmrt.modules.hal_loader.provider"})])
def test_inline_runs_start_light(inline, model, allowed):
    """An inline run imports no numpy, typing, emulator or translator beyond
    what test_startup_imports allows a host-only run (and, to load the
    native executable, the FatELF reader; the providers of the modules the
    program imports), once the program is translated."""
    import os
    import sys

    from tests.vmrt.iree_tools import REPO
    from tests.vmrt.tools.test_startup_imports import HEAVY, RUN, TRANSLATOR
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    args = _args(inline("inline_elementwise", model), "add", CASES[0][2])
    imported: list[str] = []
    for _ in range(2):                  # the second run finds the translation cached
        proc = subprocess.run([sys.executable, "-c", RUN.format(heavy=HEAVY), "run", *args],
                              capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 0, proc.stderr
        imported = proc.stdout.rpartition("IMPORTED")[2].split()
    assert set(imported) - allowed == set(), imported
    assert not set(TRANSLATOR) & set(imported)


@pytest.mark.parametrize("build", [("static",), ("dynamic",), ("dynamic", "aarch64")])
def test_one_program_called_from_threads(inline, build, request):
    """Four threads calling one loaded inline program at once (shared
    executables, prepared dispatches and loader) each get their own right
    answers."""
    from concurrent.futures import ThreadPoolExecutor
    if len(build) > 1:
        request.getfixturevalue("emulation")
    rng = np.random.default_rng(11)
    jobs = [tuple(rng.integers(-9, 9, shape).astype(np.float32)
                  for shape in ((4, 8), (8, 3), (4, 3))) for _ in range(16)]
    with vmrt.load(inline("inline_matmul", *build)) as prog, ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: prog["matmul"](*job), jobs))
    for (a, b, bias), got in zip(jobs, results):
        np.testing.assert_array_equal(got, a @ b + bias)
