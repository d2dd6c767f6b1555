"""i64 values in pairs of 32-bit registers (regkinds.py, codegen.py): IREE's
VM reads an i64 from two registers whatever wrote them, and runs a branch's
block-argument copies one after another.  iree-compile orders some copy
lists as if they ran all at once (an scf.for over i64 with i32 iter_args):
the loop counter is then assembled from the high half of a constant that an
earlier copy overwrote and an i32 argument.  Whatever IREE computes from
that bytecode, vmrt must too (iree-run-module is the oracle)."""
from __future__ import annotations

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, vmrt_run

pytestmark = needs_iree

HALVES = """
func.func @halves(%n: i64, %s0: i32, %s1: i32) -> (i32, i32, i32, i32) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %k1 = arith.constant 7 : i32
  %r:4 = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %s0, %a1 = %s1, %a2 = %s0, %a3 = %s0)
      -> (i32, i32, i32, i32) : i64 {
    %v = arith.shrui %a2, %k1 : i32
    scf.yield %v, %v, %v, %v : i32, i32, i32, i32
  }
  return %r#0, %r#1, %r#2, %r#3 : i32, i32, i32, i32
}
func.func @counter(%n: i64, %s0: i32, %s1: i32) -> (i32, i32, i32, i32) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %k0 = arith.constant 13 : i32
  %k2 = arith.constant 3 : i32
  %r:4 = scf.for %i = %c0 to %n step %c1 iter_args(%a0 = %k0, %a1 = %k2, %a2 = %s1, %a3 = %k0)
      -> (i32, i32, i32, i32) : i64 {
    %ii = arith.trunci %i : i64 to i32
    %p = arith.addi %a1, %k2 : i32
    %q = arith.subi %a0, %ii : i32
    scf.yield %q, %q, %p, %p : i32, i32, i32, i32
  }
  return %r#0, %r#1, %r#2, %r#3 : i32, i32, i32, i32
}
func.func @pairs(%n: i64, %x: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> i64 : i64 {
    %m = arith.muli %a, %c7 : i64
    %s = arith.addi %m, %i : i64
    scf.yield %s : i64
  }
  return %r : i64
}
"""


@pytest.mark.parametrize("fn,n,s0,s1", [
    # the counter's halves: s0 (low) and s1 (high): 4294967289 here, past n
    ("halves", 5, -7, 0), ("halves", 0, -1, 0),
    # a counter of 3: the loop runs
    ("halves", 1000, 3, 0),
    # the counter's halves: the constants 13 and 3 (12884901901), past n
    ("counter", 1000, 3, -7), ("counter", 0, -3, 7)])
def test_i64_registers_assembled_from_halves_read_as_iree_does(compile_mlir, fn, n, s0, s1):
    vmfb = compile_mlir(HALVES, name="halves")
    args = (f"--module={vmfb}", f"--function={fn}", f"--input={n}", f"--input={s0}",
            f"--input={s1}")
    rc, out, err = iree_run(*args)
    assert rc == 0, err
    assert vmrt_run(*args) == (0, out, "")


def test_pairs_written_as_pairs_are_read_as_they_are(compile_mlir):
    """Only a function whose copies split a pair pays for rebuilding it."""
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), compile_mlir(HALVES, name="halves"))
    src = {e.name: mod.disassemble_source(e.ordinal) for e in mod.exports}
    assert "PAIR(" in src["halves"] and "PAIR(" in src["counter"]
    assert "PAIR(" not in src["pairs"] and "HIGH(" not in src["pairs"]
