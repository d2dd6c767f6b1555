"""Measures 17 and 18: real-size models and the cold start of big programs.

17. Steady state and first call of ``vmrt.load`` vs ``iree.runtime`` on the
    same ``.vmfb`` and ``.irpa`` (built by :mod:`bench._models`: IREE's e2e
    MNIST with its placeholder weights, ResNet-50, a BERT-base encoder stack,
    a 2-layer LSTM), on ``local-sync`` and ``local-task``, interleaved;
    results checked with ``np.allclose``; steady state after :data:`WARM_CALLS`
    calls of each side (vmrt's local-task times each grid both ways over its
    first runs: those calls are the first-call rows' business, not the steady
    state's; a big model's grids skip the trials, so it warms up with 2).
    Goal: steady state ≤ 1.2× for every model and device (the corpus row
    judges the worst).  Also the
    per-dispatch cost over chain programs of several lengths (goal ≤ 3×).
18. Cold start of big programs: in a fresh process (both runtimes imported
    and warmed up on a small program with parameters first), the load of the program (module,
    parameters, context, function lookup) and its first call: vmrt with its
    module cache warm ("cached"), vmrt with an empty cache directory
    ("cold": the module is parsed and verified, what runs at load
    translated), iree.runtime.  Goals: cached load ≤ 2×, cold load ≤ 10×
    iree.runtime's load.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from . import _models
from ._timing import REPO, Config, Row, bytecode_env, compare, fmt_time, na_row, per_input

DEVICES = ("local-sync", "local-task")
#: calls of each side before a steady state is sampled (more than the trial
#: runs of vmrt's local-task: vmrt.hal.local.prepared.TRIALS)
WARM_CALLS = 12
STEADY_LIMIT = 1.2
CHAIN_LIMIT = 3.0
CHAIN_LENGTHS = (10, 25, 50, 100)
LOAD_LIMITS = {"cached": 2.0, "cold": 10.0}
KIND_ID = {"cached": "w", "cold": "c"}
#: functions of the cold-start program in a --quick run (a full run: 240)
QUICK_FUNCTIONS = 60
#: models of measure 17 (full run; --quick: the first two)
MODEL_ORDER = ("mnist_e2e", "lstm", "resnet50", "bert")


def peer_function(built: _models.Built, device: str) -> Any:
    """``built``'s function through iree.runtime: parameters (scope
    ``model``), hal and the program in one context."""
    import iree.runtime as rt
    cfg = rt.Config(device)
    mods = []
    if built.irpa is not None:
        idx = rt.ParameterIndex()
        idx.load(str(built.irpa))
        mods.append(rt.create_io_parameters_module(cfg.vm_instance,
                                                   idx.create_provider(scope="model")))
    mods.append(rt.create_hal_module(cfg.vm_instance, cfg.device))
    mods.append(rt.VmModule.mmap(cfg.vm_instance, str(built.vmfb)))
    return rt.load_vm_modules(*mods, config=cfg)[-1][built.function]


def ours_program(built: _models.Built, device: str) -> Any:
    import vmrt
    params = {"model": str(built.irpa)} if built.irpa is not None else ()
    return vmrt.load(built.vmfb, device=device, parameters=params)


def _host(fn: Any, args: list[Any]) -> Any:
    import numpy as np
    return np.asarray(fn(*args))


def _first_calls(built: _models.Built, device: str, args: list[Any], n: int
                 ) -> tuple[float, float]:
    """Median time of the first call after a fresh load, ours and the peer's."""
    ours, peer = [], []
    for i in range(n):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            if side == 0:
                with ours_program(built, device) as prog:
                    fn = prog[built.function]
                    t0 = time.perf_counter()
                    fn(*args)
                    ours.append(time.perf_counter() - t0)
            else:
                pfn = peer_function(built, device)
                t0 = time.perf_counter()
                _host(pfn, args)
                peer.append(time.perf_counter() - t0)
                del pfn
    return statistics.median(ours), statistics.median(peer)


def _spread(ratios: dict[str, float], limit: float) -> tuple[float, float, list[str]]:
    vals = sorted(ratios.values())
    return statistics.median(vals), vals[-1], [k for k, v in ratios.items() if v > limit]


def _worst(ratios: dict[str, float]) -> str:
    """The peer column of a corpus row: which input is the worst."""
    return "worst: " + max(ratios, key=lambda k: ratios[k])


