"""Helpers of the tests that show natively loaded code to gdb and perf
(imported by test_jit_debug.py, tests/elfkit/test_add_symbols.py and
tests/vmrt/hal/test_export_symbols.py)."""
from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile


def host_gdb() -> str:
    """Debian's gdb, able to run programs here; else skip the test."""
    gdb = shutil.which("gdb")
    if gdb is None:
        pytest.skip("gdb is not installed (.ci/run installs Debian's gdb)")
    probe = subprocess.run([gdb, "--batch", "-nx", "-ex", "run", "--args", "/bin/true"],
                           capture_output=True, text=True, timeout=60)
    if "exited normally" not in probe.stdout:
        pytest.skip(f"gdb cannot run programs here (ptrace refused?): {probe.stderr.strip()}")
    return gdb


def dwarf_functions(path: Path) -> dict[str, tuple[int, int]]:
    """name -> (linked address, size) of a file's DWARF subprograms with an
    address range (pyelftools)."""
    out = {}
    for cu in ELFFile(io.BytesIO(Path(path).read_bytes())).get_dwarf_info().iter_CUs():
        for die in cu.iter_DIEs():
            if die.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in die.attributes:
                lo = die.attributes["DW_AT_low_pc"].value
                hi = die.attributes["DW_AT_high_pc"]
                size = hi.value if hi.form != "DW_FORM_addr" else hi.value - lo
                out[die.attributes["DW_AT_name"].value.decode()] = (lo, size)
    return out
