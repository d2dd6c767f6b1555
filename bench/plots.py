"""Issue 15's two plots (``python -m bench --plot-dir DIR``), measured in the
same run as the table and shown on the results page with their numbers.

1. **Per-dispatch cost** (``benchmarks_dispatch.png``): time per call of
   row 11's chain program built with 1, 10, 25, 50 and 100 small dispatches,
   ``vmrt.load`` vs ``iree.runtime`` (local-sync), all ten functions
   interleaved; a least-squares line per side, whose slope is the cost of
   one more dispatch and whose intercept the fixed cost of a call.
2. **Local-task scaling** (``benchmarks_scaling.png``): rows 12 and 12b's
   512x512 matmul (x86_64 native, aarch64 emulated) on ``local-task`` with
   1-4 worker threads, as speed-up over the same side's ``local-sync``.
   vmrt's worker count is its device's ``dispatch_threads`` (by default the
   CPUs the process may use), set on each program's device before its first
   call; iree.runtime's is ``--task_topology_group_count=N``, a process-wide
   flag read once when the local-task driver is made, so each worker count
   runs in a child process of its own that times the calls it is asked for
   (the samples still interleaved with vmrt's).  Results are checked bit for
   bit against local-sync.  The emulated program has no IREE peer here (row
   15 runs IREE's aarch64 build under qemu-user).
"""
from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from ._timing import Config, calibrate, fmt_time, run_n
from .m_vmrt import MATMUL_MLIR, MATMUL_N, chain_vmfb, cpu_vmfb, matmul_vmfb

DISPATCH_COUNTS = (1, 10, 25, 50, 100)
WORKER_COUNTS = (1, 2, 3, 4)
DISPATCH_PNG = "benchmarks_dispatch.png"
SCALING_PNG = "benchmarks_scaling.png"

#: one sample: seconds per call
Sampler = Callable[[], float]


def round_robin(samplers: dict[str, Sampler], repeat: int) -> dict[str, float]:
    """Median seconds per call of each sampler, taken in turns (the order
    reversed every other round) so load from other jobs hits them all."""
    samples: dict[str, list[float]] = {k: [] for k in samplers}
    keys = list(samplers)
    for i in range(repeat):
        for k in keys if i % 2 == 0 else keys[::-1]:
            samples[k].append(samplers[k]())
    return {k: statistics.median(v) for k, v in samples.items()}


def in_process(fn: Callable[[], Any], number: int) -> Sampler:
    return lambda: run_n(fn, number) / number


def fit_line(xs: list[int], ys: list[float]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of ys against xs."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


# ---------------------------------------------------------------------------
# 1. per-dispatch cost
# ---------------------------------------------------------------------------

def dispatch_cost(cfg: Config) -> dict[str, Any]:
    """Seconds per call of the chain programs through both runtimes, and
    the fitted (slope, intercept) of each."""
    import iree.runtime as rt
    import numpy as np

    import vmrt
    x = np.arange(16, dtype=np.float32)
    samplers: dict[str, Sampler] = {}
    with ExitStack() as stack:
        for n in DISPATCH_COUNTS:
            vmfb = chain_vmfb(cfg.work, n)
            ours = stack.enter_context(vmrt.load(vmfb))["chain"]
            peer = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")["chain"]
            np.testing.assert_allclose(ours(x), np.asarray(peer(x)), rtol=1e-6)
            number = calibrate(partial(ours, x), cfg.target)
            samplers[f"vmrt/{n}"] = in_process(partial(ours, x), number)
            samplers[f"iree/{n}"] = in_process(partial(peer, x), number)
        med = round_robin(samplers, cfg.repeat)
    counts = list(DISPATCH_COUNTS)
    out: dict[str, Any] = {"dispatches": counts}
    for side in ("vmrt", "iree"):
        ys = [med[f"{side}/{n}"] for n in counts]
        slope, intercept = fit_line(counts, ys)
        out[side] = {"per_call_s": ys, "slope_s": slope, "intercept_s": intercept}
    return out


# ---------------------------------------------------------------------------
# 2. local-task scaling
# ---------------------------------------------------------------------------

#: a child process timing iree.runtime's local-task matmul with N workers:
#: prints the result's sha256, then for each line "k" on stdin the seconds
#: of k back-to-back calls
IREE_CHILD = """\
import gc, hashlib, sys, time
import numpy as np
import iree.runtime as rt
path, workers, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rt.flags.parse_flags(f"--task_topology_group_count={workers}")
fn = rt.load_vm_flatbuffer_file(path, driver="local-task")["matmul"]
rng = np.random.default_rng(0)
a, b = (rng.standard_normal((n, n), np.float32) for _ in range(2))
print(hashlib.sha256(fn(a, b).to_host().tobytes()).hexdigest(), flush=True)
gc.disable()                # as the in-process samples run
for line in sys.stdin:
    k = int(line)
    t = time.perf_counter()
    for _ in range(k):
        fn(a, b).to_host()
    print(time.perf_counter() - t, flush=True)
"""


class IreeChild:
    """One child process running :data:`IREE_CHILD` with ``workers`` threads."""

    def __init__(self, vmfb: Path, workers: int):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", IREE_CHILD, str(vmfb), str(workers), str(MATMUL_N)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.digest = self._line()

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"iree.runtime child process failed: {err.strip()[-300:]}")
        return line.strip()

    def sampler(self, number: int) -> Sampler:
        def sample() -> float:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"{number}\n")
            self.proc.stdin.flush()
            return float(self._line()) / number
        return sample

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def set_workers(prog: Any, workers: int) -> None:
    """Run each dispatch of ``prog`` (a local-task program not yet called)
    on ``workers`` threads: its HAL devices' ``dispatch_threads``."""
    ctx = prog.context
    for m in ctx.modules:
        for device in getattr(ctx.state_of(m), "devices", ()):
            device.dispatch_threads = workers


