"""``/tmp/perf-PID.map``: natively loaded plugin functions named for perf.

Each run is a child process (its own PID, so its own map file), and the
lines it appends are compared with pyelftools' functions of the plugin
plus the load base the child reports.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import elfkit

pytestmark = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                                reason="native tests run on an x86_64 host")

CHILD = """\
import os, sys, elfkit
from elfkit.exec import perf_map
if sys.argv[2] == "api":
    perf_map.enable()
with elfkit.load(sys.argv[1]) as m:
    print(os.getpid(), m.base)
"""


def _functions(path) -> set[tuple[int, int, str]]:
    with open(path, "rb") as f:
        e = ELFFile(f)
        return {(s["st_value"], s["st_size"], s.name)
                for s in e.get_section_by_name(".symtab").iter_symbols()
                if s["st_info"]["type"] == "STT_FUNC" and s["st_size"] and s.name}


def _child(path, mode: str, env_value: str | None) -> tuple[Path, int, str | None]:
    env = {k: v for k, v in os.environ.items() if k != "ELFKIT_PERF_MAP"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    if env_value is not None:
        env["ELFKIT_PERF_MAP"] = env_value
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    pid, base = map(int, proc.stdout.split())
    mapfile = Path(f"/tmp/perf-{pid}.map")
    try:
        text = mapfile.read_text() if mapfile.exists() else None
    finally:
        mapfile.unlink(missing_ok=True)
    return mapfile, base, text


@pytest.mark.parametrize("mode,env_value", [("env", "1"), ("api", None)])
def test_perf_map_lists_plugin_functions(plugins, mode, env_value):
    path = plugins.path("kernels", "x86_64")
    _mapfile, base, text = _child(path, mode, env_value)
    assert text is not None
    got = set()
    for line in text.splitlines():
        start, size, name = line.split(" ", 2)
        assert not start.startswith("0x")             # hex digits, as perf writes them
        got.add((int(start, 16) - base, int(size, 16), name))
    assert got == _functions(path)


def test_no_perf_map_unless_asked(plugins):
    _mapfile, _base, text = _child(plugins.path("kernels", "x86_64"), "env", None)
    assert text is None
