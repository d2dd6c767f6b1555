"""The real IREE runtime as the oracle: ``iree-run-module`` (pip
iree-base-runtime) runs the same compiled programs with our plugins
(``--executable_plugin=`` a ``.sos`` packed by ``elfkit fatelf pack``, or
the host system plugin), and vmrt's own path must agree with it."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from vmrt.hal.local.executable import Executable
from vmrt.hal.local.plugins.manager import PluginManager


def run_module(exe, vmfb, function, inputs, plugins=(), outputs=None, cwd=None):
    cmd = [exe, "--device=local-sync", f"--module={vmfb}", f"--function={function}",
           *(f"--executable_plugin={p}" for p in plugins), *(f"--input={i}" for i in inputs),
           *(f"--output={o}" for o in (outputs or []))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd)
    return proc


def index(n):
    return [n & 0xFFFFFFFF, n >> 32]


def test_iree_run_module_standalone_sos(iree, iree_run_module, standalone_sos):
    """The sample's documented output, with our standalone plugin packed for
    three CPUs by `elfkit fatelf pack`."""
    prog = iree.compile("simple_mul", "x86_64")
    proc = run_module(iree_run_module, prog.vmfb, "mixed_invocation", ["8xf32=2", "8xf32=4"],
                      [standalone_sos])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "EXEC @mixed_invocation"
    assert lines[-1] == "8xf32=12 12 12 12 12 12 12 12"


def test_iree_run_module_system_plugin(iree, iree_run_module, system_plugin):
    prog = iree.compile("simple_mul", "x86_64")
    proc = run_module(iree_run_module, prog.vmfb, "mixed_invocation", ["8xf32=2", "8xf32=4"],
                      [system_plugin])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "EXEC @mixed_invocation"
    assert lines[1].startswith("processor_id=")
    assert lines[2].startswith("processor_data[0]=")
    assert lines[3:11] == [f"mul[0:{i}](2 * 4 = 8)" for i in range(8)]
    assert lines[11:] == ["result[0]: hal.buffer_view", "8xf32=12 12 12 12 12 12 12 12"]


def test_iree_run_module_without_plugin_fails(iree, iree_run_module):
    prog = iree.compile("simple_mul", "x86_64")
    proc = run_module(iree_run_module, prog.vmfb, "mixed_invocation", ["8xf32=2", "8xf32=4"])
    assert proc.returncode != 0


@pytest.mark.parametrize("n", [8, 130, 257])
def test_vmrt_matches_iree_run_module(iree, iree_run_module, standalone_sos, tmp_path, n):
    """plugin_mul through iree-run-module (the multiply happens in our plugin
    under IREE's loader) == tiled_mul dispatched by vmrt with the same plugin."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    prog = iree.compile("simple_mul", "x86_64")
    proc = run_module(iree_run_module, prog.vmfb, "plugin_mul", ["@a.npy", "@b.npy"],
                      [standalone_sos], outputs=["@out.npy"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    want = np.load(tmp_path / "out.npy")
    with PluginManager() as mgr:
        mgr.register(standalone_sos)
        exe = Executable.load(prog.library, plugins=mgr)
        out = np.zeros(n, np.float32)
        exe.dispatch("tiled_mul", (n + 63) // 64, [a, b, out], index(n))
        exe.close()
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out, a * b)


def test_vmrt_emulated_matches_iree_run_module(iree, iree_run_module, standalone_sos, emulation,
                                               tmp_path):
    """The aarch64 and riscv64 builds of the same program, run by vmrt under
    emulation with the aarch64/riscv64 slices of the .sos, agree with IREE
    running the x86_64 build natively."""
    n = 200
    rng = np.random.default_rng(7)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    proc = run_module(iree_run_module, iree.compile("simple_mul", "x86_64").vmfb, "plugin_mul",
                      ["@a.npy", "@b.npy"], [standalone_sos], outputs=["@out.npy"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    want = np.load(tmp_path / "out.npy")
    with PluginManager() as mgr:
        mgr.register(standalone_sos)
        for arch in ("aarch64", "riscv64"):
            exe = Executable.load(iree.compile("simple_mul", arch).library, plugins=mgr)
            assert exe.backend == "emulated"
            out = np.zeros(n, np.float32)
            exe.dispatch("tiled_mul", 4, [a, b, out], index(n))
            exe.close()
            np.testing.assert_array_equal(out, want)


def test_plugin_order_matches_iree(iree, iree_run_module, variants, sos):
    """Two plugins providing the same import: IREE asks the last flag first;
    vmrt's manager, given the same order, picks the same plugin."""
    prog = iree.compile("simple_mul", "x86_64")
    x10 = sos([variants.path("x86_64", factor=10.0, name="x10")], "x10.sos")
    x100 = sos([variants.path("x86_64", factor=100.0, name="x100")], "x100.sos")
    for order, expect in (((x10, x100), 804), ((x100, x10), 84)):
        proc = run_module(iree_run_module, prog.vmfb, "mixed_invocation",
                          ["8xf32=2", "8xf32=4"], order)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[-1] == "8xf32=" + " ".join([str(expect)] * 8)
        with PluginManager() as mgr:
            for p in order:
                mgr.register(p)
            exe = Executable.load(prog.library, plugins=mgr)
            two = np.full(8, 2, np.float32)
            four = np.full(8, 4, np.float32)
            out = np.zeros(8, np.float32)
            exe.dispatch("tiled_mul", 1, [two, four, out], index(8))
            exe.close()
        # the vmfb adds rhs after the dispatch; the dispatch alone is the product
        assert (out + four == expect).all()


def test_codegen_matches_iree_run_module(iree, iree_run_module, tmp_path):
    """Plain generated code: IREE's runtime and vmrt agree bit for bit
    (this pins the push-constant order and the workgroup grid)."""
    rng = np.random.default_rng(3)
    n = 77
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    prog = iree.compile("codegen", "x86_64")
    proc = run_module(iree_run_module, prog.vmfb, "saxpy", ["@x.npy", "@y.npy", "1.75"],
                      outputs=["@out.npy"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    want = np.load(tmp_path / "out.npy")
    out = np.zeros(n, np.float32)
    with Executable.load(prog.library) as exe:
        exe.dispatch("saxpy", (n + 31) // 32, [x, y, out], [1.75, *index(n)])
    np.testing.assert_array_equal(out, want)

    a = rng.standard_normal((6, 19)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    proc = run_module(iree_run_module, prog.vmfb, "grid2d", ["@a.npy"], outputs=["@g.npy"],
                      cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = np.zeros_like(a)
    with Executable.load(prog.library) as exe:
        exe.dispatch("grid2d", (3, 2, 1), [a, out], [*index(6), *index(19)])
    np.testing.assert_array_equal(out, np.load(tmp_path / "g.npy"))
