"""The benchmark suite runs and prints a complete table.

Runs ``python -m bench --quick`` (about a minute) and checks that every one
of the ten measures produced at least one row with a verdict, and that no
measure failed.  It never checks a speed: ratios are bench/'s business.
Needs neither matplotlib nor the bench extra: without matplotlib the plot is
skipped with a message, and the test checks that message instead.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

VERDICTS = ("met", "NOT MET", "reported", "n/a (not available: ")

#: the judged row of each corpus (median and worst over many inputs)
CORPUS_ROWS = {"15b", "15d", "16b", "16d", "17", "17fc", "17p", "18w", "18c", "19b", "20a",
               "20b", "20c", "20d"}


def test_quick_bench_table_is_complete(tmp_path):
    out = tmp_path / "bench.json"
    png = tmp_path / "relocs.png"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--json", str(out),
                           "--plot", str(png)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    rows = result["rows"]

    # every measure 1..11 has a row
    present = {re.match(r"\d+", r["id"]).group() for r in rows}
    assert present >= {str(i) for i in range(1, 12)}, sorted(present)

    for r in rows:
        where = f"row {r['id']} ({r['measure']})"
        assert not r["na"].startswith("failed"), f"{where} failed: {r['na']}"
        assert r["verdict"].startswith(VERDICTS), f"{where}: verdict {r['verdict']!r}"
        assert r["ours"] and r["peer"] and r["goal"], where
        if not r["na"]:
            assert isinstance(r["ratio"], (int, float)) and r["ratio"] > 0, where
            if r["goal"] != "reported":
                assert r["met"] in (True, False), where

    # every corpus row that ran keeps each input's ratio and the goal's limit
    # (bench._timing.per_input), which --plot-dir draws
    for r in rows:
        if r["id"] in CORPUS_ROWS and not r["na"]:
            ratios = r["data"].get("ratios")
            assert isinstance(ratios, dict) and ratios and "limit" in r["data"], r["id"]
            assert max(ratios.values()) == pytest.approx(r["ratio"]), r["id"]

    # the printed table has the header and one line per row
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"#\s+measure\s+ours", line))
    table = []
    for line in lines[start:]:
        if not line.strip():
            break
        table.append(line)
    assert table[0].split()[:3] == ["#", "measure", "ours"], table[0]
    assert len(table) == 2 + len(rows), proc.stdout
    assert result["quick"] is True and result["repeat"] >= 1

    # the plot is drawn with matplotlib, or skipped with a message without it
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "plot skipped: matplotlib is not installed" in proc.stdout
    else:
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
