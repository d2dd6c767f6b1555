"""Float/SIMD registers over the gdb stub on aarch64 (V0-V31, FPSR, FPCR:
org.gnu.gdb.aarch64.fpu) and arm (D0-D31, FPSCR: org.gnu.gdb.arm.vfp),
with real gdb-multiarch: gdb reads what the plugin computed, and what gdb
writes reaches the machine (the call's result changes accordingly)."""
from __future__ import annotations

import re
import struct
from fractions import Fraction
from pathlib import Path

import pytest

import elfkit
from tests.plugins import REPO

from .test_gdbstub import GDB_TIMEOUT, call_in_thread, finish, gdb_batch, needs_gdb

pytest.importorskip("unicorn")

SRC = Path(__file__).parent / "gdb_src" / "fpdebuggee.c"

#: per arch: gdb expressions for d0 as a double, writing it, reading a 64-bit
#: lane of a register the code leaves alone, and the float status register
EXPR = {
    "aarch64": {"d0": "$d0.f", "set_d0": "$v0.d.f[0]", "spare": "$v20.d.u[1]",
                "status": "$fpsr", "info": "v0"},
    "arm": {"d0": "$d0", "set_d0": "$d0", "spare": "$d20", "status": "$fpscr",
            "info": "d0"},
}
INEXACT = 0x10          # the IXC bit of FPSR (aarch64) and FPSCR (arm)


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("arch", ["aarch64", "arm"])
@needs_gdb
def test_float_registers_read_and_written(arch):
    from elfkit.toolchain import compile_plugin
    so = compile_plugin(SRC, arch, REPO / "build" / "gdb" / arch / "fpdebuggee.so",
                        cflags=["-g", "-O1", "-fno-omit-frame-pointer"])
    x = 4.0
    v = x / 3.0 + 0.25                     # fp_sink's argument, as the plugin computes it
    assert Fraction(x) / 3 != Fraction(x / 3.0)         # so the division raised "inexact"
    spare = 0x1234ABCD5678EF01 if arch == "aarch64" else bits(-3.5)
    e = EXPR[arch]
    with elfkit.load(so, backend="emulated") as m:
        port = m.debug(0, accept_timeout=GDB_TIMEOUT)
        proc = gdb_batch(so, port, [
            "break fp_sink", "continue",
            f"print {e['d0']}", f"info registers {e['info']}", f"print {e['status']}",
            f"set var {e['set_d0']} = 7.25",
            f"set var {e['spare']} = {spare if arch == 'aarch64' else -3.5}",
            f"set var {e['status']} = 0",
            "stepi",
            f"print/x {e['spare']}", f"print {e['status']}",
            "continue"])
        t, box = call_in_thread(m.function("fp_entry", "f64(f64)"), x)
        t.join(GDB_TIMEOUT)
        m.debug(None)
        out = finish(proc)
    assert "error" not in box, f"{box.get('error')}\n{out}"
    assert re.search(r"Breakpoint 1, fp_sink \(v=", out), out
    values = re.findall(r"^\$\d+ = (.+)$", out, re.M)
    assert len(values) == 4, out
    # what the plugin computed: the double, its bits in `info registers`, inexact raised
    assert float(values[0]) == v, out
    line = re.search(rf"^{e['info']} +(.+)$", out, re.M)
    assert line and f"0x{bits(v):x}" in line.group(1), out
    assert int(values[1]) & INEXACT, out
    # gdb's writes landed: the untouched register kept its value over a step
    # (also the 64 bits of a double on arm), and fp_sink used the new d0
    assert int(values[2], 16) == spare, out
    assert int(values[3]) & INEXACT == 0, out          # the step ran no inexact op
    assert box["result"] == 7.25 * 2.0 + 0.5, out
    assert "exited normally" in out, out
