"""Instance, modules and the context's import resolution (IREE's algorithm:
dependencies checked oldest first, imports bound newest first with no
fall-through, optional imports left null, cconvs compared exactly)."""
from __future__ import annotations

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import PROGRAMS, iree_run, needs_iree, vmrt_run
from vmrt import (
    Context,
    Dependency,
    DependencyFlags,
    ImportDecl,
    Instance,
    NativeModule,
    RefType,
    StatusCode,
    VmError,
    export,
)
from vmrt.vm.module import cconv_fragments, make_cconv


class Provider(NativeModule):
    def __init__(self, name: str, value: int, version: int = 0, with_g: bool = True):
        super().__init__(name, version)
        self.value = value
        if not with_g:
            self.remove_export("g")

    @export("f", "0i_i")
    def f(self, state, x):
        return x + self.value

    @export("g", "0v_i")
    def g(self, state):
        return self.value


class Importer(NativeModule):
    name = "imp"

    def __init__(self, imports, deps=None):
        self.import_decls = list(imports)
        self._deps = deps
        super().__init__()

    def dependencies(self):
        return super().dependencies() if self._deps is None else self._deps

    @export("call", "0ii_i")
    def call_import(self, state, k, x):
        target = state.imports[k]
        return -1 if target is None else target([x])[0]


def test_builtin_types_and_registry():
    inst = Instance(type_capacity=4)
    assert [t.name for t in inst.types] == ["vm.buffer", "vm.list"]
    t = RefType("my.thing")
    assert inst.register_type(t) is t and inst.register_type(t) is t   # counted
    assert inst.lookup_type("!my.thing") is t
    inst.unregister_type(t)
    assert inst.lookup_type("my.thing") is t
    inst.unregister_type(t)
    assert inst.lookup_type("my.thing") is None
    inst.register_type(RefType("a"))
    inst.register_type(RefType("b"))
    with pytest.raises(VmError) as ei:
        inst.register_type(RefType("c"))
    assert str(ei.value) == ("RESOURCE_EXHAUSTED; too many user-defined types registered; "
                             "new type c would exceed capacity of 4")


def test_newest_module_wins():
    inst = Instance()
    ctx = Context(inst, [Provider("m", 1), Provider("m", 100), Importer([ImportDecl("m.f", "0i_i")])])
    assert ctx.invoke("imp.call", [0, 5]) == [105]
    assert ctx.invoke("m.f", [1]) == [101]           # resolve_function: newest too


def test_no_fall_through_to_older_same_named_module():
    inst = Instance()
    ctx = Context(inst, [Provider("m", 1), Provider("m", 2, with_g=False)])
    with pytest.raises(VmError) as ei:
        ctx.register_modules([Importer([ImportDecl("m.g", "0v_i")])])
    e = ei.value
    assert e.code == StatusCode.NOT_FOUND
    assert "'g'" in e.message and "'m'" in e.message
    assert e.annotations[-1] == "resolving module 'imp' imports"
    assert [m.name for m in ctx.modules] == ["m", "m"]   # unwound


def test_optional_import_left_null_and_mismatch_is_fatal():
    inst = Instance()
    ctx = Context(inst, [Provider("m", 1),
                         Importer([ImportDecl("m.f", "0i_i"), ImportDecl("m.zz", "0i_i", True),
                                   ImportDecl("nope.f", "0i_i", True)])])
    assert ctx.invoke("imp.call", [1, 5]) == [-1]
    assert ctx.invoke("imp.call", [2, 5]) == [-1]
    assert ctx.invoke("imp.call", [0, 5]) == [6]
    with pytest.raises(VmError) as ei:
        Context(inst, [Provider("m", 1), Importer([ImportDecl("m.f", "0I_i", True)])])
    assert str(ei.value) == (
        "INTERNAL; import function m.f signature mismatch between imp and source m; expected "
        "0I_i but got 0i_i; resolving module 'imp' imports")


def test_empty_expected_cconv_skips_check():
    ctx = Context(Instance(), [Provider("m", 3), Importer([ImportDecl("m.f", "")])])
    assert ctx.invoke("imp.call", [0, 1]) == [4]


def test_missing_module_messages():
    with pytest.raises(VmError) as ei:
        Context(Instance(), [Importer([ImportDecl("x.f", "0i_i")])])
    assert str(ei.value) == ("NOT_FOUND; required module 'x' not registered on the context; "
                             "resolving module 'imp' imports")
    with pytest.raises(VmError) as ei:
        Context(Instance(), [Importer([ImportDecl("x.f", "0i_i")], deps=[])])
    assert str(ei.value) == ("NOT_FOUND; module 'x' required for import 'x.f' not registered "
                             "with the context; resolving module 'imp' imports")
    with pytest.raises(VmError) as ei:
        Context(Instance(), [Importer([ImportDecl("nodot", "0i_i")], deps=[])])
    assert ei.value.code == StatusCode.INVALID_ARGUMENT
    assert "import name not fully-qualified (module.func): 'nodot'" in str(ei.value)


