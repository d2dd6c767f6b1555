"""Differential fuzzer of the VM's loops: ``python -m fuzz.loops [--seed N]
[--programs N] [--functions N]``.

Writes random ``scf.for`` loops over i64 carrying i64 or i32 values through
random integer ops (multiply, add, subtract, shifts, and, or, xor, min,
max), compiles them with ``iree-compile`` (host-only) and runs every
function with ``iree-run-module`` and ``vmrt run`` on a few lengths and
operands (past the budget's refill, around zero, the extremes).  Any
difference in the output is a finding: the program, function and inputs are
printed and the run exits 1.  A run that ``iree-run-module`` does not finish
in time (a counter iree-compile assembled from unrelated halves can loop for
billions of iterations: vmrt must do the same, slowly) is skipped.
"""
from __future__ import annotations

import argparse
import io
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OPS = ["muli", "addi", "subi", "xori", "andi", "ori", "shli", "shrsi", "shrui", "maxsi",
       "minui"]
SHIFTS = ("shli", "shrsi", "shrui")
LENGTHS = (0, 1, 5, 1000, 70_000)
OPERANDS = ((3, -7), (-(2 ** 63), 2 ** 63 - 1), (123456789, -1))


def function(rng: random.Random, k: int) -> tuple[str, str]:
    """The MLIR of function ``f{k}`` and the type of its values."""
    w = rng.choice(["i64", "i32"])
    bits = 64 if w == "i64" else 32
    nv = rng.randint(1, 4)
    ts = ", ".join([w] * nv)
    lines = [f"func.func @f{k}(%n: i64, %s0: {w}, %s1: {w}) -> ({ts}) {{",
             "  %c0 = arith.constant 0 : i64", "  %c1 = arith.constant 1 : i64",
             f"  %width = arith.constant {bits - 1} : {w}"]
    consts = []
    for j in range(3):
        v = rng.choice([3, 7, -1, 13, 1103515245, -6148914691236517206, 31, 63])
        v = ((v + 2 ** (bits - 1)) % 2 ** bits) - 2 ** (bits - 1)
        lines.append(f"  %k{j} = arith.constant {v} : {w}")
        consts.append(f"%k{j}")
    inits = ", ".join(f"%a{j} = {rng.choice(['%s0', '%s1'] + consts)}" for j in range(nv))
    lines.append(f"  %r:{nv} = scf.for %i = %c0 to %n step %c1 iter_args({inits}) -> ({ts})"
                 " : i64 {")
    index = "%i"
    if w == "i32":
        lines.append("    %ii = arith.trunci %i : i64 to i32")
        index = "%ii"
    vals = [f"%a{j}" for j in range(nv)] + [index] + consts
    for t in range(rng.randint(3, 12)):
        op = rng.choice(OPS)
        a, b = rng.choice(vals), rng.choice(vals)
        if op in SHIFTS:                 # a shift past the width is poison in MLIR
            lines.append(f"    %b{t} = arith.andi {b}, %width : {w}")
            b = f"%b{t}"
        lines.append(f"    %v{t} = arith.{op} {a}, {b} : {w}")
        vals.append(f"%v{t}")
    outs = ", ".join(rng.choice(vals[-6:]) for _ in range(nv))
    lines += [f"    scf.yield {outs} : {ts}", "  }",
              f"  return {', '.join(f'%r#{j}' for j in range(nv))} : {ts}", "}"]
    return "\n".join(lines), w


def _vmrt(args: list[str]) -> str:
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main(["run", *args], stdout=out, stderr=err)
    return f"{out.getvalue()}{err.getvalue()}rc={rc}"


def _iree(tool: str, args: list[str], timeout: float) -> str | None:
    try:
        p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return f"{p.stdout}{p.stderr}rc={p.returncode}"


def check_program(seed: int, functions: int, work: Path, timeout: float = 5.0) -> list[str]:
    """The findings of program ``seed`` (``functions`` functions): one line
    each, empty when vmrt and iree-run-module agree everywhere."""
    compiler, runner = shutil.which("iree-compile"), shutil.which("iree-run-module")
    if not compiler or not runner:
        raise SystemExit("iree-compile and iree-run-module are needed "
                         "(pip install iree-base-compiler iree-base-runtime)")
    rng = random.Random(seed)
    funcs = [function(rng, k) for k in range(functions)]
    src = work / f"loops{seed}.mlir"
    vmfb = src.with_suffix(".vmfb")
    src.write_text("\n".join(text for text, _w in funcs))
    p = subprocess.run([compiler, "--iree-execution-model=host-only", str(src), "-o", str(vmfb)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return [f"seed {seed}: iree-compile failed: {p.stderr.strip()[-300:]}"]
    found = []
    for k, (_text, w) in enumerate(funcs):
        bits = 64 if w == "i64" else 32
        for n in LENGTHS:
            for x, y in OPERANDS:
                x, y = (((v + 2 ** (bits - 1)) % 2 ** bits) - 2 ** (bits - 1) for v in (x, y))
                args = [f"--module={vmfb}", f"--function=f{k}", f"--input={n}", f"--input={x}",
                        f"--input={y}"]
                theirs = _iree(runner, args, timeout)
                if theirs is None:       # IREE loops on: so would vmrt, slower
                    break
                if theirs != _vmrt(args):
                    found.append(f"seed {seed} f{k} n={n} s0={x} s1={y}: vmrt differs from "
                                 f"iree-run-module (program: {src})")
                    break
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.loops", description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="first program's seed")
    ap.add_argument("--programs", type=int, default=10)
    ap.add_argument("--functions", type=int, default=8, help="functions per program")
    ap.add_argument("--work", type=Path, help="where the programs go (default: a temporary "
                                               "directory, kept when something is found)")
    a = ap.parse_args(argv)
    work = a.work or Path(tempfile.mkdtemp(prefix="fuzz-loops-"))
    work.mkdir(parents=True, exist_ok=True)
    found = []
    for seed in range(a.seed, a.seed + a.programs):
        found += check_program(seed, a.functions, work)
        print(f"seed {seed}: {len(found)} findings so far", flush=True)
    for line in found:
        print(line)
    if not found and a.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
