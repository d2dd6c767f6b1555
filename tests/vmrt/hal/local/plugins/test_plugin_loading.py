"""Loading executable plugins: embedded (native and emulated), system
library, static (Python); header checks; load() parameters and the host
allocator; resolve batches; unload."""
from __future__ import annotations

import struct

import pytest

import vmrt
from vmrt.errors import ImportResolutionError, PluginError
from vmrt.hal.local import library_abi as abi
from vmrt.hal.local.plugins.manager import PluginManager, PluginSpec
from vmrt.hal.local.plugins.plugin import ExecutablePlugin
from vmrt.hal.local.plugins.static import StaticPlugin

HOST = "x86_64"


def echo(plugin: ExecutablePlugin) -> str:
    """Call the variant plugin's echo_params import and return its text."""
    m = plugin.machine
    fn_ctx = plugin.resolve(["echo_params"])
    fn, ctx = fn_ctx["echo_params"]
    word = m.arch.bits // 8
    params = m.alloc(4 * word, 16)
    call = m.function(fn, __import__("elfkit").signature.parse("i32(ptr,ptr,ptr)"))
    assert call(params, ctx, 0) == 0
    text_ptr, length = struct.unpack(f"<2{'Q' if word == 8 else 'I'}", m.read(params, 2 * word))
    m.free(params)
    return m.read(text_ptr, length).decode()


# -- embedded ---------------------------------------------------------------

def test_standalone_header_native(plugins):
    with ExecutablePlugin.load(plugins.path("standalone", HOST)) as p:
        assert p.kind == "embedded"
        assert p.machine.backend == "native"
        assert p.name == "sample_standalone"
        assert "standalone plugin sample" in p.description
        assert p.version == 1
        assert p.features == abi.PLUGIN_FEATURE_STANDALONE
        assert p.sanitizer == 0
        assert "sample_standalone" in p.label and "embedded x86_64 native" in p.label


@pytest.mark.parametrize("arch", ["aarch64", "riscv64", "arm", "i386", "riscv32"])
def test_standalone_header_emulated(plugins, emulation, arch):
    with ExecutablePlugin.load(plugins.path("standalone", arch)) as p:
        assert p.machine.backend == "emulated"
        assert p.machine.arch.name == arch
        assert p.name == "sample_standalone"
        assert p.features == abi.PLUGIN_FEATURE_STANDALONE


@pytest.mark.parametrize("arch", ["x86_64", "aarch64", "riscv32"])
def test_resolve_sorted_batch_with_optional(plugins, arch, request):
    if arch != HOST:
        request.getfixturevalue("emulation")
    with ExecutablePlugin.load(plugins.path("standalone", arch)) as p:
        got = p.resolve(["?not_there", "simple_mul_workgroup", "zzz_required_unknown"])
        assert set(got) == {"simple_mul_workgroup"}
        fn, ctx = got["simple_mul_workgroup"]
        assert fn != 0 and ctx == 0
        # the function is inside the plugin's image
        assert p.module.base <= fn < p.module.base + p.module.size


def test_fatelf_slice_per_arch(standalone_sos_all, emulation):
    for arch in ("x86_64", "aarch64", "i386"):
        with ExecutablePlugin.load(standalone_sos_all, arch=arch) as p:
            assert p.machine.arch.name == arch
            assert p.name == "sample_standalone"


def test_params_and_allocator_native(variants):
    path = variants.path(HOST)
    with ExecutablePlugin.load(path, {"alpha": "1", "beta": "two words", "": "empty-key"}) as p:
        assert p.name == "variant"
        assert echo(p) == "alpha=1;beta=two words;=empty-key;"
        from vmrt.hal.local.guest import host_allocator
        alloc = host_allocator(p.machine)
        assert len(alloc.blocks) == 2          # state + text, grown by REALLOC
        calls = alloc.calls
    assert alloc.blocks == {}                  # unload freed both
    assert alloc.calls > calls


@pytest.mark.parametrize("arch", ["aarch64", "riscv32", "i386"])
def test_params_and_allocator_emulated(variants, emulation, arch):
    long_value = "v" * 300                     # forces several REALLOC steps
    with ExecutablePlugin.load(variants.path(arch), {"k": long_value, "x": "y"}) as p:
        assert p.machine.backend == "emulated"
        assert echo(p) == f"k={long_value};x=y;"
        from vmrt.hal.local.guest import host_allocator
        alloc = host_allocator(p.machine)
        # the plugin's memory is guest memory of its own machine
        for addr in alloc.blocks:
            assert p.machine.read(addr, 1) is not None
        held = dict(alloc.blocks)
        assert len(held) == 2
    assert all(a not in alloc.blocks for a in held)


