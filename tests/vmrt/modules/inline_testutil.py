"""Helpers of the inline-HAL tests (test_inline_hal.py): programs of
``programs/`` (or ``examples/``) compiled with the pip ``iree-compile`` for
``--iree-execution-model=inline-static`` (the ``vmvx-inline`` backend) or
``inline-dynamic`` (``llvm-cpu``, one CPU), cached under
``build/vmrt_inline/<hash>/`` keyed by the source, the flags and the compiler
version; and the source of a hand-written VM module that drives
``hal_loader`` directly (the bad-dispatch cases no compiler emits)."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.vmrt.iree_tools import EXAMPLES, IREE_TARGET_FLAGS, REPO, cache_key

PROGRAMS = Path(__file__).resolve().parent / "programs"
CACHE = REPO / "build" / "vmrt_inline"

STATIC = ["--iree-execution-model=inline-static", "--iree-hal-target-device=local",
          "--iree-hal-local-target-device-backends=vmvx-inline"]
DYNAMIC = ["--iree-execution-model=inline-dynamic", "--iree-hal-target-device=local",
           "--iree-hal-local-target-device-backends=llvm-cpu"]


def inline_flags(model: str, arch: str = "x86_64") -> list[str]:
    """iree-compile flags of an inline program: ``model`` "static" or "dynamic"
    (for ``arch``)."""
    return list(STATIC) if model == "static" else [*DYNAMIC, *IREE_TARGET_FLAGS[arch]]


class InlineCompiler:
    def __init__(self, exe: str):
        self.exe = exe
        self.version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                      timeout=60).stdout

    def source(self, program: str) -> Path:
        src = PROGRAMS / f"{program}.mlir"
        return src if src.is_file() else EXAMPLES / f"{program}.mlir"

    def __call__(self, program: str, model: str, arch: str = "x86_64") -> Path:
        """The ``.vmfb`` of ``program`` (a name in programs/ or examples/)."""
        return self.compile(self.source(program), inline_flags(model, arch),
                            f"{program}-{model}-{arch}")

    def library(self, program: str, arch: str = "x86_64") -> bytes:
        """The embedded ELF library of ``program`` compiled inline-dynamic."""
        out = self.compile(self.source(program), inline_flags("dynamic", arch),
                           f"{program}-dynamic-{arch}", dump=True)
        libs = sorted((out.parent / "bin").glob("*.so"))
        assert len(libs) == 1, libs
        return libs[0].read_bytes()

    def compile(self, src: Path, flags: list[str], stem: str, dump: bool = False) -> Path:
        """``src`` (a path) compiled with ``flags`` (``--compile-mode=vm`` for
        VM dialect text), cached; ``dump``: keep the dispatch libraries in
        ``bin/`` beside the ``.vmfb``."""
        key = cache_key(src.read_bytes(), " ".join(flags), self.version, str(dump))
        final = CACHE / key
        vmfb = final / f"{stem}.vmfb"
        if (final / "complete").is_file():
            return vmfb
        tmp = final.with_name(f"{key}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "bin").mkdir(parents=True)
        extra = [f"--iree-hal-dump-executable-binaries-to={tmp / 'bin'}"] if dump else []
        proc = subprocess.run([self.exe, str(src), *flags, *extra, "-o", str(tmp / vmfb.name)],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"iree-compile {src.name} {' '.join(flags)} failed:\n"
                               f"{proc.stderr}")
        (tmp / "complete").write_text("ok\n")
        try:
            os.rename(tmp, final)   # concurrent sessions never see a partial directory
        except OSError:             # another session finished first
            shutil.rmtree(tmp, ignore_errors=True)
        return vmfb


def loader_driver(library: bytes, fmt: str) -> str:
    """VM dialect source of a module ``@drive`` whose ``dispatch(entry, size)``
    loads ``library`` (format ``fmt``) with ``hal_loader.executable.load`` and
    dispatches function id ``entry`` over three ``vm.buffer`` bindings of 16
    bytes, the second taken from a buffer of ``size`` bytes; it returns 1."""
    elems = ", ".join(str(b - 256 if b > 127 else b) for b in library)
    return f"""vm.module @drive {{
  vm.import private @hal_loader.executable.load(%format : !vm.buffer, %data : !vm.buffer, %constants : !vm.buffer) -> !vm.ref<!hal.executable>
  vm.import private @hal_loader.executable.dispatch(%executable : !vm.ref<!hal.executable>, %entry_point : i64, %x : i32, %y : i32, %z : i32, %constants : i32 ..., %bindings : tuple<!vm.buffer, i64, i64> ...)
  vm.rodata private @format "{fmt}"
  vm.rodata private @exe dense<[{elems}]> : vector<{len(library)}xi8>
  vm.func @dispatch(%entry: i64, %size: i64) -> i32 {{
    %f = vm.const.ref.rodata @format : !vm.buffer
    %d = vm.const.ref.rodata @exe : !vm.buffer
    %null = vm.const.ref.zero : !vm.buffer
    %e = vm.call @hal_loader.executable.load(%f, %d, %null) : (!vm.buffer, !vm.buffer, !vm.buffer) -> !vm.ref<!hal.executable>
    %c16 = vm.const.i64 16
    %c0 = vm.const.i64 0
    %c1 = vm.const.i32 1
    %a = vm.buffer.alloc %c16, %c1 : !vm.buffer
    %b = vm.buffer.alloc %size, %c1 : !vm.buffer
    %o = vm.buffer.alloc %c16, %c1 : !vm.buffer
    vm.call.variadic @hal_loader.executable.dispatch(%e, %entry, %c1, %c1, %c1, [], [(%a, %c0, %c16), (%b, %c0, %c16), (%o, %c0, %c16)]) : (!vm.ref<!hal.executable>, i64, i32, i32, i32, i32 ..., tuple<!vm.buffer, i64, i64> ...)
    vm.return %c1 : i32
  }}
  vm.export @dispatch
}}
"""


def run_args(vmfb: Path, function: str, inputs: list[str],
             extra: tuple[str, ...] = ()) -> list[str]:
    """``--module``, ``--function`` and ``--input`` flags (then ``extra``)."""
    return [f"--module={vmfb}", f"--function={function}", *(f"--input={i}" for i in inputs),
            *extra]


def vmrt_cli(command: str, args: list[str]) -> tuple[int, str, str]:
    """``vmrt COMMAND ARGS`` in this process: (exit code, stdout, stderr)."""
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main([command, *args], stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def iree_cli(exe: str, args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """An IREE tool: (exit code, stdout, stderr)."""
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def status(stderr: str) -> str:
    """``CODE; message`` of an error's first line (IREE's ``file.c:line: `` or
    ``<vm>:0: `` removed)."""
    line = re.sub(r"^\S+:\d+: ", "", stderr.strip().splitlines()[0], count=1)
    return "; ".join(line.split("; ")[:2])
