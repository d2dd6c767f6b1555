"""Module constants under ``--module_mode=mmap``: a dispatch that reads an
imported constant gives IREE's results natively and emulated, the constant
reaches the dispatch as a read-only binding, and an emulated store into it
is refused (PERMISSION_DENIED) instead of being read back."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import vmrt
from tests.vmrt.hal.hal_testutil import iree_run, run_args, vmrt_run
from vmrt.errors import DispatchError
from vmrt.hal.buffer import HostBytes
from vmrt.hal.dispatch_observer import observe_dispatches
from vmrt.hal.local.executable import Executable
from vmrt.modules.hal.module import HalDeviceModule
from vmrt.vm.buffer import Buffer

PROGRAM = "const_read.mlir"
INPUT = "256xf32=" + " ".join(str((i % 13) - 6.5) for i in range(256))


@pytest.mark.parametrize("mode", ["mmap", "preload"])
@pytest.mark.parametrize("arch", ["x86_64", "aarch64", "riscv64"])
def test_a_dispatch_reading_a_module_constant_matches_iree(hal_compile, iree_run_module,
                                                           emulation, arch, mode):
    """IREE's runtime runs the x86_64 build (this host's); vmrt runs each
    build, aarch64 and riscv64 emulated, and prints the same (an f32 add
    rounds the same on every CPU)."""
    ref = iree_run(iree_run_module, [*run_args(hal_compile(PROGRAM, "x86_64"), "add_const",
                                               [INPUT]), f"--module_mode={mode}"])
    assert ref.rc == 0, ref.stderr
    ours = vmrt_run([*run_args(hal_compile(PROGRAM, arch), "add_const", [INPUT]),
                     f"--module_mode={mode}"])
    assert (ours.rc, ours.stdout) == (ref.rc, ref.stdout), ours.stderr


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_constant_is_a_read_only_binding_under_mmap(hal_compile, emulation, arch):
    """An observer sees the imported constant as a read-only binding with
    --module_mode=mmap (every other binding, and every binding with
    preload, writable); the run's result is the same either way."""
    vmfb = hal_compile(PROGRAM, arch)
    seen: dict[str, list[bool]] = {}
    outs = {}
    for mode in ("mmap", "preload"):
        flags = seen[mode] = []

        def observe(obs, flags=flags):
            flags.extend(bool(obs.binding(i).flags.writeable) for i in range(len(obs.ranges)))
            obs.run()
        with observe_dispatches(observe):
            run = vmrt_run([*run_args(vmfb, "add_const", [INPUT]), f"--module_mode={mode}"])
        assert run.rc == 0, run.stderr
        outs[mode] = run.stdout
    assert outs["mmap"] == outs["preload"]
    assert len(seen["mmap"]) == len(seen["preload"]) == 3
    assert seen["preload"] == [True, True, True]
    assert seen["mmap"].count(False) == 1      # the constant; input and result stay writable


N = 64
X = np.arange(N, dtype=np.float32)
Y = np.ones(N, np.float32)
SAXPY = (1.5 * X + Y).tolist()       # exact in f32: fused or not, every CPU gives these
CONSTANT = np.full(N, 5, np.float32).tobytes()


@contextlib.contextmanager
def imported_constant(mode: str) -> Iterator[tuple[Any, Buffer]]:
    """(the hal.buffer hal.allocator.import makes of a module constant in
    ``mode``, the module's read-only vm.buffer it came from)."""
    rodata = Buffer(CONSTANT)
    hal = HalDeviceModule(module_mode=mode)
    state = hal.alloc_state(None)
    try:
        yield hal.allocator_import(state, state.devices[0].allocator, 1, -1, 48, 3075, rodata,
                                   0, len(CONSTANT)), rodata
    finally:
        hal.free_state(state)


def _saxpy(iree, arch: str) -> Executable:
    return Executable.load(iree.compile("codegen", arch).library)


def test_an_emulated_store_into_an_mmap_imported_constant_is_refused(iree, emulation):
    """A constant imported under mmap, bound as a dispatch's output the way a
    command buffer binds it (HostBytes of the buffer), is refused, and its
    bytes stay as loaded; with preload the same dispatch writes it."""
    with _saxpy(iree, "aarch64") as exe:
        assert exe.backend == "emulated"
        for mode in ("mmap", "preload"):
            with imported_constant(mode) as (buf, rodata):
                out = HostBytes(buf.bytes, buf.address, buf.bytes)
                assert out.writeable == (mode == "preload")
                if mode == "mmap":
                    with pytest.raises(DispatchError) as e:
                        exe.dispatch("saxpy", (2, 1, 1), [X, Y, out], [1.5, N, 0])
                    assert e.value.code == vmrt.StatusCode.PERMISSION_DENIED
                    assert "binding 2 (256 bytes) is read-only" in str(e.value)
                    assert bytes(buf.bytes) == CONSTANT
                else:
                    exe.dispatch("saxpy", (2, 1, 1), [X, Y, out], [1.5, N, 0])
                    assert np.frombuffer(buf.bytes, np.float32).tolist() == SAXPY
                assert bytes(rodata.data) == CONSTANT


def test_a_native_store_into_an_mmap_imported_constant_reaches_only_the_private_copy(iree):
    """Natively nothing can refuse the store (the dispatch writes through a
    pointer); the imported constant is the context's own copy in writable
    host memory, so the process does not fault and the module's bytes stay
    as loaded (IREE's mapping of the file would fault here)."""
    with _saxpy(iree, "x86_64") as exe, imported_constant("mmap") as (buf, rodata):
        if exe.backend != "native":
            pytest.skip("this host does not run x86_64 code natively")
        exe.dispatch("saxpy", (2, 1, 1), [X, Y, HostBytes(buf.bytes, buf.address)], [1.5, N, 0])
        assert np.frombuffer(buf.bytes, np.float32).tolist() == SAXPY
        assert bytes(rodata.data) == CONSTANT
