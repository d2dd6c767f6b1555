"""Helpers of the vmvx tests (self-contained): compile MLIR for the vmvx
target with the ``iree-compile`` on PATH into build/vmrt_vmvx/<hash>/, run a
program with the pip ``iree-run-module`` (the oracle) and with ``vmrt run``
in process."""
from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
REPO = HERE.parents[4]
CACHE = REPO / "build" / "vmrt_vmvx"

VMVX = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")
#: compiler modes: scalar VM code only, vmvx microkernels, microkernels + data tiling
MODES = {
    "plain": (),
    "ukernels": ("--iree-vmvx-enable-microkernels",),
    "datatiling": ("--iree-vmvx-enable-microkernels", "--iree-opt-data-tiling"),
}

needs_iree = pytest.mark.skipif(
    shutil.which("iree-compile") is None or shutil.which("iree-run-module") is None,
    reason="the pip iree-compile / iree-run-module are not installed")


def compile_vmvx(program: str, mode: str = "plain", dump: bool = False) -> Path:
    """``programs/<program>`` compiled for vmvx in ``mode``; cached by the
    hash of the source and flags.  ``dump`` also writes the embedded
    executables to ``<cache>/bins/``."""
    src = (PROGRAMS / program).read_bytes()
    flags = [*VMVX, *MODES[mode]]
    key = hashlib.sha256(src + "\0".join(flags).encode()).hexdigest()[:16]
    out_dir = CACHE / key
    vmfb = out_dir / (Path(program).stem + ".vmfb")
    if vmfb.exists() and (not dump or (out_dir / "bins").is_dir()):
        return vmfb
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = [f"--iree-hal-dump-executable-binaries-to={out_dir / 'bins'}"] if dump else []
    tmp = out_dir / (vmfb.name + ".tmp")
    subprocess.run(["iree-compile", *flags, *extra, str(PROGRAMS / program), "-o", str(tmp)],
                   check=True, capture_output=True, timeout=300)
    tmp.replace(vmfb)
    return vmfb


def iree_run(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run(["iree-run-module", *args], capture_output=True, timeout=120)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def vmrt_run(*args: str) -> tuple[int, str, str]:
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main(["run", *args], stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def status_code(stderr: str) -> str:
    """The status code word of the first error line (IREE prefixes file:line)."""
    line = stderr.strip().splitlines()[0] if stderr.strip() else ""
    head = line.split(";", 1)[0]
    return head.rsplit(" ", 1)[-1]