def test_dependency_versions_checked_oldest_first():
    deps = [Dependency("m", 3, DependencyFlags.REQUIRED)]
    # newest m has version 5, but the check looks at the oldest (IREE's quirk)
    with pytest.raises(VmError) as ei:
        Context(Instance(), [Provider("m", 1, version=0), Provider("m", 2, version=5),
                             Importer([ImportDecl("m.f", "0i_i")], deps=deps)])
    assert str(ei.value) == ("NOT_FOUND; required module 'm' version mismatch; have 0 but "
                             "require 3; resolving module 'imp' imports")
    ctx = Context(Instance(), [Provider("m", 1, version=3),
                               Importer([ImportDecl("m.f", "0i_i")], deps=deps)])
    assert ctx.invoke("imp.call", [0, 1]) == [2]
    # optional dependency: any version (and absence) is fine
    Context(Instance(), [Importer([ImportDecl("q.f", "0i_i", True)],
                                  deps=[Dependency("q", 9, DependencyFlags.OPTIONAL)])])


def test_module_cannot_import_from_itself_or_later_modules():
    class Self(NativeModule):
        name = "self"
        import_decls = (ImportDecl("self.f", "0v_v"),)

        @export("f", "0v_v")
        def f(self, state):
            pass
    with pytest.raises(VmError):
        Context(Instance(), [Self()])
    with pytest.raises(VmError):
        Context(Instance(), [Importer([ImportDecl("m.f", "0i_i")]), Provider("m", 1)])


def test_init_order_and_unwinding():
    log = []

    class Life(NativeModule):
        def __init__(self, name, fail=False):
            super().__init__(name)
            self.fail = fail

        @export("__init", "0v_v")
        def init(self, state):
            log.append(f"init {self.name}")
            if self.fail:
                raise VmError("boom", StatusCode.ABORTED)

        @export("__deinit", "0v_v")
        def deinit(self, state):
            log.append(f"deinit {self.name}")

    ctx = Context(Instance(), [Life("a")])
    with pytest.raises(VmError) as ei:
        ctx.register_modules([Life("b"), Life("c", fail=True)])
    assert str(ei.value) == "ABORTED; boom; while invoking native function c.__init"
    assert [m.name for m in ctx.modules] == ["a"]
    ctx.close()
    assert log == ["init a", "init b", "init c", "deinit c", "deinit b", "deinit a"]


def test_null_module_and_resolve_function_errors():
    with pytest.raises(VmError) as ei:
        Context(Instance(), [None])
    assert str(ei.value) == "INVALID_ARGUMENT; modules[0] is null"
    ctx = Context(Instance(), [Provider("m", 1)])
    with pytest.raises(VmError) as ei:
        ctx.resolve_function("main")
    assert ei.value.code == StatusCode.INVALID_ARGUMENT
    with pytest.raises(VmError) as ei:
        ctx.resolve_function("m.zzz")
    assert ei.value.code == StatusCode.NOT_FOUND


def test_invoke_checks_argument_count_and_types():
    ctx = Context(Instance(), [Provider("m", 1)])
    with pytest.raises(VmError) as ei:
        ctx.invoke("m.f", [])
    assert str(ei.value) == ("INVALID_ARGUMENT; input list and function mismatch; expected 1 "
                             "arguments but passed 0")
    with pytest.raises(VmError) as ei:
        ctx.invoke("m.f", ["x"])
    assert ei.value.code == StatusCode.INVALID_ARGUMENT
    import numpy as np
    assert ctx.invoke("m.f", [np.int32(4)]) == [5]
    assert ctx.invoke("m.f", [2**32 + 7]) == [8]      # wrapped to i32


def test_native_python_exception_becomes_vm_error():
    class Buggy(NativeModule):
        name = "buggy"

        @export("f", "0v_v")
        def f(self, state):
            return 1 / 0

    with pytest.raises(VmError) as ei:
        Context(Instance(), [Buggy()]).invoke("buggy.f")
    assert str(ei.value) == ("INTERNAL; ZeroDivisionError: division by zero; while invoking "
                             "native function buggy.f")


def test_per_context_state():
    class Counter(NativeModule):
        name = "counter"

        def init_state(self, state, context):
            state.n = 0

        @export("next", "0v_i")
        def next(self, state):
            state.n += 1
            return state.n

    mod = Counter()
    c1, c2 = Context(Instance(), [mod]), Context(Instance(), [mod])
    assert [c1.invoke("counter.next")[0] for _ in range(3)] == [1, 2, 3]
    assert c2.invoke("counter.next") == [1]


