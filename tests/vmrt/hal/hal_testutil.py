"""Helpers of the device-HAL tests (imported by conftest.py and the tests)."""
from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.vmrt.iree_tools import EXAMPLES, IREE_TARGET_FLAGS, PLUGIN_DATA, REPO

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
TOOLS_DATA = HERE.parent / "tools" / "data"
CACHE = REPO / "build" / "vmrt_hal"


def _source(name: str) -> Path:
    for d in (PROGRAMS, PLUGIN_DATA, EXAMPLES, TOOLS_DATA):
        if (d / name).is_file():
            return d / name
    raise FileNotFoundError(name)


class HalCompiler:
    def __init__(self, exe: str):
        self.exe = exe
        self.version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                      timeout=60).stdout

    def __call__(self, name: str, arch: str = "x86_64") -> Path:
        src = _source(name)
        if "vm.module @" in src.read_text():       # hand-written VM dialect
            flags = ["--compile-mode=vm"]
        elif arch == "vmvx":                        # VM bytecode dispatches, any host
            flags = ["--iree-hal-target-device=local",
                     "--iree-hal-local-target-device-backends=vmvx"]
        else:
            flags = ["--iree-hal-target-device=local",
                     "--iree-hal-local-target-device-backends=llvm-cpu",
                     *IREE_TARGET_FLAGS[arch]]
        h = hashlib.sha256()
        for part in (src.read_bytes(), " ".join(flags).encode(), self.version.encode()):
            h.update(part)
            h.update(b"\0")
        out = CACHE / h.hexdigest()[:16] / f"{src.stem}-{arch}.vmfb"
        if not out.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
            proc = subprocess.run([self.exe, str(src), *flags, "-o", str(tmp)],
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise RuntimeError(f"iree-compile {name} for {arch} failed:\n{proc.stderr}")
            os.replace(tmp, out)     # concurrent sessions never see a partial file
        return out


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str

    @property
    def status(self) -> str:
        """``CODE; message`` of the first status line (IREE's ``file:line: ``
        prefix removed)."""
        line = self.stderr.strip().splitlines()[0] if self.stderr.strip() else ""
        line = re.sub(r"^(?:[^\s;]*:\d+: )?", "", line, count=1)
        return "; ".join(line.split("; ")[:2])


def vmrt_run(args: list[str], cwd: Path | None = None) -> Run:
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        rc = main(["run", *args], stdout=out, stderr=err)
    finally:
        os.chdir(old)
    return Run(rc, out.getvalue(), err.getvalue())


def iree_run(exe: str, args: list[str], cwd: Path | None = None) -> Run:
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def run_args(vmfb: Path, function: str, inputs=(), plugins=(), device: str = "local-sync"):
    return [f"--device={device}", f"--module={vmfb}", f"--function={function}",
            *(f"--executable_plugin={p}" for p in plugins), *(f"--input={i}" for i in inputs)]
