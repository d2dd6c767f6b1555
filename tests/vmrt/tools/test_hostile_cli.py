"""Hostile files and flags on the ``vmrt`` command line (issue 16): FIFOs,
devices, huge sparse files and binary flagfiles as input, non-finite
timeouts, integers that overflow their type, and failed runs with output
files.  Every failure is one ``CODE; message`` line on stderr and exit
code 1 — never a hang, a traceback, ``INTERNAL; MemoryError`` or a file
left behind."""
from __future__ import annotations

import os

import numpy as np
import pytest

from tests.vmrt.vmrt_testutil import (
    iree_run,
    needs_iree,
    status_head,
    vmrt_run,
    vmrt_subprocess,
)
from vmrt.tools.function_io import scalar_int

pytestmark = needs_iree


@pytest.fixture(scope="module")
def ints(compile_mlir):
    return compile_mlir("ints.mlir")


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    p = tmp_path / "fifo.npy"
    os.mkfifo(p)
    return p


@pytest.fixture
def sparse(tmp_path):
    p = tmp_path / "sparse.vmfb"
    with open(p, "wb") as f:
        f.truncate(64 << 30)
    return p


def one_status_line(rc: int, err: str, code: str, *words: str) -> None:
    assert rc == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{code}; "), err
    for w in words:
        assert w in lines[0], err


def test_a_fifo_is_refused_wherever_a_file_is_read(ints, fifo):
    one_status_line(*vmrt_subprocess("run", f"--module={fifo}")[::2], "INVALID_ARGUMENT", "FIFO")
    one_status_line(*vmrt_subprocess("run", f"--module={ints}", f"--flagfile={fifo}")[::2],
                    "INVALID_ARGUMENT", "flagfile", "FIFO")
    one_status_line(*vmrt_subprocess("run", f"--module={ints}", "--function=add32",
                                     f"--input=@{fifo}", "--input=1")[::2],
                    "INVALID_ARGUMENT", "FIFO")
    one_status_line(*vmrt_subprocess("executable", "list", str(fifo))[::2],
                    "INVALID_ARGUMENT", "FIFO")
    one_status_line(*vmrt_subprocess("run", f"--executable_plugin={fifo}",
                                     f"--module={ints}")[::2], "INVALID_ARGUMENT", "FIFO")


def test_devices_and_huge_files_are_refused_with_a_message(ints, sparse):
    one_status_line(*vmrt_run(f"--module={sparse}")[::2], "RESOURCE_EXHAUSTED", "bytes")
    one_status_line(*vmrt_run(f"--module={ints}", f"--flagfile={sparse}")[::2],
                    "RESOURCE_EXHAUSTED", "flagfile")
    if os.path.exists("/dev/zero"):
        one_status_line(*vmrt_run("--module=/dev/zero")[::2], "INVALID_ARGUMENT",
                        "character device")
        one_status_line(*vmrt_run(f"--module={ints}", "--flagfile=/dev/zero")[::2],
                        "INVALID_ARGUMENT", "character device")
    import io

    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main(["executable", "list", str(sparse)], stdout=out, stderr=err)
    one_status_line(rc, err.getvalue(), "RESOURCE_EXHAUSTED")


def test_a_binary_flagfile_is_refused(ints, tmp_path):
    bad = tmp_path / "bin.flags"
    bad.write_bytes(bytes(range(256)) * 20)
    one_status_line(*vmrt_run(f"--module={ints}", f"--flagfile={bad}")[::2],
                    "INVALID_ARGUMENT", "not UTF-8 text")
    bad.write_bytes(b"--function=add32\n\0\0\n")
    one_status_line(*vmrt_run(f"--module={ints}", f"--flagfile={bad}")[::2],
                    "INVALID_ARGUMENT", "NUL")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-inf"])
def test_a_timeout_that_is_no_limit_is_refused(ints, value):
    one_status_line(*vmrt_run(f"--module={ints}", "--function=add32", "--input=1", "--input=2",
                              f"--timeout={value}")[::2], "INVALID_ARGUMENT", "--timeout")


def test_a_negative_budget_is_refused(ints):
    one_status_line(*vmrt_run(f"--module={ints}", "--function=add32", "--input=1", "--input=2",
                              "--instruction_budget=-1")[::2],
                    "INVALID_ARGUMENT", "--instruction_budget")


SCALARS = [("add32", v) for v in ("18446744073709551616", "9" * 5000, "-" + "9" * 100_000,
                                   "1234567890123456", "0000000000000005", "123456789012345",
                                   "1099511627776", "4294967295", "-2147483649", "0x100000000",
                                   "4xi32=1099511627", "12abc")] + \
          [("trunc", v) for v in ("9223372036854775807", "9223372036854775808",
                                  "-9223372036854775809", "18446744073709551615",
                                  "0" * 31 + "1", "0" * 32 + "1", "0xffffffffffffffff")]


