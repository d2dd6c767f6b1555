"""Conformance: the linalg family (programs/linalg/*.mlir, written by gen_linalg.py)."""
from __future__ import annotations

import pytest

from tests.vmrt.conformance.harness import cases, check_program, check_program_isolated

#: unicorn 2.1.4 (QEMU 5 TCG) leaks TCG temps translating x87 instructions:
#: one i386 translation block of ~250 x87 ops (the fully unrolled f32 matmuls'
#: dispatches) overruns TCG_MAX_TEMPS and the host process segfaults inside
#: uc_emu_start (test_unicorn_x87_block reproduces it with bare unicorn).
#: With a code hook installed the same blocks run, so elfkit runs every i386
#: call with unicorn's (C) instruction counter on (elfkit.exec.emulated
#: ALWAYS_COUNTED) and the linalg programs pass on i386 too.
X87_CRASH = ("unicorn 2.1.4 segfaults translating an i386 block of ~250 x87 "
             "instructions (TCG temps leak past TCG_MAX_TEMPS)")
XFAIL: dict[tuple[str, str], str] = {}


def _cases():
    out = []
    for c in cases("linalg"):
        path, arch = c.values
        reason = XFAIL.get((path.stem, arch))
        if reason:
            c = pytest.param(path, arch, id=c.id, marks=pytest.mark.xfail(reason=reason, strict=True))
        out.append(c)
    return out


@pytest.mark.parametrize("path,arch", _cases())
def test_program(path, arch, emulation):
    if (path.stem, arch) in XFAIL:
        check_program_isolated(path, arch)
    else:
        check_program(path, arch)


_X87_BLOCK = r'''
import sys
from unicorn import UC_ARCH_X86, UC_MODE_32, Uc
from unicorn.x86_const import UC_X86_REG_EIP
n = int(sys.argv[1])
code = b"\xd9\xee" * 2 + b"\xd8\xc9" * n + b"\xf4"   # fldz; fldz; n x fmul %st(1),%st; hlt
mu = Uc(UC_ARCH_X86, UC_MODE_32)
mu.mem_map(0x100000, 0x10000)
mu.mem_write(0x100000, code)
count = 1 << 40 if sys.argv[2:] == ["count"] else 0
mu.emu_start(0x100000, 0x100000 + len(code) - 1, count=count)
assert mu.reg_read(UC_X86_REG_EIP) == 0x100000 + len(code) - 1, "stopped early"
'''


@pytest.mark.parametrize("n, hook", [
    (100, ""),
    pytest.param(300, "", marks=pytest.mark.xfail(reason=X87_CRASH, strict=True)),
    (300, "count"), (5000, "count"),
])
def test_unicorn_x87_block(n, hook, emulation):
    """The minimal reproducer of the i386 crash, with bare unicorn, and the
    workaround elfkit uses: the same code with the instruction counter on."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", _X87_BLOCK, str(n), hook], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, f"unicorn exited with {proc.returncode}"
