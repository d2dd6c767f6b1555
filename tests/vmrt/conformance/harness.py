"""The conformance suite's machinery.

Every ``programs/<family>/<name>.mlir`` holds test functions (no arguments,
no results) that check their own results with ``check.expect_*``, the way
IREE's end-to-end suites do.  Each program is compiled by the pip
``iree-compile`` for each of the six CPUs (cached under
``build/vmrt_conformance/<hash>/``) and run the way ``vmrt test`` runs it
(natively on the host's CPU, emulated on the others).  On x86_64 the same
``.vmfb`` also runs on IREE's own runtime (``iree.runtime``) with a recording
``check`` module: a program counts only if IREE's runtime passes it, so a
test failure always means vmrt differs from IREE.

A program may restrict its CPUs with a first-line comment
``// ARCHES: x86_64 aarch64`` and add compiler flags with
``// FLAGS: --iree-input-demote-f64-to-f32=false``."""
from __future__ import annotations

import hashlib
import io
import subprocess
from pathlib import Path

import pytest

from tests.vmrt.iree_tools import IREE_TARGET_FLAGS
from tests.vmrt.modules.check.check_support import expected_outcome, oracle_calls

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
CACHE = HERE.parents[2] / "build" / "vmrt_conformance"
ARCHES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")
DEVICE_FLAGS = ["--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu"]
#: per test function, wall-clock seconds before vmrt stops it (a hang is a failure)
TIMEOUT = 300.0


def programs(family: str | None = None) -> list[Path]:
    root = PROGRAMS if family is None else PROGRAMS / family
    return sorted(root.rglob("*.mlir"))


def _directive(src: str, key: str) -> list[str]:
    for line in src.splitlines()[:5]:
        if line.startswith(f"// {key}:"):
            return line.split(":", 1)[1].split()
    return []


def arches_of(path: Path) -> tuple[str, ...]:
    return tuple(_directive(path.read_text(), "ARCHES")) or ARCHES


def cases(family: str | None = None) -> list:
    """pytest params: (program, arch) for every program and CPU it runs on."""
    out = []
    for p in programs(family):
        for arch in arches_of(p):
            out.append(pytest.param(p, arch, id=f"{p.parent.name}/{p.stem}-{arch}"))
    return out


def compile_for(path: Path, arch: str) -> Path:
    src = path.read_text()
    flags = DEVICE_FLAGS + IREE_TARGET_FLAGS[arch] + _directive(src, "FLAGS")
    version = subprocess.run(["iree-compile", "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    key = hashlib.sha256("\0".join([src, *flags, version]).encode()).hexdigest()[:16]
    out = CACHE / key / f"{path.stem}-{arch}.vmfb"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        proc = subprocess.run(["iree-compile", *flags, str(path), "-o", str(tmp)],
                              capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise AssertionError(f"iree-compile failed for {path.name} ({arch}):\n"
                                 f"{proc.stderr[-3000:]}")
        tmp.replace(out)
    return out


def run_vmrt(vmfb: Path) -> dict[str, list[str]]:
    """function -> vmrt's failure messages (an error that stopped the
    function is the last message, prefixed ``error:``)."""
    from vmrt.tools.test import run_tests
    run = run_tests(vmfb, device="local-sync", timeout=TIMEOUT, stdout=io.StringIO())
    out: dict[str, list[str]] = {}
    for r in run.results:
        msgs = [f.message for f in r.failures]
        if r.error is not None:
            msgs.append(f"error: {r.error}")
        out[r.name] = msgs
    return out


def run_iree(vmfb: Path, names: list[str]) -> dict[str, list[str]]:
    """The same on IREE's runtime (x86_64 only): its check calls, judged
    with IREE's semantics."""
    calls = oracle_calls(vmfb, names)
    out = {}
    for name in names:
        failures, error = expected_outcome(calls[name])
        msgs = [m for _fn, m in failures]
        if error is not None:
            msgs.append(f"error: {error}")
        out[name] = msgs
    return out


def check_program(path: Path, arch: str) -> None:
    """The test: IREE passes the program on x86_64, and vmrt passes it on ``arch``."""
    vmfb = compile_for(path, arch)
    got = run_vmrt(vmfb)
    assert got, f"{path.name}: no test functions"
    if arch == "x86_64":
        ref = run_iree(vmfb, list(got))
        bad_ref = {k: v for k, v in ref.items() if v}
        assert not bad_ref, f"IREE's runtime fails the program itself: {bad_ref}"
    bad = {k: v for k, v in got.items() if v}
    assert not bad, f"vmrt ({arch}) fails: {bad}"


def check_program_isolated(path: Path, arch: str) -> None:
    """:func:`check_program` in a child process, so a crash of the emulator
    (a host segfault inside unicorn) fails this test instead of the session."""
    import os
    import sys
    root = HERE.parents[2]
    code = ("import sys; from pathlib import Path; "
            "from tests.vmrt.conformance.harness import check_program; "
            "check_program(Path(sys.argv[1]), sys.argv[2])")
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, "-c", code, str(path), arch], cwd=root, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT * 10)
    if proc.returncode != 0:
        raise AssertionError(f"{path.name} ({arch}) exited with {proc.returncode}:\n"
                             f"{proc.stderr[-3000:]}")
