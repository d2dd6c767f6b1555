"""Benchmark (not a test): VM instructions per second of vmrt vs the pip
iree-run-module on the same loop-heavy .vmfb.  Prints a ratio table.

    python tests/vmrt/bench_vm.py [N]
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import vmrt

PROGRAMS = Path(__file__).parent / "programs"


def compile_control(tmp: Path) -> Path:
    out = tmp / "control.vmfb"
    subprocess.run(["iree-compile", "--iree-execution-model=host-only",
                    str(PROGRAMS / "control.mlir"), "-o", str(out)], check=True)
    return out


def iree_seconds(vmfb: Path, fn: str, arg: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(["iree-run-module", f"--module={vmfb}", f"--function={fn}",
                        f"--input={arg}"], check=True, capture_output=True)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000_000
    with tempfile.TemporaryDirectory() as d:
        vmfb = compile_control(Path(d))
        inst = vmrt.Instance()
        t = time.perf_counter()
        mod = vmrt.BytecodeModule.load(inst, vmfb)
        load = time.perf_counter() - t
        print(f"vmrt load+translate: {load * 1e3:.1f} ms")
        print(f"{'program':<16}{'VM instrs':>12}{'vmrt s':>10}{'vmrt Minstr/s':>15}"
              f"{'iree s':>10}{'iree Minstr/s':>15}{'ratio':>8}")
        for fn, arg in (("sumsq", n), ("nested", int(n ** 0.5)), ("fsum", n // 2)):
            ctx = vmrt.Context(inst, [mod], budget=10**15)
            t = time.perf_counter()
            reps = 0
            while True:
                ctx.invoke(f"module.{fn}", [arg])
                reps += 1
                if time.perf_counter() - t > 0.5:
                    break
            ours = (time.perf_counter() - t) / reps
            instrs = ctx.limits.executed // reps
            # iree: subtract process start-up, measured with a trivial input
            base = iree_seconds(vmfb, fn, 0)
            theirs = max(iree_seconds(vmfb, fn, arg) - base, 1e-6)
            print(f"{fn + '(' + str(arg) + ')':<16}{instrs:>12}{ours:>10.3f}"
                  f"{instrs / ours / 1e6:>15.1f}{theirs:>10.4f}{instrs / theirs / 1e6:>15.1f}"
                  f"{ours / theirs:>7.0f}x")


if __name__ == "__main__":
    main()
