"""Row 23: ``local-task`` first call and steady state (issue 27 item 2/3).

23a/23b, native x86_64, vs ``iree.runtime`` with its ``local-task`` driver,
same ``.vmfb``, interleaved, medians: *first call* is load of the module +
a context + the first call (a new program each sample: what a user meets;
vmrt's translated-code cache is warm after the first sample, as IREE's
page cache is), *steady state* one call of a loaded program.  The corpus:
the MNIST MLP of row 13 and the 256x256 f32 matmul of the local-task tests
(16 workgroups).  23c: the same programs compiled for aarch64 and run
emulated (no peer here: IREE runs foreign code under qemu-user, row 15), the
first call next to a steady call.  "workers used": the threads that ran
workgroups of the program's biggest dispatch out of the device's, read from a
``vmrt.load(profile=)`` timeline (a profiled grid is handed out from Python,
which times each range; unprofiled calls on x86_64 share grids through the
native team of :mod:`vmrt.hal.local.workgroup_loop_team`, which no timeline
sees).
"""
from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ._timing import REPO, Config, Row, compare_many, fmt_time, na_row
from .m_programs import mnist_mlir
from .m_vmrt import cpu_vmfb


def _matmul_mlir() -> str:
    """The local-task tests' programs (a 256x256 matmul, 16 workgroups)."""
    return (REPO / "tests" / "vmrt" / "hal" / "programs" / "task_matmul.mlir").read_text()


#: (name, function, MLIR, input shapes)
PROGRAMS = (("mnist", "predict", mnist_mlir, ((1, 784),)),
            ("matmul256", "matmul", _matmul_mlir, ((256, 256), (256, 256))))


def _inputs(shapes: tuple[tuple[int, ...], ...]) -> list[Any]:
    import numpy as np
    rng = np.random.default_rng(23)
    return [rng.random(s, np.float32) for s in shapes]


def workers_used(vmfb: Path, fn: str, args: list[Any]) -> tuple[int, int]:
    """(threads that ran workgroups of the call's biggest dispatch,
    workgroups of it), from a profile of one call under local-task."""
    import vmrt
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "t.json"
        with vmrt.load(vmfb, device="local-task", profile=trace) as prog:
            prog[fn](*args)
        events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    x = [e for e in events if e.get("ph") == "X"]
    disp = max((e for e in x if e.get("cat", "").startswith("dispatch")),
               key=lambda e: e["args"].get("workgroups", 0))
    tids = {e["tid"] for e in x if e.get("cat", "").startswith("workgroups")
            and e["args"].get("dispatch") == disp["args"]["dispatch"]}
    return len(tids), int(disp["args"].get("workgroups", 0))


def _first_call_vmrt(vmfb: Path, fn: str, args: list[Any]) -> Any:
    import vmrt
    with vmrt.load(vmfb, device="local-task") as prog:
        return prog[fn](*args)


def _first_call_iree(vmfb: Path, fn: str, args: list[Any]) -> Any:
    import iree.runtime as rt
    return rt.load_vm_flatbuffer_file(str(vmfb), driver="local-task")[fn](*args)


def first_call(cfg: Config) -> list[Row]:
    goal = "reported"
    try:
        import iree.runtime as rt
        import numpy as np

        import vmrt
        from vmrt.hal.local.device import task_workers
        vmfbs = {name: cpu_vmfb(cfg.work, f"task_{name}", mlir()) for name, _f, mlir, _s
                 in PROGRAMS}
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("23a", "local-task first call vs iree.runtime", goal,
                       str(e).splitlines()[0])]
    threads = task_workers()
    first: dict[str, float] = {}
    steady: dict[str, float] = {}
    used: dict[str, str] = {}
    repeat = 3 if cfg.quick else 7
    for name, fn, _mlir, shapes in PROGRAMS:
        vmfb, args = vmfbs[name], _inputs(shapes)
        ours = _first_call_vmrt(vmfb, fn, args)
        theirs = _first_call_iree(vmfb, fn, args)
        if np.asarray(ours).tobytes() != np.asarray(theirs).tobytes():
            raise AssertionError(f"{name}: vmrt and iree.runtime local-task results differ")
        res = compare_many({"vmrt": lambda v=vmfb, f=fn, a=args: _first_call_vmrt(v, f, a),
                            "iree": lambda v=vmfb, f=fn, a=args: _first_call_iree(v, f, a)},
                           cfg, repeat=repeat)
        first[name] = res["vmrt"] / res["iree"]
        prog = vmrt.load(vmfb, device="local-task")
        mod = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-task")
        try:
            st = compare_many({"vmrt": lambda p=prog, f=fn, a=args: p[f](*a),
                               "iree": lambda m=mod, f=fn, a=args: m[f](*a)}, cfg,
                              number=10, repeat=repeat)
        finally:
            prog.close()
        steady[name] = st["vmrt"] / st["iree"]
        n, wg = workers_used(vmfb, fn, args)
        used[name] = (f"{name}: first {fmt_time(res['vmrt'])} vs {fmt_time(res['iree'])}, "
                      f"steady {fmt_time(st['vmrt'])} vs {fmt_time(st['iree'])}, "
                      f"{n}/{min(threads, wg)} workers used ({wg} workgroups)")
    rows = []
    for rid, what, ratios in (("23a", "first call (load + call)", first),
                              ("23b", "steady state", steady)):
        worst = max(ratios, key=lambda k: ratios[k])
        med = statistics.median(ratios.values())
        rows.append(Row(rid, f"local-task {what} vs iree.runtime local-task, native x86_64, "
                        f"{threads} threads", f"median {med:.2f}×, worst {ratios[worst]:.2f}× "
                        f"({worst})", "iree.runtime local-task", ratios[worst], goal, None,
                        note="; ".join(used.values()) if rid == "23a" else
                        ", ".join(f"{k} {v:.2f}×" for k, v in ratios.items())))
    return rows + _emulated(cfg, threads)


def _emulated(cfg: Config, threads: int) -> list[Row]:
    name = f"local-task first call vs a steady call, emulated aarch64, {threads} threads"
    try:
        import vmrt
        vmfbs = {n: cpu_vmfb(cfg.work, f"task_{n}_aarch64", mlir(), triple="aarch64-linux-gnu")
                 for n, _f, mlir, _s in PROGRAMS}
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("23c", name, "reported", str(e).splitlines()[0])]
    parts, ratios = [], {}
    for n, fn, _mlir, shapes in PROGRAMS:
        args = _inputs(shapes)
        firsts, steadies = [], []
        for _ in range(1 if cfg.quick else 3):
            t = time.perf_counter()
            prog = vmrt.load(vmfbs[n], device="local-task")
            try:
                prog[fn](*args)
                firsts.append(time.perf_counter() - t)
                t = time.perf_counter()
                prog[fn](*args)
                steadies.append(time.perf_counter() - t)
            finally:
                prog.close()
        f, s = statistics.median(firsts), statistics.median(steadies)
        ratios[n] = f / s
        used, wg = workers_used(vmfbs[n], fn, args)
        parts.append(f"{n}: first {fmt_time(f)}, steady {fmt_time(s)}, "
                     f"{used}/{min(threads, wg)} workers used ({wg} workgroups)")
    worst = max(ratios, key=lambda k: ratios[k])
    return [Row("23c", name, f"worst {ratios[worst]:.2f}× a steady call ({worst})",
                "a steady call of the same program (IREE's peer under qemu-user: row 15)",
                ratios[worst], "reported", None, note="; ".join(parts))]


__all__ = ["first_call", "workers_used"]
