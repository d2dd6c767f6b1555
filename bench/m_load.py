"""Measures 1 and 2: loading.

1. Full load of the standalone plugin (x86_64): ``elfkit.load(bytes)`` then
   ``close()`` (parse + map + relocate + protect + init + unmap) vs
   ``lief.parse(bytes)`` (parse only) and vs ``cle.Loader`` (angr's loader;
   not a dependency: imported if installed, else run by an isolated
   interpreter at build/bench/cle-venv, see ``python -m bench --setup-cle``).
2. Load time of synthetic shared objects with 1k/10k/100k dynamic
   relocations (RELATIVE, and symbolic R_X86_64_64), with the growth
   factor; LIEF (``lief.parse``) and pyelftools (``ELFFile`` + walking every
   relocation section, reading each entry's offset, type and symbol) timed on
   the same files for the plot.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from . import _build
from ._timing import Config, Row, compare, compare_many, fmt_time, measure, na_row

CLE_VENV = "cle-venv"

_CLE_CHILD = r"""
import io, json, statistics, sys, time, gc, logging
logging.disable(logging.CRITICAL)
import cle
data = open(sys.argv[1], "rb").read()
repeat, number = int(sys.argv[2]), int(sys.argv[3])
def once():
    cle.Loader(io.BytesIO(data), auto_load_libs=False)
once(); once()
gc.disable()
ts = []
for _ in range(repeat):
    t0 = time.perf_counter()
    for _ in range(number):
        once()
    ts.append((time.perf_counter() - t0) / number)
