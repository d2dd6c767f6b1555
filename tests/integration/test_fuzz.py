"""Bounded property tests: random mutations of real plugins and FatELF files
end in our own errors (the long-running version is fuzz/run.py)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from elfkit import fatelf
from fuzz.targets import elf_load, fatelf_read

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]
_SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])

edits = st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=12)


def _apply(data: bytes, changes, cut: int | None) -> bytes:
    b = bytearray(data)
    for pos, val in changes:
        b[pos % len(b)] = val
    return bytes(b[:cut]) if cut is not None else bytes(b)


@pytest.mark.parametrize("arch", ARCHES)
@given(changes=edits, cut=st.one_of(st.none(), st.integers(0, 1 << 14)))
@_SETTINGS
def test_elf_mutations(plugins, arch, changes, cut):
    data = plugins.path("relocs", arch).read_bytes()
    # concentrate on the headers, dynamic data and relocation tables at the front
    elf_load(_apply(data, [(p % 2048, v) for p, v in changes], cut))


@given(changes=edits, cut=st.one_of(st.none(), st.integers(0, 1 << 15)))
@_SETTINGS
def test_fatelf_mutations(plugins, changes, cut):
    data = fatelf.pack([plugins.path("standalone", a) for a in ("x86_64", "aarch64", "riscv32")])
    fatelf_read(_apply(data, [(p % 200, v) for p, v in changes], cut))
