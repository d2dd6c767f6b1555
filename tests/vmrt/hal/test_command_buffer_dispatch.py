"""A recorded native dispatch submitted with binding tables: the common case
(every binding a range of an aligned buffer) and every odd table -- an
offset or whole-buffer entry, a misaligned buffer, a binding named by its
buffer, a short, null or out-of-bounds entry -- give the results numpy
computes and the errors a watched submission (the checked path every
dispatch took before) reports."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from vmrt.errors import VmError
from vmrt.hal.buffer import HalBuffer, new_buffer
from vmrt.hal.command_buffer import CommandBuffer
from vmrt.hal.dispatch_observer import observe_dispatches

N = 40                      # floats per binding: two workgroups of 32
ALPHA = 1.5


def _record(saxpy, refs) -> CommandBuffer:
    """saxpy over three bindings recorded once; ``refs`` per binding:
    ``(slot, buffer, offset)`` of 4*N bytes."""
    device, hexe, ordinal = saxpy
    cb = CommandBuffer(device, 0, 3, 3)
    consts = [struct.unpack("<I", struct.pack("<f", ALPHA))[0], N, 0]
    cb.dispatch(hexe, ordinal, (-(-N // 32), 1, 1), consts,
                [cb.ref(slot, buf, off, 4 * N) for slot, buf, off in refs])
    cb.finalize()
    return cb


def _floats(buf: HalBuffer, start: int) -> np.ndarray:
    return np.frombuffer(buf.bytes[start:start + 4 * N], np.float32)


def _inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(N).astype(np.float32))


def _filled(x: np.ndarray, size: int, at: int) -> HalBuffer:
    buf = new_buffer(size)
    buf.bytes[at:at + 4 * N] = x.view(np.uint8)
    return buf


def _submit(cb: CommandBuffer, table, watched: bool) -> str | None:
    """Execute; the error text, or None.  ``watched``: through an observer
    that runs each dispatch (the checked path)."""
    try:
        if watched:
            with observe_dispatches(lambda obs: obs.run()):
                cb.execute(table)
        else:
            cb.execute(table)
    except VmError as e:
        return f"{e.code.name}: {e}"
    return None


@pytest.mark.parametrize("case", ["plain", "offset", "whole", "misaligned"])
def test_tables_give_numpy_results(saxpy, case):
    cb = _record(saxpy, [(0, None, 0), (1, None, 0), (2, None, 0)])
    for watched in (False, True, False):        # the runner, the checked path, the runner again
        x, y = _inputs(len(case) + watched)
        base = 64 if case == "offset" else 0
        bx, by = _filled(x, 4 * N + base, base), _filled(y, 4 * N + base, base)
        out = new_buffer(4 * N + base)
        length = -1 if case == "whole" else 4 * N
        table = [(bx, base, length), (by, base, length), (out, base, length)]
        if case == "misaligned":        # a caller's array 4 bytes past an aligned start
            raw = np.zeros(4 * N + 64 + 4, np.uint8)
            skip = (-raw.ctypes.data) % 64 + 4
            raw[skip:skip + 4 * N] = x.view(np.uint8)
            table[0] = (HalBuffer(raw[skip:skip + 4 * N]), 0, 4 * N)
        assert _submit(cb, table, watched) is None
        np.testing.assert_array_equal(_floats(out, base), np.float32(ALPHA) * x + y)


def test_binding_named_by_its_buffer(saxpy):
    x, y = _inputs(7)
    bx = _filled(x, 4 * N + 128, 128)
    cb = _record(saxpy, [(0, bx, 128), (0, None, 0), (1, None, 0)])
    for watched in (False, True):
        out = new_buffer(4 * N)
        assert _submit(cb, [(_filled(y, 4 * N, 0), 0, 4 * N), (out, 0, 4 * N)], watched) is None
        np.testing.assert_array_equal(_floats(out, 0), np.float32(ALPHA) * x + y)


def test_bad_tables_report_what_the_checked_path_reports(saxpy):
    x, y = _inputs(3)
    good = [(_filled(x, 4 * N, 0), 0, 4 * N), (_filled(y, 4 * N, 0), 0, 4 * N),
            (new_buffer(4 * N), 0, 4 * N)]
    small = new_buffer(4 * N - 4)
    bad_tables = {
        "short table": good[:2],
        "null entry": [good[0], (None, 0, 4 * N), good[2]],
        "entry past its buffer": [good[0], (small, 0, 4 * N), good[2]],
        "binding past its entry": [good[0], (good[1][0], 0, 4 * N - 8), good[2]],
        "negative base": [good[0], (good[1][0], -64, 4 * N), good[2]],
    }
    cb = _record(saxpy, [(0, None, 0), (1, None, 0), (2, None, 0)])
    for name, table in bad_tables.items():
        fast, checked = _submit(cb, table, False), _submit(cb, table, True)
        assert fast is not None and fast == checked, name
        assert fast.startswith("OUT_OF_RANGE") or fast.startswith("INVALID_ARGUMENT"), fast
    assert _submit(cb, good, False) is None        # still usable


def test_common_case_runs_inline(saxpy, monkeypatch):
    """A table of aligned device buffers takes the runner's inline path: the
    checked path (run_dispatch) is not called.  Guards the speed of every
    dispatch: an exception inside the inline checks silently sends each
    dispatch down the checked path with the same results."""
    import vmrt.hal.command_buffer as cbmod
    calls = []
    checked = cbmod.run_dispatch
    monkeypatch.setattr(cbmod, "run_dispatch", lambda *a, **k: calls.append(a) or checked(*a, **k))
    cb = _record(saxpy, [(0, None, 0), (1, None, 0), (2, None, 0)])
    x, y = _inputs(11)
    out = new_buffer(4 * N)
    table = [(_filled(x, 4 * N, 0), 0, 4 * N), (_filled(y, 4 * N, 0), 0, 4 * N), (out, 0, 4 * N)]
    assert _submit(cb, table, False) is None
    np.testing.assert_array_equal(_floats(out, 0), np.float32(ALPHA) * x + y)
    assert calls == []
    assert _submit(cb, [table[0], table[1], (new_buffer(4 * N - 4), 0, 4 * N)], False)
    assert len(calls) == 1                      # an odd table still goes to the checked path


def test_run_dispatch_shares_the_runners_resolution(saxpy, monkeypatch):
    """run_dispatch (the path of watched submissions and of command buffers
    with other commands) resolves a common table the runners' way, without
    the checked resolution, and an odd one through it."""
    import vmrt.hal.commands as cbmod
    calls = []
    checked = cbmod.resolve_all
    monkeypatch.setattr(cbmod, "resolve_all", lambda *a: calls.append(a) or checked(*a))
    device = saxpy[0]
    cb = _record(saxpy, [(0, None, 0), (1, None, 0), (2, None, 0)])
    cmd = cb.commands[0]
    prepared = cbmod.prepare_dispatch(cmd, device)
    x, y = _inputs(13)
    out = new_buffer(4 * N)
    table = [(_filled(x, 4 * N, 0), 0, 4 * N), (_filled(y, 4 * N, 0), 0, 4 * N), (out, 0, 4 * N)]
    cbmod.run_dispatch(cmd, table, "command 0", None, prepared)
    np.testing.assert_array_equal(_floats(out, 0), np.float32(ALPHA) * x + y)
    assert calls == []
    table[2] = (out, 0, -1)                                 # a whole-buffer entry
    out.bytes[:] = bytes(4 * N)
    cbmod.run_dispatch(cmd, table, "command 0", None, prepared)
    np.testing.assert_array_equal(_floats(out, 0), np.float32(ALPHA) * x + y)
    assert len(calls) == 1
