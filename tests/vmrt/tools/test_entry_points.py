"""vmrt.tools.entry_points reads entry points as importlib.metadata does."""
from __future__ import annotations

import importlib.metadata as md
import sys

from vmrt.tools.entry_points import entry_points


def _pairs(eps) -> set[tuple[str, str, str]]:
    return {(e.name, e.value, e.group) for e in eps}


def test_same_as_importlib_metadata_on_this_path():
    for group in ("console_scripts", "vmrt.modules"):
        assert _pairs(entry_points(group)) == _pairs(md.entry_points(group=group))
    assert entry_points("no.such.group") == []


def _dist(root, stem: str, text: str) -> None:
    info = root / f"{stem}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {stem.split('-')[0]}\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text(text)


def test_first_distribution_of_a_name_wins_and_lines_parse(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    _dist(first, "My.Pkg-1.0", "# comment\n[grp]\n# another\nx = json:dumps [extra]\n"
                               "y=os.path : join\n[other]\nz = os\n")
    _dist(second, "my_pkg-2.0", "[grp]\nshadowed = os:sep\n")
    _dist(second, "solo-1.0", "[grp]\nw = os\n")
    monkeypatch.setattr(sys, "path", [str(first), str(second)] + sys.path)
    ours = entry_points("grp")
    theirs = md.entry_points(group="grp")
    assert _pairs(ours) == _pairs(theirs) == {
        ("x", "json:dumps [extra]", "grp"), ("y", "os.path : join", "grp"), ("w", "os", "grp")}
    import json
    import os
    loaded = {e.name: e.load() for e in ours}
    assert loaded == {"x": json.dumps, "y": os.path.join, "w": os}
    assert {e.dist.name for e in ours} == {"my_pkg", "solo"}
