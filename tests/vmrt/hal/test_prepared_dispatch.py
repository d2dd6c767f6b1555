"""A prepared native dispatch (Executable.prepare, NativeDispatch.run) over
one workgroup (run in the caller's frame) and several: results, and the
errors of a failing workgroup, are those of Executable.dispatch."""
from __future__ import annotations

import numpy as np
import pytest

from vmrt.errors import VmError
from vmrt.hal.buffer import aligned_bytes
from vmrt.hal.local.executable import Executable
from vmrt.hal.local.plugins.manager import PluginManager


def _index(n: int) -> list[int]:
    return [n & 0xFFFFFFFF, n >> 32]


def _outcome(run) -> str:
    try:
        run()
    except VmError as e:
        return f"{e.code.name}: {e}"
    return "ok"


@pytest.mark.parametrize("n", [64, 64 * 3 - 5])          # one workgroup, three
@pytest.mark.parametrize("plugin", ["times3", "raises", "status"])
def test_prepared_run_matches_dispatch(iree, n, plugin):
    calls = []

    def workgroup(call):
        b0, o0, b1, o1, b2, o2, size, _tid = call.words(8)
        calls.append(size)
        last = len(calls) == groups + 1                 # calls: [None, size, ...]
        if plugin == "raises" and last:
            raise RuntimeError("boom")
        x = call.array(b0 + 4 * o0, np.float32, size)
        y = call.array(b1 + 4 * o1, np.float32, size)
        call.store(b2 + 4 * o2, x * y * np.float32(3))
        return 6 if plugin == "status" and last else 0
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // 64)
    with PluginManager() as mgr:
        mgr.register({"simple_mul_workgroup": workgroup})
        with Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=mgr) as exe:
            outs = []
            prepared = exe.prepare("tiled_mul", groups, _index(n), 3)
            assert prepared is not None

            def checked():
                calls.clear()
                calls.append(None)
                out = np.zeros(n, np.float32)
                outs.append(out)
                exe.dispatch("tiled_mul", groups, [a, b, out], _index(n))

            def fast():
                calls.clear()
                calls.append(None)
                arrays = [aligned_bytes(4 * n).view(np.float32) for _ in range(3)]
                arrays[0][:], arrays[1][:] = a, b
                outs.append(arrays[2])
                prepared.run([int(x.ctypes.data) for x in arrays], [4 * n] * 3)
            want, got = _outcome(checked), _outcome(fast)
    assert got == want
    if plugin == "times3":
        assert want == "ok"
        for out in outs:
            np.testing.assert_array_equal(out, a * b * np.float32(3))
    else:
        assert want.startswith("INTERNAL: ") and "workgroup (" in want, want


def test_prepare_is_kept_per_dispatch_shape(iree):
    """A command buffer recorded anew (each time round a loop) prepares the
    same dispatch again: the executable hands back the one it prepared, and
    another grid, other constants or another thread count get their own."""
    with PluginManager() as mgr:
        mgr.register({"simple_mul_workgroup": lambda call: 0})
        with Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=mgr) as exe:
            first = exe.prepare("tiled_mul", 2, _index(128), 3)
            assert first is not None
            assert exe.prepare("tiled_mul", 2, _index(128), 3) is first
            others = [exe.prepare("tiled_mul", 3, _index(128), 3),
                      exe.prepare("tiled_mul", 2, _index(64), 3),
                      exe.prepare("tiled_mul", 2, _index(128), 3, threads=2)]
            assert all(p is not None and p is not first for p in others)
            assert len({id(p) for p in others}) == 3
        assert exe.prepare("tiled_mul", 2, _index(128), 3) is None     # closed
