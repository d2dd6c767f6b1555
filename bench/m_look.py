"""Measures 21 and 22: ``vmrt benchmark`` against ``iree-benchmark-module``,
and what ``--profile`` costs.

The corpus (programs the bench already builds, x86_64 llvm-cpu,
``--device=local-sync``): the MNIST MLP (13a), the 4-element add (13b), the
50-dispatch chain (11), the 512x512 matmul (13c; full mode only) and the
host-only loop at n=1,000 (10).

21. ``vmrt benchmark`` vs ``iree-benchmark-module`` with the same flags
    (``--benchmark_format=json``, ``--benchmark_min_time``): the time per
    iteration each tool reports itself (``real_time`` of its iteration rows),
    the tools run alternately, the median per tool over the rounds; per
    program ours/peer, the row the median and the worst.  The peer is C
    calling the program with no Python in the loop, so on tiny programs the
    ratio is vmrt's whole per-call cost (≈10× on the 4-element add, where
    row 13b, against iree.runtime's Python binding, is ≈2×); the goal is row
    10's, the other per-iteration row against IREE's C tools: ≤ 20×.
22. Profiling overhead, a profiled run vs an unprofiled one: 22a in-process
    (``vmrt.load(..., profile=stream)`` vs ``vmrt.load(...)``, steady state,
    interleaved); 22b the whole command (``vmrt run --profile=FILE`` vs
    ``vmrt run``, spawn to exit, the profile written).
"""
from __future__ import annotations

import io
import json
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from . import _build
from ._timing import Config, Row, bytecode_env, compare, compare_commands, fmt_time, na_row
from .m_programs import ADD_MLIR, mnist_mlir
from .m_vmrt import chain_vmfb, cpu_vmfb, matmul_vmfb, which_tool

LOOP_N = 1000

#: (key, what, function, flag inputs, full mode only)
PROGRAMS = (("mnist", "MNIST MLP", "predict", ["1x784xf32=0.5"], False),
            ("add", "4-element add", "add", ["4xf32=1 2 3 4", "4xf32=0.5"], False),
            ("chain", "50-dispatch chain", "chain", ["16xf32=1"], False),
            ("matmul", "512x512 matmul", "matmul", ["512x512xf32=1", "512x512xf32=0.5"], True),
            ("loop", f"host-only loop, n={LOOP_N:,}", "loop", [str(LOOP_N)], False))

#: row 21's goal: row 10's, the other per-iteration row against IREE's C tools
#: (vmrt's Python calling convention against none: see the module docstring)
LIMIT_21 = 20.0

_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def _vmfb(work: Path, key: str) -> Path:
    if key == "mnist":
        return cpu_vmfb(work, "mnist", mnist_mlir())
    if key == "add":
        return cpu_vmfb(work, "add4", ADD_MLIR)
    if key == "chain":
        return chain_vmfb(work)
    if key == "matmul":
        return matmul_vmfb(work)
    return _build.loop_vmfb(work)


def _corpus(cfg: Config) -> list[tuple[str, str, Path, list[str]]]:
    """(key, what, vmfb, flags) of each program of this mode."""
    out = []
    for key, what, fn, inputs, full_only in PROGRAMS:
        if full_only and cfg.quick:
            continue
        out.append((key, what, _vmfb(cfg.work, key),
                    [f"--function={fn}", *(f"--input={i}" for i in inputs)]))
    return out


def _corpus_row(rid: str, name: str, goal: str, limits: dict[str, float] | None,
                ratios: dict[str, float], times: dict[str, tuple[float, float]],
                note: str) -> Row:
    """One row for a corpus: the median and the worst ours/peer; judged on
    each program against ``limits[key]`` (no limits: reported)."""
    from ._timing import per_input
    med = statistics.median(ratios.values())
    worst_key = max(ratios, key=lambda k: ratios[k])
    worst = ratios[worst_key]
    misses = [k for k, r in ratios.items() if limits is not None and r > limits[k]]
    per = "; ".join(f"{k} {ratios[k]:.2f}× ({fmt_time(o)} vs {fmt_time(p)})"
                    for k, (o, p) in times.items())
    return Row(rid, name, f"median {med:.2f}×", f"worst {worst:.2f}× ({worst_key})", worst,
               goal, None if limits is None else not misses,
               note=f"{note}; per program (ours vs peer): {per}"
               + (f"; missing the goal: {', '.join(misses)}" if misses else ""),
               data={**per_input(ratios, max(limits.values()) if limits else None),
                     "median": med, "worst": worst,
                     "times_s": {k: list(v) for k, v in times.items()}})


# ---------------------------------------------------------------------------
# 21. vmrt benchmark vs iree-benchmark-module
# ---------------------------------------------------------------------------

