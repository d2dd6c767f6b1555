"""Every command in the README's quickstart runs, in order, as written."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _blocks(section: str) -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, f"README has no '## {section}' section"
    return re.findall(r"^```(sh|python)\n(.*?)^```", m.group(1), re.S | re.M)


def test_install_block_has_exactly_two_commands():
    blocks = _blocks("Install and test")
    assert len(blocks) == 1
    lines = [ln for ln in blocks[0][1].splitlines() if ln.strip()]
    assert lines == ['pip install -e ".[test]"', "python -m pytest"]


@pytest.fixture(scope="module")
def quickstart_outputs(plugins):
    # `plugins` first: the fixture's build proves the toolchain works before the README's own build
    import shutil
    shutil.rmtree(ROOT / "build" / "quickstart", ignore_errors=True)   # a fresh start, as a user has
    outs = []
    for lang, body in _blocks("Quickstart"):
        cmd = ["bash", "-euo", "pipefail", "-c", body] if lang == "sh" else [sys.executable, "-c", body]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"README {lang} block failed:\n{body}\n--- stderr:\n{r.stderr[-4000:]}"
        outs.append(r.stdout)
    return outs


def test_quickstart_pack_and_list(quickstart_outputs):
    listing = quickstart_outputs[0]
    for arch in ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"):
        assert arch in listing


def test_quickstart_emulated_run(quickstart_outputs):
    assert quickstart_outputs[1].split()[-1] == str(40 + 2)


def test_quickstart_python(quickstart_outputs):
    lines = quickstart_outputs[2].splitlines()
    assert lines[0].split() == ["x86_64", "native", str(2 + 3)]
    assert lines[1].split() == ["emulated", str(sum(range(10)))]
    assert lines[2] == "[100, 200]"


def test_quickstart_vmrt_hosts_the_plugin(quickstart_outputs):
    # (2 * 4) from the plugin, + 4 in generated code: what IREE's sample documents
    assert quickstart_outputs[3].splitlines() == [
        "EXEC @mixed_invocation", "result[0]: hal.buffer_view", "8xf32=12 12 12 12 12 12 12 12"]
