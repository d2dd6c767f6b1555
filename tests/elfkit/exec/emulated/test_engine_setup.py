"""The emulator's guest page size: 4 KiB on every architecture, as unicorn
itself reports it (on ARM and AArch64 unicorn defaults to 1 KiB pages, whose
TLB covers a quarter of the memory and made big kernels refill it often).
And what the backend costs at start-up: no typing, no unicorn package."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("unicorn")

import elfkit.arch as A
from elfkit.errors import MemoryAccessError, ModuleClosedError
from elfkit.exec.base import PROT_READ
from elfkit.exec.emulated import EmulatedMachine


@pytest.mark.parametrize("arch", sorted(A.ARCHES))
def test_every_arch_uses_4k_pages(arch):
    with EmulatedMachine(arch) as m:
        assert m.page_size == 4096 == m.arch.page_size


@pytest.mark.parametrize("arch", ["aarch64", "arm"])
def test_protections_follow_4k_pages(arch):
    with EmulatedMachine(arch) as m:
        base = m.reserve(3 * 4096)
        m.write(base, bytes(range(256)) * 48)
        m.protect(base + 4096, 4096, PROT_READ)
        assert m.read(base + 4096, 256) == bytes(range(256))
        with pytest.raises(MemoryAccessError):
            m.protect(base + 1024, 1024, PROT_READ)      # not a whole page
    with pytest.raises(ModuleClosedError):
        _ = m.page_size


#: in a fresh interpreter: create a machine, run guest code (``add w0, w0, w1;
#: ret``), then print which of the listed modules that imported.  Modules the
#: interpreter had before do not count (a site ``.pth`` may import typing).
FRESH = """\
import sys
before = set(sys.modules)
from elfkit.exec.base import PROT_EXEC, PROT_READ
from elfkit.exec.emulated import EmulatedMachine
m = EmulatedMachine("aarch64")
code = m.reserve(4096)
m.write(code, bytes.fromhex("0000010bc0035fd6"))
m.protect(code, 4096, PROT_READ | PROT_EXEC)
print(m.call(code, "i32(i32,i32)", (40, 2)))
print("IMPORTED", *sorted(n for n in ("typing", "unicorn", "numpy", "dataclasses")
                          if n in sys.modules and n not in before))
"""


def test_the_emulated_backend_imports_no_typing():
    repo = str(Path(__file__).resolve().parents[4])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [repo, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    result, imported = proc.stdout.split("IMPORTED")
    assert result.split() == ["42"]
    assert imported.split() == []
