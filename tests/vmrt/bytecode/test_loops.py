"""Loops in translated code (vmrt/bytecode/translate/layout.py: superblocks, inner
loops, budget charged per run of iterations): results computed in the test,
the instructions counted against the trace (one line per instruction run,
the trace translation charging every block as it goes), and the budget
exhausted at exactly that count."""
from __future__ import annotations

import io

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, vmrt_run

pytestmark = needs_iree

#: a register-only loop body (charged per run of iterations) nested in another
NESTED = """
func.func @tri(%n: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : i64
  %z = arith.constant 1 : i64
  %nn = arith.index_cast %n : i64 to index
  %r = scf.for %i = %c0 to %nn step %c1 iter_args(%acc = %z) -> (i64) {
    %s = scf.for %j = %c0 to %i step %c1 iter_args(%a = %acc) -> (i64) {
      %jj = arith.index_cast %j : index to i64
      %m = arith.muli %a, %c7 : i64
      %x = arith.xori %m, %jj : i64
      scf.yield %x : i64
    }
    scf.yield %s : i64
  }
  return %r : i64
}
"""

#: a loop body with a global store (charged block by block)
GLOBAL = """
util.global private mutable @acc : i64 = 0 : i64
func.func @count(%n: i64) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nn = arith.index_cast %n : i64 to index
  scf.for %i = %c0 to %nn step %c1 {
    %ii = arith.index_cast %i : index to i64
    %v = util.global.load @acc : i64
    %w = arith.addi %v, %ii : i64
    util.global.store %w, @acc : i64
  }
  %r = util.global.load @acc : i64
  return %r : i64
}
"""

#: block arguments passed around (fib's swap, a rotation of three): the
#: copies at the back edge that the op computing them can make itself, and
#: those it cannot (a value still read after its copy)
SWAPS = """
func.func @fib(%n: i64) -> (i64, i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0, %b = %c1, %k = %c0)
      -> (i64, i64, i64) : i64 {
    %s = arith.addi %a, %b : i64
    %t = arith.xori %s, %i : i64
    %u = arith.addi %k, %t : i64
    scf.yield %b, %t, %u : i64, i64, i64
  }
  return %r#0, %r#2 : i64, i64
}
func.func @rot(%n: i64) -> (i64, i64, i64) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c5 = arith.constant 5 : i64
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %c1, %y = %c5, %z = %c0)
      -> (i64, i64, i64) : i64 {
    %m = arith.muli %x, %c5 : i64
    %p = arith.addi %m, %i : i64
    scf.yield %y, %z, %p : i64, i64, i64
  }
  return %r#0, %r#1, %r#2 : i64, i64, i64
}
"""


def _w64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _fib(n: int) -> list[int]:
    a, b, k = 0, 1, 0
    for i in range(n):
        t = _w64(a + b) ^ i
        a, b, k = b, t, _w64(k + t)
    return [a, k]


def _rot(n: int) -> list[int]:
    x, y, z = 1, 5, 0
    for i in range(n):
        x, y, z = y, z, _w64(x * 5 + i)
    return [x, y, z]


def _tri(n: int) -> int:
    acc = 1
    for i in range(n):
        for j in range(i):
            acc = ((acc * 7) & (2**64 - 1)) ^ j
    return acc - 2**64 if acc >> 63 else acc


def _run(vmfb, fn: str, n: int, args: list | None = None, **kw) -> tuple[list, int]:
    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, vmfb)
    with vmrt.Context(inst, [mod], **kw) as ctx:
        res = ctx.invoke(f"module.{fn}", [n, *(args or [])])
        return res, ctx.limits.executed


def _traced_count(vmfb, fn: str, n: int, args: list | None = None) -> int:
    out = io.StringIO()
    _run(vmfb, fn, n, args, trace=out)
    return len(out.getvalue().splitlines())


@pytest.mark.parametrize("src,fn,n,expect", [
    (NESTED, "tri", 0, _tri(0)), (NESTED, "tri", 3, _tri(3)), (NESTED, "tri", 40, _tri(40)),
    (GLOBAL, "count", 0, 0), (GLOBAL, "count", 9, 36)])
