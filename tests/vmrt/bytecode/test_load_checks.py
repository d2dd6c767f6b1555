"""Load-time checks of ordinals (vmrt/bytecode/translate/checks.py): a real
compiled module whose instruction names a rodata segment, type, global byte,
import or function that does not exist is refused at load -- though its
functions are translated only on their first call -- with a VerifyError
naming the function and the pc, as IREE's verifier refuses it at load."""
from __future__ import annotations

import struct

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree
from vmrt.bytecode.decoder import decode_function
from vmrt.bytecode.format import parse_module

pytestmark = needs_iree

IMPORT_BIT = 0x80000000
#: the ops whose first operand is a u32 ordinal right after the opcode byte
PATCHED = ("call", "const.ref.rodata", "import.resolved", "list.alloc", "global.store.i32")


def _sites(data: bytes):
    """(file offset of the operand, function ordinal, pc, mnemonic, operand) of
    every instruction of ``data`` in PATCHED."""
    d = parse_module(data)
    for k, fd in enumerate(d.functions):
        body = bytes(d.bytecode[fd.bytecode_offset:fd.bytecode_offset + fd.bytecode_length])
        for blk in decode_function(body, f"f{k}", fd.i32_register_count, fd.ref_register_count):
            for ins in blk.instrs:
                if ins.mnemonic in PATCHED:
                    pos = d.bytecode_span[0] + fd.bytecode_offset + ins.pc + 1
                    assert struct.unpack_from("<I", data, pos)[0] == ins.fields[0]
                    yield pos, k, ins.pc, ins.mnemonic, ins.fields[0]


def _out_of_range(d, mnemonic: str, value: int) -> list[int]:
    """Operands just past the end of the table ``mnemonic``'s operand names, and far past."""
    if mnemonic == "global.store.i32":
        return [d.global_bytes - 3, 0x00FFFFFF]    # the store's last bytes outside
    if mnemonic == "const.ref.rodata":
        return [len(d.rodata), 0x7FFFFFFF]
    if mnemonic == "list.alloc":
        return [len(d.types), 0x7FFFFFFF]
    if mnemonic == "import.resolved" or value & IMPORT_BIT:
        return [IMPORT_BIT | len(d.imports), IMPORT_BIT | 0x7FFFFFFF]
    return [len(d.functions), 0x7FFFFFFF]


@pytest.mark.parametrize("program,ops", [
    ("data.mlir", {"const.ref.rodata", "list.alloc", "global.store.i32"}),
    ("control.mlir", {"call"}),
    ("app.mlir", {"call", "import.resolved"})])
@pytest.mark.parametrize("cache", [False, True])
def test_a_bad_ordinal_in_a_real_module_is_refused_at_load(compile_mlir, tmp_path, monkeypatch,
                                                           program, ops, cache):
    if cache:
        monkeypatch.setenv("VMRT_CACHE_DIR", str(tmp_path / "cache"))
        monkeypatch.delenv("VMRT_NO_CACHE", raising=False)
    else:
        monkeypatch.setenv("VMRT_NO_CACHE", "1")
    good = compile_mlir(program).read_bytes()
    d = parse_module(good)
    labels = vmrt.BytecodeModule(vmrt.Instance(), good)
    sites = list(_sites(good))
    assert {s[3] for s in sites} == ops
    for pos, k, pc, mnemonic, value in sites:
        for bad_value in _out_of_range(d, mnemonic, value):
            bad = good[:pos] + struct.pack("<I", bad_value) + good[pos + 4:]
            with pytest.raises(vmrt.VerifyError) as ei:
                vmrt.BytecodeModule(vmrt.Instance(), bad)
            msg = str(ei.value)
            assert "out of range" in msg, msg
            assert msg.endswith(f"; at {labels.function_label(k)}+{pc:08X}"), msg


@pytest.mark.parametrize("program,op", [("data.mlir", "const.ref.rodata"),
                                        ("data.mlir", "global.store.i32"),
                                        ("app.mlir", "call"), ("app.mlir", "import.resolved")])
def test_iree_refuses_the_same_modules_at_load(compile_mlir, tmp_path, program, op):
    # the oracle: iree-run-module's verifier refuses them while loading the module
    # (for an out-of-range list.alloc type IREE loads the module, and an internal call's
    # out-of-range ordinal crashes it: vmrt refuses both at load)
    good = compile_mlir(program).read_bytes()
    d = parse_module(good)
    pos, k, pc, mnemonic, value = next(s for s in _sites(good) if s[3] == op)
    bad = good[:pos] + struct.pack("<I", _out_of_range(d, mnemonic, value)[0]) + good[pos + 4:]
    path = tmp_path / "bad.vmfb"
    path.write_bytes(bad)
    rc, out, err = iree_run(f"--module={path}", f"--function={d.exports[0].local_name}")
    assert rc == 1 and out == ""
    assert "out of range" in err and f"+{pc:08X}; loading bytecode module" in err
    with pytest.raises(vmrt.VerifyError) as ei:
        vmrt.BytecodeModule(vmrt.Instance(), bad)
    assert str(ei.value).endswith(f"+{pc:08X}")




def test_call_arguments_against_the_cconv_are_checked_at_load(tmp_path, monkeypatch):
    # g calls triple (cconv 0i_i) with one argument and one result; two arguments
    # and no result (the same bytes) are refused at load, though g is never called
    from tests.vmrt.vmrt_testutil import assemble, caller_module
    monkeypatch.setenv("VMRT_NO_CACHE", "1")
    good = assemble(caller_module("m"), tmp_path / "m.vmfb").read_bytes()
    d = parse_module(good)
    k = next(e.internal_ordinal for e in d.exports if e.local_name == "g")
    fd = d.functions[k]
    body = bytes(d.bytecode[fd.bytecode_offset:fd.bytecode_offset + fd.bytecode_length])
    call = decode_function(body, "g", fd.i32_register_count, fd.ref_register_count)[0].instrs[0]
    assert call.mnemonic == "call" and call.fields[1:] == ((0,), (0,))
    # opcode, u32 callee, then the lists: (count u16, registers u16 ...) each
    pos = d.bytecode_span[0] + fd.bytecode_offset + call.pc + 5
    assert good[pos:pos + 8] == b"\x01\x00\x00\x00\x01\x00\x00\x00"
    bad = good[:pos] + b"\x02\x00\x00\x00\x00\x00\x00\x00" + good[pos + 8:]
    with pytest.raises(vmrt.VerifyError) as ei:
        vmrt.BytecodeModule(vmrt.Instance(), bad)
    assert str(ei.value) == ("INVALID_ARGUMENT; argument count mismatch: 2 registers for "
                             f"cconv 'i'; at m.g+{call.pc:08X}")
