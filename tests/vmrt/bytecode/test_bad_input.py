"""Malformed modules and runaway programs end in a VmError — never an
IndexError, struct.error, RecursionError or a hang."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vmrt
from tests.vmrt.vmrt_testutil import assemble, iree_run, needs_iree, status_head, vmrt_run
from vmrt import StatusCode, VmError
from vmrt.bytecode.format import parse_module
from vmrt.vm.module import cconv_fragments

pytestmark = needs_iree

LOOP = """
func.func @spin(%x0: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %m = arith.constant -1 : i32
  %r = scf.while (%x = %x0) : (i32) -> i32 {
    %go = arith.cmpi ne, %x, %m : i32
    scf.condition(%go) %x : i32
  } do {
  ^bb0(%x: i32):
    %y = arith.addi %x, %c1 : i32
    %z = arith.addi %y, %c1 : i32
    scf.yield %z : i32
  }
  return %r : i32
}
"""


@pytest.fixture(scope="module")
def sample(compile_mlir):
    return compile_mlir("control.mlir").read_bytes()


def _load_and_run(data: bytes) -> None:
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule(inst, data)
    ctx = vmrt.Context(inst, [mod], budget=200_000)
    for e in mod.exports:
        if e.name.startswith("__"):
            continue
        args = {"i": 3, "I": 3, "f": 1.5, "F": 1.5, "r": None}
        codes = cconv_fragments(e.cconv)[0]
        if "C" in codes:
            continue
        ctx.invoke(f"{mod.name}.{e.name}", [args[c] for c in codes])


def _function_code_offset(data: bytes, name: str) -> tuple[int, int]:
    """File offset and length of an exported function's bytecode."""
    d = parse_module(data)
    k = next(e.internal_ordinal for e in d.exports if e.local_name == name)
    fd = d.functions[k]
    code = bytes(d.bytecode[fd.bytecode_offset:fd.bytecode_offset + fd.bytecode_length])
    pos = data.find(code)
    assert pos >= 0 and data.find(code, pos + 1) < 0
    return pos, fd.bytecode_length


def test_every_truncation_is_a_vm_error(sample):
    # the FlatBuffer ends well before the ZIP trailer; cut everywhere up to there
    d = parse_module(sample)
    end = 0x40 + 4 + struct.unpack_from("<I", sample, 0x40)[0]
    for cut in list(range(0, 200)) + list(range(200, end, 7)):
        with pytest.raises(VmError):
            vmrt.BytecodeModule(vmrt.Instance(), sample[:cut])
    assert d.name == "module"


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_corruption_never_escapes(sample, data):
    buf = bytearray(sample)
    n = data.draw(st.integers(1, 8))
    for _ in range(n):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    try:
        _load_and_run(bytes(buf))
    except VmError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_random_bytecode_corruption_never_escapes(sample, data):
    # aim the corruption at function bodies, where the decoder has to cope
    pos, length = _function_code_offset(sample, "collatz")
    buf = bytearray(sample)
    for _ in range(data.draw(st.integers(1, 4))):
        i = pos + data.draw(st.integers(0, length - 1))
        buf[i] = data.draw(st.integers(0, 255))
    try:
        _load_and_run(bytes(buf))
    except VmError:
        pass


def _patch_version(sample: bytes, version: int) -> bytes:
    # the FlatBuffer starts at 0x44; its root table's vtable gives field 13
    # (the bytecode version) an offset inside the table
    fb = 0x44
    root = fb + struct.unpack_from("<I", sample, fb)[0]
    vtable = root - struct.unpack_from("<i", sample, root)[0]
    pos = root + struct.unpack_from("<H", sample, vtable + 4 + 2 * 13)[0]
    assert struct.unpack_from("<I", sample, pos)[0] == 0x00110000
    return sample[:pos] + struct.pack("<I", version) + sample[pos + 4:]


@pytest.mark.parametrize("version,text", [(0x00110001, "17.1"), (0x00120000, "18.0"),
                                          (0x00100000, "16.0")])
def test_wrong_bytecode_version_matches_iree(sample, tmp_path, version, text):
    path = tmp_path / "v.vmfb"
    path.write_bytes(_patch_version(sample, version))
    args = [f"--module={path}", "--function=sumsq", "--input=3"]
    rc_ref, _, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert rc == rc_ref == 1 and out == ""
    expected = ("INVALID_ARGUMENT; bytecode version mismatch; runtime supports 17.0, "
                f"module has {text}; loading bytecode module at '{path}'")
    assert err.startswith(expected) and expected in err_ref


