"""The instruction budget under emulated ``local-task``: workers running one
dispatch on several machines share the budget exactly -- the dispatch stops
at the same budget as on ``local-sync`` (one machine), and what is charged
is what the machines ran."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.hal.local import dispatch, emulated_workers
from vmrt.hal.local.device import Device

DISPATCH = "scale_dispatch_0"       # task_matmul.mlir's @scale: one dispatch, many workgroups


def _with_threads(n):
    init = Device.__init__

    def wrapped(self, uri, *a, **k):
        init(self, uri, *a, **k)
        if self.identifier == "local-task":
            self.dispatch_threads = n
    return wrapped


@pytest.fixture
def machines(monkeypatch):
    """Every machine that ran a budgeted workgroup of the current call."""
    seen: dict[int, object] = {}
    for mod in (dispatch, emulated_workers):
        orig = mod.guest_workgroup

        def spy(fn, machine, *a, _orig=orig, **k):
            seen[id(machine)] = machine
            return _orig(fn, machine, *a, **k)
        monkeypatch.setattr(mod, "guest_workgroup", spy)
    return seen


def _call(vmfb, device, budget, machines):
    """(outcome, instructions charged, guest instructions the machines ran):
    outcome is "ok", "dispatch" (the budget ran out inside the dispatch) or
    "vm" (it ran out in VM code after it)."""
    machines.clear()
    x = np.linspace(-1, 1, 65536, dtype=np.float32)
    with vmrt.load(vmfb, device=device, budget=budget) as prog:
        before = prog.context.limits.executed
        try:
            out = prog["scale"](x)
            np.testing.assert_allclose(out, np.sin(x * np.float32(1.25)), rtol=1e-5, atol=1e-5)
            outcome = "ok"
        except vmrt.BudgetExceeded as e:
            assert e.code == vmrt.StatusCode.RESOURCE_EXHAUSTED
            outcome = "dispatch" if DISPATCH in str(e) else "vm"
        charged = prog.context.limits.executed - before
        guest = sum(m.instructions for m in machines.values())
        return outcome, charged, guest


@pytest.mark.parametrize("threads", [2, 3])
def test_local_task_stops_at_the_local_sync_budget(hal_compile, emulation, machines,
                                                   monkeypatch, threads):
    monkeypatch.setattr(Device, "__init__", _with_threads(threads))
    vmfb = hal_compile("task_matmul.mlir", "riscv64")
    ok, spent, guest = _call(vmfb, "local-sync", 10**12, machines)
    assert ok == "ok" and len(machines) == 1
    vm = spent - guest                  # VM instructions of the call
    assert 0 < vm < guest
    # the largest budget that stops local-sync inside the dispatch
    lo, hi = vm, spent                  # lo stops in the dispatch, hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _call(vmfb, "local-sync", mid, machines)[0] == "dispatch":
            lo = mid
        else:
            hi = mid
    for budget in (lo - 50_000, lo, hi, spent):
        want, sync_charged, sync_ran = _call(vmfb, "local-sync", budget, machines)
        got, charged, ran = _call(vmfb, "local-task", budget, machines)
        assert got == want, (budget, got, want)
        assert len(machines) == threads
        # the guest instructions charged are those the machines ran (the
        # rest, VM instructions up to where the call stopped, are the same)
        assert charged - ran == sync_charged - sync_ran
        if got == "dispatch":           # the workers may run past where one thread stops
            assert ran >= sync_ran
        else:                           # every instruction of the call, once
            assert (charged, ran) == (sync_charged, sync_ran)
    got, charged, ran = _call(vmfb, "local-task", 10**12, machines)
    assert (got, charged, ran) == ("ok", spent, guest)