def test_cconv_fragments():
    assert cconv_fragments("") == ("", "")
    assert cconv_fragments("0v_v") == ("", "")
    assert cconv_fragments("0iIfr_I") == ("iIfr", "I")
    with pytest.raises(VmError) as ei:
        cconv_fragments("1i_i")
    assert str(ei.value) == "UNIMPLEMENTED; unsupported cconv version 1"
    assert make_cconv("", "") == "0v_v"


# ---------------------------------------------------------- bytecode linking --
@needs_iree
def test_bytecode_imports_bytecode_matches_iree(compile_mlir):
    lib = compile_mlir("lib.mlir")
    app_src = (PROGRAMS / "app.mlir").read_text().replace(
        " attributes {vm.version = 2 : i32}", "")
    app = compile_mlir(app_src, name="app_nover")
    args = [f"--module={lib}", f"--module={app}", "--function=run", "--input=7"]
    ref = iree_run(*args)
    assert ref[0] == 0
    assert vmrt_run(*args) == ref[:2] + ("",)


@needs_iree
def test_bytecode_dependency_version_error_matches_iree(compile_mlir):
    lib = compile_mlir("lib.mlir")
    app = compile_mlir("app.mlir")
    for args in ([f"--module={lib}", f"--module={app}", "--input=7"],
                 [f"--module={app}", "--input=7"]):
        rc_ref, out_ref, err_ref = iree_run(*args)
        rc, out, err = vmrt_run(*args)
        assert (rc, out) == (rc_ref, out_ref) == (1, "")
        assert err.strip() == err_ref.strip().split(": ", 1)[1]   # all but IREE's file:line


@needs_iree
def test_optional_import_bound_to_python_module(compile_mlir):
    lib = compile_mlir("lib.mlir")
    app_src = (PROGRAMS / "app.mlir").read_text().replace(
        " attributes {vm.version = 2 : i32}", "")
    app = compile_mlir(app_src, name="app_nover")
    inst = Instance()

    class Ext(NativeModule):
        name = "ext"

        @export("twice", "0i_i")
        def twice(self, state, x):
            return 2 * x

    libm = vmrt.BytecodeModule.load(inst, lib)
    appm = vmrt.BytecodeModule.load(inst, app)
    # without ext: the compiled fallback (x + 1000) runs
    assert Context(inst, [libm, appm]).invoke("app.run", [7]) == [63, 2, 1063]
    # with ext registered before app: the Python export runs
    ctx = Context(inst, [libm, Ext(), appm])
    assert ctx.invoke("app.run", [7]) == [63, 2, 126]
    assert ctx.invoke("app.run", [1]) == [9, 4, 18]      # lib's global persists per context
    # an ext whose signature differs is a hard error even for an optional import

    class BadExt(NativeModule):
        name = "ext"

        @export("twice", "0i_I")
        def twice(self, state, x):
            return 2 * x
    with pytest.raises(VmError) as ei:
        Context(inst, [libm, BadExt(), appm])
    assert str(ei.value) == ("INTERNAL; import function ext.twice signature mismatch between "
                             "app and source ext; expected 0i_i but got 0i_I; resolving module "
                             "'app' imports")


class _ExtProvider:
    name = "ext"

    def register_types(self, instance):
        pass

    def create(self, instance, options):
        class Ext(NativeModule):
            name = "ext"

            @export("twice", "0i_i")
            def twice(self, state, x):
                return 2 * x
        return Ext()


EXT_PROVIDER = """
from vmrt import NativeModule, export


class Ext(NativeModule):
    name = "ext"

    @export("twice", "0i_i")
    def twice(self, state, x):
        return 2 * x


class Provider:
    name = "ext"

    def register_types(self, instance):
        pass

    def create(self, instance, options):
        return Ext()


PROVIDER = Provider()
"""


@needs_iree
def test_static_providers_from_entry_points_and_main(compile_mlir, monkeypatch, tmp_path):
    lib = compile_mlir("lib.mlir")
    app = compile_mlir((PROGRAMS / "app.mlir").read_text().replace(
        " attributes {vm.version = 2 : i32}", ""), name="app_nover")
    args = [f"--module={lib}", f"--module={app}", "--input=7"]
    fallback = "EXEC @run\nresult[0]: i32=63\nresult[1]: i32=2\nresult[2]: i32=1063\n"
    bound = fallback.replace("1063", "126")
    assert vmrt_run(*args) == (0, fallback, "")          # optional dependency: no provider
    assert vmrt_run(*args, providers=[_ExtProvider()]) == (0, bound, "")

    # an installed distribution publishing the provider in the vmrt.modules group
    (tmp_path / "ext_provider_mod.py").write_text(EXT_PROVIDER)
    info = tmp_path / "ext_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ext-provider\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[vmrt.modules]\next = ext_provider_mod:PROVIDER\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert vmrt_run(*args) == (0, bound, "")