@contextmanager
def matmul_programs(vmfb: Path) -> Iterator[tuple[dict[str, Any], Any, Any]]:
    """vmrt programs of ``vmfb`` keyed "sync" and by worker count, the
    inputs, and local-sync's result (every program checked against it)."""
    import numpy as np

    import vmrt
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((MATMUL_N, MATMUL_N), np.float32) for _ in range(2))
    with ExitStack() as stack:
        progs = {"sync": stack.enter_context(vmrt.load(vmfb, device="local-sync"))}
        for w in WORKER_COUNTS:
            progs[str(w)] = stack.enter_context(vmrt.load(vmfb, device="local-task"))
            set_workers(progs[str(w)], w)
        ref = progs["sync"]["matmul"](a, b).tobytes()
        for key, p in progs.items():
            if p["matmul"](a, b).tobytes() != ref:
                raise AssertionError(f"vmrt local-task ({key} workers) differs from local-sync")
        yield {k: p["matmul"] for k, p in progs.items()}, (a, b), ref


def native_scaling(cfg: Config) -> dict[str, Any]:
    """Row 12's matmul: vmrt and iree.runtime, local-sync and 1-4 workers."""
    import iree.runtime as rt
    vmfb = matmul_vmfb(cfg.work)
    with matmul_programs(vmfb) as (fns, (a, b), ref), ExitStack() as stack:
        number = calibrate(partial(fns["sync"], a, b), cfg.target)
        samplers = {f"vmrt/{k}": in_process(partial(f, a, b), number)
                    for k, f in fns.items()}
        sync = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")["matmul"]
        if sync(a, b).to_host().tobytes() != ref:
            raise AssertionError("iree.runtime local-sync differs from vmrt")
        samplers["iree/sync"] = in_process(lambda: sync(a, b).to_host(), number)
        digest = hashlib.sha256(ref).hexdigest()
        for w in WORKER_COUNTS:
            child = IreeChild(vmfb, w)
            stack.callback(child.close)
            if child.digest != digest:
                raise AssertionError(f"iree.runtime local-task ({w} workers) differs")
            samplers[f"iree/{w}"] = child.sampler(number)
        med = round_robin(samplers, cfg.repeat)
    return {side: {"sync_s": med[f"{side}/sync"],
                   "task_s": [med[f"{side}/{w}"] for w in WORKER_COUNTS]}
            for side in ("vmrt", "iree")}


def emulated_scaling(cfg: Config) -> dict[str, Any]:
    """Row 12b's aarch64 matmul through vmrt: local-sync and 1-4 workers."""
    vmfb = cpu_vmfb(cfg.work, "matmul512_aarch64", MATMUL_MLIR, triple="aarch64-linux-gnu")
    with matmul_programs(vmfb) as (fns, (a, b), _):
        med = round_robin({k: in_process(partial(f, a, b), 1) for k, f in fns.items()},
                          3 if cfg.quick else 5)
    return {"vmrt": {"sync_s": med["sync"], "task_s": [med[str(w)] for w in WORKER_COUNTS]}}


def scaling(cfg: Config) -> dict[str, Any]:
    return {"workers": list(WORKER_COUNTS), "cores": os.cpu_count(),
            "native": native_scaling(cfg), "emulated": emulated_scaling(cfg)}


# ---------------------------------------------------------------------------
# measuring, drawing, reporting
# ---------------------------------------------------------------------------

def run(cfg: Config, plot_dir: str | None, plt: Any) -> dict[str, Any]:
    """``--plot-dir``: measure, print the numbers, draw (``plt``: see
    :func:`pyplot`); {} without a directory."""
    if not plot_dir:
        return {}
    data = measure_all(cfg)
    print("\n".join(text_lines(data) + [""] + draw(data, Path(plot_dir), plt)))
    return data


