"""Ratio-distribution plots of the corpus rows (``python -m bench --plot-dir DIR``).

A corpus row (15 qemu corpus, 16 load corpus, 17 models, 18 cold start, 19
guest profile, 20 start-up, 21/22 vmrt benchmark and profile) times many
inputs and reports a median and a worst ratio; its judged row keeps every
input's ratio and the goal's limit in
``Row.data`` (:func:`bench._timing.per_input`).  For each such row this draws
``benchmarks_ratios_<row id>.png``: one dot per input on a log axis, sorted
(worst at the top), the goal's limit as a dashed line, the median as a dotted
one, the inputs that miss the goal in red and the worst labelled; the results
page links it from the row's note and shows it in a section of its own.
"""
from __future__ import annotations

import os
import re
import statistics
import textwrap
from pathlib import Path
from typing import Any

from ._timing import Row

PREFIX = "benchmarks_ratios_"
SECTION = "Per-input ratios of the corpus rows"


def distribution(r: Row) -> tuple[dict[str, float], float | None] | None:
    """The row's per-input ratios and goal limit, or None when it has none."""
    ratios = r.data.get("ratios")
    if r.na or "limit" not in r.data or not isinstance(ratios, dict) or not ratios:
        return None
    return ratios, r.data["limit"]


def png_path(plot_dir: Path, r: Row) -> Path:
    return plot_dir / f"{PREFIX}{re.sub(r'[^0-9A-Za-z]+', '_', r.id)}.png"


def summary(ratios: dict[str, float], limit: float | None) -> str:
    """One line: how many inputs, median, worst, and which miss the goal."""
    worst = max(ratios, key=ratios.__getitem__)
    text = (f"{len(ratios)} inputs; median {statistics.median(ratios.values()):.2f}×, "
            f"worst {worst} {ratios[worst]:.2f}×")
    if limit is not None:
        over = sorted((k for k, v in ratios.items() if v > limit), key=ratios.__getitem__,
                      reverse=True)
        text += (f"; above the goal's {limit:g}×: " + ", ".join(over) if over
                 else f"; every input within {limit:g}×")
    return text


# ---------------------------------------------------------------------------
# drawing
# ---------------------------------------------------------------------------

def draw(rows: list[Row], plot_dir: Path, plt: Any) -> list[str]:
    """One plot per corpus row into ``plot_dir``; a line per plot saying where
    it went.  ``plt`` None (matplotlib missing, said once by the caller):
    nothing is drawn and a stale image of these rows is removed."""
    said = []
    for r in rows:
        dist = distribution(r)
        if dist is None:
            continue
        path = png_path(plot_dir, r)
        if plt is None:
            path.unlink(missing_ok=True)
            continue
        plot_dir.mkdir(parents=True, exist_ok=True)
        fig = figure(r, *dist, plt)
        fig.savefig(path)
        plt.close(fig)
        said.append(f"plot: {path}")
    return said


def figure(r: Row, ratios: dict[str, float], limit: float | None, plt: Any) -> Any:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    items = sorted(ratios.items(), key=lambda kv: kv[1])        # worst at the top
    names, vals = [k for k, _ in items], [v for _, v in items]
    n = len(items)
    fig, ax = plt.subplots(figsize=(8, 2.0 + 0.22 * n), dpi=110)
    ys = list(range(n))
    miss = [limit is not None and v > limit for v in vals]
    colors = ["tab:red" if m else "tab:blue" for m in miss]
    ax.hlines(ys, 1.0, vals, colors=colors, alpha=0.3, lw=2)
    ax.scatter(vals, ys, c=colors, s=24, zorder=3)
    ax.axvline(1.0, color="black", lw=0.8)
    med = statistics.median(vals)
    ax.axvline(med, color="gray", ls=":", lw=1.3)
    if limit is not None:
        ax.axvline(limit, color="tab:red", ls="--", lw=1.3)
    ax.annotate(f"{vals[-1]:.2f}×", (vals[-1], n - 1), xytext=(6, 0), color=colors[-1],
                textcoords="offset points", va="center", fontsize=8, fontweight="bold")
    lo = min([*vals, 1.0] + ([limit] if limit else []))
    hi = max([*vals, 1.0] + ([limit] if limit else []))
    ax.set_xscale("log")
    ax.set_xlim(lo / 1.25, hi * (hi / lo) ** 0.12 * 1.6)      # room for the worst's value
    subs = (1.0, 2.0, 5.0) if hi / lo > 4 else (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0)
    ax.xaxis.set_major_locator(LogLocator(subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(ys)
    ax.set_yticklabels([*names[:-1], f"worst: {names[-1]}"], fontsize=8)
    ax.get_yticklabels()[-1].set_fontweight("bold")
    ax.set_ylim(-0.7, n - 0.3)
    # the key in the axis label: a legend would hide dots somewhere
    ax.set_xlabel(f"ratio, log scale (1× = the peer); dotted: the median, {med:.2f}×; "
                  + (f"dashed: the goal, ≤ {limit:g}×; red: misses it" if limit is not None
                     else "reported, no goal"), fontsize=9)
    ax.set_title(textwrap.fill(f"{r.id}: {r.measure}", 90), fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------
# the results page
# ---------------------------------------------------------------------------

def _rel(png: Path, md_path: Path) -> str:
    return os.path.relpath(png, md_path.parent)


def note_link(r: Row, plot_dir: str | None, md_path: Path) -> str:
    """"([per-input ratios](...)) " to put before the row's note when its
    plot exists ("" otherwise)."""
    if not plot_dir or distribution(r) is None:
        return ""
    png = png_path(Path(plot_dir), r)
    return f"([per-input ratios]({_rel(png, md_path)})) " if png.is_file() else ""


def markdown_lines(rows: list[Row], plot_dir: str | None, md_path: Path) -> list[str]:
    """The section showing every corpus row's plot, with its numbers (none
    without ``--plot-dir`` or without a corpus row)."""
    found = [(r, d) for r in rows if (d := distribution(r)) is not None]
    if not plot_dir or not found:
        return []
    out = [f"## {SECTION}", "",
           "Every input's ratio of the corpus rows (log scale, worst at the top; dashed: the "
           "goal's limit, dotted: the median; red: the inputs that miss the goal).", ""]
    for r, (ratios, limit) in found:
        png = png_path(Path(plot_dir), r)
        out += [f"### {r.id}: {r.measure}", ""]
        out += ([f"![per-input ratios of {r.id}]({_rel(png, md_path)})", ""] if png.is_file()
                else ["(plot not drawn: matplotlib is missing)", ""])
        out += [f"*{r.goal}: {summary(ratios, limit)}.*", ""]
    return out