def test_spec_parameters(variants, manager):
    path = variants.path(HOST)
    entry = manager.register(f"embedded:{path}?mode=fast&name=a%20b&flag")
    plugin = entry.instances[0]
    assert echo(plugin) == "mode=fast;name=a b;flag=;"


def test_spec_parsing():
    s = PluginSpec.parse("dir/p.sos?a=1&b=x%3Dy")
    assert (s.path, s.kind, s.params) == ("dir/p.sos", "embedded", (("a", "1"), ("b", "x=y")))
    assert PluginSpec.parse("embedded:p.so").kind == "embedded"
    assert PluginSpec.parse("system:/x/p.so").kind == "system"
    assert PluginSpec.parse("p.so").kind == "auto"
    assert PluginSpec.parse("p.so?x=1").params == (("x", "1"),)


# -- header checks ------------------------------------------------------------

def test_query_null(variants):
    with pytest.raises(PluginError) as e:
        ExecutablePlugin.load(variants.path(HOST, query_null=1))
    assert e.value.code == vmrt.StatusCode.FAILED_PRECONDITION
    assert "does not support this version of the runtime (00000001)" in str(e.value)
    assert isinstance(e.value, vmrt.VmError)


@pytest.mark.parametrize("value,needle", [
    (1, "ASAN"), (3, "TSAN"), (2, "MEMORY"), (4, "UNDEFINED"), (9, ": 9")])
def test_sanitizers_refused(variants, value, needle):
    with pytest.raises(PluginError) as e:
        ExecutablePlugin.load(variants.path(HOST, sanitizer=value, name=f"san{value}"))
    assert e.value.code == vmrt.StatusCode.UNAVAILABLE
    assert f"san{value}" in str(e.value) and needle in str(e.value)


def test_features_not_required(variants):
    # IREE accepts an embedded plugin without STANDALONE, and FULL_STATUS too
    for features in (0, abi.PLUGIN_FEATURE_FULL_STATUS):
        with ExecutablePlugin.load(variants.path(HOST, features=features)) as p:
            assert p.features == features


def test_load_failure(variants):
    with pytest.raises(PluginError) as e:
        ExecutablePlugin.load(variants.path(HOST, load_status=9, name="loadfail"))
    assert e.value.code == vmrt.StatusCode.FAILED_PRECONDITION
    assert "loadfail" in str(e.value) and "load() failed" in str(e.value)


def test_not_a_plugin(plugins):
    with pytest.raises(PluginError) as e:
        ExecutablePlugin.load(plugins.path("kernels", HOST))
    assert "iree_hal_executable_plugin_query" in str(e.value)
    assert e.value.code == vmrt.StatusCode.NOT_FOUND


def test_bad_file(tmp_path, manager):
    bad = tmp_path / "junk.sos"
    bad.write_bytes(b"not an elf at all" * 10)
    with pytest.raises(vmrt.VmError):
        manager.register(str(bad))
    with pytest.raises(vmrt.VmError) as e:
        manager.register(str(tmp_path / "missing.sos"))
    assert e.value.code == vmrt.StatusCode.NOT_FOUND


def test_embedded_plugin_cannot_serve_other_machine(plugins, emulation):
    # a native plugin cannot hand out functions to an emulated machine
    with ExecutablePlugin.load(plugins.path("standalone", HOST)) as p:
        from elfkit.exec import create_machine
        m = create_machine(__import__("elfkit").arch.get("aarch64"), "emulated")
        try:
            assert "another machine" in p.available_for(m)
        finally:
            m.close()


# -- system library -------------------------------------------------------------

def test_system_plugin(system_plugin):
    with ExecutablePlugin.system(system_plugin) as p:
        assert p.kind == "system"
        assert p.name == "sample_system"
        assert p.features == 0
        got = p.resolve(["simple_mul_workgroup", "?maybe"])
        fn, ctx = got["simple_mul_workgroup"]
        assert fn and ctx == p.self_ptr != 0     # its context is its load() state
        from vmrt.hal.local.guest import host_allocator
        assert len(host_allocator(p.machine).blocks) == 1


def test_system_plugin_missing(tmp_path):
    with pytest.raises(PluginError) as e:
        ExecutablePlugin.system(tmp_path / "nope.so")
    assert e.value.code == vmrt.StatusCode.NOT_FOUND
    assert "failed to load dynamic library" in str(e.value)