def measure_all(cfg: Config) -> dict[str, Any]:
    """Both plots' numbers; a part that fails is reported as {"error": why}."""
    out: dict[str, Any] = {}
    for key, fn in (("dispatch", dispatch_cost), ("scaling", scaling)):
        if cfg.verbose:
            print(f"plot data: {key} ...", file=sys.stderr, flush=True)
        try:
            out[key] = fn(cfg)
        except Exception as e:  # noqa: BLE001 - the table still gets written
            out[key] = {"error": f"{type(e).__name__}: {str(e).strip()[:300]}"}
    return out


def speedups(side: dict[str, Any]) -> list[float]:
    return [side["sync_s"] / t for t in side["task_s"]]


def signed_time(s: float) -> str:
    """fmt_time for a fitted value, which noise can make negative."""
    return ("-" if s < 0 else "") + fmt_time(abs(s))


def slope_label(name: str, side: dict[str, Any]) -> str:
    return (f"{name}: {signed_time(side['slope_s'])}/dispatch, "
            f"{signed_time(side['intercept_s'])}/call")


def dispatch_table(d: dict[str, Any]) -> list[list[str]]:
    """Header and rows: time per call at each dispatch count, and the fit."""
    rows = [["", *(f"{n} dispatch" + ("es" if n > 1 else "") for n in d["dispatches"]),
             "per dispatch (slope)", "per call (intercept)"]]
    for side, name in (("vmrt", "vmrt.load"), ("iree", "iree.runtime")):
        s = d[side]
        rows.append([name, *(fmt_time(t) for t in s["per_call_s"]), signed_time(s["slope_s"]),
                     signed_time(s["intercept_s"])])
    return rows


SCALING_SERIES = (("native", "vmrt", "x86_64 native, vmrt.load"),
                  ("native", "iree", "x86_64 native, iree.runtime"),
                  ("emulated", "vmrt", "aarch64 emulated, vmrt.load"))


def scaling_table(s: dict[str, Any]) -> list[list[str]]:
    """Header and rows: local-sync time, then each worker count's time and
    speed-up over local-sync."""
    rows = [["512x512 matmul", "local-sync",
             *(f"{w} worker{'s' if w > 1 else ''}" for w in s["workers"])]]
    for prog, side, name in SCALING_SERIES:
        d = s[prog][side]
        rows.append([name, fmt_time(d["sync_s"]),
                     *(f"{fmt_time(t)} ({x:.2f}×)" for t, x in zip(d["task_s"], speedups(d)))])
    return rows


def text_lines(data: dict[str, Any]) -> list[str]:
    """The plots' numbers for the terminal."""
    out = []
    for key, table in (("dispatch", dispatch_table), ("scaling", scaling_table)):
        d = data.get(key)
        if d is None:
            continue
        out.append("")
        if "error" in d:
            out.append(f"plot data {key}: failed: {d['error']}")
            continue
        cells = table(d)
        widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return out


