"""Timing helpers and the result row.

Every "compare" interleaves our code and the peer (ours, peer, peer, ours,
...) so that a burst of load from another tenant of the machine hits both,
and reports the median over ``repeat`` samples of the time per operation.
A sample is ``number`` back-to-back operations, with ``number`` chosen once
(by calibration on the slower side) so that a sample lasts about
``cfg.target`` seconds.
"""
from __future__ import annotations

import gc
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Config:
    quick: bool
    repeat: int                 # N: samples per side; the median is reported
    target: float               # seconds one sample should last
    work: Path                  # build/bench: cached inputs
    verbose: bool = True

    @classmethod
    def make(cls, quick: bool, repeat: int | None = None, work: Path | None = None,
             verbose: bool = True) -> Config:
        return cls(quick=quick, repeat=repeat or (5 if quick else 21),
                   target=0.002 if quick else 0.02,
                   work=work or REPO / "build" / "bench", verbose=verbose)


@dataclass
class Row:
    """One line of the table.  ``met``: True / False, or None for "reported"
    (no goal) and for measures that could not run (``na`` says why).
    ``data``: the raw numbers (--json); a corpus row's judged row (its worst)
    holds :func:`per_input`'s keys, which ``--plot-dir`` draws."""

    id: str
    measure: str
    ours: str = ""
    peer: str = ""
    ratio: float | None = None
    goal: str = "reported"
    met: bool | None = None
    na: str = ""                # "not available: <reason>"
    note: str = ""              # how it was measured / why a goal is not met
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def borderline(self) -> bool:
        """The ratio is within 10 % of the goal's limit: on a shared machine
        such a verdict can flip from one run to the next."""
        m = re.search(r"[≤≥]\s*([\d.]+)", self.goal)
        if self.met is None or self.ratio is None or not m:
            return False
        return abs(self.ratio / float(m.group(1)) - 1.0) < 0.10

    @property
    def verdict(self) -> str:
        if self.na:
            return f"n/a ({self.na})"
        if self.met is None:
            return "reported"
        v = "met" if self.met else "NOT MET"
        return f"{v} (borderline)" if self.borderline else v

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "measure": self.measure, "ours": self.ours, "peer": self.peer,
                "ratio": self.ratio, "goal": self.goal, "met": self.met, "verdict": self.verdict,
                "na": self.na, "note": self.note, "data": self.data}


def per_input(ratios: Mapping[str, float], limit: float | None = None) -> dict[str, Any]:
    """A corpus row's standard ``Row.data`` entries: ``ratios``, every input's
    ratio by name, and ``limit``, the goal's limit on each (None: reported,
    not judged).  ``--plot-dir`` draws one ratio-distribution plot for each
    row holding both (bench/ratio_plots.py).  Merge with the row's other
    numbers: ``data={**per_input(ratios, 2.0), "misses": misses}``."""
    return {"ratios": dict(ratios), "limit": limit}


def na_row(id: str, measure: str, goal: str, reason: str, peer: str = "") -> Row:
    """A row for a measure that could not run: ``reason`` starting with
    "failed" means our bench (or the code under test) broke; anything else
    means a piece is missing ("not available: <reason>")."""
    na = reason if reason.startswith("failed") else f"not available: {reason}"
    return Row(id, measure, ours="n/a", peer=peer or "n/a", goal=goal or "reported", na=na)


# ---------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------

def fmt_time(s: float | None) -> str:
    if s is None:
        return "n/a"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def fmt_rate(x: float, unit: str) -> str:
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g} {prefix}{unit}/s"
    return f"{x:.3g} {unit}/s"


