"""Typed per-context state of native modules (issue 28 item 3): a record
derived from NativeState, named by the module's ``state_class``; each
context gets its own, with its imports bound into ``state.imports``."""
from __future__ import annotations

import re

import pytest

import vmrt
from elfkit._support.records import field
from vmrt.modules.check.module import CheckModule, CheckState
from vmrt.modules.hal.module import HalDeviceModule, HalState


class CounterState(vmrt.NativeState):
    calls: int = 0
    seen: list[int] = field(default_factory=list)


class Counter(vmrt.NativeModule[CounterState]):
    name = "counter"
    state_class = CounterState

    @vmrt.export("tick", "0i_i")
    def tick(self, state: CounterState, x: int) -> int:
        state.calls += 1
        state.seen.append(x)
        return state.calls


def test_each_context_gets_its_own_typed_state():
    inst = vmrt.Instance()
    mod = Counter()
    with vmrt.Context(inst, [mod]) as a, vmrt.Context(inst, [mod]) as b:
        assert a.invoke("counter.tick", [5]) == [1]
        assert a.invoke("counter.tick", [6]) == [2]
        assert b.invoke("counter.tick", [7]) == [1]
        sa, sb = a.state_of(mod), b.state_of(mod)
        assert type(sa) is CounterState and sa is not sb
        assert (sa.calls, sa.seen, sb.seen) == (2, [5, 6], [7])
        assert sa.imports == []          # no imports declared


def test_subscript_is_the_class_at_run_time():
    assert vmrt.NativeModule[CounterState] is vmrt.NativeModule
    assert Counter.__mro__[1] is vmrt.NativeModule


def test_builtin_modules_have_typed_states():
    hal = HalDeviceModule(devices=["local-sync"])
    state = hal.alloc_state(None)
    try:
        assert type(state) is HalState and len(state.devices) == 1
        assert state.statistics is None and state.imported == {}
    finally:
        hal.free_state(state)
    assert type(CheckModule().alloc_state(None)) is CheckState


class Scaled(vmrt.NativeModule):
    name = "scaled"

    def __init__(self, factor: int):
        super().__init__()
        self.factor = factor

    @vmrt.export("mul", "0i_i")
    def mul(self, state: vmrt.NativeState, x: int) -> int:
        return self.factor * x

    @vmrt.export("add", "0ii_i")
    def add(self, state: vmrt.NativeState, x: int, y: int) -> int:
        return x + y


class Shifted(Scaled):
    @vmrt.export("mul", "0i_i")
    def mul(self, state: vmrt.NativeState, x: int) -> int:      # overrides the base's
        return self.factor * x + 1


def test_exports_are_declared_per_class_and_bound_per_instance():
    # the exports a class declares are found once per class; each instance
    # (hal is made at every load) binds its own methods
    inst = vmrt.Instance()
    for _ in range(2):
        two, three, shifted = Scaled(2), Scaled(3), Shifted(5)
        assert [e.name for e in two.exports] == ["mul", "add"]
        assert sorted(e.name for e in shifted.exports) == ["add", "mul"]
        with vmrt.Context(inst, [two]) as a, vmrt.Context(inst, [three]) as b:
            assert a.invoke("scaled.mul", [7]) == [14] and b.invoke("scaled.mul", [7]) == [21]
            assert a.invoke("scaled.add", [2, 3]) == [5]
        with vmrt.Context(inst, [shifted]) as c:
            assert c.invoke("scaled.mul", [7]) == [36]


def test_an_export_shadowing_a_module_method_is_refused():
    class Bad(vmrt.NativeModule):
        name = "bad"

        @vmrt.export("exports", "0_i")
        def dependencies(self, state: vmrt.NativeState) -> int:    # a vmrt.Module method
            return 0
    _refused_every_time(Bad, "shadows a vmrt.Module method")


def test_an_export_name_declared_twice_is_refused():
    class Twice(vmrt.NativeModule):
        name = "twice"

        @vmrt.export("f", "0i_i")
        def f(self, state: vmrt.NativeState, x: int) -> int:
            return x

        @vmrt.export("f", "0i_i")
        def g(self, state: vmrt.NativeState, x: int) -> int:
            return -x
    _refused_every_time(Twice, "duplicate export 'f' in module 'twice'")


def _refused_every_time(cls, message: str) -> None:
    """Making ``cls`` fails with ``message``, the second time too (a class's
    export table is kept only when it is good)."""
    for _ in range(2):
        with pytest.raises(vmrt.VmError, match=re.escape(message)):
            cls()
