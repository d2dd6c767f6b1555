"""vmrt run vs the pip iree-run-module on programs compiled during the test
run: stdout must be byte-identical, exit codes equal, and on failure the
status code and message equal."""
from __future__ import annotations

import pytest

from tests.vmrt.vmrt_testutil import iree_run, needs_iree, status_head, vmrt_run

pytestmark = needs_iree

CASES = {
    "ints.mlir": [
        ("add32", "2147483647", "1"), ("sub32", "-2147483648", "1"),
        ("mul32", "65537", "65537"), ("mul32", "-7", "123456789"),
        ("divrem32", "-7", "2"), ("divrem32", "7", "-2"), ("divrem32", "-2147483648", "3"),
        ("divrem32", "100", "7"), ("divrem32", "-1", "3"),
        ("bits32", "-12345", "3"), ("bits32", "1", "33"), ("bits32", "-1", "-1"),
        ("bits32", "0x7f00ff00", "0x0ff0"), ("bits32", "-2147483648", "31"),
        ("cmp32", "-1", "1"), ("cmp32", "5", "5"), ("cmp32", "7", "-9"),
        ("minmax32", "-1", "1"), ("minmax32", "3", "2"),
        ("select32", "0", "4", "5"), ("select32", "7", "4", "5"),
        ("misc32", "0"), ("misc32", "-2147483648"), ("misc32", "300"), ("misc32", "1"),
        ("ext", "-5"), ("ext", "2147483647"), ("trunc", "5000000000"), ("trunc", "-1"),
        ("arith64", "9223372036854775807", "1"), ("arith64", "-3", "4000000000"),
        ("arith64", "123456789012", "-98765"),
        ("divrem64", "-7", "2"), ("divrem64", "-9223372036854775808", "7"),
        ("divrem64", "1000000000000", "-3"),
        ("shift64", "-1", "65"), ("shift64", "1", "63"), ("shift64", "-5", "3"),
        ("shift64", "0x123456789", "100"),
        # C strtol input parsing: hex, octal, trailing junk, i32 wrap of wide values
        ("add32", "0x10", "010"), ("add32", "7abc", "1"), ("add32", "4000000000", "0"),
    ],
    "floats.mlir": [
        ("arith", "1.5", "0.25"), ("arith", "5.5", "2"), ("arith", "1", "0"),
        ("arith", "-1", "0"), ("arith", "0", "0"), ("arith", "3e38", "10"),
        ("arith", "0.1", "0.2"), ("arith", "inf", "inf"), ("arith", "-nan", "1"),
        ("arith", "7", "-inf"), ("arith", "1e-45", "3"),
        ("unary", "2.5"), ("unary", "-2.5"), ("unary", "3.7"), ("unary", "-0.4"),
        ("unary", "nan"), ("unary", "-inf"), ("unary", "0.5"), ("unary", "-1.5"),
        ("unary", "8388609.0"),
        ("transcend", "2"), ("transcend", "0.5"), ("transcend", "-1"),
        ("transcend", "100"), ("transcend", "nan"), ("transcend", "0"), ("transcend", "-0"),
        ("transcend", "inf"), ("transcend", "-inf"), ("transcend", "1e-3"),
        ("cmp", "1", "2"), ("cmp", "nan", "1"), ("cmp", "2", "2"), ("cmp", "-0", "0"),
        ("conv", "2.5", "-3"), ("conv", "-2.5", "-1"), ("conv", "3e9", "7"),
        ("conv", "nan", "7"), ("conv", "0.49999997", "0"), ("conv", "5e9", "-2147483648"),
        ("minmax", "nan", "1"), ("minmax", "1", "nan"), ("minmax", "-0", "0"),
        ("minmax", "2", "-3"),
        ("bits", "1.5"), ("bits", "-0"), ("bits", "nan"),
        ("fma", "1.1", "2.3", "0.7"), ("poly", "1.7"), ("poly", "-1e20"),
        # C strtod input parsing: hex floats, overflow to inf, trailing junk
        ("poly", "0x1p3"), ("poly", "-0x.8"), ("poly", "1e400"), ("poly", "2.5xyz"),
    ],
    "control.mlir": [
        ("sumsq", "1000"), ("sumsq", "0"), ("sumsq", "-5"), ("collatz", "27"),
        ("collatz", "1"), ("classify", "0"), ("classify", "1"), ("classify", "2"),
        ("classify", "5"), ("classify", "6"), ("classify", "-1"),
        ("calls", "5000000000", "-3", "1.5"),
        ("calls", "-9223372036854775807", "9223372036854775807", "-0.1"),
        ("nested", "40"), ("checked", "-3"), ("checked", "3"), ("fsum", "500"),
    ],
    "data.mlir": [
        ("bump", "5"), ("last_len",), ("bufsum", "100"), ("bufsum", "0"),
        ("bytes", "0"), ("bytes", "2"), ("bytes", "3"), ("bytes", "8"), ("bytes", "9"),
        ("pack", "-1", "5000000000", "2.5"), ("listsum", "10"),
        ("oob", "1"), ("oob", "2"), ("oob", "-1"), ("nested", "4"),
    ],
    "f64.mlir": [
        ("f64ops", "1.5", "0.1"), ("f64ops", "-2", "0"), ("f64ops", "1e300", "1e10"),
        ("f64ops", "2.5", "3"), ("f64ops", "-1", "3"), ("f64ops", "0", "0"),
        ("conv", "1.5"), ("conv", "-3.25"), ("conv", "1e-30"),
    ],
}
FLAGS = {"f64.mlir": ("--iree-execution-model=host-only", "--iree-input-demote-f64-to-f32=false")}

