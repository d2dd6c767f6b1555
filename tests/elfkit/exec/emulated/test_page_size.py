"""The emulator's guest page size: 4 KiB on every architecture, as unicorn
itself reports it (on ARM and AArch64 unicorn defaults to 1 KiB pages, whose
TLB covers a quarter of the memory and made big kernels refill it often)."""
from __future__ import annotations

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
