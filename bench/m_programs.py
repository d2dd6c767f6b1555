"""Measures 13 and 14: whole programs through vmrt against IREE's runtime.

13. Steady state through the public ``vmrt.load`` API vs ``iree.runtime``
    (``load_vm_flatbuffer_file(..., driver="local-sync")``), module and
    context made once, numpy in and numpy out, interleaved: an MNIST MLP
    (784 → 128 ReLU → 10 softmax, fixed random weights compiled in as
    constants, batch 1; the shape of IREE's own MNIST sample), a 4-element
    f32 add, and a 512x512 f32 matmul.  Goals (issue 15): ≤ 2×, ≤ 3×, ≤ 1.1×.
14. Whole command, start-up included: ``vmrt run --device=local-sync`` vs the
    pip ``iree-run-module`` with the same flags on the MNIST program (input
    from a ``.npy`` file; goal ≤ 2×), and on a trivial host-only program
    (``loop.vmfb`` with n=1; goal ≤ 1.5×).
15 (emulated CPUs vs IREE's runtime for that CPU under qemu-user) is in
m_qemu.py; it reuses this file's MNIST program and inputs.
"""
from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path

from . import _build
from ._timing import REPO, Config, Row, bytecode_env, compare, compare_commands, fmt_time, na_row
from .m_vmrt import cpu_vmfb, matmul_vmfb, which_tool

MNIST_HIDDEN = 128


def _hex(a) -> str:
    return '"0x' + a.astype("<f4").tobytes().hex().upper() + '"'


