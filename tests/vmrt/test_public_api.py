"""vmrt's public API (issue 28.4): exactly the documented names, the hal ref
types for ``arg_types``, ``format_buffer_view`` against iree-run-module's
printing, the element type <-> dtype mapping against ``iree.runtime`` and
``Program.new_context``."""
from __future__ import annotations

import numpy as np
import pytest

import vmrt
from tests.vmrt.vmrt_testutil import Compiler, iree_run, needs_iree
from vmrt.hal.element_types import element_type_name

#: the documented public names (docs/reference/vmrt.md)
PUBLIC = {
    # the VM
    "Instance", "Context", "ExecutionLimits", "Module", "BytecodeModule", "load_module",
    "NativeModule", "NativeState", "export", "Function", "BoundFunction", "ExportDecl",
    "ImportDecl", "Linkage", "Dependency", "DependencyFlags", "Buffer", "VmList",
    "RefObject", "RefType", "BUFFER_TYPE", "LIST_TYPE",
    # the HAL
    "BufferView", "Fence", "format_buffer_view", "dtype_of", "element_type_of",
    "HAL_ALLOCATOR_TYPE", "HAL_BUFFER_TYPE", "HAL_BUFFER_VIEW_TYPE", "HAL_CHANNEL_TYPE",
    "HAL_COMMAND_BUFFER_TYPE", "HAL_DEVICE_TYPE", "HAL_EVENT_TYPE", "HAL_EXECUTABLE_TYPE",
    "HAL_FENCE_TYPE", "HAL_FILE_TYPE", "HAL_SEMAPHORE_TYPE",
    # executables and plugins
    "Executable", "ElfExecutable", "LocalExecutable", "ExecutableLoader", "PluginManager",
    "ExecutablePlugin", "ImportCall", "StaticPlugin", "ParameterIndex",
    # programs, device replay
    "load", "Program", "replay",
    # errors
    "VmError", "StatusCode", "ArgumentError", "BudgetExceeded", "Cancelled", "DefinitionError",
    "DispatchError", "ExecutableError", "FunctionNotFoundError", "HalError",
    "ImportResolutionError", "InvocationError", "LinkError", "LoadError", "ParameterError",
    "PluginError", "ReplayError", "TypeRegistryError", "UsageError", "VerifyError",
    "__version__",
}


