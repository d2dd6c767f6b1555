"""``python -m bench --plot-dir DIR``: the per-input ratio plot of each corpus row.

No measure runs here: ``bench.run.run`` is replaced by a function returning
made-up rows (and the two measured plots by no data), so this checks what
main does with rows whose ``Row.data`` holds :func:`bench._timing.per_input`:
a PNG per such row, the results page linking it from the row's note and
showing it with its numbers, and, with matplotlib missing, one message and no
image.
"""
from __future__ import annotations

import re
import sys

import pytest

from bench import plots, ratio_plots
from bench import run as bench_run
from bench._timing import Row, per_input

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

RATIOS = {"mnist/local-sync": 2.5, "mnist/local-task": 1.5, "resnet50/local-sync": 1.1,
          "bert/local-task": 0.9}


def corpus_rows() -> list[Row]:
    worst = max(RATIOS.values())
    return [
        # a median row keeps its ratios but no limit: it gets no plot of its own
        Row("17m", "models, median", "", "", 1.3, data={"ratios": RATIOS}),
        Row("17", "real-size models, steady state, worst", "median 1.30×", "2.50×", worst,
            "≤ 2× peer time (worst)", worst <= 2.0, note="misses: mnist/local-sync",
            data={**per_input(RATIOS, 2.0), "other": 1}),
        Row("17f", "first call after load, worst", "", "", 1.4,
            data=per_input({"a": 1.4, "b": 1.2})),
        Row("3a", "not a corpus row", "1 µs", "1 µs", 1.0),
    ]


def run_main(monkeypatch, tmp_path, rows: list[Row]) -> tuple[int, str]:
    """bench's main on ``rows`` with --plot, --plot-dir and --markdown into tmp_path."""
    monkeypatch.setattr(bench_run, "run", lambda cfg, only=None: rows)
    monkeypatch.setattr(plots, "measure_all", lambda cfg: {})
    rc = bench_run.main(["--quick", "--work", str(tmp_path / "work"),
                         "--plot", str(tmp_path / "docs" / "relocs.png"),
                         "--plot-dir", str(tmp_path / "docs"),
                         "--markdown", str(tmp_path / "docs" / "benchmarks.md")])
    return rc, (tmp_path / "docs" / "benchmarks.md").read_text()


def test_per_input_keeps_every_ratio_and_the_limit():
    d = per_input(RATIOS, 2.0)
    assert d == {"ratios": RATIOS, "limit": 2.0} and d["ratios"] is not RATIOS
    assert per_input({"x": 3.0}) == {"ratios": {"x": 3.0}, "limit": None}
    rows = corpus_rows()
    assert [r.id for r in rows if ratio_plots.distribution(r)] == ["17", "17f"]
    assert ratio_plots.distribution(rows[1]) == (RATIOS, 2.0)
    # a row that could not run has no plot, whatever its data
    assert ratio_plots.distribution(Row("17", "x", na="failed: x", data=per_input(RATIOS))) is None


def test_summary_lists_the_misses_worst_first():
    assert ratio_plots.summary(RATIOS, 1.2) == (
        "4 inputs; median 1.30×, worst mnist/local-sync 2.50×; above the goal's 1.2×: "
        "mnist/local-sync, mnist/local-task")
    assert ratio_plots.summary(RATIOS, None) == "4 inputs; median 1.30×, worst mnist/local-sync 2.50×"
    assert ratio_plots.summary({"a": 1.0}, 2.0).endswith("; every input within 2×")


def test_corpus_row_plot_is_drawn_and_linked(monkeypatch, tmp_path, capsys):
    plt = plots.pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed (the bench extra); the no-matplotlib "
                    "path is tested below")
    rc, md = run_main(monkeypatch, tmp_path, corpus_rows())
    out = capsys.readouterr().out
    assert rc == 0
    docs = tmp_path / "docs"
    drawn = sorted(p.name for p in docs.glob("benchmarks_ratios_*.png"))
    assert drawn == ["benchmarks_ratios_17.png", "benchmarks_ratios_17f.png"]
    for name in drawn:
        assert (docs / name).read_bytes()[:8] == PNG_MAGIC
        assert f"plot: {docs / name}" in out
    assert "matplotlib is not installed" not in out

    # the note of row 17 links its plot (relative to the page); 17f, without a
    # note, gets a line for the link alone; the median row and 3a get none
    notes = md.split("## Notes", 1)[1].split("\n## ", 1)[0]
    assert "- **17** ([per-input ratios](benchmarks_ratios_17.png)) misses: mnist/local-sync" \
        in notes
    assert "- **17f** ([per-input ratios](benchmarks_ratios_17f.png)) " in notes
    assert "17m" not in notes and "3a" not in notes
    # ... and the section shows each plot with its numbers
    section = md.split(f"## {ratio_plots.SECTION}", 1)[1]
    assert "### 17: real-size models, steady state, worst" in section
    assert "![per-input ratios of 17](benchmarks_ratios_17.png)" in section
    assert ("*≤ 2× peer time (worst): 4 inputs; median 1.30×, worst mnist/local-sync 2.50×; "
            "above the goal's 2×: mnist/local-sync.*") in section
    assert "![per-input ratios of 17f](benchmarks_ratios_17f.png)" in section
    assert "*reported: 2 inputs; median 1.30×, worst a 1.40×.*" in section


def test_plot_shows_sorted_ratios_goal_median_and_worst():
    plt = plots.pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed (the bench extra)")
    fig = ratio_plots.figure(corpus_rows()[1], RATIOS, 2.0, plt)
    try:
        ax = fig.axes[0]
        assert ax.get_xscale() == "log"
        # one dot per input, sorted, the worst at the top and labelled as such
        dots = ax.collections[-1].get_offsets()
        assert [x for x, _y in dots] == sorted(RATIOS.values())
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == ["bert/local-task", "resnet50/local-sync", "mnist/local-task",
                          "worst: mnist/local-sync"]
        assert [t.get_text() for t in ax.texts] == ["2.50×"]
        # the goal's limit and the median as vertical lines, named in the axis label
        xs = sorted({line.get_xdata()[0] for line in ax.get_lines()})
        assert xs == [1.0, 1.3, 2.0]
        assert ax.get_xlabel() == ("ratio, log scale (1× = the peer); dotted: the median, "
                                   "1.30×; dashed: the goal, ≤ 2×; red: misses it")
        # the input above the goal is red, the others not
        colors = ax.collections[-1].get_facecolors()
        from matplotlib.colors import to_rgb
        red = [tuple(c[:3]) == to_rgb("tab:red") for c in colors]
        assert red == [False, False, False, True]
    finally:
        plt.close(fig)


def test_without_matplotlib_the_bench_says_so_once(monkeypatch, tmp_path, capsys):
    # an import of matplotlib fails as when it is not installed
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert plots.pyplot() is None
    docs = tmp_path / "docs"
    docs.mkdir()
    stale = docs / "benchmarks_ratios_17.png"
    stale.write_bytes(PNG_MAGIC)
    rc, md = run_main(monkeypatch, tmp_path, corpus_rows())
    out = capsys.readouterr().out
    assert rc == 0
    assert len(re.findall("matplotlib is not installed", out)) == 1, out
    assert "plot skipped: matplotlib is not installed (pip install -e '.[bench]')" in out
    assert not list(docs.glob("*.png"))             # nothing drawn, the stale image gone
    assert "per-input ratios](" not in md
    section = md.split(f"## {ratio_plots.SECTION}", 1)[1]
    assert section.count("(plot not drawn: matplotlib is missing)") == 2
    assert "*≤ 2× peer time (worst): 4 inputs; median 1.30×" in section