def mnist_mlir() -> str:
    """IREE's MNIST sample's shape (a Keras MLP) with fixed random weights."""
    import numpy as np
    rng = np.random.default_rng(15)
    h = MNIST_HIDDEN
    w1 = (rng.standard_normal((784, h)) * 0.05).astype(np.float32)
    b1 = (rng.standard_normal((1, h)) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((h, 10)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal((1, 10)) * 0.1).astype(np.float32)
    return f"""\
func.func @predict(%x: tensor<1x784xf32>) -> tensor<1x10xf32> {{
  %w1 = arith.constant dense<{_hex(w1)}> : tensor<784x{h}xf32>
  %b1 = arith.constant dense<{_hex(b1)}> : tensor<1x{h}xf32>
  %w2 = arith.constant dense<{_hex(w2)}> : tensor<{h}x10xf32>
  %b2 = arith.constant dense<{_hex(b2)}> : tensor<1x10xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x{h}xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<1x{h}xf32>) -> tensor<1x{h}xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<1x784xf32>, tensor<784x{h}xf32>)
      outs(%f1 : tensor<1x{h}xf32>) -> tensor<1x{h}xf32>
  %a1 = arith.addf %m1, %b1 : tensor<1x{h}xf32>
  %r1 = arith.maximumf %a1, %f1 : tensor<1x{h}xf32>
  %e2 = tensor.empty() : tensor<1x10xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x10xf32>) -> tensor<1x10xf32>
  %m2 = linalg.matmul ins(%r1, %w2 : tensor<1x{h}xf32>, tensor<{h}x10xf32>)
      outs(%f2 : tensor<1x10xf32>) -> tensor<1x10xf32>
  %l = arith.addf %m2, %b2 : tensor<1x10xf32>
  %p = linalg.softmax dimension(1) ins(%l : tensor<1x10xf32>)
      outs(%e2 : tensor<1x10xf32>) -> tensor<1x10xf32>
  return %p : tensor<1x10xf32>
}}
"""


ADD_MLIR = """\
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.addf %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def _inputs():
    import numpy as np
    rng = np.random.default_rng(1)
    mat = [rng.standard_normal((512, 512)).astype(np.float32) for _ in range(2)]
    return {"mnist": [rng.random((1, 784), np.float32)],
            "add": [np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32)],
            "matmul": mat}


# ---------------------------------------------------------------------------
# 13. steady state through vmrt.load vs iree.runtime
# ---------------------------------------------------------------------------

STEADY = (("13a", "mnist", "predict", "MNIST MLP (784→128→10, batch 1)", 2.0),
          ("13b", "add", "add", "4-element f32 add", 3.0),
          ("13c", "matmul", "matmul", "512x512 f32 matmul", 1.1))


def _program(work: Path, key: str) -> Path:
    if key == "mnist":
        return cpu_vmfb(work, "mnist", mnist_mlir())
    if key == "add":
        return cpu_vmfb(work, "add4", ADD_MLIR)
    return matmul_vmfb(work)


def _host(fn, args):
    import numpy as np
    return np.asarray(fn(*args))


def steady_state(cfg: Config) -> list[Row]:
    rows = []
    inputs = None
    for rid, key, fn_name, what, limit in STEADY:
        name = f"vmrt.load vs iree.runtime, steady state: {what}"
        goal = f"≤ {limit:g}× peer time"
        try:
            import iree.runtime as rt
            import numpy as np

            import vmrt
            vmfb = _program(cfg.work, key)
            inputs = inputs or _inputs()
        except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
            rows.append(na_row(rid, name, goal, str(e).splitlines()[0]))
            continue
        args = inputs[key]
        with vmrt.load(vmfb, device="local-sync") as prog:
            ours_fn = prog[fn_name]
            peer_fn = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")[fn_name]
            ref = np.asarray(peer_fn(*args))
            if not np.array_equal(ours_fn(*args), ref):
                raise AssertionError(f"{key}: vmrt and iree.runtime results differ")
            o, p = compare(partial(ours_fn, *args), partial(_host, peer_fn, args), cfg,
                           repeat=max(cfg.repeat, 5))
        ratio = o / p
        rows.append(Row(rid, name, fmt_time(o), fmt_time(p), ratio, goal, ratio <= limit,
                        note=("x86_64 llvm-cpu, local-sync; numpy in, numpy out (peer: "
                              "np.asarray of the result); results identical bit for bit"),
                        data={"ours_s": o, "peer_s": p}))
    return rows


# ---------------------------------------------------------------------------
# 14. whole command vs iree-run-module
# ---------------------------------------------------------------------------

def plain_python() -> str:
    """The interpreter whole commands run under: a plain Python's start-up
    (:func:`bench.m_start.clean_python`: this machine's site ``.pth`` hooks do
    not run; here one imports certifi at every start, ~60 ms, which would be
    charged to ours against a native peer (row 15) or added to both sides,
    flattering the ratio (rows 10, 14))."""
    from .m_start import clean_python
    return clean_python(REPO / "build" / "bench")


def ours_cmd() -> list[str]:
    """``vmrt run`` as pip's console script, run by :func:`plain_python`."""
    py = plain_python()
    return [py, str(Path(py).parent / "vmrt"), "run"]


def python_tool(exe: str) -> list[str]:
    """A Python console script (pip's ``iree-run-module`` wrapper, say) run by
    :func:`plain_python`, as ours is."""
    return [plain_python(), exe]


def mnist_input(work: Path) -> Path:
    import numpy as np
    path = work / "data" / "mnist_input.npy"
    x = _inputs()["mnist"][0]
    if not path.is_file() or not np.array_equal(np.load(path), x):
        np.save(path, x)
    return path


def matmul_inputs(work: Path) -> list[Path]:
    """Row 13c's random matmul operands as .npy files (for row 15)."""
    import numpy as np
    paths = []
    for k, x in enumerate(_inputs()["matmul"]):
        path = work / "data" / f"matmul512_input{k}.npy"
        if not path.is_file() or not np.array_equal(np.load(path), x):
            np.save(path, x)
        paths.append(path)
    return paths


def whole_command(cfg: Config) -> list[Row]:
    iree_exe = which_tool("iree-run-module")
    cases = (("14a", "MNIST MLP, --device=local-sync", 2.0),
             ("14b", "trivial host-only program (loop.vmfb, n=1)", 1.5))
    if not iree_exe:
        return [na_row(rid, f"vmrt run vs iree-run-module, whole command: {what}",
                       f"≤ {lim:g}× peer time", "iree-run-module is not installed")
                for rid, what, lim in cases]
    rows = []
    env = bytecode_env()
    for rid, what, limit in cases:
        name = f"vmrt run vs iree-run-module, whole command: {what}"
        goal = f"≤ {limit:g}× peer time"
        try:
            if rid == "14a":
                args = [f"--module={cpu_vmfb(cfg.work, 'mnist', mnist_mlir())}",
                        "--device=local-sync", "--function=predict",
                        f"--input=@{mnist_input(cfg.work)}"]
            else:
                args = [f"--module={_build.loop_vmfb(cfg.work)}", "--function=loop",
                        "--input=1"]
        except Exception as e:  # noqa: BLE001
            rows.append(na_row(rid, name, goal, str(e).splitlines()[0]))
            continue
        cmds = {"ours": ours_cmd() + args, "peer": python_tool(iree_exe) + args}
        outs = [subprocess.run(c, capture_output=True, text=True, env=env) for c in cmds.values()]
        if outs[0].returncode != 0 or outs[0].stdout != outs[1].stdout:
            rows.append(na_row(rid, name, goal, "failed: outputs differ: "
                               f"{outs[0].stdout[-200:]!r}{outs[0].stderr[-200:]!r} vs "
                               f"{outs[1].stdout[-200:]!r}"))
            continue
        res = compare_commands(cmds, cfg, env=env, repeat=max(5, cfg.repeat // 2), warmup=1)
        o, p = res["ours"], res["peer"]
        rows.append(Row(rid, name, fmt_time(o), fmt_time(p), o / p, goal, o / p <= limit,
                        note="spawn to exit, bytecode caching on, identical output; both under "
                        "a plain interpreter (no site .pth hooks)",
                        data={"ours_s": o, "peer_s": p}))
    return rows