def test_loops_compute_count_and_exhaust_exactly(compile_mlir, src, fn, n, expect):
    vmfb = compile_mlir(src, name=fn)
    res, executed = _run(vmfb, fn, n)
    assert res == [expect]
    assert executed == _traced_count(vmfb, fn, n)
    assert _run(vmfb, fn, n, budget=executed)[0] == [expect]
    with pytest.raises(vmrt.BudgetExceeded) as ei:
        _run(vmfb, fn, n, budget=executed - 1)
    assert f"instruction budget of {executed - 1} exhausted" in str(ei.value)


@pytest.mark.parametrize("fn,oracle", [("fib", _fib), ("rot", _rot)])
def test_loops_passing_values_around(compile_mlir, fn, oracle):
    vmfb = compile_mlir(SWAPS, name="swaps")
    for n in (0, 1, 2, 3, 10, 100, 200):
        res, executed = _run(vmfb, fn, n)
        assert res == oracle(n)
        assert executed == _traced_count(vmfb, fn, n)
        traced = io.StringIO()
        assert _run(vmfb, fn, n, trace=traced)[0] == res


@pytest.mark.parametrize("src,fn,n", [(SWAPS, "fib", 7), (SWAPS, "rot", 5), (NESTED, "tri", 6)])
def test_every_budget_short_of_the_count_stops(compile_mlir, src, fn, n):
    """Counted loops (run by a Python range) charge exactly what runs: any
    smaller budget stops the program, the exact one does not."""
    vmfb = compile_mlir(src, name=fn)
    res, executed = _run(vmfb, fn, n)
    assert executed == _traced_count(vmfb, fn, n)
    assert _run(vmfb, fn, n, budget=executed) == (res, executed)
    for budget in range(1, executed):
        with pytest.raises(vmrt.BudgetExceeded):
            _run(vmfb, fn, n, budget=budget)


def test_a_long_loop_refills_and_stops_at_its_budget(compile_mlir):
    # more instructions than one refill of the budget counter (ExecutionLimits.CHUNK)
    vmfb = compile_mlir(NESTED, name="tri")
    n = 400
    res, executed = _run(vmfb, "tri", n)
    assert res == [_tri(n)] and executed > 2 * vmrt.ExecutionLimits.CHUNK
    assert _run(vmfb, "tri", n, budget=executed)[0] == [_tri(n)]
    with pytest.raises(vmrt.BudgetExceeded):
        _run(vmfb, "tri", n, budget=executed - 1)


#: counted loops whose values wrap: multiply, add, subtract, shift, and, or,
#: xor, not (i64 and i32), read after the loop by signed ops (division,
#: arithmetic shift, compare, conversion); and one whose product is also read
#: by a signed shift inside the loop
WRAPPING = """
func.func @mix(%n: i64, %seed: i64) -> (i64, i64, i64, i1, f32) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %c13 = arith.constant 13 : i64
  %cm = arith.constant -6148914691236517206 : i64
  %k = arith.constant 1103515245 : i64
  %ones = arith.constant -1 : i64
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %seed, %b = %c1, %c = %c0)
      -> (i64, i64, i64) : i64 {
    %m = arith.muli %a, %k : i64
    %p = arith.addi %m, %i : i64
    %s = arith.shli %b, %c13 : i64
    %q = arith.subi %s, %p : i64
    %x = arith.xori %q, %cm : i64
    %o = arith.ori %x, %i : i64
    %nb = arith.xori %o, %ones : i64
    %an = arith.andi %nb, %m : i64
    %cc = arith.subi %c, %an : i64
    scf.yield %p, %nb, %cc : i64, i64, i64
  }
  %d = arith.divsi %r#0, %c3 : i64
  %sh = arith.shrsi %r#1, %c3 : i64
  %lt = arith.cmpi slt, %r#2, %c0 : i64
  %f = arith.sitofp %r#2 : i64 to f32
  return %d, %sh, %r#2, %lt, %f : i64, i64, i64, i1, f32
}
func.func @narrow(%n: i64, %seed: i32) -> (i32, i32, i1) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %k = arith.constant 69069 : i32
  %c5 = arith.constant 5 : i32
  %z = arith.constant 0 : i32
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %seed, %b = %z) -> (i32, i32) : i64 {
    %ii = arith.trunci %i : i64 to i32
    %m = arith.muli %a, %k : i32
    %p = arith.addi %m, %ii : i32
    %s = arith.shli %p, %c5 : i32
    %q = arith.subi %b, %s : i32
    scf.yield %p, %q : i32, i32
  }
  %d = arith.divsi %r#1, %c5 : i32
  %lt = arith.cmpi slt, %r#0, %z : i32
  return %r#0, %d, %lt : i32, i32, i1
}
func.func @inside(%n: i64, %seed: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %c7 = arith.constant 7 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %seed) -> i64 : i64 {
    %m = arith.muli %a, %c7 : i64
    %s = arith.shrsi %m, %c3 : i64
    %y = arith.xori %m, %s : i64
    %z = arith.addi %y, %i : i64
    scf.yield %z : i64
  }
  return %r : i64
}
"""

