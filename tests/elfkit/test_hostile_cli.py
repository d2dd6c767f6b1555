"""Hostile files and API misuse (issue 16): FIFOs, devices and huge sparse
files as input, special files as output, a closed stdout, and wrong
argument types at the public API.  Every failure is one line on stderr and
a non-zero exit (or an ElfkitError naming the argument) — never a hang, a
traceback, a MemoryError or a foreign exception."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import numpy as np
import pytest

import elfkit
from elfkit.errors import ElfkitError

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def elfkit_proc(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elfkit", *map(str, argv)], capture_output=True,
                          text=True, timeout=60, **kw)


def one_error_line(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("elfkit: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w in lines[0], proc.stderr


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


@pytest.fixture(scope="module")
def kernels_sos(plugins, sos):
    return sos([plugins.path("kernels", a) for a in ("x86_64", "riscv64", "aarch64")],
               "hostile_kernels.sos")


@needs_fifo
@pytest.mark.parametrize("argv", [
    ("inspect", "{f}"), ("run", "{f}", "--call", "x"), ("disasm", "{f}"),
    ("fatelf", "list", "{f}"), ("fatelf", "verify", "{f}"), ("fatelf", "split", "{f}"),
    ("fatelf", "extract", "--arch", "riscv64", "-o", "{o}", "{f}"),
    ("fatelf", "pack", "-o", "{o}", "{f}"),
])
def test_a_fifo_as_input_is_refused_not_waited_on(fifo, tmp_path, argv):
    proc = elfkit_proc(*[a.format(f=fifo, o=tmp_path / "out.sos") for a in argv])
    one_error_line(proc, "FIFO", "regular file")
    assert not (tmp_path / "out.sos").exists()


@pytest.mark.parametrize("cmd", [("inspect",), ("run", "--call", "x"), ("disasm",)])
def test_dev_zero_is_refused(cmd):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    one_error_line(elfkit_proc(cmd[0], "/dev/zero", *cmd[1:]), "character device")


@pytest.mark.parametrize("cmd", [("inspect",), ("run", "--call", "x"), ("disasm",)])
def test_a_huge_sparse_plain_file_is_refused_with_a_message(tmp_path, cmd):
    big = tmp_path / "sparse.so"
    with open(big, "wb") as f:
        f.truncate(64 << 30)
    one_error_line(elfkit_proc(cmd[0], big, *cmd[1:]), "more than the 1 GiB")


def test_a_fatelf_with_a_huge_sparse_tail_still_works(tmp_path, kernels_sos):
    big = tmp_path / "big.sos"
    big.write_bytes(kernels_sos.read_bytes())
    with open(big, "r+b") as f:
        f.truncate(64 << 30)
    proc = elfkit_proc("inspect", big, "--arch", "riscv64")
    assert proc.returncode == 0, proc.stderr
    proc = elfkit_proc("run", big, "--arch", "riscv64", "--call", "add_i64", "--sig",
                       "i64(i64,i64)", "--arg", "40", "--arg", "2")
    assert (proc.returncode, proc.stdout.strip()) == (0, "42"), proc.stderr
    proc = elfkit_proc("disasm", big, "--arch", "riscv64", "--symbol", "add_i64")
    assert proc.returncode == 0 and "add_i64" in proc.stdout, proc.stderr


def test_output_onto_a_character_device_streams_to_it(tmp_path, kernels_sos, plugins):
    devnull = tmp_path / "devnull"
    try:
        os.mknod(devnull, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError):
        pytest.skip("cannot make a device node here")
    rv = plugins.path("kernels", "riscv64")
    for argv in (("extract", "--arch", "riscv64", "-o", devnull, kernels_sos),
                 ("pack", "-o", devnull, rv),
                 ("replace", "-o", devnull, kernels_sos, rv)):
        proc = elfkit_proc("fatelf", *argv)
        assert proc.returncode == 0, proc.stderr
        assert stat.S_ISCHR(os.stat(devnull).st_mode), argv   # still the device
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_output_onto_a_fifo_streams_or_is_refused(fifo, kernels_sos):
    proc = elfkit_proc("fatelf", "extract", "--arch", "riscv64", "-o", fifo, kernels_sos)
    one_error_line(proc, "no reader")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        import time
        for _ in range(100):        # wait until the reader has the FIFO open
            proc = elfkit_proc("fatelf", "extract", "--arch", "riscv64", "-o", fifo, kernels_sos)
            if proc.returncode == 0:
                break
            time.sleep(0.05)
        data = reader.communicate(timeout=30)[0]
    finally:
        reader.kill()
    assert proc.returncode == 0, proc.stderr
    assert data[:4] == b"\x7fELF"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_closed_stdout_is_one_error_line(kernels_sos):
    proc = subprocess.run([sys.executable, "-c",
                           "import os, sys; os.close(1); sys.stdout = None; "
                           "from elfkit.tools import main; sys.exit(main(sys.argv[1:]))",
                           "fatelf", "extract", "--arch", "riscv64", "-o", "-", str(kernels_sos)],
                          capture_output=True, text=True, timeout=60)
    one_error_line(proc, "standard output is closed")


# ------------------------------------------------------------------ the API
@pytest.fixture(scope="module", params=["native", "emulated"])
def module(request, plugins):
    if request.param == "native":
        host = elfkit.arch.host()
        if host is None or host.name not in plugins.arches:
            pytest.skip("no native backend for this host")
        so, backend = plugins.path("kernels", host.name), "native"
    else:
        so, backend = plugins.path("kernels", "riscv64"), "emulated"
    with elfkit.load(so, backend=backend) as m:
        yield m


@pytest.mark.parametrize("call, words", [
    (lambda m: m.alloc("x"), ("alloc()", "size", "integer")),
    (lambda m: m.alloc(16, "x"), ("alloc()", "align")),
    (lambda m: m.alloc(-1), ("alloc()", "size", ">= 0")),
    (lambda m: m.call("add_i64", 1, 2, timeout="1"), ("call()", "timeout")),
    (lambda m: m.call("add_i64", 1, 2, timeout=float("nan")), ("call()", "finite")),
    (lambda m: m.call("add_i64", 1, 2, restype=5), ("call()", "restype")),
    (lambda m: m.read(0xDEADBEEF, 1 << 40), ("read",)),
    (lambda m: m.read("x", 4), ("read()", "address")),
    (lambda m: m.read(m.base, "4"), ("read()", "size")),
    (lambda m: m.read(m.base, -1), ("read()", "size")),
    (lambda m: m.symbol(None), ("symbol()", "name")),
    (lambda m: m.write(m.base, 1), ("write()", "data", "bytes-like")),
    (lambda m: m.write(m.base, "str"), ("write()", "data", "str")),
    (lambda m: m.write("x", b"a"), ("write()", "address")),
    (lambda m: m.free("x"), ("free()", "address")),
])
def test_wrong_arguments_are_elfkit_errors_naming_them(module, call, words):
    with pytest.raises(ElfkitError) as ei:
        call(module)
    assert isinstance(ei.value, (TypeError, ValueError, elfkit.errors.MemoryAccessError))
    for w in words:
        assert w in str(ei.value)


def test_write_of_a_numpy_array_writes_all_its_bytes(module):
    addr = module.alloc(16)
    module.write(addr, np.arange(4, dtype=np.float32))
    assert module.read(addr, 16) == np.arange(4, dtype=np.float32).tobytes()


@pytest.mark.parametrize("kw, words", [
    ({"limits": None}, ("limits",)),
    ({"machine": object()}, ("machine",)),
    ({"backend": "emulated", "cpu": "nonsense"}, ("CPU model", "nonsense")),
    ({"backend": "emulated", "bogus": 1}, ("unexpected keyword", "bogus")),
    ({"bogus": 1}, ("unexpected keyword", "bogus")),
])
def test_load_refuses_wrong_arguments(plugins, kw, words):
    with pytest.raises(ElfkitError) as ei:
        elfkit.load(plugins.path("kernels", "riscv64"), **kw)
    for w in words:
        assert w in str(ei.value)


def test_load_refuses_a_fifo(fifo):
    with pytest.raises(ElfkitError, match="FIFO"):
        elfkit.load(fifo)
