"""Measures 9, 10 and 11: vmrt.

9.  Native dispatch on 2 host threads vs 1: an x86_64 dispatch library
    compiled by the pip ``iree-compile`` (llvm-cpu, dumped with
    ``--iree-hal-dump-executable-binaries-to``) whose ``@work`` export runs,
    per workgroup, a dependent float recurrence of ``iters`` steps; 64
    workgroups; ``Executable.dispatch(..., threads=1)`` vs ``threads=2``
    (wall time of the dispatch call).  Goal: speed-up ≥ 1.8×.
10. ``vmrt run`` vs ``iree-run-module`` on the same loop-heavy ``.vmfb``
    (host-only: an i64 multiply-add-xor recurrence of n iterations), whole
    command wall time (start-up included), bytecode caching on; the ratio is
    the per-iteration cost (t(n) - t(1)) / n of both.  Goal (issue 15): ≤ 20×.
11. ``vmrt.load`` vs ``iree.runtime`` on a program of 50 small dispatches
    (module and context made once, numpy in and out): time per dispatch.
    Goal (issue 15): ≤ 5×.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import _build
from ._timing import Config, Row, bytecode_env, compare_commands, compare_many, fmt_time, na_row

WORK_MLIR = """\
// Compute-bound dispatch for the threading benchmark: workgroup i runs a
// dependent float recurrence of `iters` steps from x[i] and stores it to out[i].
module @benchwork {
  stream.executable private @kernels {
    stream.executable.export public @work workgroups(%n: index) -> (index, index, index) {
      %one = arith.constant 1 : index
      stream.return %n, %one, %one : index, index, index
    }
    builtin.module {
      func.func @work(%bx: !stream.binding, %bo: !stream.binding, %iters: index, %n: index) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %half = arith.constant 0.5 : f32
        %wg = stream.dispatch.workgroup.id[0] : index
        %x = stream.binding.subspan %bx[%c0] : !stream.binding -> memref<?xf32>{%n}
        %o = stream.binding.subspan %bo[%c0] : !stream.binding -> memref<?xf32>{%n}
        %xv = memref.load %x[%wg] : memref<?xf32>
        %r = scf.for %i = %c0 to %iters step %c1 iter_args(%acc = %xv) -> f32 {
          %m = arith.mulf %acc, %half : f32
          %a = arith.addf %m, %xv : f32
          scf.yield %a : f32
        }
        memref.store %r, %o[%wg] : memref<?xf32>
        return
      }
    }
  }
  func.func @work(%x: tensor<?xf32>, %iters: index) -> tensor<?xf32> {
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?xf32>
    %r = flow.dispatch @kernels::@work[%n](%x, %iters, %n)
        : (tensor<?xf32>{%n}, index, index) -> tensor<?xf32>{%n}
    return %r : tensor<?xf32>
  }
}
"""


def which_tool(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


def dispatch_library(work: Path) -> Path:
    d = work / "data" / "dispatch"
    src = d / "work.mlir"
    lib = d / "bin" / "benchwork_kernels_embedded_elf_x86_64.so"
    if lib.is_file() and src.is_file() and src.read_text() == WORK_MLIR:
        return lib
    compiler = which_tool("iree-compile")
    if not compiler:
        raise _build.BuildError("iree-compile is not installed")
    if d.exists():
        shutil.rmtree(d)
    (d / "bin").mkdir(parents=True)
    tmp = d / "work.mlir.tmp"
    tmp.write_text(WORK_MLIR)
    p = subprocess.run([compiler, str(tmp), "--iree-hal-target-device=local",
                        "--iree-hal-local-target-device-backends=llvm-cpu",
                        "--iree-llvmcpu-target-triple=x86_64-pc-linux-elf",
                        "--iree-llvmcpu-target-cpu=generic",
                        f"--iree-hal-dump-executable-binaries-to={d / 'bin'}",
                        "-o", str(d / "work.vmfb")], capture_output=True, text=True)
    if p.returncode != 0 or not lib.is_file():
        raise _build.BuildError(f"iree-compile of the dispatch benchmark "
                                f"failed:\n{p.stderr[-2000:]}")
    tmp.replace(src)
    return lib


def dispatch_threads(cfg: Config) -> list[Row]:
    goal = "≥ 1.8× speed-up"
    name = "native dispatch, 2 threads vs 1 (64 workgroups)"
    try:
        import numpy as np

        from vmrt.hal.local.executable import Executable
    except Exception as e:  # noqa: BLE001
        return [na_row("9", name, goal, f"vmrt.hal.local.executable does not import: {e}")]
    try:
        lib = dispatch_library(cfg.work)
    except Exception as e:  # noqa: BLE001
        return [na_row("9", name, goal, str(e).splitlines()[0])]
    n = 64
    iters = 100_000 if cfg.quick else 1_000_000
    x = np.full(n, 1.0, np.float32)
    consts = [iters & 0xFFFFFFFF, iters >> 32, n, 0]
    with Executable.load(lib) as exe:
        outs = {1: np.zeros(n, np.float32), 2: np.zeros(n, np.float32)}

        def run(t: int):
            return lambda: exe.dispatch("work", n, [x, outs[t]], consts, threads=t)
        res = compare_many({"1": run(1), "2": run(2)}, cfg, repeat=max(cfg.repeat, 5))
        if not np.array_equal(outs[1], outs[2]) or not np.isfinite(outs[1]).all():
            raise AssertionError("threaded dispatch disagrees with single-threaded")
    speedup = res["1"] / res["2"]
    peer = _ctypes_threads(cfg, res["1"])
    loadavg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return [Row("9", name, f"{speedup:.2f}× ({fmt_time(res['1'])} → {fmt_time(res['2'])})",
                f"{peer:.2f}× (bare ctypes, 2 threads)" if peer else "n/a",
                speedup, goal, speedup >= 1.8,
                note=(f"Executable.dispatch(threads=1|2), {iters} dependent steps per workgroup; "
                      f"peer: the same amount of native work (kernels.spin) called through bare "
                      f"ctypes from 1 vs 2 Python threads, i.e. the speed-up this machine "
                      f"allowed at that moment (1-minute load average {loadavg:.2f} on "
                      f"{os.cpu_count()} cores)"),
                data={"t1_s": res["1"], "t2_s": res["2"], "iters": iters,
                      "peer_speedup": peer, "loadavg": loadavg})]


def _ctypes_threads(cfg: Config, seconds: float) -> float | None:
    """Speed-up of 2 threads over 1 for native work through bare ctypes
    (the GIL is released during the call): the machine's ceiling right now."""
    import ctypes
    import threading

    import elfkit
    try:
        m = elfkit.load(_build.plugin(cfg.work, "kernels", "x86_64"), backend="native")
    except Exception:  # noqa: BLE001
        return None
    try:
        spin = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64)(m.exports["spin"])
        t0 = time.perf_counter()
        spin(10_000_000)
        rate = 10_000_000 / max(time.perf_counter() - t0, 1e-9)
        n = max(1_000_000, int(rate * seconds / 2))       # each half ~ seconds/2

        def one():
            spin(n)
            spin(n)

        def two():
            ts = [threading.Thread(target=spin, args=(n,)) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        r = compare_many({"1": one, "2": two}, cfg, repeat=max(cfg.repeat, 5))
        return r["1"] / r["2"]
    finally:
        m.close()


def interpreter(cfg: Config) -> list[Row]:
    name = "vmrt run vs iree-run-module, loop.vmfb"
    iree_exe = which_tool("iree-run-module")
    if not iree_exe:
        return [na_row("10", name, "≤ 20× peer time", "iree-run-module is not installed")]
    try:
        vmfb = _build.loop_vmfb(cfg.work)
    except Exception as e:  # noqa: BLE001
        return [na_row("10", name, "≤ 20× peer time", str(e).splitlines()[0])]
    from .m_programs import ours_cmd as run_cmd
    from .m_programs import python_tool
    ours_cmd = run_cmd()
    n = 200_000 if cfg.quick else 2_000_000

    def cmds(k: int) -> dict[str, list[str]]:
        args = [f"--module={vmfb}", "--function=loop", f"--input={k}"]
        return {"ours": ours_cmd + args, "peer": python_tool(iree_exe) + args}
    # same result from both (checked once, untimed)
    outs = [subprocess.run(c, capture_output=True, text=True, env=bytecode_env())
            for c in cmds(1000).values()]
    if outs[0].returncode != 0:
        return [na_row("10", name, "≤ 20× peer time",
                       f"failed: vmrt run: {outs[0].stderr.strip()[-200:]}")]
    if outs[0].stdout != outs[1].stdout:
        return [na_row("10", name, "≤ 20× peer time",
                       f"failed: outputs differ: {outs[0].stdout!r} vs {outs[1].stdout!r}")]
    env = bytecode_env()
    repeat = 3 if cfg.quick else 5
    # t(n) and t(1) of both sides round-robin in one series, so other jobs on
    # the machine weigh on the four alike
    every = {f"{side}_{k}": c for k in (n, 1) for side, c in cmds(k).items()}
    t = compare_commands(every, cfg, env=env, repeat=repeat, warmup=1)
    big = {"ours": t[f"ours_{n}"], "peer": t[f"peer_{n}"]}
    one = {"ours": t["ours_1"], "peer": t["peer_1"]}
    o, p = big["ours"], big["peer"]
    if p - one["peer"] < 0.1 * one["peer"]:
        return [na_row("10", name, "≤ 20× peer time",
                       f"not measurable in this run: iree-run-module took {fmt_time(p)} at "
                       f"n={n:,} and {fmt_time(one['peer'])} at n=1, so its loop was lost in "
                       "the start-up noise (other jobs on the machine); run it again")]
    so = max(o - one["ours"], 1e-9) / n
    sp = (p - one["peer"]) / n
    ratio = so / sp
    return [Row("10", f"{name} (n={n:,} iterations), per loop iteration",
                f"{fmt_time(so)} ({fmt_time(o)} whole)", f"{fmt_time(sp)} ({fmt_time(p)} whole)",
                ratio, "≤ 20× peer time", ratio <= 20,
                note=(f"whole command; per iteration (t(n)-t(1))/n: {fmt_time(so)} vs "
                      f"{fmt_time(sp)} ({so / sp:.0f}×); start-up t(1): "
                      f"{fmt_time(one['ours'])} vs {fmt_time(one['peer'])}"),
                data={"ours_s": o, "peer_s": p, "n": n, "ours_iter_s": so, "peer_iter_s": sp,
                      "ours_start_s": one["ours"], "peer_start_s": one["peer"]})]


# ---------------------------------------------------------------------------
# 11. vmrt.load steady state vs iree.runtime (per dispatch)
# ---------------------------------------------------------------------------

CHAIN_DISPATCHES = 50


def chain_mlir(n: int) -> str:
    """``n`` small elementwise dispatches kept apart by optimization barriers."""
    lines = ["func.func @chain(%x: tensor<16xf32>) -> tensor<16xf32> {",
             "  %c = arith.constant dense<1.5> : tensor<16xf32>"]
    prev = "%x"
    for i in range(n):
        op = "arith.addf" if i % 2 == 0 else "arith.mulf"
        lines.append(f"  %v{i} = {op} {prev}, %c : tensor<16xf32>")
        lines.append(f"  %b{i} = util.optimization_barrier %v{i} : tensor<16xf32>")
        prev = f"%b{i}"
    lines += [f"  return {prev} : tensor<16xf32>", "}"]
    return "\n".join(lines) + "\n"


def cpu_vmfb(work: Path, name: str, text: str, triple: str = "x86_64-pc-linux-elf") -> Path:
    """``text`` compiled for the llvm-cpu local device of ``triple`` (cached in
    ``work/data/<name>.vmfb`` while the source is unchanged)."""
    src = work / "data" / f"{name}.mlir"
    out = src.with_suffix(".vmfb")
    if out.is_file() and src.is_file() and src.read_text() == text:
        return out
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    compiler = which_tool("iree-compile")
    if not compiler:
        raise _build.BuildError("iree-compile not found (pip install iree-base-compiler)")
    proc = subprocess.run([compiler, "--iree-hal-target-device=local",
                           "--iree-hal-local-target-device-backends=llvm-cpu",
                           f"--iree-llvmcpu-target-triple={triple}",
                           "--iree-llvmcpu-target-cpu=generic", str(src), "-o", str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise _build.BuildError(f"iree-compile {name}.mlir: {proc.stderr.strip()[-300:]}")
    return out


def chain_vmfb(work: Path, n: int = CHAIN_DISPATCHES) -> Path:
    """The chain program of ``n`` dispatches (row 11's has 50; the
    per-dispatch plot uses several)."""
    return cpu_vmfb(work, "chain" if n == CHAIN_DISPATCHES else f"chain{n}", chain_mlir(n))


def load_api(cfg: Config) -> list[Row]:
    """The same program through ``vmrt.load`` and ``iree.runtime``, module
    and context made once, numpy in and out: time per call / 50 dispatches."""
    name = f"vmrt.load vs iree.runtime, {CHAIN_DISPATCHES}-dispatch program, per dispatch"
    goal = "≤ 5×"
    try:
        import iree.runtime as rt
        import numpy as np

        import vmrt
        vmfb = chain_vmfb(cfg.work)
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("11", name, goal, str(e).splitlines()[0])]
    x = np.arange(16, dtype=np.float32)
    prog = vmrt.load(vmfb)
    theirs = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")
    ours_fn, peer_fn = prog["chain"], theirs["chain"]
    np.testing.assert_allclose(ours_fn(x), np.asarray(peer_fn(x)), rtol=1e-6)
    res = compare_many({"ours": lambda: ours_fn(x), "peer": lambda: peer_fn(x)}, cfg,
                       number=3 if cfg.quick else 20)
    prog.close()
    o, p = res["ours"] / CHAIN_DISPATCHES, res["peer"] / CHAIN_DISPATCHES
    ratio = o / p
    return [Row("11", name, fmt_time(o), fmt_time(p), ratio, goal, ratio <= 5,
                note=(f"x86_64 llvm-cpu, local-sync, {CHAIN_DISPATCHES} dispatches of 16 "
                      f"floats per call; whole call {fmt_time(res['ours'])} vs "
                      f"{fmt_time(res['peer'])}"),
                data={"ours_s": o, "peer_s": p})]


# ---------------------------------------------------------------------------
# 12. local-task vs local-sync (worker threads per dispatch)
# ---------------------------------------------------------------------------

MATMUL_N = 512
MATMUL_MLIR = f"""\
func.func @matmul(%a: tensor<{MATMUL_N}x{MATMUL_N}xf32>, %b: tensor<{MATMUL_N}x{MATMUL_N}xf32>)
    -> tensor<{MATMUL_N}x{MATMUL_N}xf32> {{
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{MATMUL_N}x{MATMUL_N}xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<{MATMUL_N}x{MATMUL_N}xf32>)
      -> tensor<{MATMUL_N}x{MATMUL_N}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{MATMUL_N}x{MATMUL_N}xf32>,
      tensor<{MATMUL_N}x{MATMUL_N}xf32>) outs(%f : tensor<{MATMUL_N}x{MATMUL_N}xf32>)
      -> tensor<{MATMUL_N}x{MATMUL_N}xf32>
  return %r : tensor<{MATMUL_N}x{MATMUL_N}xf32>
}}
"""


def matmul_vmfb(work: Path) -> Path:
    return cpu_vmfb(work, "matmul512", MATMUL_MLIR)


def local_task(cfg: Config) -> list[Row]:
    """One 512x512 f32 matmul through ``vmrt.load`` on ``local-task`` vs
    ``local-sync`` (speed-up); the peer is iree.runtime's own speed-up."""
    name = f"vmrt.load local-task vs local-sync, {MATMUL_N}x{MATMUL_N} matmul"
    goal = "≥ 1.8× speed-up"
    try:
        import numpy as np

        import vmrt
        vmfb = matmul_vmfb(cfg.work)
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("12", name, goal, str(e).splitlines()[0])]
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((MATMUL_N, MATMUL_N), np.float32) for _ in range(2))
    progs = {d: vmrt.load(vmfb, device=d) for d in ("local-sync", "local-task")}
    try:
        outs = {d: p["matmul"](a, b) for d, p in progs.items()}
        if outs["local-sync"].tobytes() != outs["local-task"].tobytes():
            raise AssertionError("local-task result differs from local-sync")
        fns = {d: (lambda p=p: p["matmul"](a, b)) for d, p in progs.items()}
        res = compare_many(fns, cfg, repeat=max(cfg.repeat, 5))
    finally:
        for p in progs.values():
            p.close()
    speedup = res["local-sync"] / res["local-task"]
    peer = _iree_task_speedup(vmfb, a, b, cfg)
    return [Row("12", name, f"{speedup:.2f}× ({fmt_time(res['local-sync'])} → "
                f"{fmt_time(res['local-task'])})",
                f"{peer:.2f}× (iree.runtime)" if peer else "n/a", speedup, goal,
                speedup >= 1.8,
                note=(f"same program and inputs, bit-identical results; {os.cpu_count()} "
                      f"cores; peer: iree.runtime local-sync time / local-task time"),
                data={"sync_s": res["local-sync"], "task_s": res["local-task"],
                      "peer_speedup": peer})]


def _iree_task_speedup(vmfb: Path, a, b, cfg: Config) -> float | None:
    try:
        import iree.runtime as rt
        mods = {d: rt.load_vm_flatbuffer_file(str(vmfb), driver=d)
                for d in ("local-sync", "local-task")}
        fns = {d: (lambda m=m: m["matmul"](a, b).to_host()) for d, m in mods.items()}
        r = compare_many(fns, cfg, repeat=max(cfg.repeat, 5))
        return r["local-sync"] / r["local-task"]
    except Exception:  # noqa: BLE001 - the peer is optional
        return None