def test_all_is_the_documented_api():
    assert len(vmrt.__all__) == len(set(vmrt.__all__))
    assert set(vmrt.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(vmrt, name) is not None, name
    for internal in ("cconv_fragments", "make_cconv", "type_of"):
        assert not hasattr(vmrt, internal)


def test_the_reference_documents_every_name():
    from tests.vmrt.iree_tools import REPO
    text = (REPO / "docs" / "reference" / "vmrt.md").read_text()
    errors = {n for n in PUBLIC if n.endswith(("Error", "Exceeded")) or n in ("Cancelled",
                                                                            "StatusCode")}
    assert "::: vmrt.errors" in text
    for name in PUBLIC - errors - {"__version__"}:
        assert f".{name}`" in text or f".{name}\n" in text, name


def test_hal_ref_types_are_the_registered_ones():
    from vmrt.hal.objects import ALL_TYPES
    public = {getattr(vmrt, n) for n in PUBLIC if n.startswith("HAL_")}
    assert public == set(ALL_TYPES)
    assert vmrt.HAL_BUFFER_VIEW_TYPE.name == "hal.buffer_view"
    assert vmrt.BufferView(np.zeros(2, np.float32)).vm_type is vmrt.HAL_BUFFER_VIEW_TYPE
    assert vmrt.Fence().vm_type is vmrt.HAL_FENCE_TYPE


class Shapes(vmrt.NativeModule):
    name = "shapes"

    @vmrt.export("rank", "0r_i", arg_types=(vmrt.HAL_BUFFER_VIEW_TYPE,))
    def rank(self, state, view):
        return len(view.shape)


def test_arg_types_with_a_public_hal_type():
    inst = vmrt.Instance()
    with vmrt.Context(inst, [Shapes()]) as ctx:
        assert ctx.invoke("shapes.rank", [vmrt.BufferView(np.zeros((2, 3), np.int32))]) == [2]
        with pytest.raises(vmrt.VmError) as ei:
            ctx.invoke("shapes.rank", [vmrt.Fence()])
        assert ei.value.code == vmrt.StatusCode.INVALID_ARGUMENT
        assert "hal.buffer_view" in str(ei.value) and "hal.fence" in str(ei.value)


# ---------------------------------------------------------- format_buffer_view ---
ID = """
func.func @id_f32(%a: tensor<?x?xf32>) -> tensor<?x?xf32> { return %a : tensor<?x?xf32> }
func.func @id_i8(%a: tensor<?xi8>) -> tensor<?xi8> { return %a : tensor<?xi8> }
func.func @id_0d(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }
func.func @id_i1(%a: tensor<4xi1>) -> tensor<4xi1> { return %a : tensor<4xi1> }
func.func @id_3d(%a: tensor<2x2x3xi32>) -> tensor<2x2x3xi32> { return %a : tensor<2x2x3xi32> }
"""

COUNTER = """
util.global private mutable @counter = 5 : i32
func.func @bump() -> i32 {
  %c1 = arith.constant 1 : i32
  %v = util.global.load @counter : i32
  %n = arith.addi %v, %c1 : i32
  util.global.store %n, @counter : i32
  return %n : i32
}
"""


@pytest.fixture(scope="module")
def compile_(tmp_path_factory):
    return Compiler(tmp_path_factory.mktemp("public_api"))


# function, iree-run-module input, the same as a buffer view, max elements
CASES = [
    ("id_f32", "2x3xf32=1.5 2 3 4 5 6",
     vmrt.BufferView(np.array([[1.5, 2, 3], [4, 5, 6]], np.float32)), 1024),
    ("id_f32", "2x3xf32=1.5 2 3 4 5 6",
     vmrt.BufferView(np.array([[1.5, 2, 3], [4, 5, 6]], np.float32)), 4),
    ("id_f32", "3x2xf32=0.1 -2.5 1e20 0 3 4",
     vmrt.BufferView(np.array([[0.1, -2.5], [1e20, 0], [3, 4]], np.float32)), 1),
    ("id_i8", "5xi8=-1 2 -3 4 127",
     vmrt.BufferView(np.array([-1, 2, -3, 4, 127], np.int8), "i8"), 1024),
    ("id_i8", "5xi8=-1 2 -3 4 127",
     vmrt.BufferView(np.array([-1, 2, -3, 4, 127], np.int8), "i8"), 3),
    ("id_0d", "f32=2.25", vmrt.BufferView(np.array(2.25, np.float32)), 1024),
    ("id_3d", "2x2x3xi32=1 2 3 4 5 6 7 8 9 10 11 12",
     vmrt.BufferView(np.arange(1, 13, dtype=np.int32).reshape(2, 2, 3), "i32"), 5),
    ("id_3d", "2x2x3xi32=1 2 3 4 5 6 7 8 9 10 11 12",
     vmrt.BufferView(np.arange(1, 13, dtype=np.int32).reshape(2, 2, 3), "i32"), 0),
]


@needs_iree
@pytest.mark.parametrize("fn,spec,view,limit", CASES)
def test_format_buffer_view_prints_like_iree_run_module(compile_, fn, spec, view, limit):
    vmfb = compile_(ID, name="id")
    rc, out, err = iree_run(f"--module={vmfb}", f"--function={fn}", f"--input={spec}",
                            f"--output_max_element_count={limit}")
    assert rc == 0, err
    lines = out.splitlines()
    expected = lines[lines.index("result[0]: hal.buffer_view") + 1]
    assert vmrt.format_buffer_view(view, limit) == expected
    if limit == 1024:
        assert vmrt.format_buffer_view(view) == expected


@needs_iree
def test_format_bool_array_like_iree_run_module(compile_, tmp_path):
    arr = np.array([True, False, True, True])
    np.save(tmp_path / "b.npy", arr)
    rc, out, err = iree_run(f"--module={compile_(ID, name='id')}", "--function=id_i1",
                            f"--input=@{tmp_path / 'b.npy'}")
    assert rc == 0, err
    assert out.splitlines()[-1] == vmrt.format_buffer_view(arr) == "4xi1=01 00 01 01"


def test_format_buffer_view_of_numpy_arrays():
    # numpy's signed integers are IREE's siN; floats and bool keep their names
    assert vmrt.format_buffer_view(np.arange(4, dtype=np.int32)) == "4xsi32=0 1 2 3"
    assert vmrt.format_buffer_view(np.arange(6, dtype=np.float32).reshape(2, 3), 4) \
        == "2x3xf32=[0 1 2][3...]"
    # i1 elements print as hex bytes, as iree-run-module prints them (test below)
    assert vmrt.format_buffer_view(np.array([True, False])) == "2xi1=01 00"
    assert vmrt.format_buffer_view(np.zeros((0, 3), np.float32)) == "0x3xf32="


# ------------------------------------------------------------ dtype mapping ---
def test_dtype_mapping_agrees_with_iree_runtime():
    ir = pytest.importorskip("iree.runtime")
    checked = 0
    for et in ir.HalElementType.__members__.values():
        try:
            want = ir.HalElementType.map_to_dtype(et)
        except (ValueError, TypeError, KeyError, RuntimeError):
            continue        # a type iree.runtime has no dtype for
        name = et.name.lower()
        try:
            ours = element_type_name(int(et))
        except vmrt.VmError:
            continue
        if ours == "i1":
            # iree.runtime says bool; vmrt holds i1 as its storage, one byte per
            # element (vmrt.load's results turn it into bool)
            assert (np.dtype(want), vmrt.dtype_of(ours)) == (np.bool_, np.uint8)
            assert vmrt.element_type_of(np.bool_) == "i1"
            continue
        assert vmrt.dtype_of(ours) == np.dtype(want), name
        checked += 1
        # and back: the dtype names an element type with that dtype
        assert vmrt.dtype_of(vmrt.element_type_of(np.dtype(want))) == np.dtype(want), name
    assert checked >= 10
    assert vmrt.element_type_of(np.float16) == "f16"
    assert vmrt.element_type_of(np.uint8) == "ui8"
    assert vmrt.element_type_of(np.int64) == "si64"
    assert vmrt.element_type_of(np.bool_) == "i1"


def test_dtype_of_unknown_type_is_our_error():
    with pytest.raises(vmrt.VmError):
        vmrt.dtype_of("q7")
    with pytest.raises(vmrt.VmError):
        vmrt.element_type_of(np.dtype("U3"))


# ------------------------------------------------------------- new_context ---
@needs_iree
def test_new_context_has_fresh_globals_and_shares_the_module(compile_):
    vmfb = compile_(COUNTER, name="counter")
    with vmrt.load(vmfb, device=None) as old:
        assert [old.bump(), old.bump()] == [6, 7]
        with old.new_context() as fresh:
            assert fresh.module is old.module
            assert fresh.context is not old.context
            assert fresh.bump() == 6
            assert old.bump() == 8
            assert fresh.bump() == 7
        assert fresh.closed and not old.closed
        assert old.bump() == 9
    with pytest.raises(vmrt.VmError) as ei:
        old.new_context()
    assert ei.value.code == vmrt.StatusCode.FAILED_PRECONDITION


ADD = """
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@needs_iree
def test_new_context_has_a_new_device(compile_):
    from tests.vmrt.iree_tools import IREE_TARGET_FLAGS
    vmfb = compile_(ADD, "--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu",
                    *IREE_TARGET_FLAGS["x86_64"], name="add")
    a = np.arange(4, dtype=np.float32)
    with vmrt.load(vmfb) as old, old.new_context() as fresh:
        np.testing.assert_array_equal(fresh.add(a, a), a + a)
        np.testing.assert_array_equal(old.add(a, a), a + a)
        assert fresh.module is old.module
        hal = [next(m for m in p.context.modules if m.name == "hal") for p in (old, fresh)]
        states = [p.context.state_of(m) for p, m in zip((old, fresh), hal)]
        assert states[0] is not states[1]


# --------------------------------------------------------------- lifecycle ---
class Counted(vmrt.NativeModule):
    name = "counted"
    freed = 0

    def free_state(self, state):
        type(self).freed += 1


def test_context_and_program_close_once():
    mod = Counted()
    with vmrt.Context(vmrt.Instance(), [mod]) as ctx:
        assert not ctx.closed
    assert ctx.closed and Counted.freed == 1
    ctx.close()
    assert Counted.freed == 1
    prog = vmrt.load(mod, device=None)
    with prog:
        assert not prog.closed and prog.context is not None
    assert prog.closed and prog.context is None and Counted.freed == 2
    prog.close()
    assert Counted.freed == 2
