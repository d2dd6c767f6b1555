"""hal.allocator.import of module constants: a dispatch may write into an
imported constant in place (sorts, scatters); the result must be what
IREE's runtime computes, and neither the loaded module's bytes nor another
context may see the writes."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.modules.hal.module import HalDeviceModule

PROGRAM = "sort_const.mlir"


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_sort_of_a_constant_in_place(hal_compile, arch):
    vmfb = hal_compile(PROGRAM, arch)
    with vmrt.load(vmfb) as first:
        module = first.module
        before = [bytes(b.data) for b in module.rodata]
        assert list(first["sort_const"]()) == [1, 2, 3, 4]
        np.testing.assert_array_equal(first["sort_const5"](),
                                      np.array([0.5, 1, 2, 3, 4], np.float32))
        # the module's own bytes are untouched by the in-place sort
        assert [bytes(b.data) for b in module.rodata] == before
        # a second context over the same loaded module sorts the original data
        with vmrt.load(module) as second:
            assert list(second["sort_const"]()) == [1, 2, 3, 4]


def test_import_of_rodata_is_a_per_context_writable_copy():
    inst = vmrt.Instance()
    hal = HalDeviceModule(inst, ["local-sync"])
    raw = bytes(range(200))
    rodata = vmrt.Buffer(memoryview(raw)[3:3 + 100], readonly=True)   # unaligned, read-only
    a, b = hal.alloc_state(None), hal.alloc_state(None)      # two contexts' states
    try:
        dev = a.devices[0]
        ba = hal.allocator_import(a, dev.allocator, 1, 0, 0, 0, rodata, 10, 50)
        assert not ba.bytes.readonly and ba.address % 64 == 0
        assert bytes(ba.bytes) == raw[13:63]
        # the same range in the same context is the same memory
        assert hal.allocator_import(a, dev.allocator, 1, 0, 0, 0, rodata, 10, 50) is ba
        ba.bytes[:] = b"\xee" * len(ba)
        bb = hal.allocator_import(b, b.devices[0].allocator, 1, 0, 0, 0, rodata, 10, 50)
        assert bytes(bb.bytes) == raw[13:63]      # another context: the original data
        assert bytes(rodata.data[10:60]) == raw[13:63]
        # a mutable vm.buffer is imported zero-copy: writes reach it
        mutable = vmrt.Buffer(bytearray(64))
        bm = hal.allocator_import(a, dev.allocator, 1, 0, 0, 0, mutable, 0, 64)
        bm.bytes[:4] = b"\x07" * 4
        assert bytes(mutable.data[:4]) == b"\x07" * 4
    finally:
        hal.free_state(a)
        hal.free_state(b)