def fmt_bytes(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------

_clock = time.perf_counter


def run_n(fn: Callable[[], Any], number: int) -> float:
    """Seconds for ``number`` calls of ``fn`` (garbage collection off)."""
    it = range(number)
    was = gc.isenabled()
    gc.disable()
    try:
        t0 = _clock()
        for _ in it:
            fn()
        return _clock() - t0
    finally:
        if was:
            gc.enable()


def calibrate(fn: Callable[[], Any], target: float, max_number: int = 1 << 22) -> int:
    """Smallest power-of-two ``number`` whose run lasts at least ``target``."""
    n = 1
    while True:
        t = run_n(fn, n)
        if t >= target or n >= max_number:
            return n
        # jump close to the target, never more than 16x at once
        grow = 16 if t <= 0 else min(16, max(2, int(target / t) + 1))
        n = min(max_number, n * grow)


def compare(ours: Callable[[], Any], peer: Callable[[], Any], cfg: Config, *,
            number: int | None = None, repeat: int | None = None,
            target: float | None = None) -> tuple[float, float]:
    """Median seconds per operation of ``ours`` and ``peer``, interleaved."""
    repeat = repeat or cfg.repeat
    ours(), peer()                                   # warm up (and fail early)
    if number is None:
        t = target or cfg.target
        number = max(1, min(calibrate(ours, t), calibrate(peer, t)))
    a: list[float] = []
    b: list[float] = []
    for i in range(repeat):
        if i % 2 == 0:
            a.append(run_n(ours, number))
            b.append(run_n(peer, number))
        else:
            b.append(run_n(peer, number))
            a.append(run_n(ours, number))
    return statistics.median(a) / number, statistics.median(b) / number


def measure(fn: Callable[[], Any], cfg: Config, *, number: int | None = None,
            repeat: int | None = None, target: float | None = None) -> float:
    """Median seconds per call of ``fn`` alone."""
    repeat = repeat or cfg.repeat
    fn()
    if number is None:
        number = calibrate(fn, target or cfg.target)
    return statistics.median(run_n(fn, number) for _ in range(repeat)) / number


def compare_many(fns: dict[str, Callable[[], Any]], cfg: Config, *, number: int = 1,
                 repeat: int | None = None) -> dict[str, float]:
    """Median seconds per call for several functions, interleaved round-robin."""
    repeat = repeat or cfg.repeat
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for f in fns.values():
        f()
    keys = list(fns)
    for i in range(repeat):
        order = keys if i % 2 == 0 else keys[::-1]
        for k in order:
            samples[k].append(run_n(fns[k], number))
    return {k: statistics.median(v) / number for k, v in samples.items()}


def bytecode_env() -> dict[str, str]:
    """The environment for start-up timings: bytecode caching on (the
    harness may set PYTHONDONTWRITEBYTECODE), and this checkout's code first
    on the path, so console scripts of an install made from another checkout
    run the code under test; nothing else changed."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO])
    return env


def wall(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """Wall-clock seconds of one subprocess run (spawn to exit); it must succeed."""
    t0 = _clock()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    t = _clock() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}: "
                           f"{p.stderr.decode(errors='replace')[-500:]}")
    return t


def cpu(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """CPU seconds (user + system) of one subprocess run, spawn to exit, as the
    kernel accounted them to the child (``os.wait4``); it must succeed."""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    assert p.stderr is not None
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stderr.close()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}: "
                           f"{err.decode(errors='replace')[-500:]}")
    return usage.ru_utime + usage.ru_stime


def compare_commands(cmds: dict[str, list[str]], cfg: Config, *, repeat: int | None = None,
                     env: dict[str, str] | None = None, warmup: int = 2,
                     clock: Callable[..., float] = wall) -> dict[str, float]:
    """Median seconds per command, run round-robin: wall time, or what ``clock``
    (e.g. :func:`cpu`) says of one run."""
    repeat = repeat or cfg.repeat
    for c in cmds.values():
        for _ in range(warmup):
            clock(c, env)
    samples: dict[str, list[float]] = {k: [] for k in cmds}
    keys = list(cmds)
    for i in range(repeat):
        for k in (keys if i % 2 == 0 else keys[::-1]):
            samples[k].append(clock(cmds[k], env))
    return {k: statistics.median(v) for k, v in samples.items()}