def models(cfg: Config) -> list[Row]:
    rows: list[Row] = []
    steady: dict[str, float] = {}
    first: dict[str, float] = {}
    order = MODEL_ORDER[:2] if cfg.quick else MODEL_ORDER
    letters = iter("abcdefghijklmnop")
    for name in order:
        what = _models.MODELS[name][2]
        for device in DEVICES:
            rid = f"17{next(letters)}"
            title = f"{what}, {device}: steady state vs iree.runtime"
            goal = f"≤ {STEADY_LIMIT:g}× peer time"
            try:
                import numpy as np
                built = _models.build(cfg.work, name)
                args = built.random_inputs()
            except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
                rows.append(na_row(rid, title, goal, str(e).splitlines()[0]))
                continue
            with ours_program(built, device) as prog:
                fn = prog[built.function]
                pfn = peer_function(built, device)
                ref = _host(pfn, args)
                t0 = time.perf_counter()
                got = fn(*args)
                slow = time.perf_counter() - t0 > 0.1     # a big model: fewer samples
                for _ in range(2 if slow else WARM_CALLS):   # the same warm-up for both
                    fn(*args)
                    _host(pfn, args)
                if not np.allclose(got, ref, rtol=1e-4, atol=1e-5):
                    raise AssertionError(f"{name} on {device}: vmrt and iree.runtime differ "
                                         f"(max |diff| {np.abs(got - ref).max()})")
                o, p = compare(partial(fn, *args), partial(_host, pfn, args), cfg,
                               repeat=5 if slow else max(5, cfg.repeat // 3))
                del pfn
            fo, fp = _first_calls(built, device, args, 3 if cfg.quick or slow else 5)
            key = f"{name}/{device}"
            steady[key], first[key] = o / p, fo / fp
            rows.append(Row(rid, title, fmt_time(o), fmt_time(p), o / p, goal,
                            o / p <= STEADY_LIMIT,
                            note=f"first call after load: {fmt_time(fo)} vs {fmt_time(fp)} "
                                 f"({fo / fp:.2f}×); results allclose; steady state after "
                                 f"{2 if slow else WARM_CALLS} warm-up calls of each side",
                            data={"first_ours": fo, "first_peer": fp}))
    if steady:
        med, worst, miss = _spread(steady, STEADY_LIMIT)
        rows.append(Row("17", f"real-size models, steady state (corpus of {len(steady)}: "
                        f"{', '.join(steady)}), worst", f"median {med:.2f}×", _worst(steady),
                        worst, f"≤ {STEADY_LIMIT:g}× peer time (worst)", worst <= STEADY_LIMIT,
                        note="misses: " + (", ".join(miss) or "none"),
                        data=per_input(steady, STEADY_LIMIT)))
        fmed, fworst, _ = _spread(first, 1e9)
        # its own id: the per-model rows take 17a, 17b, ... (ResNet-50 on local-task is 17f)
        rows.append(Row("17fc", "real-size models, first call after load (same corpus), worst",
                        f"median {fmed:.2f}×", _worst(first), fworst, data=per_input(first)))
    rows += chain_corpus(cfg)
    return rows


def chain_corpus(cfg: Config) -> list[Row]:
    """Per dispatch over chain programs of several lengths (row 11's program
    family), ``vmrt.load`` vs iree.runtime on local-sync."""
    title = f"per dispatch, chains of {', '.join(map(str, CHAIN_LENGTHS))} dispatches, worst"
    goal = f"≤ {CHAIN_LIMIT:g}× peer time (worst)"
    try:
        import iree.runtime as rt
        import numpy as np

        import vmrt

        from .m_vmrt import chain_vmfb
        progs = {n: chain_vmfb(cfg.work, n) for n in CHAIN_LENGTHS}
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("17p", title, goal, str(e).splitlines()[0])]
    ratios: dict[str, float] = {}
    per: dict[str, float] = {}
    x = np.arange(16, dtype=np.float32)
    for n, vmfb in progs.items():
        with vmrt.load(vmfb, device="local-sync") as prog:
            fn = prog["chain"]
            pfn = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")["chain"]
            if not np.array_equal(fn(x), _host(pfn, [x])):
                raise AssertionError(f"chain{n}: vmrt and iree.runtime results differ")
            o, p = compare(partial(fn, x), partial(_host, pfn, [x]), cfg)
        ratios[str(n)], per[str(n)] = o / p, o / n
    med, worst, miss = _spread(ratios, CHAIN_LIMIT)
    return [Row("17p", title, f"median {med:.2f}×", _worst(ratios), worst, goal,
                worst <= CHAIN_LIMIT,
                note="per dispatch (ours): " + ", ".join(f"{k}: {fmt_time(v)}"
                                                         for k, v in per.items())
                     + "; misses: " + (", ".join(miss) or "none"),
                data=per_input(ratios, CHAIN_LIMIT))]


# ---------------------------------------------------------------------------
# 18. cold start
# ---------------------------------------------------------------------------

def _child(side: str, vmfb: str, irpa: str, function: str, shapes: str, warm_vmfb: str,
           warm_irpa: str) -> None:
    """One sample in a fresh process: warm the runtime up on a small program
    with parameters (IREE's MNIST: every module and import a load needs is
    then in memory, as iree.runtime's are once imported), then time the load
    of ``vmfb`` and its first call."""
    import numpy as np
    args = [np.random.default_rng(1).random(s, np.float32) for s in json.loads(shapes)]
    built = _models.Built(Path(vmfb), Path(irpa) if irpa else None, function, [])
    small = _models.Built(Path(warm_vmfb), Path(warm_irpa), "mnist_e2e", [])
    digit = [np.ones((1, 28, 28, 1), np.float32)]
    if side == "peer":
        _host(peer_function(small, "local-sync"), digit)
        t0 = time.perf_counter()
        fn = peer_function(built, "local-sync")
        t1 = time.perf_counter()
        _host(fn, args)
    else:
        with ours_program(small, "local-sync") as p:
            p["mnist_e2e"](*digit)
        t0 = time.perf_counter()
        prog = ours_program(built, "local-sync")
        fn = prog[function]
        t1 = time.perf_counter()
        fn(*args)
    t2 = time.perf_counter()
    print(json.dumps({"load": t1 - t0, "first": t2 - t1}))


def _sample(side: str, prog: tuple[str, str, str, str], warm: _models.Built,
            cache: str) -> dict[str, float]:
    env = dict(bytecode_env(), VMRT_CACHE_DIR=cache)      # .pyc files as in an install
    env.pop("VMRT_NO_CACHE", None)
    p = subprocess.run([sys.executable, "-m", "bench.m_models", side, *prog, str(warm.vmfb),
                        str(warm.irpa)], capture_output=True, text=True, env=env, cwd=REPO)
    if p.returncode != 0:
        raise RuntimeError(f"cold-start sample ({side}) failed: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _programs(cfg: Config) -> dict[str, tuple[str, str, str, str]]:
    """name -> (vmfb, irpa or "", function, json of input shapes)."""
    n = QUICK_FUNCTIONS if cfg.quick else _models.MANY_FUNCTIONS
    many = _models.many_functions(cfg.work, n)
    out = {f"{n} functions": (str(many), "", "f0", "[[4, 8], [4, 8]]")}
    if not cfg.quick:
        for name in ("resnet50", "bert"):
            b = _models.build(cfg.work, name)
            out[_models.MODELS[name][2]] = (str(b.vmfb), str(b.irpa or ""), b.function,
                                            json.dumps([list(s) for _, s in b.inputs]))
    return out


def cold_start(cfg: Config) -> list[Row]:
    title = "load of a big program vs iree.runtime"
    try:
        warm = _models.build(cfg.work, "mnist_e2e")
        programs = _programs(cfg)
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("18", title, "", str(e).splitlines()[0])]
    rows: list[Row] = []
    n = 3 if cfg.quick else 5
    ratios: dict[str, dict[str, float]] = {"cached": {}, "cold": {}}
    letters = iter("abcdefgh")
    with tempfile.TemporaryDirectory(prefix="vmrt-bench-cache-") as tmp:
        warm_cache = os.path.join(tmp, "warm")
        for name, prog in programs.items():
            _sample("ours", prog, warm, warm_cache)         # fills the warm cache
            got: dict[str, list[dict[str, float]]] = {"peer": [], "cached": [], "cold": []}
            for i in range(n):
                order = ("peer", "cached", "cold") if i % 2 == 0 else ("cold", "cached", "peer")
                for side in order:
                    cache = warm_cache if side != "cold" else tempfile.mkdtemp(dir=tmp)
                    got[side].append(_sample("peer" if side == "peer" else "ours", prog, warm,
                                             cache))
            med = {s: {k: statistics.median(d[k] for d in v) for k in ("load", "first")}
                   for s, v in got.items()}
            peer = med["peer"]["load"]
            rid = next(letters)
            for kind, limit in LOAD_LIMITS.items():
                r = med[kind]["load"] / peer
                ratios[kind][name] = r
                rows.append(Row(f"18{rid}{KIND_ID[kind]}", f"{name}: {kind} load",
                                fmt_time(med[kind]["load"]), fmt_time(peer), r,
                                f"≤ {limit:g}× peer time", r <= limit,
                                note=f"first call after it: {fmt_time(med[kind]['first'])} vs "
                                     f"{fmt_time(med['peer']['first'])}", data=med))
    for kind, limit in LOAD_LIMITS.items():
        med_r, worst, miss = _spread(ratios[kind], limit)
        rows.append(Row(f"18{KIND_ID[kind]}", f"{kind} load, corpus of {len(ratios[kind])}, worst",
                        f"median {med_r:.2f}×", _worst(ratios[kind]), worst,
                        f"≤ {limit:g}× peer time (worst)",
                        worst <= limit, note="misses: " + (", ".join(miss) or "none"),
                        data=per_input(ratios[kind], limit)))
    return rows


if __name__ == "__main__":
    _child(*sys.argv[1:])
