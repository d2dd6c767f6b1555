"""``python -m bench``: run every measure and print one table.

    python -m bench                      # full suite (N=21 samples per side)
    python -m bench --quick              # ~1 minute smoke run (N=5, small inputs)
    python -m bench --json results.json  # also save every number
    python -m bench --plot docs/benchmarks_relocs.png   # load time vs relocations
    python -m bench --plot-dir docs     # + per-dispatch cost, local-task scaling and
                                        #   every corpus row's per-input ratios plots
    python -m bench --markdown docs/benchmarks.md       # write the results page
    python -m bench --only 1,2,7         # some measures only (1-16)
    python -m bench --setup-cle          # create build/bench/cle-venv with angr's cle
    python -m bench --setup-qemu         # qemu-user, sysroots, IREE's aarch64 runtime (15)

Columns: ``ours`` and ``peer`` are medians of N interleaved samples (absolute
times: noisy, shown for scale); ``ratio`` is what the goal judges (see the
goal's wording: "≤ 3× peer time" means ours/peer time; "≥ 0.8× peer
throughput" means ours/peer throughput; "≥ 20× faster" means peer/ours time;
"≥ 1.8× speed-up" means 1-thread/2-thread time).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from . import _build, plots, ratio_plots
from ._timing import Config, Row, na_row
from .report import HISTORY, machine_info, markdown, notes_text, plot, row_key, table_text

#: measure number -> (title, function(cfg) -> rows).  Filled below.
MEASURES: dict[str, tuple[str, Callable[[Config], list[Row]]]] = {}


def _measure(num: str, title: str):
    def deco(fn: Callable[[Config], list[Row]]):
        MEASURES[num] = (title, fn)
        return fn
    return deco


# Each entry builds what it needs and returns rows; exceptions become an
# "n/a (failed: ...)" row so the rest of the suite still runs.

@_measure("1", "full load vs lief.parse and cle.Loader")
def _m1(cfg: Config) -> list[Row]:
    from .m_load import full_load
    return full_load(cfg)


_SERIES: dict[str, dict[int, float]] = {}


@_measure("2", "load time vs number of relocations")
def _m2(cfg: Config) -> list[Row]:
    from .m_load import reloc_scaling
    rows, series = reloc_scaling(cfg)
    _SERIES.update(series)
    return rows


@_measure("3", "native call overhead; import cost")
def _m3(cfg: Config) -> list[Row]:
    from .m_native import import_cost, native_calls
    return native_calls(cfg) + import_cost(cfg)


@_measure("4", "emulated backend vs raw unicorn (4, 5, 6)")
def _m4(cfg: Config) -> list[Row]:
    from .m_emu import emulated
    return emulated(cfg)


@_measure("7", "FatELF pack/select vs cp")
def _m7(cfg: Config) -> list[Row]:
    from .m_fatelf import fatelf
    return fatelf(cfg)


@_measure("8", "CLI start-up")
def _m8(cfg: Config) -> list[Row]:
    from .m_fatelf import cli_startup
    return cli_startup(cfg)


@_measure("9", "native dispatch threads")
def _m9(cfg: Config) -> list[Row]:
    from .m_vmrt import dispatch_threads
    return dispatch_threads(cfg)


@_measure("10", "vmrt interpreter vs iree-run-module")
def _m10(cfg: Config) -> list[Row]:
    from .m_vmrt import interpreter
    return interpreter(cfg)


@_measure("11", "vmrt.load per dispatch vs iree.runtime")
def _m11(cfg: Config) -> list[Row]:
    from .m_vmrt import load_api
    return load_api(cfg)


@_measure("12", "local-task vs local-sync")
def _m12(cfg: Config) -> list[Row]:
    from .m_task_emu import local_task_emulated
    from .m_vmrt import local_task
    return local_task(cfg) + local_task_emulated(cfg)


@_measure("13", "steady state through vmrt.load vs iree.runtime")
def _m13(cfg: Config) -> list[Row]:
    from .m_programs import steady_state
    return steady_state(cfg)


@_measure("14", "whole command vs iree-run-module")
def _m14(cfg: Config) -> list[Row]:
    from .m_programs import whole_command
    return whole_command(cfg)


@_measure("15", "emulated CPUs vs IREE's runtime for that CPU under qemu-user")
def _m15(cfg: Config) -> list[Row]:
    from .m_qemu import qemu_user
    return qemu_user(cfg)


@_measure("16", "load over a corpus vs lief.parse: first load and reload")
def _m16(cfg: Config) -> list[Row]:
    from .m_load_corpus import corpus_load
    return corpus_load(cfg)


@_measure("17", "real-size models vs iree.runtime")
def _m17(cfg: Config) -> list[Row]:
    from .m_models import models
    return models(cfg)


@_measure("18", "cold start of big programs vs iree.runtime")
def _m18(cfg: Config) -> list[Row]:
    from .m_models import cold_start
    return cold_start(cfg)


@_measure("19", "guest-code profile vs unprofiled run")
def _m19(cfg: Config) -> list[Row]:
    from .m_gprof import profile_overhead
    return profile_overhead(cfg)


@_measure("20", "start-up of every elfkit and vmrt command")
def _m20(cfg: Config) -> list[Row]:
    from .m_start import startup
    return startup(cfg)


@_measure("21", "vmrt benchmark vs iree-benchmark-module")
def _m21(cfg: Config) -> list[Row]:
    from .m_look import benchmark_vs_iree
    return benchmark_vs_iree(cfg)


@_measure("22", "profiling overhead (--profile vs unprofiled)")
def _m22(cfg: Config) -> list[Row]:
    from .m_look import profile_overhead
    return profile_overhead(cfg)


@_measure("23", "local-task first call and steady state")
def _m23(cfg: Config) -> list[Row]:
    from .m_task import first_call
    return first_call(cfg)


#: measure numbers each entry covers (for --only and the completeness check)
COVERS = {"1": ("1",), "2": ("2",), "3": ("3",), "4": ("4", "5", "6"), "7": ("7",),
          "8": ("8",), "9": ("9",), "10": ("10",), "11": ("11",), "12": ("12", "12b"),
          "13": ("13",), "14": ("14",), "15": ("15",)}
#: every measure number (entries not in COVERS cover just themselves)
ALL_MEASURES = tuple(sorted({n for c in COVERS.values() for n in c} | set(MEASURES),
                            key=lambda n: (int(n.rstrip("abcdefghijklmnopqrstuvwxyz")), n)))


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def run(cfg: Config, only: set[str] | None = None) -> list[Row]:
    rows: list[Row] = []
    t_build = time.perf_counter()
    try:
        _build.plugins(cfg.work)
    except Exception as e:  # noqa: BLE001
        return [na_row(n, f"measure {n}", "", f"failed: plugins could not be built: {e}")
                for n in ALL_MEASURES]
    if cfg.verbose:
        print(f"plugins ready ({time.perf_counter() - t_build:.1f} s)", file=sys.stderr)
    for num, (title, fn) in MEASURES.items():
        if only and not (set(COVERS.get(num, (num,))) & only):
            continue
        t0 = time.perf_counter()
        if cfg.verbose:
            print(f"measure {num}: {title} ...", file=sys.stderr, flush=True)
        try:
            got = fn(cfg)
        except Exception as e:  # noqa: BLE001 - keep going, say what broke
            if cfg.verbose:
                traceback.print_exc()
            got = [na_row(num, title, "", f"failed: {type(e).__name__}: {e}")]
        if only:
            got = [r for r in got if _number(r.id) in only or r.na]
        rows += got
        if cfg.verbose:
            print(f"  ... {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return rows


def _loadavg() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (OSError, AttributeError):
        return "?"


def _number(row_id: str) -> str:
    digits = ""
    for ch in row_id:
        if not ch.isdigit():
            break
        digits += ch
    return digits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="~1 minute smoke run: N=5, small inputs")
    ap.add_argument("--repeat", type=int, help="samples per side (default 21, --quick 5)")
    ap.add_argument("--json", metavar="FILE", help="write all results (and raw numbers) as JSON")
    ap.add_argument("--plot", metavar="FILE.png", help="plot load time vs relocations "
                    "(needs matplotlib; skipped with a message when it is missing)")
    ap.add_argument("--plot-dir", metavar="DIR", help="also measure and draw the per-dispatch "
                    "cost and local-task scaling plots into DIR (bench/plots.py; ~1 min more; "
                    "their numbers go to the terminal, --json and --markdown), and one plot of "
                    "every input's ratio per corpus row (bench/ratio_plots.py)")
    ap.add_argument("--markdown", metavar="FILE.md", help="write the results page "
                    "(e.g. docs/benchmarks.md)")
    ap.add_argument("--only", metavar="N,N", help="run only these measures (1-16)")
    ap.add_argument("--no-history", action="store_true",
                    help="do not append this run to bench/history.jsonl (full runs only)")
    ap.add_argument("--work", metavar="DIR", help="cache directory (default build/bench)")
    ap.add_argument("--setup-cle", action="store_true",
                    help="create build/bench/cle-venv with angr's cle for measure 1b, then exit")
    ap.add_argument("--setup-qemu", action="store_true",
                    help="install qemu-user and the aarch64/riscv64 sysroots (apt-get) and "
                    "unpack IREE's runtime wheel for each CPU into build/bench/qemu for "
                    "measure 15, then exit")
    args = ap.parse_args(argv)
    cfg = Config.make(args.quick, args.repeat, Path(args.work) if args.work else None)
    if args.setup_cle:
        from .m_load import setup_cle
        return setup_cle(cfg.work)
    if args.setup_qemu:
        from .m_qemu import setup_qemu
        return setup_qemu(cfg.work)
    only = None
    if args.only:
        only = {x.strip() for x in args.only.split(",") if x.strip()}
        bad = only - set(ALL_MEASURES)
        if bad:
            ap.error(f"unknown measure(s): {', '.join(sorted(bad))} (1-16)")
    command = "python -m bench " + " ".join(argv if argv is not None else sys.argv[1:])
    t0 = time.perf_counter()
    load0 = _loadavg()
    rows = run(cfg, only)
    elapsed = time.perf_counter() - t0
    info = machine_info()
    info["loadavg"] = f"{load0} at start, {_loadavg()} at end"
    print()
    print(f"elfkit/vmrt benchmarks: {'quick' if cfg.quick else 'full'} run, N={cfg.repeat} "
          f"(median), {info['cores']} cores, {info['cpu']}, {elapsed:.0f} s, "
          f"1-min load average {info['loadavg']}")
    print(table_text(rows))
    notes = notes_text(rows)
    if notes:
        print()
        print(notes)
    plot_path = Path(args.plot) if args.plot else None
    plt = plots.pyplot() if plot_path or args.plot_dir else None
    if plt is None and (plot_path or args.plot_dir):
        print(f"\nplot skipped: {plots.MISSING}: no plot drawn")      # said once
    if plot_path is not None and plt is not None:
        why = plot(_SERIES, plot_path, plt)
        print(f"\nplot: {plot_path}" if why is None else f"\nplot skipped: {why}")
    plot_data = plots.run(cfg, args.plot_dir, plt)
    for line in ratio_plots.draw(rows, Path(args.plot_dir), plt) if args.plot_dir else ():
        print(line)
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    result = {"date": date, "command": command, "quick": cfg.quick, "repeat": cfg.repeat,
              "elapsed_s": elapsed, "machine": info, "rows": [r.to_dict() for r in rows],
              "relocation_series": {k: {str(n): t for n, t in v.items()}
                                    for k, v in _SERIES.items()},
              "plots": plot_data}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    if not cfg.quick and not args.no_history and not only:
        with open(HISTORY, "a") as f:
            f.write(json.dumps({"date": date, "commit": info.get("commit"),
                                "rows": {row_key(r): {"ratio": r.ratio, "met": r.met,
                                                      "data": r.data}
                                         for r in rows if r.id in ("10",) or r.met is not None}},
                               ensure_ascii=False) + "\n")
    if args.markdown:
        md = Path(args.markdown)
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(markdown(rows, info, cfg, command, elapsed, plot_path, md,
                               plots.markdown_lines(plot_data, args.plot_dir, md),
                               args.plot_dir))
    return 0
