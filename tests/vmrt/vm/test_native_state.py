"""Typed per-context state of native modules (issue 28 item 3): a record
derived from NativeState, named by the module's ``state_class``; each
context gets its own, with its imports bound into ``state.imports``."""
from __future__ import annotations

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
