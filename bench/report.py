"""The bench's output: the table printed at the end of a run, the notes
under it, and the results page (``--markdown``) with its machine
description, plots and history."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from . import plots, ratio_plots
from ._timing import REPO, Config, Row
from .texts import HOW, WHY

HISTORY = REPO / "bench" / "history.jsonl"


def row_key(r: Row) -> str:
    """A row's id, with its CPU when a measure has one row per CPU."""
    arch = r.data.get("arch")
    return f"{r.id}/{arch}" if arch else r.id

HEADER = ("#", "measure", "ours", "peer", "ratio", "goal", "met")


def _cells(r: Row) -> tuple[str, ...]:
    ratio = "" if r.ratio is None else f"{r.ratio:.2f}×"
    return (r.id, r.measure, r.ours, r.peer, ratio, r.goal, r.verdict)


def table_text(rows: list[Row]) -> str:
    cells = [HEADER] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    widths[1] = min(widths[1], 70)
    lines = []
    for k, c in enumerate(cells):
        lines.append("  ".join(v.ljust(w) if i < len(c) - 1 else v
                               for i, (v, w) in enumerate(zip(c, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def why(r: Row) -> str:
    """The explanation for an unmet goal: WHY's text, plus what this run's
    own numbers say where that can be told."""
    text = WHY.get(r.id, "")
    text = text[:1].upper() + text[1:]
    lg = r.data.get("lief_growth_10k_100k")
    if lg is not None and lg > 11.5:
        text = (f"In this run LIEF, linear by construction, grew {lg:.1f}× on the same "
                f"files: the excess is the machine (caches, memory bandwidth, other jobs), "
                f"not the algorithm. " + text)
    if r.id == "9" and r.data.get("peer_speedup") and r.data["peer_speedup"] < 1.8:
        text = (f"In this run the machine itself allowed only {r.data['peer_speedup']:.2f}× "
                f"(bare ctypes peer): the goal could not be shown here. " + text)
    if r.id == "12b" and r.data.get("ceiling") and r.data["ceiling"] < 1.8:
        text = (f"In this run two independent processes got only {r.data['ceiling']:.2f}×: "
                f"the goal could not be shown here. " + text)
    return text


def notes_text(rows: list[Row]) -> str:
    out = []
    for r in rows:
        if r.note:
            out.append(f"[{row_key(r)}] {r.note}")
    if any(r.borderline for r in rows):
        out.append("(borderline): the ratio is within 10 % of the goal's limit; on a shared "
                   "machine such a verdict can flip from one run to the next.")
    unmet = [r for r in rows if r.met is False]
    if unmet:
        out.append("")
        out.append("Not met:")
        for r in unmet:
            w = why(r)
            out.append(f"[{row_key(r)}] {r.measure}: ratio {r.ratio:.2f}× (goal {r.goal})"
                       + (f"\n      why: {w}" if w else ""))
    return "\n".join(out)


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform()}
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["memory_gib"] = round(int(mem) / (1 << 20), 1)
    except (OSError, IndexError, ValueError):
        pass
    for dist in ("elfkit", "lief", "pyelftools", "unicorn", "numpy", "iree-base-runtime"):
        try:
            from importlib.metadata import version
            info[dist] = version(dist)
        except Exception:  # noqa: BLE001
            pass
    try:
        info["commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            info["commit"] += " (+ uncommitted changes)"
    except OSError:
        pass
    return info


def plot(series: dict[str, dict[int, float]], path: Path, plt: Any) -> str | None:
    """Load time vs relocations (log-log).  Returns None, or why not
    (``plt`` None: matplotlib is missing, which the caller has said)."""
    if not series:
        return "measure 2 did not run"
    if plt is None:
        return plots.MISSING
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    styles = {"elfkit": ("o-", "elfkit.load + close (RELATIVE)"),
              "elfkit (symbolic)": ("o--", "elfkit.load + close (R_X86_64_64, symbolic)"),
              "LIEF": ("s-", "lief.parse"),
              "pyelftools": ("^-", "pyelftools: ELFFile + walk relocations")}
    for key, (style, label) in styles.items():
        s = series.get(key)
        if s:
            xs = sorted(s)
            ax.plot(xs, [s[x] * 1e3 for x in xs], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dynamic relocations")
    ax.set_ylabel("time per load (ms, median)")
    ax.set_title("Load time vs number of relocations (x86_64 .so, same files)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return None


def markdown(rows: list[Row], info: dict, cfg: Config, command: str, elapsed: float,
             plot_path: Path | None, md_path: Path,
             plot_sections: list[str] | None = None, plot_dir: str | None = None) -> str:
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Benchmarks",
        "",
        "Produced by the `bench/` suite (`python -m bench`): every measure times our code and a "
        "peer on the same input in the same run; absolute times are medians shown for scale, "
        "only the ratios are judged (the machine is shared and noisy).",
        "",
        f"- **Date:** {date}",
        f"- **Machine:** {info.get('cores')} cores, {info.get('cpu')}, "
        f"{info.get('memory_gib', '?')} GiB RAM; {info.get('platform')}; shared with other "
        f"jobs: 1-minute load average {info.get('loadavg', '?')}",
        f"- **Software:** Python {info.get('python')}, elfkit {info.get('elfkit', '?')} "
        f"(commit {info.get('commit', '?')}), LIEF {info.get('lief', '?')}, pyelftools "
        f"{info.get('pyelftools', '?')}, unicorn {info.get('unicorn', '?')}, numpy "
        f"{info.get('numpy', '?')}, IREE runtime {info.get('iree-base-runtime', '?')}",
        f"- **Command:** `{command}` (run from the repository root; {elapsed / 60:.1f} min)",
        f"- **Repeats:** N = {cfg.repeat} samples per side for micro-benchmarks (each sample "
        f"≥ {cfg.target * 1e3:.0f} ms of back-to-back calls), ours and peer interleaved; "
        "the median is reported. Long operations use fewer or single-call samples "
        "(see the notes).",
        "",
        "| # | measure | ours | peer | ratio | goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = _cells(r)
        verdict = f"**{c[6]}**" if r.met is False else c[6]
        lines.append("| " + " | ".join(esc(x) for x in c[:6]) + f" | {esc(verdict)} |")
    lines += ["", "## Notes", ""]
    for r in rows:
        link = ratio_plots.note_link(r, plot_dir, md_path)
        if r.note or link:
            lines.append(f"- **{row_key(r)}** {link}{esc(r.note)}")
    unmet = [r for r in rows if r.met is False]
    lines += ["", "## Goals not met", ""]
    if not unmet:
        lines.append("None.")
    for r in unmet:
        lines.append(f"- **{row_key(r)}** {r.measure}: {r.ratio:.2f}× (goal {r.goal}). "
                     + (f"Why: {why(r)}" if why(r) else ""))
    na = [r for r in rows if r.na]
    if na:
        lines += ["", "## Not measured", ""]
        for r in na:
            lines.append(f"- **{r.id}** {r.measure}: {r.na}")
    lines += ["", "## Load time vs number of relocations", ""]
    if plot_path is not None and plot_path.is_file():
        rel = os.path.relpath(plot_path, md_path.parent)
        lines.append(f"![load time vs relocations]({rel})")
    else:
        lines.append("(plot not generated: matplotlib missing or measure 2 skipped)")
    lines += ["", "Files: synthetic x86_64 shared objects, N 8-byte words in `.data` each with "
              "one dynamic relocation (RELATIVE, or R_X86_64_64 against an exported symbol), "
              "assembled with `python -m ziglang cc` and linked with `ld.lld -shared -z now`.",
              ""]
    lines += plot_sections or []
    lines += ratio_plots.markdown_lines(rows, plot_dir, md_path)
    hist = _history_lines()
    if hist:
        lines += ["## Trend: vmrt interpreter vs iree-run-module (measure 10)", "",
                  "| date | commit | vmrt run | iree-run-module | ratio | per iteration |",
                  "|---|---|---|---|---|---|"] + hist + [""]
    lines += ["## How each measure is taken", ""] + [f"- {x}" for x in HOW] + [
              "", "The module docstrings in `bench/` (`m_load.py`, `m_native.py`, `m_emu.py`, "
              "`_rawuc.py`, `m_fatelf.py`, `m_vmrt.py`) give the details.", ""]
    return "\n".join(lines)


def _history_lines() -> list[str]:
    if not HISTORY.is_file():
        return []
    out = []
    for line in HISTORY.read_text().splitlines()[-20:]:
        try:
            h = json.loads(line)
        except ValueError:
            continue
        m10 = h.get("rows", {}).get("10")
        if not m10 or not m10.get("data"):
            continue
        d = m10["data"]
        out.append(f"| {h.get('date', '?')} | {h.get('commit', '?')} | "
                   f"{d['ours_s']:.3f} s | {d['peer_s']:.3f} s | "
                   f"{d['ours_s'] / d['peer_s']:.1f}× | "
                   f"{d['ours_iter_s'] * 1e9:.0f} ns vs {d['peer_iter_s'] * 1e9:.1f} ns |")
    return out


__all__ = ["HISTORY", "machine_info", "markdown", "notes_text", "plot", "row_key", "table_text",
           "why"]