def _patch_code(sample: bytes, fn: str, rel: int, new: bytes) -> bytes:
    pos, _ = _function_code_offset(sample, fn)
    return sample[:pos + rel] + new + sample[pos + rel + len(new):]


def test_unknown_opcode(sample):
    bad = _patch_code(sample, "sumsq", 1, b"\xff")
    with pytest.raises(vmrt.VerifyError) as ei:
        vmrt.BytecodeModule(vmrt.Instance(), bad)
    assert str(ei.value) == "INVALID_ARGUMENT; unknown opcode 0xff; at module.sumsq+00000001"


def test_register_out_of_range(compile_mlir, tmp_path):
    vm = assemble("""vm.module @m version 0
vm.type i32

vm.export @f
vm.func @f(%i0: i32) -> (i32) {
^bb0:
  %i1 = vm.const.i32 7
  %i0 = vm.add.i32 %i0, %i1
  vm.return %i0
}
""", tmp_path / "m.vmfb").read_bytes()
    ctx = vmrt.Context(vmrt.Instance(), [vmrt.BytecodeModule(vmrt.Instance(), vm)])
    assert ctx.invoke("m.f", [5]) == [12]
    # add.i32 is at pc 8: opcode 0x22, then u16 lhs, u16 rhs, u16 result
    pos, _ = _function_code_offset(vm, "f")
    assert vm[pos + 8] == 0x22
    bad = vm[:pos + 11] + b"\x00\x01" + vm[pos + 13:]    # rhs := i256
    with pytest.raises(vmrt.VerifyError) as ei:
        vmrt.BytecodeModule(vmrt.Instance(), bad)
    assert "register 0x0100 out of range" in str(ei.value)
    assert str(ei.value).endswith("at m.f+00000008")
    bad = vm[:pos + 11] + b"\x00\x80" + vm[pos + 13:]    # a ref where an i32 belongs
    with pytest.raises(vmrt.VerifyError):
        vmrt.BytecodeModule(vmrt.Instance(), bad)


def test_bad_branch_target(sample):
    vm = vmrt.BytecodeModule(vmrt.Instance(), sample)
    src = vm.disassemble_source(next(e.ordinal for e in vm.exports if e.name == "sumsq"))
    assert "b = " in src
    d = parse_module(sample)
    k = next(e.internal_ordinal for e in d.exports if e.local_name == "sumsq")
    fd = d.functions[k]
    code = bytes(d.bytecode[fd.bytecode_offset:fd.bytecode_offset + fd.bytecode_length])
    br = code.index(b"\x56")                       # the first vm.br
    bad = _patch_code(sample, "sumsq", br + 1, struct.pack("<I", 3))
    with pytest.raises(vmrt.VerifyError) as ei:
        vmrt.BytecodeModule(vmrt.Instance(), bad)
    assert "branch target 0x3 is not the start of a block" in str(ei.value)
    bad = _patch_code(sample, "sumsq", br + 1, struct.pack("<I", 0xFFFFFF))
    with pytest.raises(vmrt.VerifyError):
        vmrt.BytecodeModule(vmrt.Instance(), bad)


def test_missing_file_and_garbage():
    with pytest.raises(VmError) as ei:
        vmrt.BytecodeModule.load(vmrt.Instance(), "/nonexistent/x.vmfb")
    assert str(ei.value) == "NOT_FOUND; failed to open file '/nonexistent/x.vmfb'"
    for junk in (b"", b"PK\x03\x04", b"\x00" * 64, b"PK\x03\x04" + b"\xff" * 40,
                 b"\x10\x00\x00\x00" + b"\x00" * 16):
        with pytest.raises(VmError):
            vmrt.BytecodeModule(vmrt.Instance(), junk)


def test_cancel_stops_the_interpreter(compile_mlir):
    """Context.cancel() from another thread stops a VM loop with CANCELLED;
    the context stays usable and a cancel never reaches a later call."""
    import threading
    import time
    vmfb = compile_mlir(LOOP, name="spin")
    inst = vmrt.Instance()
    ctx = vmrt.Context(inst, [vmrt.BytecodeModule.load(inst, vmfb)], budget=10**12)
    assert ctx.cancel() is False
    box: list = []

    def spin():
        try:
            ctx.invoke("module.spin", [0])
        except vmrt.VmError as e:
            box.append(e)
    t = threading.Thread(target=spin, daemon=True)
    t.start()
    time.sleep(0.5)
    assert ctx.cancel(wait=30) is True
    t.join(60)
    assert not t.is_alive() and box and isinstance(box[0], vmrt.Cancelled)
    assert box[0].code == StatusCode.CANCELLED
    assert ctx.invoke("module.spin", [-5]) == [-1]
    assert ctx.invoke("module.spin", [-5]) == [-1]


