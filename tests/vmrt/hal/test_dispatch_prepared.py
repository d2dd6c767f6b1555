"""Executable.dispatch of a native export over HostBytes bindings on one
thread runs the export's prepared form (what command buffers run), with the
same results as the general path over numpy arrays."""
from __future__ import annotations

import numpy as np

from vmrt.hal.buffer import HostBytes, aligned_memory
from vmrt.hal.dispatch_observer import workgroup_probe
from vmrt.hal.local.executable import Executable

N = 64


def _host_bytes(values: np.ndarray) -> tuple[HostBytes, np.ndarray]:
    view, addr = aligned_memory(values.nbytes)
    array = np.frombuffer(view, values.dtype)
    array[:] = values
    return HostBytes(view, addr), array


def test_host_bytes_take_the_prepared_form(iree, monkeypatch):
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    constants = [0x3FC00000, N, 0]        # alpha 1.5 as f32 bits, the element count
    with Executable.load(iree.compile("codegen", "x86_64").library) as exe:
        assert exe.backend == "native"
        general = np.zeros(N, np.float32)
        exe.dispatch("saxpy", (2, 1, 1), [x, y, general], constants)
        prepared_runs = []
        real = type(exe).prepare

        def spy(self, *args, **kwargs):
            got = real(self, *args, **kwargs)
            prepared_runs.append(got)
            return got
        monkeypatch.setattr(type(exe), "prepare", spy)
        bx, _ = _host_bytes(x)
        by, _ = _host_bytes(y)
        bout, out = _host_bytes(np.zeros(N, np.float32))
        exe.dispatch("saxpy", (2, 1, 1), [bx, by, bout], constants)
        assert len(prepared_runs) == 1 and prepared_runs[0] is not None
        assert out.tobytes() == general.tobytes()
        a = np.float32(1.5)
        assert ((out == a * x + y) | (out == (np.float64(a) * x + y).astype(np.float32))).all()
        # a workgroup probe is honoured by the general path only
        bout2, out2 = _host_bytes(np.zeros(N, np.float32))
        with workgroup_probe([1]):
            exe.dispatch("saxpy", (2, 1, 1), [bx, by, bout2], constants)
        assert len(prepared_runs) == 1
        assert (out2[:N // 2] == 0).all() and out2.tobytes()[N * 2:] == out.tobytes()[N * 2:]