def test_system_auto_detection(system_plugin, plugins, manager):
    # a host ELF without a prefix goes to dlopen (as in IREE) ...
    assert manager.register(str(system_plugin)).kind == "system"
    # ... a bare-metal one for another CPU is loaded embedded
    entry = manager.register(str(plugins.path("standalone", "aarch64")))
    assert entry.arches == ["aarch64"]


# -- static ------------------------------------------------------------------------

class Recorder(StaticPlugin):
    name = "recorder"

    def __init__(self):
        self.loaded = None
        self.unloaded = False
        self.asked = []

    def load(self, params):
        self.loaded = dict(params)

    def resolve(self, names):
        self.asked.append(list(names))
        return {"simple_mul_workgroup": lambda call: 0, "other": (lambda call: 0, 1234)}

    def unload(self):
        self.unloaded = True


def test_static_plugin_lifecycle():
    r = Recorder()
    p = ExecutablePlugin.static(r, {"a": "b"})
    assert r.loaded == {"a": "b"} and p.name == "recorder" and p.kind == "static"
    import elfkit
    from elfkit.exec import create_machine
    m = create_machine(elfkit.arch.host(), "native")
    try:
        got = p.resolve(["?other", "simple_mul_workgroup", "x"], machine=m)
        assert r.asked == [["other", "simple_mul_workgroup", "x"]]   # '?' stripped
        assert got["?other"][1] == 1234 and got["simple_mul_workgroup"][1] == 0
        assert "x" not in got
    finally:
        p.close()
        m.close()
    assert r.unloaded


def test_static_plugin_rejects_non_plugin():
    with pytest.raises(PluginError):
        ExecutablePlugin.static(object())


def test_static_plugin_raising_resolve(manager):
    class Bad(StaticPlugin):
        def resolve(self, names):
            raise RuntimeError("boom")
    manager.register(Bad())
    with pytest.raises(PluginError) as e:
        manager.resolve(["a"])
    assert "boom" in str(e.value)


def test_mapping_as_plugin(manager):
    manager.register({"f": lambda call: 0})
    r = manager.resolve(["f", "?g"])
    assert dict(zip(r.names, r.providers)) == {"?g": None, "f": "static"}
    with pytest.raises(ImportResolutionError):
        manager.resolve(["h"])


def test_manager_close_unloads_newest_first():
    order = []

    class P(StaticPlugin):
        def __init__(self, n):
            self.name = n

        def unload(self):
            order.append(self.name)
    mgr = PluginManager()
    for n in "abc":
        mgr.register(P(n))
    mgr.close()
    assert order == ["c", "b", "a"]
    with pytest.raises(vmrt.VmError):
        mgr.register(P("d"))


def test_capacity():
    mgr = PluginManager(capacity=1)
    mgr.register({"a": lambda c: 0})
    with pytest.raises(vmrt.VmError) as e:
        mgr.register({"b": lambda c: 0})
    assert e.value.code == vmrt.StatusCode.RESOURCE_EXHAUSTED
    mgr.close()


def test_python_import_reads_guest_memory_emulated(emulation):
    """A static Python import called from guest code under emulation sees the
    params struct through ImportCall."""
    import elfkit
    from elfkit.exec import create_machine
    seen = []

    def fn(call):
        seen.append(call.words(2))
        call.write(call.word(1), b"\x2a\0\0\0")
        return 0
    p = ExecutablePlugin.static({"f": fn})
    m = create_machine(elfkit.arch.get("riscv64"), "emulated")
    try:
        addr = p.resolve(["f"], machine=m)["f"][0]
        out = m.alloc(4)
        params = m.alloc(16)
        m.write(params, struct.pack("<QQ", 77, out))
        call = m.function(addr, elfkit.signature.parse("i32(ptr,ptr,ptr)"))
        assert call(params, 5, 0) == 0
        assert seen == [(77, out)]
        assert m.read(out, 4) == b"\x2a\0\0\0"
    finally:
        p.close()
        m.close()


def test_spinning_plugin_query_stops_at_the_timeout(variants, hal_compile, emulation, tmp_path):
    """A plugin whose query never returns (emulated): `vmrt run --timeout`
    stops it when the device loads its plugins, instead of hanging."""
    from tests.vmrt.hal.hal_testutil import vmrt_run
    spin = variants.path("aarch64", QUERY_SPIN=1)
    got = vmrt_run(["--device=local-sync", f"--executable_plugin={spin}",
                    f"--module={hal_compile('simple_mul.mlir', 'aarch64')}",
                    "--function=mixed_invocation", "--input=8xf32=2", "--input=8xf32=4",
                    "--timeout=0.5"])
    assert got.rc == 1
    assert got.status.startswith("DEADLINE_EXCEEDED; plugin")
