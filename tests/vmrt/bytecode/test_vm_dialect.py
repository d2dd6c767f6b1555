"""Hand-written VM-dialect programs: ops the MLIR lowering rarely emits,
compared with iree-run-module, and variadic imports served by Python."""
from __future__ import annotations

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import iree_run, needs_iree, status_head, vmrt_run
from vmrt import NativeModule, export

pytestmark = needs_iree

VM = ("--compile-mode=vm",)
CASES = [("sw64", "1"), ("sw64", "2"), ("sw64", "-1"), ("sw32", "0"), ("sw32", "2"),
         ("sw32", "3"), ("sw32", "-1"), ("sel64", "0", "5000000000", "-3"),
         ("sel64", "1", "5000000000", "-3"), ("fops", "5.5", "2"), ("fops", "-2.5", "nan"),
         ("fops", "nan", "1"), ("fops", "3e9", "1"), ("fops", "-1.5", "0"),
         ("fops", "2.5", "-7.25"), ("iops", "-5", "33"), ("iops", "-2147483648", "-1"),
         ("iops", "0", "3")] + \
        [("bufops", str(n)) for n in (0, 3, 4, 8, 15, 16, -100000000)] + \
        [("hash", str(n)) for n in (0, 1, 7, 8, 11, 12)] + \
        [("refops", "0"), ("refops", "1"), ("listref", "0"), ("listref", "1"), ("listref", "2")]


CASES2 = [("fmath", a, b) for a, b in (("0.5", "2"), ("2", "-1.5"), ("-1", "3"), ("0", "0"),
                                      ("10", "0.5"), ("100", "1e-3"), ("nan", "0"),
                                      ("-0.5", "2.5"), ("1.25", "-3"), ("-3", "0.5"),
                                      ("-inf", "2"))] + \
    [("fcmp", a, b) for a, b in (("1", "2"), ("nan", "1"), ("2", "2"), ("3", "nan"),
                                 ("-0", "0"))] + \
    [("fconv", a, b) for a, b in (("3.5", "-7"), ("-2.5", "9223372036854775807"),
                                  ("1e20", "-1"), ("-1e20", "5"), ("1.8e19", "0"), ("nan", "0"),
                                  ("-inf", "0"), ("inf", "0"), ("-9.3e18", "0"),
                                  ("9.3e18", "0"), ("5e9", "123456789"))] + \
    [("bufwidths", a, b) for a, b in (("300", "1.5"), ("-1", "-0"),
                                      ("81985529216486895", "3e38"), ("65535", "nan"))] + \
    [("lists", "5000000000", "2.5"), ("lists", "-3", "-0.125"), ("globref", "3"),
     ("globref", "9"), ("globref", "10")] + \
    [("f64math", a, b) for a, b in (("5.5", "2"), ("-3.7", "0.5"), ("1e300", "-1e300"),
                                    ("nan", "1"), ("1.8e19", "nan"), ("-1e30", "0"),
                                    ("9e18", "0"))]


@pytest.mark.parametrize("case", CASES2, ids=["-".join(c) for c in CASES2])
def test_more_vm_ops_match_iree(compile_mlir, case):
    vmfb = compile_mlir("vmops2.mlir", *VM)
    fn, *inputs = case
    args = [f"--module={vmfb}", f"--function={fn}", *[f"--input={i}" for i in inputs]]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref)
    if rc:
        assert status_head(err) == status_head(err_ref)


@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_vm_ops_match_iree(compile_mlir, case):
    vmfb = compile_mlir("vmops.mlir", *VM)
    fn, *inputs = case
    args = [f"--module={vmfb}", f"--function={fn}", *[f"--input={i}" for i in inputs]]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref)


def test_negative_buffer_offset_is_out_of_bounds(compile_mlir):
    # IREE's bounds check overflows for offset -1 (offset + length wraps to 0)
    # and reads the byte before the buffer; vmrt reports OUT_OF_RANGE
    vmfb = compile_mlir("vmops.mlir", *VM)
    args = [f"--module={vmfb}", "--function=bufops", "--input=-1"]
    assert iree_run(*args)[0] == 0
    rc, out, err = vmrt_run(*args)
    assert rc == 1 and err.startswith(
        "OUT_OF_RANGE; out-of-bounds access detected (offset=18446744073709551615, length=1, "
        "alignment=1, buffer length=16)")


def test_switch_i64_full_width_differs_from_iree(compile_mlir):
    # IREE's switch.i64 reads only 32 bits of the chosen case (a known bug:
    # 5000000000 -> 705032704); vmrt returns the full value (see README)
    vmfb = compile_mlir("vmops.mlir", *VM)
    args = [f"--module={vmfb}", "--function=sw64", "--input=0"]
    assert iree_run(*args)[1] == "EXEC @sw64\nresult[0]: i64=705032704\n"
    assert vmrt_run(*args)[1] == "EXEC @sw64\nresult[0]: i64=5000000000\n"


class Ext(NativeModule):
    name = "ext"

    @export("sum", "0iCiD_i")
    def sum(self, state, base, xs):
        return base + sum(xs)

    @export("pairs", "0rCiID_I")
    def pairs(self, state, tag, xs):
        assert bytes(tag.data) == b"pairs"
        return sum(a * b for a, b in xs)


def test_variadic_imports(compile_mlir):
    inst = vmrt.Instance()
    prog = vmrt.BytecodeModule.load(inst, compile_mlir("variadic.mlir", *VM))
    assert [i.cconv for i in prog.imports] == ["0iCiD_i", "0rCiID_I"]
    with vmrt.Context(inst, [Ext(), prog]) as ctx:
        assert ctx.invoke("var.vsum", [3, 4]) == [7 + 3 + 4 + 3]
        assert ctx.invoke("var.vnone") == [7]
        assert ctx.invoke("var.vpairs", [5, 10**10]) == [5 * 10**10 + 2 * 10**10]


@pytest.mark.parametrize("fn", ["t8", "t16", "e8", "e16", "e16u"])
@pytest.mark.parametrize("value", ["200", "-56", "70000", "-1", "32768"])
def test_narrowing_ops_match_iree(tmp_path_factory, fn, value):
    from tests.vmrt.vmrt_testutil import PROGRAMS, assemble
    out = tmp_path_factory.getbasetemp() / "narrow.vmfb"
    if not out.exists():
        assemble((PROGRAMS / "narrow.vmasm").read_text(), out)
    args = [f"--module={out}", f"--function={fn}", f"--input={value}"]
    assert vmrt_run(*args) == iree_run(*args)[:2] + ("",)


@pytest.mark.parametrize("n", ["0", "1", "2", "3", "7"])
def test_branch_operand_copies_are_sequential(compile_mlir, n):
    """The compiler rotates loop-carried registers through a scratch register
    (``i4->i7, i3->i4, i5->i3, i7->i5``) and relies on the copies happening
    one after another in list order, as IREE's VM does them."""
    vmfb = compile_mlir("branch_swap.mlir", *VM)
    args = (f"--module={vmfb}", "--function=run", f"--input={n}")
    expected = iree_run(*args)
    assert expected[0] == 0
    assert vmrt_run(*args) == expected
