"""Helpers of the device replay tests (test_replay*.py): captures made by
IREE's ``iree-run-module`` and by ``vmrt run``, and ``vmrt replay`` run
in-process."""
from __future__ import annotations

import io
import subprocess
from pathlib import Path

from tests.vmrt.hal.hal_testutil import Run, vmrt_run
from tests.vmrt.iree_tools import require_tool


def iree_capture(out: Path, module: Path, function: str | None, inputs: list[str],
                 device: str = "local-sync") -> Path:
    """A capture ``iree-run-module`` writes of one call; returns its path."""
    exe = require_tool("iree-run-module", "iree-base-runtime")
    args = [exe, f"--device={device}", f"--module={module}", f"--device_replay_output={out}"]
    if function:
        args.append(f"--function={function}")
    proc = subprocess.run([*args, *(f"--input={i}" for i in inputs)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def vmrt_capture(out: Path, module: Path, function: str | None, inputs: list[str],
                 *extra: str) -> Run:
    """``vmrt run ... --device_replay_output=out``."""
    args = [f"--module={module}", f"--device_replay_output={out}", *extra,
            *(f"--input={i}" for i in inputs)]
    if function:
        args.append(f"--function={function}")
    return vmrt_run(args)


def vmrt_replay(*args: str) -> Run:
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main(["replay", *map(str, args)], stdout=out, stderr=err)
    return Run(rc, out.getvalue(), err.getvalue())


def iree_tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = require_tool(name, "iree-base-runtime")
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300)


def floats(values) -> str:
    """An iree-run-module value list of ``values`` (repr keeps every bit)."""
    return ",".join(repr(float(v)) for v in values)
