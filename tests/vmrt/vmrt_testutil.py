"""Helpers shared by the vmrt tests (imported by conftest.py and tests)."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"

needs_iree = pytest.mark.skipif(
    shutil.which("iree-compile") is None or shutil.which("iree-run-module") is None,
    reason="the pip IREE tools (iree-base-compiler/runtime) are not installed")


class Compiler:
    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[tuple, Path] = {}

    def __call__(self, source: str, *flags: str, name: str | None = None) -> Path:
        """Compile a program: ``source`` is a file name under programs/ or MLIR text."""
        key = (source, flags)
        if key in self.cache:
            return self.cache[key]
        if source.endswith(".mlir") and "\n" not in source:
            src = PROGRAMS / source
            stem = src.stem
        else:
            stem = name or f"inline{len(self.cache)}"
            src = self.root / f"{stem}.mlir"
            src.write_text(source)
        out = self.root / f"{stem}-{len(self.cache)}.vmfb"
        mode = list(flags) or ["--iree-execution-model=host-only"]
        proc = subprocess.run(["iree-compile", *mode, str(src), "-o", str(out)],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"iree-compile failed for {source[:60]}:\n{proc.stderr[-3000:]}")
        self.cache[key] = out
        return out


def iree_run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(["iree-run-module", *args], capture_output=True, timeout=120,
                          input=stdin)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def vmrt_run(*args: str, providers=()) -> tuple[int, str, str]:
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main(["run", *args], providers=providers, stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def vmrt_subprocess(*args: str, env: dict | None = None, stdin: bytes | None = None
                    ) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "vmrt", *args], capture_output=True,
                          timeout=120, env={**os.environ, **(env or {})}, input=stdin)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


_PREFIX = re.compile(r"^(?:[^\s;]*:\d+: )?")


def status_head(stderr: str) -> str:
    """``CODE; message`` of the first status printed on stderr (IREE prefixes
    ``file:line: ``, vmrt does not)."""
    line = stderr.strip().splitlines()[0] if stderr.strip() else ""
    line = _PREFIX.sub("", line, count=1)
    parts = line.split("; ")
    return "; ".join(parts[:2])


def assemble(vmasm: str, out: Path) -> Path:
    """Assemble VM text (the iree-dump-module disassembly format) with iree-as-module."""
    src = out.with_suffix(".vmasm")
    src.write_text(vmasm)
    proc = subprocess.run(["iree-as-module", f"--output={out}", str(src)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"iree-as-module failed:\n{proc.stderr[-3000:]}")
    return out


def caller_module(name: str) -> str:
    """VM assembly of module ``name``: export ``g(x)`` calls export ``triple(x)``
    (3 * x), the call the bytecode tests patch."""
    return f"""vm.module @{name} version 0
vm.type i32

vm.export @g
vm.func @g(%i0: i32) -> (i32) {{
^bb0:
  %i0 = vm.call @triple(%i0)
  vm.return %i0
}}

vm.export @triple
vm.func @triple(%i0: i32) -> (i32) {{
^bb0:
  %i1 = vm.const.i32 3
  %i0 = vm.mul.i32 %i0, %i1
  vm.return %i0
}}
"""