_SEEDS = {"mix": (5, -5, -2**63, 2**63 - 1), "narrow": (7, -7, -2**31, 2**31 - 1),
          "inside": (3, -3, -2**63, 2**63 - 1)}


@pytest.mark.parametrize("fn", sorted(_SEEDS))
def test_wrapping_loops_match_iree(compile_mlir, fn):
    """Loop values that overflow give IREE's results at every length (the
    budget refills mid-loop at the longest), counted exactly."""
    vmfb = compile_mlir(WRAPPING, name="wrapping")
    for n in (0, 1, 2, 7, 300, 40_000):
        for seed in _SEEDS[fn]:
            args = (f"--module={vmfb}", f"--function={fn}", f"--input={n}", f"--input={seed}")
            rc, out, err = iree_run(*args)
            assert rc == 0, err
            assert vmrt_run(*args) == (0, out, ""), (n, seed)
    res, executed = _run(vmfb, fn, 300, args=[5])
    assert executed == _traced_count(vmfb, fn, 300, args=[5])
    with pytest.raises(vmrt.BudgetExceeded):
        _run(vmfb, fn, 300, args=[5], budget=executed - 1)


def test_wrapping_loops_mask_instead_of_checking_the_sign(compile_mlir):
    """In ``mix`` and ``narrow`` every wrapping op of the loop masks its
    result (no sign check inside the ``for``); in ``inside`` the product,
    read by a signed shift, keeps its check."""
    mod = vmrt.BytecodeModule.load(vmrt.Instance(), compile_mlir(WRAPPING, name="wrapping"))
    for e in mod.exports:
        src = mod.disassemble_source(e.ordinal)
        loop = src[src.index(" in range("):src.index(" = hi\n")]
        checks = loop.count(" < -9223372036854775808 or ") + loop.count(" < -2147483648 or ")
        masks = loop.count(") & 18446744073709551615\n") + loop.count(") & 4294967295\n")
        assert (checks, masks) == {"mix": (0, 5), "narrow": (1, 3), "inside": (2, 0)}[e.name], src


def test_modular_registers_follow_their_readers():
    """Which registers may hold values congruent to theirs (regfacts.py):
    those read only by modular ops or copies of the same width writing such
    registers; the counter never."""
    from vmrt.bytecode.translate.regfacts import modular_registers
    ops = [("mul.i64", "i4", ["i6", "i8"]),       # i4 = i6 * k
           ("xor.i64", "i10", ["i4", "i2"]),      # i10 = i4 ^ counter
           (None, "i6", ["i10"]),                 # back-edge copy i6 = i10
           ("add.i32", "i12", ["i12", "i14"])]    # i32 accumulator
    assert modular_registers(ops, ["i2", "i16"]) == {"i4": 64, "i6": 64, "i10": 64,
                                                     "i12": 32}
    signed = ops + [("shr.i64.s", "i18", ["i10"])]          # i10 read by a signed op
    assert modular_registers(signed, ["i2"]) == {"i12": 32}  # ... and so, through i6, i4
    mixed = ops + [("add.i32", "i20", ["i6", "i12"])]        # i6 read as i32
    assert modular_registers(mixed, ["i2"]) == {"i12": 32, "i20": 32}
    assert modular_registers(ops, ["i2", "i12"]) == {"i4": 64, "i6": 64, "i10": 64}