def test_instruction_budget_and_timeout(compile_mlir):
    vmfb = compile_mlir(LOOP, name="spin")
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    ctx = vmrt.Context(inst, [mod])
    assert ctx.invoke("module.spin", [-5]) == [-1]
    with pytest.raises(vmrt.BudgetExceeded) as ei:
        ctx.invoke("module.spin", [0], budget=100_000)
    assert ei.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert "instruction budget of 100000 exhausted" in str(ei.value)
    with pytest.raises(vmrt.BudgetExceeded) as ei:
        ctx.invoke("module.spin", [0], timeout=0.2)
    assert ei.value.code == StatusCode.DEADLINE_EXCEEDED
    # the context-wide budget applies to every call
    ctx2 = vmrt.Context(inst, [mod], budget=1000)
    assert ctx2.invoke("module.spin", [-21]) == [-1]
    with pytest.raises(vmrt.BudgetExceeded):
        ctx2.invoke("module.spin", [-2001])
    rc, out, err = vmrt_run(f"--module={vmfb}", "--input=0", "--timeout=0.2")
    assert rc == 1 and out == "EXEC @spin\n"
    assert err.startswith("DEADLINE_EXCEEDED; execution timed out; at module.spin+")
    rc, out, err = vmrt_run(f"--module={vmfb}", "--input=0", "--instruction_budget=5000")
    assert rc == 1 and err.startswith("RESOURCE_EXHAUSTED; instruction budget of 5000")


@pytest.mark.parametrize("kw, code", [
    ({"timeout": "x"}, StatusCode.INVALID_ARGUMENT), ({"budget": "x"}, StatusCode.INVALID_ARGUMENT),
    ({"timeout": float("nan")}, StatusCode.INVALID_ARGUMENT),
    ({"timeout": float("inf")}, StatusCode.INVALID_ARGUMENT),
    ({"timeout": -1}, StatusCode.INVALID_ARGUMENT), ({"budget": True}, StatusCode.INVALID_ARGUMENT),
    ({"budget": 1 << 70}, StatusCode.OUT_OF_RANGE), ({"budget": -1}, StatusCode.OUT_OF_RANGE)])
def test_invalid_limits_are_refused(compile_mlir, kw, code):
    """issue 29: timeout="x" / budget="x" raised TypeError, timeout=nan meant
    no limit, a budget of 2^70 was accepted."""
    vmfb = compile_mlir(LOOP, name="spin")
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with pytest.raises(vmrt.ArgumentError) as ei:
        vmrt.Context(inst, [mod], **kw)
    assert ei.value.code == code
    with vmrt.Context(inst, [mod]) as ctx:
        with pytest.raises(vmrt.ArgumentError) as ei:
            ctx.invoke("module.spin", [-5], **kw)
        assert ei.value.code == code
        assert ctx.invoke("module.spin", [-5]) == [-1]       # still usable


def test_a_budget_of_zero_runs_nothing(compile_mlir):
    """0 is a budget of no instructions (None is no limit), in vmrt as in elfkit."""
    vmfb = compile_mlir(LOOP, name="spin")
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [mod]) as ctx:
        with pytest.raises(vmrt.BudgetExceeded):
            ctx.invoke("module.spin", [-5], budget=0)
        assert ctx.invoke("module.spin", [-5], budget=None) == [-1]


def test_runaway_recursion(tmp_path):
    vmfb = assemble("""vm.module @rec version 0
vm.type i32

vm.export @down
vm.func @down(%i0: i32) -> (i32) {
^bb0:
  %i1 = vm.const.i32 1
  %i0 = vm.sub.i32 %i0, %i1
  %i0 = vm.call @down(%i0)
  vm.return %i0
}
""", tmp_path / "rec.vmfb")
    args = [f"--module={vmfb}", "--input=5"]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref) == (1, "EXEC @down\n")
    assert status_head(err).split(";")[0] == status_head(err_ref).split(";")[0] \
        == "RESOURCE_EXHAUSTED"


