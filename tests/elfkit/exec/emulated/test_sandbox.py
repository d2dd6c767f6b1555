"""Under emulation a hostile plugin cannot reach host memory or run forever:
wild writes, jumps to host addresses, endless loops, runaway recursion and
garbage import arguments end in a report (or the provider's own error), the
host is unaffected, and the module can be called again."""
from __future__ import annotations

import numpy as np
import pytest

import elfkit
from tests.plugins import recurse_ref

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]


@pytest.fixture(params=ARCHES)
def arch(request):
    return request.param


def _kernels(plugins, arch):
    return elfkit.load(plugins.path("kernels", arch), backend="emulated")


def test_wild_write_to_host_memory_faults(plugins, arch):
    secret = np.full(16, 7, dtype=np.uint32)            # host memory the plugin was not given
    host_addr = secret.ctypes.data & ((1 << (32 if arch in ("arm", "i386", "riscv32") else 64)) - 1)
    with _kernels(plugins, arch) as m:
        with pytest.raises(elfkit.EmulationFault) as ei:
            m.function("write_u32", "void(ptr,u32)")(host_addr, 0xDEAD)
        assert "write_u32" in str(ei.value)
        assert (secret == 7).all()
        assert m.function("add_i32", "i32(i32,i32)")(40, 2) == 42       # still usable


def test_jump_to_host_address_faults(plugins, arch):
    with elfkit.load(plugins.path("relocs", arch), backend="emulated") as m:
        w = 8 if m.arch.bits == 64 else 4
        host_fn = id(test_jump_to_host_address_faults) & ((1 << (8 * w)) - 1)   # a host address
        m.write(m.exports["g_fn_ptr"], host_fn.to_bytes(w, "little"))
        with pytest.raises(elfkit.EmulationFault):
            m.function("call_fn_ptr", "i32(i32)")(3)
        assert m.function("twice_plus_one", "i32(i32)")(20) == 41


def test_endless_loop_is_stopped_and_module_reusable(plugins, arch):
    with _kernels(plugins, arch) as m:
        with pytest.raises(elfkit.CallTimeout):
            m.call("spin_forever", timeout=0.2, restype="void")
        assert m.function("add_i64", "i64(i64,i64)")(1, 2) == 3


def test_runaway_recursion_faults(plugins, arch):
    with _kernels(plugins, arch) as m:
        with pytest.raises((elfkit.EmulationFault, elfkit.CallTimeout)) as ei:
            m.function("recurse", "u64(u64)")(10**9)
        assert str(ei.value)
        assert m.function("recurse", "u64(u64)")(100) == recurse_ref(100)


def test_garbage_import_arguments_reach_the_provider_only(plugins, arch):
    table = [1, 2, 3]

    def host_add(a, b):
        return table[a] + b          # IndexError for garbage indices: the provider's own error

    imps = {"host_add": (host_add, "i32(i32,i32)"), "host_log": (lambda c: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}
    with elfkit.load(plugins.path("imports", arch), imports=imps, backend="emulated") as m:
        with pytest.raises(IndexError):
            m.function("call_host_add", "i32(i32,i32)")(123456, 1)
        assert m.function("call_host_add", "i32(i32,i32)")(2, 10) == 13


def test_other_modules_unaffected_by_a_fault(plugins, arch):
    with _kernels(plugins, arch) as bad, _kernels(plugins, arch) as good:
        with pytest.raises(elfkit.EmulationFault):
            bad.call("crash_store", restype="void")
        a = np.arange(100, dtype=np.int32)
        assert good.function("sum_i32", "i64(ptr,i64)")(a, len(a)) == int(a.sum())
