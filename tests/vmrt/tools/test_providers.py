"""vmrt.tools.providers: a run's module providers are imported when a program
needs them, and the table answers as the eager one (every provider loaded,
later sources replacing earlier ones) does."""
from __future__ import annotations

import sys

import pytest

from vmrt.errors import LoadError
from vmrt.hal.objects import EXECUTABLE_TYPE
from vmrt.tools.module_specs import all_providers, builtin_providers
from vmrt.tools.providers import BUILTIN, ProviderInstance, ProviderTable

#: a provider module of a test distribution: ``name`` is the module it provides
_PROVIDERS = """\
from vmrt.vm.types import RefType

class P:
    def __init__(self, name, types=()):
        self.name = name
        self.types = [RefType(t) for t in types]

    def register_types(self, instance):
        for t in self.types:
            instance.register_type(t)

    def create(self, instance, options=None):
        raise NotImplementedError

HAL = P("hal")
ALIAS = P("other_name")
WIDGET = P("widget", ["widget.thing"])
"""


@pytest.fixture
def dist(tmp_path, monkeypatch):
    """Installs a distribution whose ``vmrt.modules`` entry points are the given lines."""
    monkeypatch.setenv("VMRT_NO_CACHE", "1")
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "vmrt_test_providers.py").write_text(_PROVIDERS)

    def install(lines: str) -> None:
        info = tmp_path / "vmrt_test_dist-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vmrt_test_dist\n"
                                       "Version: 1.0\n")
        (info / "entry_points.txt").write_text(f"[vmrt.modules]\n{lines}")
    yield install
    sys.modules.pop("vmrt_test_providers", None)


def test_builtin_names_are_their_providers_names():
    assert list(BUILTIN) == [p.name for p in builtin_providers()]


def test_the_table_holds_what_the_eager_one_does(dist):
    dist("hal = vmrt_test_providers:HAL\nwidget = vmrt_test_providers:WIDGET\n")
    eager = all_providers()
    table = ProviderTable()
    assert table.names() == list(eager)
    for name in eager:
        assert table.get(name) is eager[name]
    assert type(table.get("hal")).__module__ == "vmrt_test_providers"   # later wins
    assert table.get("no_such_module") is None


def test_a_broken_entry_point_fails_only_when_its_module_is_needed(dist):
    dist("broken = vmrt_test_no_such_module:PROVIDER\n")
    with pytest.raises(LoadError) as eager:
        all_providers()
    table = ProviderTable()
    assert table.get("check") is builtin_providers()[4]
    with pytest.raises(LoadError) as lazy:
        table.get("broken")
    assert str(lazy.value) == str(eager.value)
    assert "loading module provider entry point 'broken' (vmrt_test_no_such_module:PROVIDER)" \
        in str(lazy.value)
    # a name nobody was known to provide: every provider is loaded, as eagerly
    with pytest.raises(LoadError):
        ProviderTable().get("no_such_module")


def test_an_entry_point_named_otherwise_than_its_provider(dist):
    dist("alias = vmrt_test_providers:ALIAS\n")
    eager = all_providers()
    assert "other_name" in eager and "alias" not in eager
    assert ProviderTable().get("alias") is None
    table = ProviderTable()
    assert table.get("other_name") is eager["other_name"]
    assert table.names() == list(eager)


def test_types_are_registered_when_a_lookup_misses(dist):
    dist("widget = vmrt_test_providers:WIDGET\n")
    table = ProviderTable()
    inst = ProviderInstance(table)
    table.due(inst, set())
    assert inst.lookup_type("!hal.executable") is EXECUTABLE_TYPE     # the hal provider's
    assert [t.name for t in inst.types if t.name.startswith("widget")] == []
    assert inst.lookup_type("!widget.thing") is table.get("widget").types[0]
    assert inst.lookup_type("!nobody.thing") is None       # every due provider registered
    # a module given explicitly: its provider's types are not due
    table = ProviderTable()
    inst = ProviderInstance(table)
    table.due(inst, {"widget"})
    assert inst.lookup_type("widget.thing") is None


def test_a_run_needs_only_the_providers_of_its_modules(compile_mlir, tmp_path):
    """A broken entry point stops only the programs that depend on its module
    (they fail with the message an eager load gave, where it was needed)."""
    import os
    import subprocess

    from tests.vmrt.iree_tools import REPO
    info = tmp_path / "vmrt_test_dist-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vmrt_test_dist\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[vmrt.modules]\nwidget = vmrt_test_nowhere:P\n"
                                           "hal = vmrt_test_nowhere:P\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)]),
           "VMRT_NO_CACHE": "1"}

    def run(vmfb, *args):
        return subprocess.run([sys.executable, "-m", "vmrt", "run", f"--module={vmfb}", *args],
                              capture_output=True, text=True, timeout=120, env=env)
    ok = run(compile_mlir("control.mlir"), "--function=collatz", "--input=27")
    assert ok.returncode == 0 and "result[0]: i32=111" in ok.stdout, ok.stderr
    bad = run(compile_mlir("hal_views.mlir"))
    assert bad.returncode != 0
    assert bad.stderr.startswith("UNAVAILABLE; loading module provider entry point 'hal' "
                                 "(vmrt_test_nowhere:P): ModuleNotFoundError"), bad.stderr