PARAMS = [pytest.param(prog, case, id=f"{prog[:-5]}-{'-'.join(case)}")
          for prog, cases in CASES.items() for case in cases]


@pytest.mark.parametrize("program,case", PARAMS)
def test_matches_iree_run_module(compile_mlir, program, case):
    vmfb = compile_mlir(program, *FLAGS.get(program, ()))
    fn, *inputs = case
    args = [f"--module={vmfb}", f"--function={fn}", *[f"--input={x}" for x in inputs]]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert out == out_ref
    assert rc == rc_ref
    if rc_ref != 0:
        assert status_head(err) == status_head(err_ref)
        assert len(err.strip().splitlines()) == 1


ERROR_CASES = [
    # (program, args) — errors raised before or around the call
    ("ints.mlir", ["--function=add32", "--input=1"]),                 # too few inputs
    ("ints.mlir", ["--function=add32", "--input=1", "--input=2", "--input=3"]),
    ("ints.mlir", ["--function=add32", "--input=x", "--input=2"]),
    ("floats.mlir", ["--function=poly", "--input=f32=2.5"]),
    ("ints.mlir", ["--function=nope"]),
    ("ints.mlir", []),                                                # ambiguous function
    ("ints.mlir", ["--function=add32", "--input=", "--input=2"]),
]


@pytest.mark.parametrize("program,args", ERROR_CASES,
                         ids=lambda v: v if isinstance(v, str) else " ".join(v) or "none")
def test_errors_match(compile_mlir, program, args):
    vmfb = compile_mlir(program)
    full = [f"--module={vmfb}", *args]
    rc_ref, out_ref, err_ref = iree_run(*full)
    rc, out, err = vmrt_run(*full)
    assert (rc, out) == (rc_ref, out_ref)
    assert status_head(err) == status_head(err_ref)


def test_single_export_needs_no_function_flag(compile_mlir):
    vmfb = compile_mlir("func.func @only(%a: i32) -> i32 {\n"
                        "  %0 = arith.addi %a, %a : i32\n  return %0 : i32\n}\n", name="only")
    args = [f"--module={vmfb}", "--input=21"]
    assert vmrt_run(*args) == iree_run(*args)[:2] + ("",)


def test_module_from_stdin(compile_mlir):
    vmfb = compile_mlir("control.mlir")
    data = vmfb.read_bytes()
    from tests.vmrt.vmrt_testutil import vmrt_subprocess
    args = ["--module=-", "--function=collatz", "--input=27"]
    ref = iree_run(*args, stdin=data)
    got = vmrt_subprocess("run", *args, stdin=data)
    assert got[:2] == ref[:2]


def test_plain_and_zip_framing_agree(compile_mlir):
    zipped = compile_mlir("control.mlir")
    plain = compile_mlir("control.mlir", "--iree-execution-model=host-only",
                         "--iree-vm-emit-polyglot-zip=false")
    assert zipped.read_bytes()[:4] == b"PK\x03\x04"
    assert plain.read_bytes()[:4] != b"PK\x03\x04"
    for v in (zipped, plain):
        args = [f"--module={v}", "--function=sumsq", "--input=77"]
        assert vmrt_run(*args)[:2] == iree_run(*args)[:2]
