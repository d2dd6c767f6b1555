"""``vmrt run --guest_profile=FILE`` and ``vmrt.load(..., guest_profile=...)``:
the guest code of emulated dispatches profiled by function and line.  The
dispatch functions are named after their exports, checked against the
export names ``iree-dump-module`` lists (it shows their first 32 bytes)."""
from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np

import vmrt
from tests.vmrt.hal.hal_testutil import vmrt_run
from tests.vmrt.iree_tools import require_tool


def _export_prefixes(vmfb) -> set[str]:
    dump = require_tool("iree-dump-module", "iree-base-compiler")
    out = subprocess.run([dump, str(vmfb)], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    names = set(re.findall(r"embedded +\d+ bytes `(chain_dispatch_\d+_\w+)`", out))
    assert len(names) == 3, out
    return names


def _check_frames(doc, prefixes):
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    (prof,) = doc["profiles"]
    assert prof["type"] == "sampled" and len(prof["samples"]) == len(prof["weights"])
    weight: dict[str, int] = {}
    for sample, w in zip(prof["samples"], prof["weights"]):
        name = frames[sample[0]]["name"]
        weight[name] = weight.get(name, 0) + w
    for p in prefixes:
        hits = [n for n in weight if n.startswith(p)]
        assert len(hits) == 1 and weight[hits[0]] > 0, (p, weight)
    # the dispatch functions are where the guest time goes
    in_exports = sum(w for n, w in weight.items() if n.startswith("chain_dispatch_"))
    assert in_exports > 0.5 * sum(weight.values()), weight
    return weight


def test_run_guest_profile(hal_compile, chain_inputs, emulation, tmp_path):
    vmfb = hal_compile("chain.mlir", "aarch64")
    prefixes = _export_prefixes(vmfb)
    plain = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2]])
    for device in ("local-sync", "local-task"):
        out = tmp_path / f"{device}.json"
        got = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2],
                        f"--device={device}", "--task_topology_group_count=2",
                        f"--guest_profile={out}"])
        assert got.rc == 0, got.stderr
        assert got.stdout == plain.stdout          # the profile changes no result
        _check_frames(json.loads(out.read_text()), prefixes)
    svg = tmp_path / "p.svg"
    got = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2],
                    f"--guest_profile={svg}"])
    assert got.rc == 0, got.stderr
    text = " ".join(t.text or "" for t in ET.parse(svg).getroot().iter(
        "{http://www.w3.org/2000/svg}title"))
    assert all(p in text for p in prefixes)


def test_load_guest_profile_counts_every_call(hal_compile, chain_inputs, emulation, tmp_path):
    vmfb = hal_compile("chain.mlir", "aarch64")
    a, b, _ = chain_inputs
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    with vmrt.load(vmfb, guest_profile=once) as prog:
        r = np.asarray(prog.chain(a, b))
    m = a @ b
    np.testing.assert_allclose(r, (m.T @ m).max(axis=1), rtol=1e-4)
    assert once.exists()
    with vmrt.load(vmfb, guest_profile=twice) as prog:
        prog.chain(a, b)
        prog.chain(a, b)
    w1 = _check_frames(json.loads(once.read_text()), _export_prefixes(vmfb))
    w2 = _check_frames(json.loads(twice.read_text()), _export_prefixes(vmfb))
    for name, w in w1.items():            # instruction counts: deterministic
        if name.startswith("chain_dispatch_"):
            assert w2[name] == 2 * w, (name, w, w2[name])


def test_guest_profile_bad_paths(hal_compile, chain_inputs, emulation, tmp_path):
    vmfb = hal_compile("chain.mlir", "aarch64")
    bad = tmp_path / "missing" / "p.json"
    got = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2],
                    f"--guest_profile={bad}"])
    assert got.rc != 0 and len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert "p.json" in got.stderr and not bad.parent.exists()
    got = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2],
                    f"--guest_profile={tmp_path / 'p.txt'}"])
    assert got.rc != 0 and "must end in .svg" in got.stderr, got.stderr
    assert list(tmp_path.iterdir()) == []


def test_guest_profile_of_a_native_run_is_empty_and_compare_is_refused(hal_compile, chain_inputs,
                                                                       tmp_path):
    vmfb = hal_compile("chain.mlir")         # the host's own code: nothing is emulated
    out = tmp_path / "p.json"
    got = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2],
                    f"--guest_profile={out}"])
    assert got.rc == 0, got.stderr
    doc = json.loads(out.read_text())
    assert doc["profiles"][0]["weights"] == [] and doc["profiles"][0]["endValue"] == 0
    got = vmrt_run([f"--module={vmfb}", "--function=chain", *chain_inputs[2],
                    f"--compare_with={vmfb}", f"--guest_profile={tmp_path / 'q.json'}"])
    assert got.rc != 0 and "--guest_profile" in got.stderr, got.stderr
