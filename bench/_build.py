"""Inputs the benchmarks need, built on demand and cached.

Every plugin goes through ``elfkit.toolchain`` (the project's one builder):

* the sample/test plugins: the CMake project in plugin_src/, built by
  ``build_plugin_project`` into the same hash-keyed cache the tests use
  (``build/plugins/<hash>/<arch>/<name>.so``);
* synthetic shared objects with N dynamic relocations
  (``build/bench/data/relocs_<kind>_<N>.so``), assembled and linked by
  ``compile_plugin``;
* a large x86_64 ELF for the FatELF measures;
* a loop-heavy ``.vmfb`` compiled with the pip ``iree-compile``.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from elfkit.toolchain import ToolchainError, build_plugin_project, compile_plugin

from ._timing import REPO

#: Same configure options as the tests' catalogue (tests/plugins.py), so the
#: benchmarks reuse the tests' cached build and the other way round.
PLUGIN_DEFINITIONS = {"ELFKIT_SYSTEM_PLUGIN": "ON"}


class BuildError(RuntimeError):
    pass


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> None:
    # Host compiler flags must not leak into the builds.
    env = {k: v for k, v in os.environ.items()
           if k not in ("CFLAGS", "CPPFLAGS", "LDFLAGS", "ASMFLAGS")}
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise BuildError(f"{what} failed ({' '.join(map(str, cmd))}):\n"
                         f"{p.stdout.decode(errors='replace')[-3000:]}")


@functools.cache
def _plugin_dir() -> Path:
    root = Path(os.environ.get("ELFKIT_PLUGIN_BUILD_DIR", REPO / "build" / "plugins"))
    try:
        return build_plugin_project(REPO / "plugin_src", root, definitions=PLUGIN_DEFINITIONS)
    except ToolchainError as e:
        raise BuildError(str(e)) from None


def plugins(work: Path) -> Path:
    """Build (or reuse) every plugin; returns the directory that holds
    ``<arch>/<name>.so``.  (``work`` is not used: the plugins live in the
    shared cache.)"""
    return _plugin_dir()


def plugin(work: Path, name: str, arch: str) -> Path:
    p = _plugin_dir() / arch / f"{name}.so"
    if not p.is_file():
        raise BuildError(f"{p} was not built")
    return p


def _data(work: Path) -> Path:
    d = work / "data"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _assemble_link(asm: str, out: Path, target: str = "x86_64") -> Path:
    """Assemble ``asm`` for ``target`` and link it into a shared object at
    ``out`` (compile_plugin reuses ``out`` while the source is unchanged)."""
    src = out.with_suffix(".s")
    if not src.is_file() or src.read_text() != asm:
        tmp_src = out.with_suffix(f".{os.getpid()}.s")
        tmp_src.write_text(asm)
        tmp_src.replace(src)
    try:
        return compile_plugin(src, target, out)
    except ToolchainError as e:
        raise BuildError(str(e)) from None


def reloc_object(work: Path, n: int, kind: str = "relative") -> Path:
    """An x86_64 shared object whose .data holds ``n`` 8-byte words, each
    with one dynamic relocation: ``relative`` -> R_X86_64_RELATIVE (a local
    label), ``symbolic`` -> R_X86_64_64 against an exported symbol (its
    value is looked up once per file, in elfkit's load plan)."""
    sym = "local_sym" if kind == "relative" else "exported_sym"
    if kind not in ("relative", "symbolic"):
        raise ValueError(kind)
    asm = f"""\
        .text
        .globl bench_entry
        .type bench_entry,@function
bench_entry:
        ret
        .size bench_entry, 1
        .data
        .balign 8
        .globl exported_sym
        .type exported_sym,@object
exported_sym:
local_sym:
        .rept {n}
        .quad {sym}
        .endr
        .size exported_sym, {8 * n}
"""
    return _assemble_link(asm, _data(work) / f"relocs_{kind}_{n}.so")


def big_elf(work: Path, size: int) -> Path:
    """An x86_64 shared object of about ``size`` bytes (a read-only data
    section of non-zero bytes), for the FatELF pack/select measures."""
    asm = f"""\
        .text
        .globl bench_entry
bench_entry:
        ret
        .section .rodata.big,"a",@progbits
        .balign 4096
big_blob:
        .fill {size // 4}, 4, 0x5a17c0de
"""
    return _assemble_link(asm, _data(work) / f"big_{size >> 20}MiB.so")


LOOP_MLIR = """\
// Loop-heavy: n iterations of a multiply-add-xor recurrence on i64.
func.func @loop(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c1) -> i64 : i64 {
    %m = arith.muli %acc, %c7 : i64
    %a = arith.addi %m, %i : i64
    %x = arith.xori %a, %i : i64
    scf.yield %x : i64
  }
  return %r : i64
}
"""


def loop_vmfb(work: Path) -> Path:
    """``loop.vmfb`` compiled from LOOP_MLIR (host-only, no HAL)."""
    out = _data(work) / "loop.vmfb"
    src = out.with_suffix(".mlir")
    if out.is_file() and src.is_file() and src.read_text() == LOOP_MLIR:
        return out
    compiler = shutil.which("iree-compile") or shutil.which(
        "iree-compile", path=str(Path(sys.executable).parent))
    if not compiler:
        raise BuildError("iree-compile not found (pip install iree-base-compiler)")
    tmp = out.with_suffix(f".{os.getpid()}.mlir")
    tmp_out = out.with_suffix(f".{os.getpid()}.vmfb")
    tmp.write_text(LOOP_MLIR)
    _run([compiler, "--iree-execution-model=host-only", str(tmp), "-o", str(tmp_out)],
         "iree-compile loop.mlir")
    tmp_out.replace(out)
    tmp.replace(src)
    return out
