"""The plugin manager: registration order, newest-first resolution, partial
fallthrough, optional imports, hard failures and the missing-imports error."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from vmrt import ImportResolutionError, PluginError, StaticPlugin
from vmrt.hal.local.executable import Executable
from vmrt.hal.local.plugins.manager import PluginManager


def index(n):
    return [n & 0xFFFFFFFF, n >> 32]


def run_mul(exe, n=100, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 8, n).astype(np.float32)
    b = rng.integers(-8, 8, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    exe.dispatch("tiled_mul", (n + 63) // 64, [a, b, out], index(n))
    return a, b, out


class Recorder(StaticPlugin):
    def __init__(self, name, provides=()):
        self.name = name
        self.provides = provides
        self.asked = []

    def resolve(self, names):
        self.asked.append(list(names))
        return {n: (lambda call: 0) for n in names if n in self.provides}


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_newest_registration_wins(iree, variants, arch, request):
    if arch != "x86_64":
        request.getfixturevalue("emulation")
    lib = iree.compile("simple_mul", arch).library
    x10 = str(variants.path(arch, factor=10.0, name="x10"))
    x100 = str(variants.path(arch, factor=100.0, name="x100"))
    for order, factor, winner in (((x10, x100), 100, "x100"), ((x100, x10), 10, "x10")):
        with PluginManager() as mgr:
            for p in order:
                mgr.register(p)
            exe = Executable.load(lib, plugins=mgr)
            assert exe.imports[1].provider == winner
            a, b, out = run_mul(exe)
            np.testing.assert_array_equal(out, a * b * np.float32(factor))
            exe.close()


def test_partial_fallthrough(variants, manager):
    """The newest plugin knows one required import (NOT_FOUND for the other,
    its slot stays filled); the older one provides the rest."""
    manager.register(str(variants.path("x86_64", provides=1, name="muls")))
    manager.register(str(variants.path("x86_64", provides=2, name="echoes")))
    r = manager.resolve(["simple_mul_workgroup", "echo_params"])
    assert dict(zip(r.names, r.providers)) == {"echo_params": "echoes",
                                               "simple_mul_workgroup": "muls"}
    assert all(r.functions)
    assert [a.split(":")[0] for a in r.asked][0].startswith("plugin 'echoes'")
    assert "NOT_FOUND (provided echo_params)" in r.asked[0]
    assert "OK (provided simple_mul_workgroup)" in r.asked[1]


def test_python_plugin_overrides_one_import(iree, standalone_sos, manager):
    """A later plugin overrides one import; the earlier one still provides
    the rest (here: the optional probe comes from Python, the multiply from
    the standalone plugin)."""
    manager.register(standalone_sos)
    py = manager.register(Recorder("python", provides={"vmrt_optional_probe"}))
    exe = Executable.load(iree.compile("simple_mul", "x86_64").library, plugins=manager)
    assert {i.name: i.provider for i in exe.imports} == {
        "?vmrt_optional_probe": "python", "simple_mul_workgroup": "sample_standalone"}
    assert py.obj.asked == [["vmrt_optional_probe", "simple_mul_workgroup"]]
    a, b, out = run_mul(exe)
    np.testing.assert_array_equal(out, a * b)
    exe.close()


def test_missing_optional_keeps_scanning(variants, standalone_sos, manager):
    # oldest provides only the optional probe; the newest resolves the
    # required import but reports MISSING_OPTIONAL, so the scan goes on
    manager.register(str(variants.path("x86_64", provides=4, name="probe")))
    manager.register(standalone_sos)
    r = manager.resolve(["simple_mul_workgroup", "?vmrt_optional_probe"])
    assert dict(zip(r.names, r.providers)) == {"?vmrt_optional_probe": "probe",
                                               "simple_mul_workgroup": "sample_standalone"}


def test_complete_resolution_stops(standalone_sos, manager):
    old = manager.register(Recorder("old", provides={"simple_mul_workgroup"}))
    manager.register(standalone_sos)
    manager.resolve(["simple_mul_workgroup"])
    assert old.obj.asked == []           # never asked: the newer plugin had everything


def test_optional_left_null(standalone_sos, manager):
    manager.register(standalone_sos)
    r = manager.resolve(["?a", "?b", "simple_mul_workgroup"])
    assert r.functions[0] == r.functions[1] == 0 and r.functions[2] != 0
    assert r.providers == [None, None, "sample_standalone"]


def test_hard_failure_no_fallback(variants, standalone_sos, manager):
    manager.register(standalone_sos)
    manager.register(str(variants.path("x86_64", resolve_status=13, name="broken")))
    with pytest.raises(PluginError) as e:
        manager.resolve(["simple_mul_workgroup"])
    assert e.value.code == vmrt.StatusCode.INTERNAL
    assert "broken" in str(e.value) and "no fallback" in str(e.value)
    assert not isinstance(e.value, ImportResolutionError)


def test_missing_required_lists_everything(iree, standalone_sos, manager):
    manager.register(standalone_sos)
    manager.register(Recorder("python", provides={"b_known"}))
    with pytest.raises(ImportResolutionError) as e:
        manager.resolve(["z_missing", "a_missing", "?opt", "b_known", "simple_mul_workgroup"])
    err = e.value
    assert err.missing == ["a_missing", "z_missing"]        # all of them, sorted
    assert err.code == vmrt.StatusCode.NOT_FOUND
    msg = str(err)
    assert "missing 2 required import(s): a_missing, z_missing" in msg
    # which plugins were asked, newest first, and what each said
    assert msg.index("plugin 'python'") < msg.index("plugin 'sample_standalone'")
    assert len(err.asked) == 2 and all("NOT_FOUND" in a for a in err.asked)
    assert "?opt" not in err.missing


def test_missing_with_no_plugins(manager):
    with pytest.raises(ImportResolutionError) as e:
        manager.resolve(["f", "g"])
    assert "no plugins are registered" in str(e.value) and e.value.missing == ["f", "g"]
    # all-optional with no plugins is fine (IREE would fail with
    # "missing 0 required executable imports")
    r = manager.resolve(["?f"])
    assert r.functions == [0]


def test_skipped_plugins_are_reported(iree, system_plugin, emulation, manager):
    manager.register(str(system_plugin))
    with pytest.raises(ImportResolutionError) as e:
        Executable.load(iree.compile("simple_mul", "aarch64").library, plugins=manager)
    assert "sample_system" in str(e.value) and "skipped" in str(e.value)


def test_one_sos_serves_every_machine(iree, standalone_sos, emulation, manager):
    entry = manager.register(standalone_sos)
    assert [p.machine.arch.name for p in entry.instances] == ["x86_64"]   # eager, host slice
    for arch in ("x86_64", "aarch64", "riscv64"):
        exe = Executable.load(iree.compile("simple_mul", arch).library, plugins=manager)
        a, b, out = run_mul(exe, 65)
        np.testing.assert_array_equal(out, a * b)
        exe.close()
    assert [p.machine.arch.name for p in entry.instances] == ["x86_64", "aarch64", "riscv64"]
    # an arch the .sos lacks: skipped with a reason, then the import is missing
    with pytest.raises(ImportResolutionError) as e:
        Executable.load(iree.compile("simple_mul", "riscv32").library, plugins=manager)
    assert "no riscv32 code" in str(e.value)


def test_register_plugins_helper(standalone_sos, variants):
    from vmrt.hal.local.plugins.manager import register_plugins
    mgr = register_plugins([str(standalone_sos), str(variants.path("x86_64", name="v")) + "?a=b"])
    try:
        assert [p.label.split("'")[1] for p in mgr.plugins] == ["sample_standalone", "v"]
    finally:
        mgr.close()
    with pytest.raises(vmrt.VmError) as e:
        register_plugins(["/no/such/plugin.sos"])
    assert "registering executable plugin '/no/such/plugin.sos'" in str(e.value)


def test_preloaded_emulated_plugin_shares_its_machine(iree, plugins, emulation):
    """Registering an already loaded (emulated) plugin: executables of that
    architecture are placed in the plugin's machine."""
    from vmrt.hal.local.plugins.plugin import ExecutablePlugin
    plugin = ExecutablePlugin.load(plugins.path("standalone", "riscv64"))
    with PluginManager() as mgr:
        mgr.register(plugin)
        exe = Executable.load(iree.compile("simple_mul", "riscv64").library, plugins=mgr)
        assert exe.machine is plugin.machine
        a, b, out = run_mul(exe, 64)
        np.testing.assert_array_equal(out, a * b)
        exe.close()
    assert plugin.closed
