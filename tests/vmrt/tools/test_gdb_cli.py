"""``vmrt run --gdb=PORT``: a program's executable runs emulated (even for
this CPU), stops at its first instruction and real gdb-multiarch debugs the
dispatch; the run then prints its normal result."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, REPO, require_tool

GDB = shutil.which("gdb-multiarch")
TIMEOUT = 120

PROGRAM = """
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.mulf %a, %b : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


@pytest.mark.skipif(GDB is None, reason="gdb-multiarch is not installed "
                    "(apt-get install gdb-multiarch)")
def test_vmrt_run_with_gdb(tmp_path):
    compiler = require_tool("iree-compile", "iree-base-compiler")
    src = tmp_path / "mul.mlir"
    src.write_text(PROGRAM)
    vmfb = tmp_path / "mul.vmfb"
    subprocess.run([compiler, str(src), "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu",
                    *IREE_TARGET_FLAGS["x86_64"], "-o", str(vmfb)],
                   check=True, capture_output=True, timeout=TIMEOUT)
    a, b = np.array([1, 2, 3, 4], np.float32), np.array([5, 6, 7, 8.5], np.float32)
    run = subprocess.Popen(
        [sys.executable, "-m", "vmrt", "run", f"--module={vmfb}", "--function=mul",
         "--input=4xf32=" + " ".join(map(str, a)), "--input=4xf32=" + " ".join(map(str, b)),
         "--gdb=0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        banner = run.stderr.readline()              # type: ignore[union-attr]
        found = re.search(r"127\.0\.0\.1:(\d+): gdb-multiarch (\S+)", banner)
        assert found, banner
        assert "iree_hal_executable_library_query" in banner
        gdb = subprocess.run(
            [GDB, "-nx", "-batch", "-iex", "set debuginfod enabled off",
             "-ex", f"file {found.group(2)}", "-ex", f"target remote :{found.group(1)}",
             "-ex", "break mul_dispatch_0_elementwise_4_f32", "-ex", "continue", "-ex", "bt",
             "-ex", "continue"], capture_output=True, text=True, timeout=TIMEOUT)
        stdout, stderr = run.communicate(timeout=TIMEOUT)
    finally:
        run.kill()
    out = gdb.stdout + gdb.stderr
    assert re.search(r"Breakpoint 1, (0x[0-9a-f]+ in )?mul_dispatch_0_elementwise_4_f32", out), out
    assert re.search(r"^#0 .*mul_dispatch_0_elementwise_4_f32", out, re.M), out
    assert "exited normally" in out, out
    assert run.returncode == 0, stderr
    want = " ".join(f"{v:g}" for v in a * b)
    assert f"4xf32={want}" in stdout, stdout


def test_gdb_flag_needs_a_port():
    proc = subprocess.run([sys.executable, "-m", "vmrt", "run", "--module=x.vmfb", "--gdb=99999"],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO)
    assert proc.returncode != 0
    assert "--gdb expects a TCP port" in proc.stderr
