"""Several modules in one emulated machine under gdb: gdb loads the first
with ``file`` (placed by ``qOffsets``) and learns every other one from the
stub's library list, so a breakpoint by name in the second module hits --
under gdb's default OS ABI (``qXfer:libraries-svr4``), under ``set osabi
none`` (``qXfer:libraries``) and for a module loaded while gdb is attached
(a ``library`` stop makes gdb read the list again)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import elfkit
from tests.plugins import REPO

from .test_gdbstub import (
    GDB,
    GDB_TIMEOUT,
    SRC,
    call_in_thread,
    expected_entry,
    finish,
    gdb_batch,
    needs_gdb,
    symbol_value,
)

pytest.importorskip("unicorn")

FP_SRC = Path(__file__).parent / "gdb_src" / "fpdebuggee.c"


def build(src: Path, arch: str) -> Path:
    from elfkit.toolchain import compile_plugin
    return compile_plugin(src, arch, REPO / "build" / "gdb" / arch / (src.stem + ".so"),
                          cflags=["-g", "-O1", "-fno-omit-frame-pointer"])


def fp_entry(x: float) -> float:
    """fp_entry(x) = fp_sink(x / 3 + 0.25), fp_sink(v) = v * 2 + 0.5."""
    return (x / 3.0 + 0.25) * 2.0 + 0.5


def check_stop_in_fp_sink(out: str, second: elfkit.Module, so2: Path) -> None:
    """gdb stopped at fp_sink of the second module, at its loaded address."""
    assert re.search(r"Breakpoint 1, fp_sink \(v=1\.58333", out), out
    pc = int(re.findall(r"^\$\d+ = (0x[0-9a-f]+)$", out, re.M)[0], 16)
    start = second.base + symbol_value(so2, "fp_sink")
    assert start <= pc < start + 64, (hex(pc), hex(start), out)
    libs = re.findall(r"^0x[0-9a-f]+ +0x[0-9a-f]+ +Yes +(\S+)$", out, re.M)
    assert [Path(p).name for p in libs] == ["fpdebuggee.so"], out    # the first is not listed
    assert "exited normally" in out, out


@needs_gdb
@pytest.mark.parametrize("arch", ["aarch64", "arm", "riscv64", "x86_64"])
def test_breakpoint_in_a_second_module(arch):
    so1, so2 = build(SRC, arch), build(FP_SRC, arch)
    with elfkit.load(so1, backend="emulated") as first:
        second = elfkit.load(so2, machine=first.machine)
        port = first.debug(0, accept_timeout=GDB_TIMEOUT)
        proc = gdb_batch(so1, port, ["info sharedlibrary", "break fp_sink", "continue",
                                     "print/x $pc", "continue"])
        t, box = call_in_thread(second.function("fp_entry", "f64(f64)"), 4.0)
        t.join(GDB_TIMEOUT)
        first.debug(None)
        out = finish(proc)
        assert box.get("result") == fp_entry(4.0), (box, out)
        check_stop_in_fp_sink(out, second, so2)
        # the ELF copies gdb read are deleted when the session ends
        copies = re.findall(r"^0x[0-9a-f]+ +0x[0-9a-f]+ +Yes +(\S+)$", out, re.M)
        assert copies and not any(Path(p).exists() for p in copies), copies


@needs_gdb
def test_library_list_without_an_os_abi():
    """Under ``set osabi none`` gdb asks for ``qXfer:libraries`` instead."""
    so1, so2 = build(SRC, "arm"), build(FP_SRC, "arm")
    with elfkit.load(so1, backend="emulated") as first:
        second = elfkit.load(so2, machine=first.machine)
        port = first.debug(0, accept_timeout=GDB_TIMEOUT)
        args = [GDB, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex",
                "set confirm off", "-ex", f"file {so1}", "-ex", "set osabi none",
                "-ex", f"target remote :{port}"]
        for c in ["show osabi", "info sharedlibrary", "break fp_sink", "continue",
                  "print/x $pc", "continue"]:
            args += ["-ex", c]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        t, box = call_in_thread(second.function("fp_entry", "f64(f64)"), 4.0)
        t.join(GDB_TIMEOUT)
        first.debug(None)
        out = finish(proc)
        assert 'OS ABI is "none"' in out, out
        assert box.get("result") == fp_entry(4.0), (box, out)
        check_stop_in_fp_sink(out, second, so2)


@needs_gdb
def test_module_loaded_while_gdb_is_attached():
    """A pending breakpoint on a function of a module not loaded yet hits
    once the module is loaded and called, in the same session."""
    so1, so2 = build(SRC, "riscv64"), build(FP_SRC, "riscv64")
    with elfkit.load(so1, backend="emulated") as first:
        port = first.debug(0, accept_timeout=GDB_TIMEOUT)
        proc = gdb_batch(so1, port, ["set breakpoint pending on", "break fp_sink", "continue",
                                     "print/x $pc", "info sharedlibrary", "continue"])
        loaded: list[elfkit.Module] = []

        def work() -> tuple[int, float]:
            r = first.function("dbg_entry", "i32(i32)")(4)
            loaded.append(elfkit.load(so2, machine=first.machine))
            return r, loaded[0].function("fp_entry", "f64(f64)")(4.0)
        t, box = call_in_thread(work)
        t.join(GDB_TIMEOUT)
        first.debug(None)
        out = finish(proc)
        assert box.get("result") == (expected_entry(4), fp_entry(4.0)), (box, out)
        assert "Breakpoint 1 (fp_sink) pending." in out, out
        check_stop_in_fp_sink(out, loaded[0], so2)
