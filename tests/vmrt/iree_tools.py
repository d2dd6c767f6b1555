"""Shared by the vmrt tests that drive the pip IREE tools: target flags per
CPU, a fixture helper that skips when a tool is missing, and
``IreeCompiler``, which compiles a program for one CPU and keeps the dumped
dispatch libraries (the ``iree`` fixture of tests/vmrt/conftest.py).

``IreeCompiler`` reads ``tests/vmrt/hal/local/plugins/data/<program>.mlir`` (else
``examples/<program>.mlir``) and caches its results under
``build/vmrt_plugins/<hash>/`` keyed by the source, the flags and the
compiler version, so a rerun does not recompile."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DATA = REPO / "tests" / "vmrt" / "hal" / "local" / "plugins" / "data"
EXAMPLES = REPO / "examples"   # the README's sample program lives there
CACHE = REPO / "build" / "vmrt_plugins"

#: iree-compile target flags per elfkit arch (llvm-cpu backend).
IREE_TARGET_FLAGS = {
    "x86_64": ["--iree-llvmcpu-target-triple=x86_64-pc-linux-elf",
               "--iree-llvmcpu-target-cpu=generic"],
    "aarch64": ["--iree-llvmcpu-target-triple=aarch64-pc-linux-elf",
                "--iree-llvmcpu-target-cpu=generic"],
    "riscv64": ["--iree-llvmcpu-target-triple=riscv64-pc-linux-elf",
                "--iree-llvmcpu-target-cpu=generic-rv64",
                "--iree-llvmcpu-target-cpu-features=+m,+a,+f,+d,+c",
                "--iree-llvmcpu-target-abi=lp64d"],
    "arm": ["--iree-llvmcpu-target-triple=armv7a-pc-linux-elf",
            "--iree-llvmcpu-target-float-abi=hard", "--iree-llvmcpu-target-cpu=generic"],
    "i386": ["--iree-llvmcpu-target-triple=i686-pc-linux-elf",
             "--iree-llvmcpu-target-cpu=generic"],
    "riscv32": ["--iree-llvmcpu-target-triple=riscv32-pc-linux-elf",
                "--iree-llvmcpu-target-cpu=generic-rv32",
                "--iree-llvmcpu-target-cpu-features=+m,+f",
                "--iree-llvmcpu-target-abi=ilp32"],
}


def require_tool(name: str, package: str) -> str:
    """Path of an IREE command-line tool, or skip the test."""
    exe = shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} is not installed (pip install {package})")
    return exe


def iree_profile_records(vmfb: Path, args: list[str], modes: str, workdir: Path,
                         device: str = "local-task") -> list[dict]:
    """IREE's own profile of a run: ``iree-run-module --device_profiling_mode=modes``
    exported by ``iree-profile export --format=ireeperf-jsonl``, as records."""
    run = require_tool("iree-run-module", "iree-base-runtime")
    export = require_tool("iree-profile", "iree-base-runtime")
    capture, out = workdir / "run.ireeprof", workdir / "run.ireeperf.jsonl"
    subprocess.run([run, f"--device={device}", f"--module={vmfb}", *args,
                    f"--device_profiling_mode={modes}", f"--device_profiling_output={capture}"],
                   check=True, capture_output=True, timeout=300)
    subprocess.run([export, "export", "--format=ireeperf-jsonl", f"--output={out}",
                    str(capture)], check=True, capture_output=True, timeout=300)
    with open(out, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


_SUFFIX = {"x86_64": "x86_64", "aarch64": "arm_64", "riscv64": "riscv_64", "arm": "arm_32",
           "i386": "x86_32", "riscv32": "riscv_32"}


def cache_key(*parts: bytes | str) -> str:
    """16 hex digits of the sha256 of ``parts`` (the cache directory name)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _tool_version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"


def build_once(out: Path, command, what: str, subdirs: tuple[str, ...] = ()) -> Path:
    """Run ``command(tmp)`` (an argv writing into the directory ``tmp``)
    unless ``out`` is complete: it is built next to its final place, then
    renamed, so concurrent sessions never see (or delete) a half-written
    directory.  Returns ``out``."""
    if not (out / "complete").is_file():
        tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for d in subdirs:
            (tmp / d).mkdir()
        proc = subprocess.run(command(tmp), capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"{what} failed:\n{proc.stderr[-3000:]}")
        (tmp / "complete").write_text("ok\n")
        try:
            os.rename(tmp, out)
        except OSError:            # another session finished first
            shutil.rmtree(tmp, ignore_errors=True)
    return out


class Compiled:
    """One program compiled for one CPU: the .vmfb and the dumped dispatch
    libraries."""

    def __init__(self, vmfb: Path, libraries: list[Path]):
        self.vmfb = vmfb
        self.libraries = libraries

    @property
    def library(self) -> Path:
        assert len(self.libraries) == 1, self.libraries
        return self.libraries[0]


class IreeCompiler:
    """``compile(program, arch)``: a program compiled for one CPU, with its
    dispatch libraries dumped (``Compiled``)."""

    def __init__(self, exe: str):
        self.exe = exe
        self.version = _tool_version([exe, "--version"])
        self._memo: dict[tuple[str, str], Compiled] = {}

    def compile(self, program: str, arch: str = "x86_64") -> Compiled:
        key = (program, arch)
        if key in self._memo:
            return self._memo[key]
        src = PLUGIN_DATA / f"{program}.mlir"
        if not src.exists():
            src = EXAMPLES / f"{program}.mlir"
        flags = ["--iree-hal-target-device=local",
                 "--iree-hal-local-target-device-backends=llvm-cpu", *IREE_TARGET_FLAGS[arch]]
        out = CACHE / "iree" / cache_key(src.read_bytes(), " ".join(flags), self.version) / arch
        build_once(out, lambda tmp: [
            self.exe, str(src), *flags, f"--iree-hal-dump-executable-binaries-to={tmp / 'bin'}",
            "-o", str(tmp / f"{program}.vmfb")], f"iree-compile {src.name} for {arch}",
            subdirs=("bin",))
        libs = sorted((out / "bin").glob(f"*_embedded_elf_{_SUFFIX[arch]}.so"))
        c = Compiled(out / f"{program}.vmfb", libs)
        self._memo[key] = c
        return c
