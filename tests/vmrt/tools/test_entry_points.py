"""vmrt.tools.entry_points reads entry points as importlib.metadata does."""
from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
import time

from tests.vmrt.iree_tools import REPO
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


#: prints how many times entry_points() listed a directory of the test's, then its answer
_CACHED_RUN = """\
import sys
sys.path[:0] = sys.argv[1:]
from vmrt.tools.entry_points import entry_points
listed = []
sys.addaudithook(lambda event, args: listed.append(args[0])
                 if event == "os.listdir" and str(args[0]) in sys.argv[1:] else None)
eps = entry_points("grp")
print(len(listed), sorted((e.name, e.value, e.dist.name) for e in eps))
"""


def _age(root, seconds: float = 60) -> None:
    """Date ``root`` and everything below it ``seconds`` back."""
    when = time.time() - seconds
    for p in [root, *root.rglob("*")]:
        os.utime(p, (when, when))


def _cached_run(cache, *dirs, **env) -> tuple[int, str]:
    cwd = cache.parent / "cwd"        # on the path (python -c): a directory nothing writes to
    if not cwd.exists():
        cwd.mkdir()
        _age(cwd)
    out = subprocess.run([sys.executable, "-c", _CACHED_RUN, *map(str, dirs)],
                         capture_output=True, text=True, timeout=120, cwd=cwd,
                         env={**os.environ, "PYTHONPATH": str(REPO),
                              "VMRT_CACHE_DIR": str(cache), **env})
    assert out.returncode == 0, out.stderr
    count, _, answer = out.stdout.strip().partition(" ")
    return int(count), answer


def _settle() -> None:
    """Wait (2 s at most) until the directories on the path and entry_points.py
    itself are older than the window in which an answer is not kept (git's
    "racy" rule, 2 s): right after a checkout or an edit they are not, and
    every answer would be listed afresh."""
    paths = [REPO / "vmrt" / "tools" / "entry_points.py", REPO,
             *(p for p in sys.path if p and os.path.isdir(p))]
    newest = max(os.stat(p).st_mtime_ns for p in paths) / 1e9
    wait = newest + 2.1 - time.time()
    if wait > 0:
        time.sleep(wait)


def test_the_answer_is_kept_until_a_directory_or_file_read_changes(tmp_path):
    _settle()
    root, cache = tmp_path / "site", tmp_path / "cache"
    _dist(root, "one-1.0", "[grp]\na = os\n")
    _age(root)
    listed, first = _cached_run(cache, root)
    assert listed == 1 and first == "[('a', 'os', 'one')]"
    assert _cached_run(cache, root) == (0, first)                  # from the cache
    # an entry_points.txt edited in place
    (root / "one-1.0.dist-info" / "entry_points.txt").write_text("[grp]\na = os\nb = sys\n")
    _age(root, 30)
    assert _cached_run(cache, root) == (1, "[('a', 'os', 'one'), ('b', 'sys', 'one')]")
    assert _cached_run(cache, root)[0] == 0
    # a distribution installed (its directory's time is too recent to keep the answer)
    _dist(root, "two-1.0", "[grp]\nc = os\n")
    expected = "[('a', 'os', 'one'), ('b', 'sys', 'one'), ('c', 'os', 'two')]"
    assert _cached_run(cache, root) == (1, expected)
    assert _cached_run(cache, root) == (1, expected)
    _age(root)
    assert _cached_run(cache, root) == (1, expected)
    assert _cached_run(cache, root) == (0, expected)
    # another path, or the cache turned off: listed again
    assert _cached_run(cache, root, tmp_path)[0] == 2         # both listed
    assert _cached_run(cache, root, VMRT_NO_CACHE="1") == (1, expected)


def test_a_vanished_working_directory_is_no_error(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert _pairs(entry_points("vmrt.modules")) == _pairs(md.entry_points(group="vmrt.modules"))


def test_a_fifo_or_undecodable_entry_points_txt_is_skipped(tmp_path, monkeypatch):
    """A FIFO named entry_points.txt (opening it would wait for a writer
    forever) is skipped like a missing file, and bytes that are not UTF-8
    do not raise (issue 29: hostile files)."""
    fifo, bad, good = tmp_path / "f", tmp_path / "b", tmp_path / "g"
    _dist(fifo, "fifo_pkg-1.0", "")
    info = fifo / "fifo_pkg-1.0.dist-info" / "entry_points.txt"
    info.unlink()
    os.mkfifo(info)
    _dist(bad, "bad_pkg-1.0", "")
    (bad / "bad_pkg-1.0.dist-info" / "entry_points.txt").write_bytes(b"[grp]\nv = os \xff\n")
    _dist(good, "good_pkg-1.0", "[grp]\nw = os\n")
    monkeypatch.setenv("VMRT_NO_CACHE", "1")
    code = ("import sys; sys.path[:0] = sys.argv[1:]\n"
            "from vmrt.tools.entry_points import entry_points\n"
            "print(sorted(e.name for e in entry_points('grp')))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(fifo), str(bad), str(good)],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['v', 'w']"


#: asks three times in one process: once, again, after argv[2] says what to change
_MEMO_RUN = """\
import os, sys, time
root = sys.argv[1]
sys.path[:0] = [root]
from vmrt.tools.entry_points import entry_points
listed = []
sys.addaudithook(lambda event, args: listed.append(args[0])
                 if event == "os.listdir" and str(args[0]) == root else None)
def ask():
    before = len(listed)
    eps = sorted((e.name, e.value, e.dist.name) for e in entry_points("grp"))
    return len(listed) - before, eps
def age(path):
    when = time.time() - 60
    os.utime(path, (when, when))
out = [ask(), ask()]
change = sys.argv[2]
if change == "edit-used":            # an entry_points.txt with rows in the group
    path = os.path.join(root, "One.Pkg__x-1.0.dist-info", "entry_points.txt")
    with open(path, "w") as f:
        f.write("[grp]\\na = os\\nb = sys\\n")
    age(path)
elif change == "install":            # a new distribution: the directory changes
    info = os.path.join(root, "two-1.0.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[grp]\\nc = os\\n")
    for p in (os.path.join(info, "entry_points.txt"), info, root):
        age(p)
out.append(ask())
print(out)
"""


def test_the_answer_is_remembered_in_a_process_until_what_decides_it_changes(tmp_path):
    """A program loaded again and again in one process does not list the path
    each time; an installed distribution or an edited entry point is seen."""
    _settle()
    for change, last in (("none", "(0, [('a', 'os', 'one_pkg_x')])"),
                         ("edit-used", "(1, [('a', 'os', 'one_pkg_x'), ('b', 'sys', 'one_pkg_x')])"),
                         ("install", "(1, [('a', 'os', 'one_pkg_x'), ('c', 'os', 'two')])")):
        root = tmp_path / change
        _dist(root, "One.Pkg__x-1.0", "[grp]\na = os\n")     # (a name to normalise)
        _dist(root, "other-1.0", "[other]\nz = os\n")
        _age(root)
        cwd = tmp_path / f"cwd-{change}"
        cwd.mkdir()
        _age(cwd)
        out = subprocess.run([sys.executable, "-c", _MEMO_RUN, str(root), change],
                             capture_output=True, text=True, timeout=120, cwd=cwd,
                             env={**os.environ, "PYTHONPATH": str(REPO), "VMRT_NO_CACHE": "1"})
        assert out.returncode == 0, out.stderr
        first = "(1, [('a', 'os', 'one_pkg_x')])"
        assert out.stdout.strip() == f"[{first}, (0, [('a', 'os', 'one_pkg_x')]), {last}]", change