def _per_iteration(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """The median ``real_time`` and ``cpu_time`` (seconds) of the iteration
    rows a Google Benchmark JSON report on stdout gives."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:2])} exited {proc.returncode}: "
                           f"{proc.stderr[-300:]}")
    rows = [b for b in json.loads(proc.stdout)["benchmarks"]
            if b.get("run_type", "iteration") == "iteration"]
    if not rows:
        raise RuntimeError(f"{cmd[0]} reported no iteration")
    real, cpu = (statistics.median(b[what] * _UNIT[b["time_unit"]] for b in rows)
                 for what in ("real_time", "cpu_time"))
    return real, cpu


def benchmark_vs_iree(cfg: Config) -> list[Row]:
    name = "vmrt benchmark vs iree-benchmark-module, time per iteration each reports"
    goal = f"≤ {LIMIT_21:g}× peer time (worst program)"
    peer_exe = which_tool("iree-benchmark-module")
    if not peer_exe:
        return [na_row("21", name, goal, "iree-benchmark-module is not installed")]
    ours_exe = which_tool("vmrt")
    ours_cmd = [ours_exe, "benchmark"] if ours_exe else ["python", "-m", "vmrt", "benchmark"]
    try:
        corpus = _corpus(cfg)
    except Exception as e:  # noqa: BLE001 - a missing piece becomes an n/a row
        return [na_row("21", name, goal, str(e).splitlines()[0])]
    env = bytecode_env()
    rounds = 3 if cfg.quick else 7
    min_time = "0.05" if cfg.quick else "0.25"
    ratios, times, cpu = {}, {}, {}
    for key, _what, vmfb, flags in corpus:
        args = ["--device=local-sync", f"--module={vmfb}", *flags, "--benchmark_format=json",
                f"--benchmark_min_time={min_time}"]
        ours: list[tuple[float, float]] = []
        peer: list[tuple[float, float]] = []
        sides = [(ours_cmd, ours), ([peer_exe], peer)]
        for i in range(rounds):         # ours, peer, peer, ours, ...
            for cmd, into in sides if i % 2 == 0 else sides[::-1]:
                into.append(_per_iteration(cmd + args, env))
        o, p = (statistics.median(t for t, _ in side) for side in (ours, peer))
        ratios[key], times[key] = o / p, (o, p)
        cpu[key] = statistics.median(c for _, c in ours) / statistics.median(c for _, c in peer)
    return [_corpus_row("21", name, goal, dict.fromkeys(ratios, LIMIT_21), ratios, times,
                        f"--device=local-sync, --benchmark_min_time={min_time}, {rounds} "
                        "alternating runs of each tool, the median of the real_time each "
                        "reports per iteration (their cpu_time ratios: " +
                        ", ".join(f"{k} {r:.2f}×" for k, r in cpu.items()) + ")")]


# ---------------------------------------------------------------------------
# 22. profiling overhead
# ---------------------------------------------------------------------------

def _call_inputs(key: str) -> list[Any]:
    import numpy as np
    if key == "mnist":
        return [np.full((1, 784), 0.5, np.float32)]
    if key == "add":
        return [np.arange(1, 5, dtype=np.float32), np.full(4, 0.5, np.float32)]
    if key == "chain":
        return [np.ones(16, np.float32)]
    if key == "matmul":
        return [np.ones((512, 512), np.float32), np.full((512, 512), 0.5, np.float32)]
    return [np.int64(LOOP_N)]


def _call(fn: Callable[..., Any], args: list[Any]) -> Any:
    return fn(*args)


def profile_overhead(cfg: Config) -> list[Row]:
    rows = []
    names = {"22a": "vmrt.load with profile= vs without, in-process steady state",
             "22b": "vmrt run --profile=FILE vs vmrt run, whole command"}
    goals = {"22a": ("reported", None), "22b": ("≤ 1.5× peer time (worst program)", 1.5)}
    try:
        import vmrt
        corpus = _corpus(cfg)
    except Exception as e:  # noqa: BLE001 - a missing piece becomes an n/a row
        return [na_row(rid, names[rid], goals[rid][0], str(e).splitlines()[0])
                for rid in names]
    # 22a: the same calls through a profiled and an unprofiled program
    ratios, times = {}, {}
    for key, _what, vmfb, flags in corpus:
        fn_name = flags[0].split("=", 1)[1]
        args = _call_inputs(key)
        with vmrt.load(vmfb, device="local-sync") as plain, \
                vmrt.load(vmfb, device="local-sync", profile=io.StringIO()) as profiled:
            try:
                o, p = compare(partial(_call, profiled[fn_name], args),
                               partial(_call, plain[fn_name], args), cfg,
                               repeat=max(cfg.repeat, 5))
            finally:
                profiled.profile.discard()      # (not formatting thousands of calls)
        ratios[key], times[key] = o / p, (o, p)
    rows.append(_corpus_row("22a", names["22a"], "reported", None, ratios, times,
                            "--device=local-sync; the profile records every call (its "
                            "records grow during the measure) and is discarded at the end"))
    # 22b: whole commands, the profile written to a file
    ours_exe = which_tool("vmrt")
    run = [ours_exe, "run"] if ours_exe else ["python", "-m", "vmrt", "run"]
    env = bytecode_env()
    ratios, times = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, _what, vmfb, flags in corpus:
            base = [*run, "--device=local-sync", f"--module={vmfb}", *flags]
            res = compare_commands({"ours": base + [f"--profile={tmp}/{key}.json"],
                                    "peer": base}, cfg, env=env,
                                   repeat=max(5, cfg.repeat // 2), warmup=1)
            ratios[key], times[key] = res["ours"] / res["peer"], (res["ours"], res["peer"])
    rows.append(_corpus_row("22b", names["22b"], goals["22b"][0],
                            dict.fromkeys(ratios, 1.5), ratios, times,
                            "--device=local-sync, spawn to exit, bytecode caching on; the "
                            "trace-event JSON written"))
    return rows
