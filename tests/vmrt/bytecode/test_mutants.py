"""Register mutants of real compiled programs: every register operand of
every instruction is swapped for other registers of the function, and each
mutant either loads and runs, or fails with a VmError — never a Python
exception from the translated code (the issue-16 finding: ``INTERNAL;
TypeError: unsupported operand type(s) for ^: 'float' and 'int'; at
hs.poly``).  Where an integer instruction reads a float register (or the
reverse), vmrt reinterprets the bits as IREE's untyped registers do, and
prints what iree-run-module prints.
"""
from __future__ import annotations

import struct

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, vmrt_run
from vmrt import VmError
from vmrt.bytecode.decoder import REF_BIT, decode_function
from vmrt.bytecode.format import parse_module
from vmrt.vm.module import cconv_fragments

pytestmark = needs_iree

PROGRAMS = ("floats.mlir", "ints.mlir", "control.mlir", "f64.mlir")
FLAGS = {"f64.mlir": ("--iree-execution-model=host-only", "--iree-input-demote-f64-to-f32=false")}
ARGS = {"i": 3, "I": 3, "f": 1.5, "F": 1.5, "r": None}


def _run_all(data: bytes) -> None:
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule(inst, data)
    ctx = vmrt.Context(inst, [mod], budget=20_000)
    for e in mod.exports:
        codes = cconv_fragments(e.cconv)[0]
        if e.name.startswith("__") or "C" in codes:
            continue
        ctx.invoke(f"{mod.name}.{e.name}", [ARGS[c] for c in codes])


def _mutants(data: bytes) -> list[tuple[str, bytes]]:
    """(label, bytes) of each mutant: one register operand of one
    instruction replaced by another register of the same function."""
    d = parse_module(data)
    code_at = bytes(data).find(bytes(d.bytecode))
    out = []
    for k, fd in enumerate(d.functions):
        lo = fd.bytecode_offset
        body = bytes(d.bytecode[lo:lo + fd.bytecode_length])
        blocks = decode_function(body, f"f{k}", fd.i32_register_count, fd.ref_register_count)
        n = fd.i32_register_count
        instrs = [ins for b in blocks for ins in b.instrs]
        ends = [ins.pc for ins in instrs[1:]] + [len(body)]
        for ins, end in zip(instrs, ends):
            regs = [v for v, df in zip(ins.fields, ins.defs)
                    if df[1] == "register" and df[2] in ("i32", "i64", "f32", "f64")]
            for v in regs:
                if v & REF_BIT:
                    continue
                at = body.find(struct.pack("<H", v), ins.pc + 1, end)
                if at < 0:
                    continue
                step = 2 if v % 2 == 0 else 1
                for w in range(v % step, n, step):
                    if w == v:
                        continue
                    pos = code_at + lo + at
                    mutant = data[:pos] + struct.pack("<H", w) + data[pos + 2:]
                    out.append((f"f{k}+{ins.pc:#x} {ins.mnemonic} i{v}->i{w}", mutant))
    return out


@pytest.mark.parametrize("program", PROGRAMS)
def test_register_mutants_run_or_fail_with_a_vm_error(compile_mlir, program):
    data = compile_mlir(program, *FLAGS.get(program, ("--iree-execution-model=host-only",))) \
        .read_bytes()
    _run_all(data)                                  # the original is accepted
    mutants = _mutants(data)
    assert len(mutants) > 20
    ran = 0
    for label, mutant in mutants:
        try:
            _run_all(mutant)
            ran += 1
        except VmError as e:
            assert "TypeError" not in str(e) and "AttributeError" not in str(e), \
                f"{label}: {e}"
    assert ran, "no mutant ran at all"


MIX = """
func.func @mix(%x: f32, %a: i32, %b: i32) -> (f32, i32) {
  %0 = arith.mulf %x, %x : f32
  %1 = arith.xori %a, %b : i32
  return %0, %1 : f32, i32
}
"""


def test_an_integer_op_on_a_float_register_reads_its_bits_as_iree_does(compile_mlir, tmp_path):
    data = compile_mlir(MIX, name="mix").read_bytes()
    d = parse_module(data)
    k = next(e.internal_ordinal for e in d.exports if e.local_name == "mix")
    fd = d.functions[k]
    lo = fd.bytecode_offset
    body = bytes(d.bytecode[lo:lo + fd.bytecode_length])
    code_at = bytes(data).find(bytes(d.bytecode))
    blocks = decode_function(body, "mix", fd.i32_register_count, fd.ref_register_count)
    instrs = [ins for b in blocks for ins in b.instrs]
    mul = next(ins for ins in instrs if ins.mnemonic == "mul.f32")
    xor = next(ins for ins in instrs if ins.mnemonic == "xor.i32")
    product = mul.fields[-1]
    # xor.i32's first operand (right after its opcode) now names the f32 product
    pos = code_at + lo + xor.pc + 1
    bad = tmp_path / "mix_mutant.vmfb"
    bad.write_bytes(data[:pos] + struct.pack("<H", product) + data[pos + 2:])
    args = (f"--module={bad}", "--function=mix", "--input=1.5", "--input=7", "--input=3")
    rc, out, err = vmrt_run(*args)
    assert rc == 0, err
    assert "TypeError" not in err
    irc, iout, _ = iree_run(*args)
    assert (rc, out) == (irc, iout)
    bits = struct.unpack("<i", struct.pack("<f", 2.25))[0]
    assert f"i32={bits ^ 3}" in out      # the bits of 1.5f * 1.5f, xor 3