def md_table(cells: list[list[str]]) -> list[str]:
    esc = [[c.replace("|", "\\|") for c in r] for r in cells]
    return (["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
            + ["| " + " | ".join(r) + " |" for r in esc[1:]])


def markdown_lines(data: dict[str, Any], plot_dir: str | None, md_path: Path) -> list[str]:
    """The results page's sections for both plots: image, caption, numbers
    (none without ``--plot-dir``)."""
    out: list[str] = []
    for key, title, png, caption, body in SECTIONS if plot_dir else ():
        d = data.get(key)
        if d is None:
            continue
        out += [f"## {title}", ""] + _image(Path(plot_dir or "", png), md_path, title.lower())
        out += [f"*{caption(d)}*", ""]
        out += [f"Not measured: {d['error']}", ""] if "error" in d else body(d)
    return out


def _dispatch_caption(d: dict[str, Any]) -> str:
    return ("Time per call of an x86_64 program of N small elementwise dispatches (16 floats "
            "each, local-sync) against N, vmrt.load vs iree.runtime, medians of interleaved "
            "samples, with least-squares lines: the slope is the cost of one more dispatch, "
            "the intercept the fixed cost of a call.")


def _dispatch_text(d: dict[str, Any]) -> list[str]:
    ratio = d["vmrt"]["slope_s"] / d["iree"]["slope_s"]
    return md_table(dispatch_table(d)) + [
        "", f"Per dispatch vmrt costs {ratio:.1f}× iree.runtime (ratio of the slopes; row 11 "
        "divides a whole 50-dispatch call, so it also carries 1/50 of the per-call cost).", ""]


def _scaling_caption(s: dict[str, Any]) -> str:
    return ("Speed-up of local-task over the same runtime's local-sync (left) and time per "
            "call (right) of the 512x512 f32 matmul against the number of worker threads on "
            f"this {s.get('cores', '?')}-core machine: x86_64 through vmrt.load and "
            "iree.runtime (`--task_topology_group_count=N`), aarch64 emulated through "
            "vmrt.load; results bit-identical to local-sync.")


#: the results page's plot sections: data key, title, image, caption, numbers
SECTIONS: tuple[tuple[str, str, str, Callable[[dict[str, Any]], str],
                      Callable[[dict[str, Any]], list[str]]], ...] = (
    ("dispatch", "Per-dispatch cost", DISPATCH_PNG, _dispatch_caption, _dispatch_text),
    ("scaling", "Local-task scaling", SCALING_PNG, _scaling_caption,
     lambda s: md_table(scaling_table(s)) + [""]),
)


def _image(png: Path, md_path: Path, alt: str) -> list[str]:
    if not png.is_file():
        return ["(plot not drawn: matplotlib missing or the measure failed)", ""]
    return [f"![{alt}]({os.path.relpath(png, md_path.parent)})", ""]


# ---------------------------------------------------------------------------
# drawing
# ---------------------------------------------------------------------------

MISSING = "matplotlib is not installed (pip install -e '.[bench]')"


def pyplot() -> Any:
    """matplotlib.pyplot drawing to files (Agg), or None when matplotlib is
    not installed: the caller says so once and the bench runs on."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def draw(data: dict[str, Any], plot_dir: Path, plt: Any) -> list[str]:
    """Draw both plots into ``plot_dir``; one line per plot saying where it
    went or why it was skipped (a stale image of a skipped plot is removed).
    ``plt`` None: matplotlib is missing (the caller said so), nothing drawn."""
    said = []
    for key, name, fn in (("dispatch", DISPATCH_PNG, draw_dispatch),
                          ("scaling", SCALING_PNG, draw_scaling)):
        path = plot_dir / name
        d: Any = data.get(key)
        if plt is None or d is None or "error" in d:
            path.unlink(missing_ok=True)
            if plt is not None:
                said.append(f"plot skipped: {path}: {d['error'] if d else 'not measured'}")
            continue
        plot_dir.mkdir(parents=True, exist_ok=True)
        fig = fn(d, plt)
        fig.savefig(path)
        plt.close(fig)
        said.append(f"plot: {path}")
    return said


def draw_dispatch(d: dict[str, Any], plt: Any) -> Any:
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    xs = d["dispatches"]
    ends = [0, max(xs)]
    for side, marker, name in (("vmrt", "o", "vmrt.load"), ("iree", "s", "iree.runtime")):
        s = d[side]
        pts = ax.plot(xs, [y * 1e6 for y in s["per_call_s"]], marker, label=f"{name} (median)")
        ax.plot(ends, [(s["intercept_s"] + s["slope_s"] * x) * 1e6 for x in ends], "-",
                color=pts[0].get_color(), alpha=0.7, label=slope_label(f"{name} fit", s))
    ratio = d["vmrt"]["slope_s"] / d["iree"]["slope_s"]
    ax.text(0.03, 0.72, f"slope ratio (per dispatch): {ratio:.1f}×", transform=ax.transAxes,
            fontsize=9, bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.8})
    ax.set_xlabel("dispatches in the program")
    ax.set_ylabel("time per call (µs, median)")
    ax.set_title("Per-dispatch cost: chain of small dispatches (x86_64, local-sync)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def draw_scaling(s: dict[str, Any], plt: Any) -> Any:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    ws, cores = s["workers"], s.get("cores") or 1
    styles = ("o-", "s-", "^-")
    for (prog, side, name), style in zip(SCALING_SERIES, styles):
        d = s[prog][side]
        line = left.plot(ws, speedups(d), style, label=name)
        color = line[0].get_color()
        right.plot(ws, [t * 1e3 for t in d["task_s"]], style, color=color, label=name)
        right.axhline(d["sync_s"] * 1e3, color=color, ls=":", lw=1)
    left.axhline(1.0, color="black", lw=1, label="local-sync (1.0)")
    left.plot(ws, [min(w, cores) for w in ws], ":", color="gray",
              label=f"ideal on {cores} cores")
    for ax in (left, right):
        ax.axvline(cores, color="gray", ls="--", lw=0.8)
        ax.set_xticks(ws)
        ax.set_xlabel("local-task worker threads")
        ax.grid(True, alpha=0.3)
    left.set_ylabel("speed-up over local-sync")
    left.set_ylim(bottom=0)
    left.set_title("Local-task speed-up, 512x512 f32 matmul")
    left.legend(fontsize=8, loc="lower right")
    right.set_yscale("log")
    right.set_ylabel("time per call (ms, median; dotted: local-sync)")
    right.set_title("Time per call")
    fig.tight_layout()
    return fig
