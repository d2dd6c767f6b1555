"""The guest profile of emulated calls (``EmulatedMachine.profile``,
``elfkit run --profile``): by function and source line, exact instruction
counts, speedscope JSON and an SVG flame chart."""
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

import elfkit
from elfkit.errors import ExecutionError
from elfkit.exec.emulated import GuestProfile
from elfkit.toolchain import compile_plugin

SOURCE = """\
volatile unsigned sink;

__attribute__((noinline)) void hot(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        sink = sink * 31u + (i ^ (sink >> 3)) * 7u;  /* hot body */
    }
}

__attribute__((noinline)) void cold(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        sink += i;  /* cold body */
    }
}

__attribute__((visibility("default"))) unsigned entry(unsigned n) {
    hot(n * 1000);
    cold(n);
    return sink;
}
"""
HOT_LINE = next(i for i, line in enumerate(SOURCE.splitlines(), 1) if "hot body" in line)
ARCHES = ["aarch64", "riscv64"]


@pytest.fixture(scope="module", params=ARCHES)
def plugin(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"prof-{request.param}")
    src = d / "prof.c"
    src.write_text(SOURCE)
    return compile_plugin(src, request.param, d / "prof.so", cflags=["-g"])


def _profiled(plugin, n=10):
    prof = GuestProfile("entry")
    with elfkit.load(plugin, backend="emulated") as mod:
        m = mod.machine
        m.count_instructions(True)
        m.profile(prof)
        result = mod.call("entry", n, restype="u32")
        m.profile(None)
        count = m.instructions
    return prof, result, count


def test_profile_attributes_the_hot_function_and_line(plugin):
    prof, _result, count = _profiled(plugin)
    fns = prof.functions()
    assert list(fns)[0] == "hot"
    assert fns["hot"] > 0.9 * prof.total
    assert 0 < fns["cold"] < fns["hot"] / 100
    assert "entry" in fns
    # every instruction run is counted once: the machine's own counter agrees
    assert prof.total == count
    (fn, line), _n = next(iter(prof.lines().items()))
    assert fn == "hot" and line.endswith(f"prof.c:{HOT_LINE}"), prof.lines()


def test_profile_counts_are_deterministic_and_accumulate(plugin):
    a, _, _ = _profiled(plugin)
    b, _, _ = _profiled(plugin)
    assert a.counts == b.counts
    prof = GuestProfile()
    with elfkit.load(plugin, backend="emulated") as mod:
        mod.machine.profile(prof)
        mod.call("entry", 10, restype="u32")
        mod.call("entry", 10, restype="u32")
        mod.machine.profile(None)
    assert prof.counts == {k: 2 * v for k, v in a.counts.items()}


def _check_speedscope(doc):
    """The required keys of speedscope's file-format schema, for a sampled profile."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert all(isinstance(f["name"], str) for f in frames)
    for p in doc["profiles"]:
        assert p["type"] == "sampled"
        assert {"name", "unit", "startValue", "endValue", "samples", "weights"} <= set(p)
        assert p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds",
                             "seconds", "bytes")
        assert len(p["samples"]) == len(p["weights"])
        assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
        assert p["endValue"] - p["startValue"] == sum(p["weights"])


def test_profile_files(plugin, tmp_path):
    prof, _, count = _profiled(plugin)
    prof.write(tmp_path / "p.json")
    prof.write(tmp_path / "p.svg")
    doc = json.loads((tmp_path / "p.json").read_text())
    _check_speedscope(doc)
    assert sum(doc["profiles"][0]["weights"]) == count
    names = {f["name"] for f in doc["shared"]["frames"]}
    assert {"hot", "cold", "entry"} <= names
    hot_leaf = [f for f in doc["shared"]["frames"] if f.get("line") == HOT_LINE]
    assert hot_leaf and hot_leaf[0]["name"].startswith("hot ")
    root = ET.parse(tmp_path / "p.svg").getroot()
    text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title"))
    assert "hot" in text and "cold" in text and "entry" in text and f":{HOT_LINE}" in text
    with pytest.raises(ExecutionError, match="must end in"):
        prof.write(tmp_path / "p.txt")
    assert sorted(os.listdir(tmp_path)) == ["p.json", "p.svg"]


def test_profile_overhead_is_reported(plugin, capsys):
    """Not asserted (timing): the ratio of a profiled to a plain call."""
    with elfkit.load(plugin, backend="emulated") as mod:
        mod.call("entry", 20, restype="u32")
        t0 = time.perf_counter()
        mod.call("entry", 20, restype="u32")
        plain = time.perf_counter() - t0
        mod.machine.profile(GuestProfile())
        t0 = time.perf_counter()
        mod.call("entry", 20, restype="u32")
        profiled = time.perf_counter() - t0
        mod.machine.profile(None)
    with capsys.disabled():
        print(f"\n[profile overhead {plugin.parent.name}: {profiled / plain:.1f}x "
              f"({plain * 1e3:.1f} ms -> {profiled * 1e3:.1f} ms)]")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "elfkit", "run", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_cli_profile(plugin, tmp_path):
    out = tmp_path / "p.json"
    r = _cli(plugin, "--call", "entry", "--arg", "10", "--restype", "u32", "--profile", out)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    _check_speedscope(doc)
    prof, result, _count = _profiled(plugin)
    assert r.stdout.strip() == str(result)
    assert sum(doc["profiles"][0]["weights"]) == prof.total


def test_cli_profile_unwritable(plugin, tmp_path):
    bad = tmp_path / "no" / "such" / "p.svg"
    r = _cli(plugin, "--call", "entry", "--arg", "1", "--profile", bad)
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and "p.svg" in r.stderr, r.stderr
    assert not bad.parent.exists()
    r = _cli(plugin, "--call", "entry", "--arg", "1", "--profile", tmp_path / "p.txt")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "must end in" in r.stderr
    afile = tmp_path / "afile"
    afile.write_text("x")
    r = _cli(plugin, "--call", "entry", "--arg", "1", "--profile", afile / "p.json")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["afile"]