def test_integer_division_by_zero_is_an_error(compile_mlir):
    # iree-run-module dies with SIGFPE here; vmrt reports INVALID_ARGUMENT
    vmfb = compile_mlir("ints.mlir")
    rc, out, err = vmrt_run(f"--module={vmfb}", "--function=divrem32", "--input=1",
                            "--input=0")
    assert rc == 1 and out == "EXEC @divrem32\n"
    assert err.startswith("INVALID_ARGUMENT; integer division by zero; at module.divrem32+")


FAIL_ASM = """vm.module @f version 0
vm.type i32

vm.export @fail
vm.func @fail(%i0: i32) -> (i32) {
^bb0:
  vm.fail %i0, "custom failure"
}
"""


@pytest.mark.parametrize("status", ["99", "5", "9", "13", "1", "16"])
def test_vm_fail_status_codes_match_iree(tmp_path, status):
    vmfb = assemble(FAIL_ASM, tmp_path / "fail.vmfb")
    args = [f"--module={vmfb}", f"--input={status}"]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref) == (1, "EXEC @fail\n")
    assert status_head(err) == status_head(err_ref)


def test_vm_fail_with_ok_status_is_an_internal_error(tmp_path):
    # iree-run-module runs past the terminator and crashes; vmrt refuses
    vmfb = assemble(FAIL_ASM, tmp_path / "fail.vmfb")
    rc, out, err = vmrt_run(f"--module={vmfb}", "--input=0")
    assert (rc, out) == (1, "EXEC @fail\n")
    assert err.startswith("INTERNAL; vm.fail with OK status (message 'custom failure')")


def test_variadic_call_to_internal_function_is_refused():
    # IREE fails at run time (FAILED_PRECONDITION, with the inverted message
    # "only supported for internal callees"); vmrt's translator refuses it on the first call
    from vmrt.bytecode.decoder import decode_function
    from vmrt.bytecode.translate.codegen import FunctionTranslator

    class Info:
        n_functions, n_imports, n_rodata, n_types, global_bytes, global_refs = 1, 0, 0, 0, 0, 0

        def signature(self, k):
            return "0i_i"

        def const(self, v):
            return "K[0]"

    # block; call.variadic fn0 segments[-1] args[i0] results[i0]; return [i0]
    code = (bytes([0x79, 0x59, 0, 0, 0, 0]) + b"\x01\x00\xff\xff" + b"\x01\x00\x00\x00"
            + b"\x01\x00\x00\x00" + bytes([0x5A, 0]) + b"\x01\x00\x00\x00")
    blocks = decode_function(code, "v@0", 2, 0)
    assert [i.mnemonic for i in blocks[0].instrs] == ["call.variadic", "return"]
    with pytest.raises(vmrt.VerifyError) as ei:
        FunctionTranslator(Info(), 0, blocks, "v@0", 2, 0).translate("i", "i")
    assert "variadic calls only supported for import callees" in str(ei.value)


def test_names_from_the_file_never_reach_generated_code(compile_mlir):
    """Module and function names are data: a name that looks like Python code
    must not be executed by the translator (they go through a constant table)."""
    vmfb = compile_mlir("""vm.module @modulenameplaceholder000000000 {
  vm.func @exportnameplaceholder0000000000(%a: i32) -> i32 {
    %z = vm.const.i32 0
    %r = vm.div.i32.s %a, %z : i32
    vm.return %r : i32
  }
  vm.export @exportnameplaceholder0000000000
}
""", "--compile-mode=vm", name="names").read_bytes()
    evil_mod = b"m')\nraise SystemExit(3)#\x00\"\\'"
    evil_fn = b"f')\nimport os; os._exit(9)#"
    evil_mod = evil_mod.ljust(len(b"modulenameplaceholder000000000"), b"_")
    evil_fn = evil_fn.ljust(len(b"exportnameplaceholder0000000000"), b"_")
    data = vmfb.replace(b"modulenameplaceholder000000000", evil_mod).replace(
        b"exportnameplaceholder0000000000", evil_fn)
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule(inst, data)
    assert mod.name == evil_mod.decode()
    ctx = vmrt.Context(inst, [mod])
    with pytest.raises(VmError) as ei:
        ctx.invoke(mod.lookup_function(evil_fn.decode()), [7])
    assert str(ei.value) == ("INVALID_ARGUMENT; integer division by zero; at "
                             f"{evil_mod.decode()}.{evil_fn.decode()}+00000004")