import importlib.metadata as md
print(json.dumps({"median": statistics.median(ts), "version": md.version("cle")}))
"""


def cle_python(cfg: Config) -> str | None:
    """An interpreter that can import cle: this one, $BENCH_CLE_PYTHON, or
    the isolated venv that ``--setup-cle`` creates."""
    try:
        import cle  # noqa: F401
        return sys.executable
    except Exception:  # noqa: BLE001 - any broken cle install: look for another one
        pass
    for cand in (os.environ.get("BENCH_CLE_PYTHON"), str(cfg.work / CLE_VENV / "bin" / "python")):
        if cand and Path(cand).is_file():
            p = subprocess.run([cand, "-c", "import logging; logging.disable(50); import cle"],
                               capture_output=True)
            if p.returncode == 0:
                return cand
    return None


def setup_cle(work: Path) -> int:
    """Create build/bench/cle-venv (system site packages visible) and pip
    install cle there; never touches this environment."""
    venv = work / CLE_VENV
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    # pyvex 9.2 needs bitstring's ConstBitStream, which bitstring 5 removed.
    return subprocess.run(pip + ["cle", "bitstring<5"]).returncode


def _time_cle(py: str, path: Path, cfg: Config) -> tuple[float, str]:
    number = 2 if cfg.quick else 10
    p = subprocess.run([py, "-c", _CLE_CHILD, str(path), str(cfg.repeat), str(number)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["median"], out["version"]


def _elfkit_load(data: bytes):
    import elfkit

    def f():
        elfkit.load(data).close()
    return f


def _lief_parse(data: bytes):
    import lief
    lief.logging.disable()

    def f():
        lief.parse(data)
    return f


def _pyelftools_walk(data: bytes):
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    def f():
        elf = ELFFile(io.BytesIO(data))
        n = 0
        for sec in elf.iter_sections():
            if isinstance(sec, RelocationSection):
                for r in sec.iter_relocations():
                    r["r_offset"], r["r_info_type"], r["r_info_sym"]
                    n += 1
        return n
    return f


def _faults(fn, runs: int = 5) -> float:
    """Minor page faults per call of ``fn`` (after one warm-up call)."""
    import resource
    fn()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(runs):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / runs


def full_load(cfg: Config) -> list[Row]:
    path = _build.plugin(cfg.work, "standalone", "x86_64")
    data = path.read_bytes()
    ours, lief_t = compare(_elfkit_load(data), _lief_parse(data), cfg)
    f_ours, f_lief = _faults(_elfkit_load(data), 50), _faults(_lief_parse(data), 50)
    rows = [Row("1a", "full load of standalone.so (x86_64, 3.9 KB) vs lief.parse",
                fmt_time(ours), fmt_time(lief_t), ours / lief_t, "≤ 3× peer time",
                ours / lief_t <= 3.0,
                note=(f"elfkit.load(bytes)+close() vs lief.parse(bytes), same bytes; minor "
                      f"page faults per load: {f_ours:.1f} vs {f_lief:.1f}"),
                data={"ours_s": ours, "peer_s": lief_t, "bytes": len(data)})]
    from elfkit.loader import parse
    view = memoryview(data)
    p_ours, p_lief = compare(lambda: parse(view), _lief_parse(data), cfg)
    parse_row = Row("1c", "parse only (elfkit.loader.parse) of standalone.so vs lief.parse",
                    fmt_time(p_ours), fmt_time(p_lief), p_ours / p_lief, "reported", None,
                    note="headers, dynamic section, symbols, hash table, relocation tables; "
                         "no mapping",
                    data={"ours_s": p_ours, "peer_s": p_lief})
    goal = "≥ 20× faster (peer/ours)"
    py = cle_python(cfg)
    if py is None:
        rows.append(na_row("1b", "full load of standalone.so vs cle.Loader", goal,
                           "cle is not installed (python -m bench --setup-cle)"))
    else:
        try:
            ours2 = measure(_elfkit_load(data), cfg)
            cle_t, ver = _time_cle(py, path, cfg)
        except Exception as e:  # noqa: BLE001
            rows.append(na_row("1b", "full load of standalone.so vs cle.Loader", goal,
                               f"cle failed: {e}"))
        else:
            where = "in-process" if py == sys.executable else "in an isolated venv"
            rows.append(Row("1b", f"full load of standalone.so vs cle.Loader {ver}",
                            fmt_time(ours2), fmt_time(cle_t), cle_t / ours2, goal,
                            cle_t / ours2 >= 20.0,
                            note=f"cle.Loader(BytesIO, auto_load_libs=False), timed {where}",
                            data={"ours_s": ours2, "peer_s": cle_t}))
    return rows + [parse_row]


def _marginal(s: dict) -> float:
    """Marginal cost per relocation between the 10k and 100k files."""
    return (s[100000] - s[10000]) / 90000


def reloc_scaling(cfg: Config) -> tuple[list[Row], dict]:
    sizes = (1000, 10000, 100000)
    series: dict[str, dict[int, float]] = {"elfkit": {}, "elfkit (symbolic)": {}, "LIEF": {},
                                           "pyelftools": {}}
    rows: list[Row] = []
    faults: dict[str, dict[int, float]] = {"elfkit": {}, "LIEF": {}}
    for n in sizes:
        rel = _build.reloc_object(cfg.work, n, "relative").read_bytes()
        sym = _build.reloc_object(cfg.work, n, "symbolic").read_bytes()
        fns = {"elfkit": _elfkit_load(rel), "elfkit (symbolic)": _elfkit_load(sym),
               "LIEF": _lief_parse(rel)}
        big = n >= 100000
        number = 1 if big else (2 if n >= 10000 else 10)
        res = compare_many(fns, cfg, number=number)
        # pyelftools is ~100x slower: fewer samples at the big size
        res["pyelftools"] = measure(_pyelftools_walk(rel), cfg, number=1,
                                    repeat=min(cfg.repeat, 3) if big else cfg.repeat)
        for k, v in res.items():
            series[k][n] = v
        faults["elfkit"][n] = _faults(fns["elfkit"])
        faults["LIEF"][n] = _faults(fns["LIEF"])
    for kind, key in (("RELATIVE", "elfkit"), ("R_X86_64_64 (symbolic)", "elfkit (symbolic)")):
        s = series[key]
        for n in sizes:
            lief_t = series["LIEF"][n]
            rows.append(Row(f"2{'a' if key == 'elfkit' else 'b'}{sizes.index(n) + 1}",
                            f"load, {n // 1000}k {kind} relocations vs lief.parse",
                            fmt_time(s[n]), fmt_time(lief_t), s[n] / lief_t, "reported",
                            None, data={"n": n, "ours_s": s[n], "peer_s": lief_t,
                                        "pyelftools_s": series["pyelftools"][n]}))
        g1, g2 = s[10000] / s[1000], s[100000] / s[10000]
        fault_note = ""
        if key == "elfkit":
            fe, fl = faults["elfkit"], faults["LIEF"]
            fault_note = (f"; page faults per load at 1k/10k/100k: elfkit "
                          f"{'/'.join(f'{fe[n]:.0f}' for n in sizes)}, LIEF "
                          f"{'/'.join(f'{fl[n]:.0f}' for n in sizes)}")
        rows.append(Row(f"2{'a' if key == 'elfkit' else 'b'}g",
                        f"growth of load time, {kind}: 1k→10k, 10k→100k",
                        f"{g1:.1f}×, {g2:.1f}×",
                        f"LIEF {series['LIEF'][10000] / series['LIEF'][1000]:.1f}×, "
                        f"{series['LIEF'][100000] / series['LIEF'][10000]:.1f}×",
                        g2, "linear: 10k→100k ≤ 11.5×", g2 <= 11.5,
                        note=(f"ratio = t(100k)/t(10k); 10× = exactly linear; marginal cost "
                              f"per relocation (t(100k)-t(10k))/90k: "
                              f"{fmt_time((s[100000] - s[10000]) / 90000)} (LIEF "
                              f"{fmt_time(_marginal(series['LIEF']))}, pyelftools "
                              f"{fmt_time(_marginal(series['pyelftools']))})"
                              f"{fault_note}"),
                        data={"growth_1k_10k": g1, "growth_10k_100k": g2,
                              "lief_growth_10k_100k":
                                  series["LIEF"][100000] / series["LIEF"][10000]}))
    return rows, series
