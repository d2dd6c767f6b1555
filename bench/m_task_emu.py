"""Row 12b: ``local-task`` vs ``local-sync`` for an emulated program.

The 512x512 f32 matmul of row 12, compiled for aarch64 (the matmul program
of row 15), run through ``vmrt.load`` on this x86_64 machine, so every dispatch is
emulated: under local-task each worker thread runs its range of workgroups
in an emulated machine of its own.  Both devices interleaved, medians; the
results must be bit-identical.  The peer column is what the machine allowed
right after: the speed-up of two independent processes doing the same
pure-Python work in parallel over doing it twice in one process (on an idle
2-core machine ~2×; other jobs on the machine lower it for everyone).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from ._timing import Config, Row, compare_many, fmt_time, na_row
from .m_vmrt import MATMUL_MLIR, MATMUL_N, cpu_vmfb

_BURN = "x = 0\nfor i in range({n}): x += i\n"


def _ceiling(cfg: Config) -> float:
    """Serial time of two pure-Python loops / time of two processes running
    one each at once (median of a few rounds)."""
    n = 2_000_000 if cfg.quick else 6_000_000
    code = _BURN.format(n=n)
    ratios = []
    for _ in range(3 if cfg.quick else 5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code + code], check=True)
        serial = time.perf_counter() - t
        t = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
        for p in procs:
            p.wait()
        ratios.append(serial / (time.perf_counter() - t))
    ratios.sort()
    return ratios[len(ratios) // 2]


def local_task_emulated(cfg: Config) -> list[Row]:
    name = (f"vmrt.load local-task vs local-sync, emulated aarch64 {MATMUL_N}x{MATMUL_N} "
            f"matmul")
    goal = "≥ 1.8× speed-up"
    try:
        import numpy as np

        import vmrt
        vmfb = cpu_vmfb(cfg.work, "matmul512_aarch64", MATMUL_MLIR, triple="aarch64-linux-gnu")
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("12b", name, goal, str(e).splitlines()[0])]
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((MATMUL_N, MATMUL_N), np.float32) for _ in range(2))
    progs = {d: vmrt.load(vmfb, device=d) for d in ("local-sync", "local-task")}
    cpu: dict[str, float] = {}
    try:
        outs = {d: p["matmul"](a, b) for d, p in progs.items()}
        if outs["local-sync"].tobytes() != outs["local-task"].tobytes():
            raise AssertionError("local-task result differs from local-sync")
        for d, p in progs.items():          # CPU seconds of one call, all threads
            c = time.process_time()
            p["matmul"](a, b)
            cpu[d] = time.process_time() - c
        fns = {d: (lambda p=p: p["matmul"](a, b)) for d, p in progs.items()}
        res = compare_many(fns, cfg, repeat=3 if cfg.quick else 7)
    finally:
        for p in progs.values():
            p.close()
    speedup = res["local-sync"] / res["local-task"]
    ceiling = _ceiling(cfg)
    return [Row("12b", name, f"{speedup:.2f}× ({fmt_time(res['local-sync'])} → "
                f"{fmt_time(res['local-task'])})", f"{ceiling:.2f}× (2 processes)", speedup,
                goal, speedup >= 1.8,
                note=(f"one emulated machine per worker thread, bit-identical results; "
                      f"{os.cpu_count()} cores; CPU seconds per call {cpu['local-sync']:.2f} "
                      f"(sync) vs {cpu['local-task']:.2f} (task, all threads); peer: two "
                      f"independent processes vs one doing both, measured right after"),
                data={"sync_s": res["local-sync"], "task_s": res["local-task"],
                      "sync_cpu_s": cpu["local-sync"], "task_cpu_s": cpu["local-task"],
                      "ceiling": ceiling})]
