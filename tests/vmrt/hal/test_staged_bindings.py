"""The bindings of an emulated dispatch (vmrt/hal/local/bindings.py): read-only
bindings (memory the caller does not let the dispatch write) are mapped
read-only in the guest and never copied back; a store into one is reported
against its binding.  Writable bindings come back bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt.errors import DispatchError
from vmrt.hal.buffer import HostBytes, aligned_memory
from vmrt.hal.local.executable import Executable

N = 64


def _index(n: int) -> list[int]:
    return [n & 0xFFFFFFFF, n >> 32]


@pytest.fixture
def saxpy(iree, emulation):
    """aarch64 saxpy (out = alpha * x + y), emulated on this host."""
    with Executable.load(iree.compile("codegen", "aarch64").library) as exe:
        assert exe.backend == "emulated"
        yield exe


def _operands():
    rng = np.random.default_rng(7)
    return (rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(N).astype(np.float32))


def _expected(alpha, x, y):
    """Every element rounded once (fused multiply-add, as aarch64 code does)
    or twice; computed independently with numpy."""
    a = np.float32(alpha)
    return a * x + y, (np.float64(a) * x.astype(np.float64) + y).astype(np.float32)


def test_read_only_inputs_give_the_same_result(saxpy):
    x, y = _operands()
    x.flags.writeable = False
    y.flags.writeable = False
    out = np.zeros(N, np.float32)
    saxpy.dispatch("saxpy", (2, 1, 1), [x, y, out], [1.5, *_index(N)])
    unfused, fused = _expected(1.5, x, y)
    assert ((out == unfused) | (out == fused)).all()
    # the same dispatch with writable inputs writes the same bits
    again = np.zeros(N, np.float32)
    saxpy.dispatch("saxpy", (2, 1, 1), [x.copy(), y.copy(), again], [1.5, *_index(N)])
    assert out.tobytes() == again.tobytes()


def test_a_store_into_a_read_only_binding_is_reported(saxpy):
    x, y = _operands()
    out = np.full(N, 3, np.float32)
    out.flags.writeable = False
    with pytest.raises(DispatchError) as e:
        saxpy.dispatch("saxpy", (2, 1, 1), [x, y, out], [1.5, *_index(N)])
    assert e.value.code == vmrt.StatusCode.PERMISSION_DENIED
    msg = str(e.value)
    assert "binding 2 (256 bytes) is read-only" in msg and "wrote to it at byte offset 0" in msg
    assert "'saxpy'" in msg and "workgroup (0, 0, 0)" in msg
    assert (out == 3).all()
    # the executable goes on working: the span was released, the next dispatch is fine
    out2 = np.zeros(N, np.float32)
    saxpy.dispatch("saxpy", (2, 1, 1), [x, y, out2], [1.5, *_index(N)])
    unfused, fused = _expected(1.5, x, y)
    assert ((out2 == unfused) | (out2 == fused)).all()


def test_read_only_host_bytes_are_read_only_bindings(saxpy):
    """A command buffer's bindings (HostBytes) over a read-only memoryview
    are read-only bindings too."""
    x, y = _operands()
    mem, addr = aligned_memory(4 * N, "test")
    mem[:] = np.full(N, 5, np.float32).tobytes()
    ro = HostBytes(mem.toreadonly(), addr)
    with pytest.raises(DispatchError) as e:
        saxpy.dispatch("saxpy", (2, 1, 1), [x, y, ro], [1.5, *_index(N)])
    assert e.value.code == vmrt.StatusCode.PERMISSION_DENIED
    assert "binding 2" in str(e.value)
    assert bytes(mem) == np.full(N, 5, np.float32).tobytes()


def test_a_writable_alias_of_a_read_only_view_is_written(saxpy):
    """Bindings that share memory are one span: when any of them is writable
    the span is, and what the code wrote through it lands in the host
    (x is a read-only view of the same buffer out is: an in-place op)."""
    x0, y = _operands()
    buf = x0.copy()
    x = buf.view()
    x.flags.writeable = False
    saxpy.dispatch("saxpy", (2, 1, 1), [x, y, buf], [1.5, *_index(N)])
    unfused, fused = _expected(1.5, x0, y)
    assert ((buf == unfused) | (buf == fused)).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_threaded_dispatch_treats_read_only_bindings_alike(saxpy, threads):
    """local-task under emulation (one machine per worker, bindings shared
    through host blocks) maps read-only bindings read-only too: the same
    result with read-only inputs, the same error for a read-only output."""
    n = 32 * 8
    rng = np.random.default_rng(3)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x.flags.writeable = False
    y.flags.writeable = False
    out = np.zeros(n, np.float32)
    saxpy.dispatch("saxpy", 8, [x, y, out], [1.5, *_index(n)], threads=threads)
    assert (saxpy.workers is not None) == (threads > 1)    # worker machines ran it
    ref = np.zeros(n, np.float32)
    saxpy.dispatch("saxpy", 8, [x.copy(), y.copy(), ref], [1.5, *_index(n)])
    assert out.tobytes() == ref.tobytes()
    ro = np.full(n, 3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(DispatchError) as e:
        saxpy.dispatch("saxpy", 8, [x, y, ro], [1.5, *_index(n)], threads=threads)
    assert e.value.code == vmrt.StatusCode.PERMISSION_DENIED
    assert f"binding 2 ({4 * n} bytes) is read-only" in str(e.value)
    assert (ro == 3).all()
