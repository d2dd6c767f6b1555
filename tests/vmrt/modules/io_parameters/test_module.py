"""The ``io_parameters`` exports called directly: the call tables
(key table, key data, spans) are checked, fences are honoured (a pending
wait fence is an error on the synchronous device, the signal fence is
signalled on success and failed with the error's status otherwise)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import vmrt
from vmrt.hal.buffer import new_buffer
from vmrt.hal.local.device import Device
from vmrt.hal.objects import Fence
from vmrt.modules.io_parameters import ParameterIndex, ParametersModule

W = np.arange(6, dtype=np.float32)


def _tables(*items: tuple[str, int, int, int]):
    names = b"".join(k.encode() for k, *_ in items)
    table, at = b"", 0
    for key, *_ in items:
        table += struct.pack("<II", at, len(key))
        at += len(key)
    spans = b"".join(struct.pack("<QQQ", p, b, n) for _, p, b, n in items)
    return vmrt.Buffer(table), vmrt.Buffer(names), vmrt.Buffer(spans)


@pytest.fixture
def mod():
    idx = ParameterIndex("m", {"w": W})
    idx.add_splat("s", 16, b"\x07\x00")
    return ParametersModule(None, [idx])


@pytest.fixture
def device():
    d = Device("local-sync")
    yield d
    d.close()


def test_load_reads_spans_and_signals(mod, device):
    signal = Fence()
    out = mod.load(None, device, -1, Fence(0), signal, vmrt.Buffer(b"m"), -1, 0, 0,
                   *_tables(("w", 8, 0, 12), ("s", 2, 0, 6)))
    assert signal.status == 0
    assert np.frombuffer(out.items[0].bytes, np.float32).tolist() == [2, 3, 4]
    assert bytes(out.items[1].bytes) == b"\x07\x00" * 3


def test_failures_fail_the_signal_fence(mod, device):
    signal = Fence()
    with pytest.raises(vmrt.ParameterError, match="no parameter found in scope 'm' with key 'x'"):
        mod.load(None, device, -1, None, signal, vmrt.Buffer(b"m"), -1, 0, 0,
                 *_tables(("x", 0, 0, 4)))
    assert signal.status == vmrt.StatusCode.NOT_FOUND
    with pytest.raises(vmrt.HalError, match="nothing will signal"):
        mod.load(None, device, -1, Fence(), Fence(), vmrt.Buffer(b"m"), -1, 0, 0,
                 *_tables(("w", 0, 0, 4)))
    target, signal = new_buffer(8), Fence()
    with pytest.raises(vmrt.HalError, match=r"range \[4, 16\) is out of bounds"):
        mod.gather(None, device, -1, None, signal, vmrt.Buffer(b"m"), target,
                   *_tables(("w", 0, 4, 12)))
    assert signal.status == vmrt.StatusCode.OUT_OF_RANGE


def test_call_tables_are_checked(mod, device):
    table, names, spans = _tables(("w", 0, 0, 4), ("s", 0, 0, 4))
    args = (None, device, -1, None, None, vmrt.Buffer(b"m"), -1, 0, 0)
    with pytest.raises(vmrt.ParameterError, match="not a whole number of 24-byte spans"):
        mod.load(*args, table, names, vmrt.Buffer(bytes(spans.data)[:30]))
    with pytest.raises(vmrt.ParameterError, match="too small for 2 spans"):
        mod.load(*args, vmrt.Buffer(bytes(table.data)[:8]), names, spans)
    with pytest.raises(vmrt.ParameterError, match="outside the 1-byte key data"):
        mod.load(*args, table, vmrt.Buffer(b"w"), spans)
    with pytest.raises(vmrt.ParameterError, match="scope 'other'"):
        mod.load(None, device, -1, None, None, vmrt.Buffer(b"other"), -1, 0, 0, table, names,
                 spans)
    with pytest.raises(vmrt.HalError, match="device is null"):
        mod.load(None, None, -1, None, None, None, -1, 0, 0, table, names, spans)


def test_load_of_a_file_entry_shares_its_memory_read_only(tmp_path, device):
    """An aligned whole span of a parameter file becomes a read-only buffer
    over the file's own bytes (no copy, as IREE imports a mapped file); a
    span at an unaligned offset is copied into a new, writable buffer."""
    from tests.vmrt.modules.io_parameters.param_files import write_irpa
    w = np.arange(64, dtype=np.float32)
    path = write_irpa(tmp_path / "p.irpa", {"w": w})
    idx = ParameterIndex("m").load(path)        # mapped: page-aligned, entries 64-aligned
    entry = idx.lookup("w")
    mod = ParametersModule(None, [idx])
    out = mod.load(None, device, -1, None, None, vmrt.Buffer(b"m"), -1, 0, 0,
                   *_tables(("w", 0, 0, 256), ("w", 4, 0, 16)))
    whole, part = out.items
    assert whole.read_only and whole.address % 64 == 0
    assert whole.address == np.frombuffer(entry.data, np.uint8).ctypes.data
    assert np.frombuffer(whole.bytes, np.float32).tolist() == w.tolist()
    assert not part.read_only and part.address != whole.address + 4
    assert np.frombuffer(part.bytes, np.float32).tolist() == [1, 2, 3, 4]
