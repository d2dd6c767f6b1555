"""Reloads reuse the image relocated for the same file, base and imports
(a shared object's or an object's load plan keeps it), and never when the
imports are bound elsewhere: each load behaves as a load from scratch."""
from __future__ import annotations

import ctypes

import pytest

import elfkit
from tests.plugins import IMPORTS_HOST_FUNCTIONS

from .objects import build_object

ARCH = "x86_64"
pytestmark = pytest.mark.skipif(
    elfkit.arch.host() is None or elfkit.arch.host().name != ARCH,
    reason="native x86_64 loads")

_ADD = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
_LOG = ctypes.CFUNCTYPE(None, ctypes.c_int32)
_SCALE = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double, ctypes.c_float)


class _Host:
    """Native host functions at fixed addresses (``name -> int`` imports)."""

    def __init__(self, k: int):
        self.log: list[int] = []
        self.fns = [_ADD(lambda a, b: a * k + b), _LOG(self.log.append),
                    _SCALE(lambda x, s: x * s)]

    def imports(self) -> dict[str, int]:
        return {name: ctypes.cast(f, ctypes.c_void_p).value or 0
                for name, f in zip(("host_add", "host_log", "host_scale"), self.fns)}


def _python(k: int, log: list[int]) -> dict[str, tuple[object, str]]:
    return {"host_add": (lambda a, b: a * k + b, IMPORTS_HOST_FUNCTIONS["host_add"]),
            "host_log": (log.append, IMPORTS_HOST_FUNCTIONS["host_log"]),
            "host_scale": (lambda x, s: x * s, IMPORTS_HOST_FUNCTIONS["host_scale"])}


def _check(m: elfkit.Module, k: int) -> None:
    assert m.function("call_host_add", "i32(i32,i32)")(3, 4) == 3 * k + 4
    assert m.function("call_host_add_ptr", "i32(i32,i32)")(5, 6) == 5 * k + 6


@pytest.fixture(params=["so", "o"])
def imports_file(request, plugins) -> bytes:
    if request.param == "so":
        return plugins.path("imports", ARCH).read_bytes()
    return build_object("imports.c", ARCH).read_bytes()


def test_reloads_with_the_same_imports_behave_as_the_first(imports_file):
    host = _Host(10)
    bases = []
    for _ in range(4):
        with elfkit.load(imports_file, imports=host.imports()) as m:
            _check(m, 10)
            bases.append(m.base)
    assert host.log == [100, 200] * 4               # init and fini ran at every load
    assert len(set(bases)) <= 2                     # the closed range was taken back


def test_a_reload_with_other_imports_is_relocated_for_them(imports_file):
    hosts = [_Host(k) for k in (10, 100, 10, 1000)]
    for h, k in zip(hosts, (10, 100, 10, 1000)):
        with elfkit.load(imports_file, imports=h.imports()) as m:
            _check(m, k)
        assert h.log == [100, 200]


def test_python_imports_rebound_at_each_load(imports_file):
    # a fresh callback each load (its address may repeat once the old one is gone)
    for k in (7, 70, 700, 7):
        log: list[int] = []
        with elfkit.load(imports_file, imports=_python(k, log)) as m:
            _check(m, k)
        assert log == [100, 200]


def test_a_reload_after_the_image_was_written_starts_from_the_file(plugins):
    # kernels.so: a 1 MiB .bss; written by one load, zero again at the next
    path = plugins.path("kernels", ARCH)
    for _ in range(3):
        with elfkit.load(path) as m:
            assert m.call("bss_sum", restype="u64") == 0
            m.call("bss_fill", 3)
            assert m.call("bss_sum", restype="u64") != 0
    obj = build_object("kernels.c", ARCH)
    for _ in range(3):
        with elfkit.load(obj) as m:
            assert m.call("bss_sum", restype="u64") == 0
            m.call("bss_fill", 5)


@pytest.mark.parametrize("name", ["relocs", "relocs_gnu", "relocs_relr"])
def test_ifunc_resolvers_run_at_every_reload(plugins, name):
    # the kept image holds the IFUNC relocations unapplied: each load runs
    # the resolver once more, on a fresh .bss, and binds what it returns
    path = plugins.path(name, ARCH)
    for _ in range(4):
        with elfkit.load(path) as m:
            assert m.call("ifunc_resolved", restype="u32") == 1
            assert m.call("call_ifunc", 5, restype="i32") == 16
