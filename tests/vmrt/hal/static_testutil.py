"""Programs compiled as IREE static libraries (``--iree-llvmcpu-link-static``)
and, as the oracle, with embedded ELF for this host; shared by
test_static_library.py and the fuzz smoke run.

``compile_static(source, arch)`` returns ``(vmfb, object)``; results are
cached under ``build/vmrt_plugins/iree/<hash>/`` keyed by the source, the
flags and the compiler version."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.vmrt.iree_tools import CACHE, IREE_TARGET_FLAGS, build_once, cache_key

DATA = Path(__file__).parent / "data"
TOOLS_DATA = Path(__file__).parents[1] / "tools" / "data"
#: IREE's samples/static_library flags (its CMakeLists.txt), the CPU's triple added
SAMPLE_FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                "--iree-llvmcpu-link-embedded=false", "--iree-llvmcpu-link-static",
                "--iree-vm-target-index-bits=32"]


def _source(name: str) -> Path:
    src = DATA / name
    return src if src.exists() else TOOLS_DATA / name


def _compiler() -> str:
    exe = shutil.which("iree-compile")
    if exe is None:
        pytest.skip("iree-compile is not installed (pip install iree-base-compiler)")
    return exe


def _cached(src: Path, flags: list[str], run) -> Path:
    exe = _compiler()
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    out = CACHE / "iree" / cache_key(src.read_bytes(), " ".join(flags), version) / "static"
    return build_once(out, lambda tmp: run(exe, tmp), f"iree-compile {src.name}")


def compile_static(name: str, arch: str, *extra: str) -> tuple[Path, Path]:
    """``name`` (tests/vmrt/hal/data or tests/vmrt/tools/data) compiled for
    ``arch`` as IREE's static-library sample does: ``(vmfb, object)``."""
    src = _source(name)
    flags = [*SAMPLE_FLAGS, *IREE_TARGET_FLAGS[arch], *extra]
    out = _cached(src, flags, lambda exe, tmp: [
        exe, str(src), *flags, f"--iree-llvmcpu-static-library-output-path={tmp / 'lib.o'}",
        "-o", str(tmp / "program.vmfb")])
    return out / "program.vmfb", out / "lib.o"


def compile_embedded(name: str, *extra: str) -> Path:
    """``name`` compiled with embedded ELF for x86_64 (what iree-run-module
    runs: the oracle)."""
    src = _source(name)
    flags = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             *IREE_TARGET_FLAGS["x86_64"], *extra]
    out = _cached(src, flags, lambda exe, tmp: [exe, str(src), *flags, "-o",
                                                    str(tmp / "program.vmfb")])
    return out / "program.vmfb"
