"""``EmulatedMachine.regions()``: the guest's address space as the user sees
it (what tests/vmrt/onnx/real_i386.py copies into a native process)."""
from __future__ import annotations

import pytest

from elfkit.exec.emulated import EmulatedMachine

PAGE = 4096


def test_regions_list_reservations_and_the_stack_by_address():
    with EmulatedMachine("i386") as m:
        a = m.reserve(3 * PAGE)
        m.write(a + PAGE, b"xyz")
        regions = m.regions()
        assert regions == sorted(regions)
        assert (a, 3 * PAGE, "image") in regions
        lo, hi = m.stack_range
        stacks = [(s, n) for s, n, kind in regions if kind == "stack"]
        assert len(stacks) == 1 and stacks[0][0] <= lo < hi <= stacks[0][0] + stacks[0][1]
        assert m.try_read(a + PAGE, 3) == b"xyz"
        m.release(a, 3 * PAGE)
        assert all(s != a for s, _n, _k in m.regions())


def test_regions_of_a_closed_machine_raise():
    m = EmulatedMachine("i386")
    m.close()
    with pytest.raises(Exception, match="closed"):
        m.regions()
