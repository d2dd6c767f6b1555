"""The walk-through of docs/bare-metal.md runs as written: one model compiled
for riscv32 and arm as IREE's bare-metal guide says (static library + inline
HAL), run on this machine with vmrt, checked against IREE's own runtime on a
host build of the same model, and debugged with gdb-multiarch."""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def blocks() -> list[str]:
    text = (ROOT / "docs" / "bare-metal.md").read_text()
    m = re.search(r"^## Walk-through.*?\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, "docs/bare-metal.md has no '## Walk-through' section"
    return re.findall(r"^```sh\n(.*?)^```", m.group(1), re.S | re.M)


def run(body: str) -> str:
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"block failed:\n{body}\n--- stderr:\n{r.stderr[-4000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def outputs():
    for tool in ("iree-compile", "iree-run-module"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (pip install -e '.[test]')")
    shutil.rmtree(ROOT / "build" / "bare_metal", ignore_errors=True)
    found = blocks()
    assert len(found) == 4, "compile, run, oracle, gdb"
    return found, [run(b) for b in found[:3]]


def test_riscv32_and_arm_match_irees_host_build(outputs):
    _blocks, (_compiled, ours, theirs) = outputs
    want = "1x8xf32=[69 70 71 72 73 74 75 76]"
    assert want in theirs.splitlines(), theirs
    assert ours.splitlines().count(want) == 2, ours


@pytest.mark.skipif(shutil.which("gdb-multiarch") is None,
                    reason="gdb-multiarch is not installed (apt-get install gdb-multiarch)")
def test_gdb_breaks_in_the_riscv32_dispatch(outputs):
    found, _outs = outputs
    out = run(found[3])
    assert re.search(r"Breakpoint 1(\.\d+)?, .*mlp_dispatch_0_matmul_1x8x16_f32", out), out
    assert re.search(r"^#0 .*mlp_dispatch_0_matmul_1x8x16_f32", out, re.M), out
    assert "1x8xf32=[9 9 9 9 9 9 9 9]" in out, out
