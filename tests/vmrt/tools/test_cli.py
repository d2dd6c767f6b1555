"""The ``vmrt`` command line: flags, input grammar, output format, exit
codes, errors on one line; buffer views compared with iree-run-module."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tests.vmrt.vmrt_testutil import iree_run, needs_iree, status_head, vmrt_run, vmrt_subprocess
from vmrt.hal.buffer_view import BufferView, format_buffer_view, parse_buffer_view
from vmrt.tools.function_io import strtol
from vmrt.tools.module_specs import parse_module_spec, split_params

TID = """
func.func @f32_1(%a: tensor<?xf32>) -> tensor<?xf32> { return %a : tensor<?xf32> }
func.func @f32_2(%a: tensor<?x?xf32>) -> tensor<?x?xf32> { return %a : tensor<?x?xf32> }
func.func @f32_3(%a: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> { return %a : tensor<?x?x?xf32> }
func.func @i32_2(%a: tensor<?x?xi32>) -> tensor<?x?xi32> { return %a : tensor<?x?xi32> }
func.func @i8_1(%a: tensor<?xi8>) -> tensor<?xi8> { return %a : tensor<?xi8> }
func.func @i32_0(%a: tensor<i32>) -> tensor<i32> { return %a : tensor<i32> }
func.func @i64_1(%a: tensor<?xi64>) -> tensor<?xi64> { return %a : tensor<?xi64> }
func.func @u16_1(%a: tensor<?xui16>) -> tensor<?xui16> { return %a : tensor<?xui16> }
func.func @two(%a: tensor<?xf32>, %b: tensor<?xi32>) -> (tensor<?xi32>, tensor<?xf32>) {
  return %b, %a : tensor<?xi32>, tensor<?xf32>
}
"""
VMVX = ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx")


@pytest.fixture(scope="module")
def tid(compile_mlir):
    # identity functions: no HAL imports at all, so vmrt runs them as is
    return compile_mlir(TID, *VMVX, name="tid")


TENSOR_CASES = [
    ("f32_2", ["2x3xf32=[1 2 3][4 5 1e-10]"], []),
    ("i8_1", ["3xi8=-6 250 0xFF"], []),
    ("f32_1", ["3xf32=inf -inf nan"], []),
    ("f32_1", ["8xf32=2"], []),
    ("f32_1", ["4xf32=1,2,3,4"], []),
    ("i32_0", ["i32=5"], []),
    ("f32_3", ["2x2x2xf32=1.5"], []),
    ("f32_3", ["2x3x4xf32=" + " ".join(str(i * 0.25) for i in range(24))],
     ["--output_max_element_count=7"]),
    ("i64_1", ["2xi64"], []),
    ("i64_1", ["3xi64=-9223372036854775808 0 9223372036854775807"], []),
    ("i32_2", ["2x2xi32=[1 2][3 4]"], []),
    ("i32_2", ["2x3xi32=1 2 3 4 5 6"], ["--output_max_element_count=4"]),
    ("i32_2", ["3x2xi32=1 2 3 4 5 6"], ["--output_max_element_count=2"]),
    ("u16_1", ["3xui16=1 65535 7"], []),
    ("two", ["2xf32=0.5 -3", "3xi32=7 8 9"], []),
    ("f32_1", ["3xf32=1 2"], []),                       # underflow error
    ("f32_1", ["2xf32=1 2 3"], []),                     # overflow error
    ("f32_1", ["4"], []),                               # not a tensor spec
    ("f32_1", ["3xq32=1"], []),                         # unknown element type
]


@needs_iree
@pytest.mark.parametrize("fn,inputs,extra", TENSOR_CASES,
                         ids=[f"{c[0]}-{' '.join(c[1])}-{' '.join(c[2])}" for c in TENSOR_CASES])
def test_buffer_view_io_matches_iree(tid, fn, inputs, extra):
    args = [f"--module={tid}", f"--function={fn}", *[f"--input={i}" for i in inputs], *extra]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref)
    if rc:
        assert status_head(err).split(";")[0] == status_head(err_ref).split(";")[0]


@needs_iree
def test_npy_inputs_and_outputs(tid, tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    np.save(tmp_path / "a.npy", a)
    args = [f"--module={tid}", "--function=f32_2", f"--input=@{tmp_path / 'a.npy'}"]
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == iree_run(*args)[:2]
    out_npy = tmp_path / "o.npy"
    rc, out, err = vmrt_run(*args, f"--output=@{out_npy}")
    assert rc == 0 and out == "EXEC @f32_2\n"
    assert np.array_equal(np.load(out_npy), a)
    rc, out, _ = vmrt_run(*args, "--output=-")
    assert (rc, out) == iree_run(*args, "--output=-")[:2]
    rc, out, err = vmrt_run(*args, "--output=-", "--output=-")
    rc_ref, out_ref, err_ref = iree_run(*args, "--output=-", "--output=-")
    assert (rc, out) == (rc_ref, out_ref)
    assert status_head(err) == status_head(err_ref)
    # several arrays in one file: '@' reads the first, '+' continues the stream
    with open(tmp_path / "two.npy", "wb") as fh:
        np.save(fh, np.array([1.5, 2.5], np.float32))
        np.save(fh, np.array([7, 8, 9], np.int32))
    args = [f"--module={tid}", "--function=two", f"--input=@{tmp_path / 'two.npy'}",
            f"--input=+{tmp_path / 'two.npy'}"]
    assert vmrt_run(*args)[:2] == iree_run(*args)[:2]
    args = [f"--module={tid}", "--function=two", f"--input=*{tmp_path / 'two.npy'}"]
    assert vmrt_run(*args)[:2] == iree_run(*args)[:2]


def test_parse_examples_from_the_reference():
    assert format_buffer_view(parse_buffer_view("8xf32=2")) == "8xf32=2 2 2 2 2 2 2 2"
    assert format_buffer_view(parse_buffer_view("2x2xi32=[1 2][3 4]")) == "2x2xi32=[1 2][3 4]"
    assert format_buffer_view(parse_buffer_view("2xi32")) == "2xi32=0 0"
    assert format_buffer_view(parse_buffer_view("i32=5")) == "i32=5"
    assert parse_buffer_view("3xi8=-6 250 0xFF").array.tolist() == [-6, -6, -1]
    bv = BufferView(np.array([1e-10, np.inf, -0.0, 4.0], np.float32))
    assert format_buffer_view(bv) == "4xf32=1E-10 INF -0 4"


def test_strtol_and_specs():
    assert [strtol(s) for s in ("5", "-0x10", "010", "08", "7abc", "abc", " 12", "0x")] == \
        [5, -16, 8, 0, 7, None, 12, 0]
    assert strtol("99999999999999999999") == (1 << 63) - 1
    assert split_params("a=b&c&g=h") == (("a", "b"), ("c", ""), ("g", "h"))
    assert split_params("&x=1&") == (("x", "1"),)
    assert split_params("") == ()
    s = parse_module_spec("lib.so@create?k=v&q")
    assert (s.path, s.export, s.params, s.kind) == ("lib.so", "create", (("k", "v"), ("q", "")),
                                                    "native")
    assert parse_module_spec("m.py?debug=1").params == (("debug", "1"),)
    assert parse_module_spec("x.vmfb").kind == "bytecode"
    assert parse_module_spec("-").kind == "stdin"
    # IREE quirk kept for bytecode paths: '?' only counts after '@'
    assert parse_module_spec("dir/a?b.vmfb").path == "dir/a?b.vmfb"


def test_help_and_version():
    rc, out, err = vmrt_subprocess("--help")
    assert rc == 0 and "vmrt run" in out and "--module" in out and err == ""
    rc, out, err = vmrt_subprocess("run", "--help")
    assert rc == 0 and "--input" in out
    from elfkit import __version__
    rc, out, err = vmrt_subprocess("--version")
    assert (rc, out, err) == (0, f"vmrt {__version__}\n", "")
    exe = shutil.which("vmrt")
    if exe:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
        assert proc.stdout == f"vmrt {__version__}\n"


@pytest.mark.parametrize("argv,code", [
    (["run", "--bogus=1"], "INVALID_ARGUMENT; flag 'bogus' not recognized"),
    (["run", "--module"], "INVALID_ARGUMENT; flag 'module' needs a value (--module=VALUE)"),
    (["run"], "INVALID_ARGUMENT; no --module= specified"),
    (["run", "--module=/nonexistent.vmfb"],
     "NOT_FOUND; failed to open file '/nonexistent.vmfb'; loading bytecode module at "
     "'/nonexistent.vmfb'; loading modules and dependencies; creating run context"),
    (["run", "--module=x.vmfb", "--module_mode=weird"],
     "INVALID_ARGUMENT; unrecognized --module_mode= value 'weird'"),
    (["run", "--module=x.vmfb", "--output_max_element_count=abc"],
     "INVALID_ARGUMENT; flag --output_max_element_count expects an integer, got 'abc'"),
    (["frobnicate"], "INVALID_ARGUMENT; unknown command 'frobnicate' (try 'vmrt --help')"),
])
def test_cli_errors_are_one_line(argv, code):
    rc, out, err = vmrt_subprocess(*argv)
    assert rc == 1 and out == ""
    assert err == code + "\n"
    assert "Traceback" not in err


@needs_iree
def test_space_separated_flags_and_reserved_flags(compile_mlir, tmp_path):
    vmfb = compile_mlir("control.mlir")
    ref = iree_run(f"--module={vmfb}", "--function=collatz", "--input=27")
    got = vmrt_run("--module", str(vmfb), "--function", "collatz", "--input", "27",
                   "--device=local-sync", "--executable_plugin=plugin.sos",
                   "--trace_execution", "--print_statistics")
    assert got[:2] == ref[:2]
    # stderr has the execution trace only (a host-only program has no device statistics)
    trace = got[2].splitlines()
    assert trace and all(ln.startswith("[module.collatz+") for ln in trace)
    flagfile = tmp_path / "flags.txt"
    flagfile.write_text(f"--module={vmfb}\n--function=collatz\n# comment\n--input=27\n")
    assert vmrt_run(f"--flagfile={flagfile}") == ref[:2] + ("",)


@needs_iree
def test_console_script_output_matches_byte_for_byte(compile_mlir):
    vmfb = compile_mlir("data.mlir")
    args = [f"--module={vmfb}", "--function=pack", "--input=-1", "--input=5000000000",
            "--input=2.5"]
    rc, out, err = vmrt_subprocess("run", *args)
    assert (rc, out, err) == iree_run(*args)[:2] + ("",)


@needs_iree
def test_tensor_sample_transcripts(compile_mlir):
    """The dynamic/static samples' module against a host-only program."""
    from pathlib import Path

    import vmrt
    vmfb = compile_mlir("tensor_string.mlir")
    custom = Path(vmrt.__file__).parent / "samples" / "custom.py"
    rc, out, err = vmrt_subprocess("run", f"--module={custom}@create_tensor_module",
                                   f"--module={vmfb}", "--function=main",
                                   "--input=5xi8=0 1 2 3 4")
    assert (rc, out, err) == (0, "EXEC @main\nCREATE 5xi8=0 1 2 3 4\nPRINT 5xi8=0 1 2 3 4\n", "")
    rc, out, err = vmrt_subprocess("run", f"--module={custom}@create_tensor_module",
                                   f"--module={vmfb}", "--function=error")
    assert (rc, out) == (1, "EXEC @error\n")
    assert err.startswith("UNKNOWN; Forced failure; while invoking native function custom.error")
    assert err.count("\n") == 1


EXPECTED = [
    ("f32_1", "3xf32=1 2 3", ["3xf32=1 2 3.00005"], []),
    ("f32_1", "3xf32=1 2 3", ["3xf32=1 2.5 3.5"], []),
    ("f32_1", "3xf32=1 2 3", ["3xf32=1 2 3.5"], ["--expected_f32_threshold=1"]),
    ("f32_1", "3xf32=1 2 nan", ["3xf32=1 2 nan"], []),
    ("f32_1", "3xf32=1 2 3", ["(ignored)"], []),
    ("f32_1", "3xf32=1 2 3", ["3xf32=1 2 3", "1"], []),
    ("f32_1", "3xf32=1 2 3", ["3"], []),
    ("i32_2", "1x2xi32=1 2", ["1x2xi32=1 3"], []),
    ("i32_2", "1x2xi32=1 2", ["1x2xf32=1 3"], []),
    ("i8_1", "2xi8=1 2", ["2xi8=1 -2"], []),
    ("f32_3", "2x2x3xf32=1", ["2x2x3xf32=1"], ["--output_max_element_count=3"]),
]


@needs_iree
@pytest.mark.parametrize("fn,inp,expected,extra", EXPECTED,
                         ids=[f"{e[0]}-{'|'.join(e[2])}" for e in EXPECTED])
def test_expected_output_matches_iree(tid, fn, inp, expected, extra):
    args = [f"--module={tid}", f"--function={fn}", f"--input={inp}",
            *[f"--expected_output={e}" for e in expected], *extra]
    rc_ref, out_ref, err_ref = iree_run(*args)
    rc, out, err = vmrt_run(*args)
    assert (rc, out) == (rc_ref, out_ref)
    if rc and not out_ref.count("[FAILED]"):
        assert status_head(err) == status_head(err_ref)


@needs_iree
def test_expected_scalar_outputs_are_compared(compile_mlir):
    # iree-run-module 3.13 reports every scalar as "variant types mismatch;
    # expected i32 but got i32"; vmrt compares the values
    vmfb = compile_mlir("ints.mlir")
    base = [f"--module={vmfb}", "--function=add32", "--input=1", "--input=2"]
    assert "variant types mismatch" in iree_run(*base, "--expected_output=3")[1]
    assert vmrt_run(*base, "--expected_output=3") == (
        0, "EXEC @add32\n[SUCCESS] all function outputs matched their expected values.\n", "")
    assert vmrt_run(*base, "--expected_output=4") == (
        1, "EXEC @add32\n[FAILED] result[0]: value i32=3 does not match the expected i32=4\n",
        "")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vmrt import VmError  # noqa: E402
from vmrt.tools.function_io import parse_inputs  # noqa: E402

_SPEC_ALPHABET = st.sampled_from(list("0123456789x=[] ,.-+eEfiuslnad@*&()") + ["f32", "i8",
                                                                              "0x", "nan"])


@settings(max_examples=500, deadline=None)
@given(spec=st.lists(_SPEC_ALPHABET, max_size=20).map("".join),
       cconv=st.sampled_from(["0i_v", "0I_v", "0f_v", "0F_v", "0r_v"]))
def test_input_parsing_only_raises_vm_errors(spec, cconv):
    try:
        values = parse_inputs([spec], cconv)
    except VmError:
        return
    assert len(values) == 1


@settings(max_examples=300, deadline=None)
@given(spec=st.text(max_size=30))
def test_buffer_view_parsing_only_raises_vm_errors(spec):
    try:
        bv = parse_buffer_view(spec)
    except VmError:
        return
    format_buffer_view(bv, 16)