@pytest.mark.parametrize("fn, value", SCALARS, ids=lambda v: v[:24])
def test_scalar_integer_inputs_as_iree_run_module(ints, fn, value):
    args = [f"--module={ints}", f"--function={fn}", f"--input={value}"] + \
        (["--input=2"] if fn == "add32" else [])
    rc, out, err = vmrt_run(*args)
    irc, iout, ierr = iree_run(*args)
    assert (rc, out) == (irc, iout)
    if irc:   # the same status and message (IREE shortens very long annotations)
        assert status_head(err)[:80] == status_head(ierr)[:80]
        if len(value) < 100:
            assert err.strip() == ierr.strip().splitlines()[0].split(": ", 1)[1]


def test_scalar_int_limits():
    assert scalar_int("123456789012345", "i") == 123456789012345
    assert scalar_int("1234567890123456", "i") is None
    assert scalar_int("9223372036854775807", "I") == (1 << 63) - 1
    assert scalar_int("9223372036854775808", "I") is None
    assert scalar_int("9" * 5000, "I") is None


@pytest.mark.parametrize("spec, words", [
    ("4xi32=" + "9" * 5000, ("OUT_OF_RANGE", "out of range for i32")),
    ("4xi32=1099511627776", ("OUT_OF_RANGE", "out of range for i32")),
    ("4xi32=1e400", ("INVALID_ARGUMENT", "failed to parse element")),
])
def test_buffer_elements_that_overflow_are_refused(spec, words):
    from vmrt import VmError
    from vmrt.hal.buffer_view import parse_buffer_view
    with pytest.raises(VmError) as ei:
        parse_buffer_view(spec)
    for w in words:
        assert w in str(ei.value)


def test_i64_elements_stop_at_int64_max_as_iree_does():
    from vmrt import VmError
    from vmrt.hal.buffer_view import parse_buffer_view
    assert parse_buffer_view("2xi64=9223372036854775807").array.tolist() == [(1 << 63) - 1] * 2
    with pytest.raises(VmError, match="out of range for i64"):
        parse_buffer_view("2xi64=9223372036854775808")
    assert parse_buffer_view("2xui64=18446744073709551615").array.tolist() == [(1 << 64) - 1] * 2


def test_a_failed_run_leaves_no_output_file(ints, tmp_path):
    first, second, third = tmp_path / "a.npy", tmp_path / "b.bin", tmp_path / "c.npy"
    second.write_bytes(b"old")
    rc, out, err = vmrt_run(f"--module={ints}", "--function=divrem32", "--input=7", "--input=2",
                            f"--output=@{first}", f"--output=+{second}", f"--output=@{third}",
                            f"--output=@{tmp_path}/no/such/dir/x.npy")
    assert rc == 1 and "failed to write" in err
    assert not first.exists() and not third.exists()
    assert second.read_bytes() == b"old"
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # and a good run writes them all
    rc, out, err = vmrt_run(f"--module={ints}", "--function=divrem32", "--input=7", "--input=2",
                            f"--output=@{first}", f"--output=+{second}", f"--output=@{third}",
                            "--output=-")
    assert rc == 0, err
    assert np.load(first) == 3 and np.load(third) == 3
    assert second.read_bytes() == b"old" + np.int32(1).tobytes()


def test_a_failed_run_undoes_two_appends_to_one_file(ints, tmp_path):
    """issue 29: two appends to one file, then a failed output, left the file
    with the appended bytes (zeros) instead of as it was."""
    p = tmp_path / "p.bin"
    p.write_bytes(b"orig")
    rc, _, err = vmrt_run(f"--module={ints}", "--function=divrem32", "--input=7", "--input=2",
                          f"--output=+{p}", f"--output=+{p}", "--output=@/dev/full", "--output=")
    assert rc == 1 and "failed to write" in err, err
    assert p.read_bytes() == b"orig"
    q = tmp_path / "new.bin"
    rc, _, err = vmrt_run(f"--module={ints}", "--function=divrem32", "--input=7", "--input=2",
                          f"--output=+{q}", f"--output=+{q}", "--output=@/dev/full", "--output=")
    assert rc == 1 and not q.exists(), err


def test_control_characters_from_flags_are_escaped(ints):
    """cli fuzzer finding (2026-11-24): a flag value with control characters
    was echoed raw into the one error line (an escape sequence reached the
    terminal); they are shown as \\xNN."""
    rc, _, err = vmrt_subprocess("run", "--module=/no/such\x1b[2J\x0e.vmfb")
    one_status_line(rc, err, "NOT_FOUND", "/no/such\\x1b[2J\\x0e.vmfb")
    assert not any(c < " " for c in err.rstrip("\n"))
    rc, _, err = vmrt_subprocess("executable", "dispatch", str(ints), "--export=0",
                                 "--binding=9\x0e")
    assert rc == 1 and "\x0e" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["run", "ADD"], ["test", "ADD"]])
def test_a_full_stdout_is_one_error_line(ints, argv):
    """issue 29: ``vmrt run >/dev/full`` ended in ``INTERNAL; OSError`` (and
    ``vmrt --help >/dev/full`` in a traceback)."""
    import subprocess
    import sys
    if argv[-1] == "ADD":
        argv = [*argv[:-1], f"--module={ints}", *(["--function=add32", "--input=1", "--input=2"]
                                                   if argv[0] == "run" else [])]
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "vmrt", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == ("RESOURCE_EXHAUSTED; cannot write the standard output: "
                           "No space left on device\n")
