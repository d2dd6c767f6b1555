"""Real gdb (Debian's gdb-multiarch) on emulated plugins, all six CPUs.

gdb runs in batch mode in a thread (bounded by a subprocess timeout) while
the test calls into the plugin; the stub serves gdb from inside the call.
Expected addresses come from pyelftools (symbol values) plus the module's
load bias, expected values from the C formula in gdb_src/debuggee.c."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
import elfkit.arch
from elfkit.errors import BackendError, ExecutionError

pytest.importorskip("unicorn")

from tests.plugins import ARCHES, REPO

GDB = shutil.which("gdb-multiarch")
needs_gdb = pytest.mark.skipif(GDB is None, reason="gdb-multiarch is not installed "
                               "(apt-get install gdb-multiarch)")
SRC = Path(__file__).parent / "gdb_src" / "debuggee.c"
GDB_TIMEOUT = 60

#: a gdb expression for the first (int) argument at the entry of a function
FIRST_ARG = {"x86_64": "$rdi", "aarch64": "$x0", "riscv64": "$a0", "arm": "$r0",
             "i386": "*(int *)($esp + 4)", "riscv32": "$a0"}


def expected_entry(n: int) -> int:
    """dbg_entry(n) = dbg_middle(n) + 5 = (3 * (n + 1) + 1) + 2 + 5."""
    return 3 * (n + 1) + 1 + 2 + 5


@pytest.fixture(scope="module")
def debuggee() -> Any:
    from elfkit.toolchain import compile_plugin

    def build(arch: str) -> Path:
        return compile_plugin(SRC, arch, REPO / "build" / "gdb" / arch / "debuggee.so",
                              cflags=["-g", "-O1", "-fno-omit-frame-pointer"])
    return build


def symbol_value(path: Path, name: str) -> int:
    with open(path, "rb") as f:
        sym = ELFFile(f).get_section_by_name(".symtab").get_symbol_by_name(name)[0]
        return sym["st_value"] & ~1         # arm: no Thumb bit here anyway


def gdb_batch(so: Path, port: int, commands: list[str]) -> subprocess.Popen:
    args = [GDB, "-nx", "-batch", "-iex", "set debuginfod enabled off",
            "-ex", "set confirm off", "-ex", f"file {so}", "-ex", f"target remote :{port}"]
    for c in commands:
        args += ["-ex", c]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen) -> str:
    try:
        out, _ = proc.communicate(timeout=GDB_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"gdb did not finish in {GDB_TIMEOUT} s:\n{out}")
    return out


def call_in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - the test looks at it
            box["error"] = e
    t = threading.Thread(target=work, daemon=True)
    t.start()
    return t, box


@needs_gdb
@pytest.mark.parametrize("arch", ARCHES)
def test_gdb_session(debuggee, arch):
    so = debuggee(arch)
    with elfkit.load(so, backend="emulated") as m:
        assert m.backend == "emulated"
        counter = m.base + symbol_value(so, "dbg_counter")
        m.write(counter, (7).to_bytes(4, "little"))
        port = m.debug(0, accept_timeout=GDB_TIMEOUT)
        proc = gdb_batch(so, port, [
            "print/x $pc", f"print {FIRST_ARG[arch]}", "print dbg_counter",
            "set var dbg_counter = 100",
            "break dbg_leaf", "continue", "bt",
            "watch dbg_counter", "continue",
            "delete", "print/x $pc", "stepi", "print/x $pc",
            "continue"])
        f = m.function("dbg_entry", "i32(i32)")
        t, box = call_in_thread(f, 4)
        t.join(GDB_TIMEOUT)
        m.debug(None)                  # the session ends: gdb sees the program exit
        out = finish(proc)
        assert "error" not in box, f"{box.get('error')}\n{out}"
        assert box["result"] == expected_entry(4), out
        # symbols at the loaded address: the first stop is dbg_entry's first instruction
        pcs = [int(v, 16) for v in re.findall(r"^\$\d+ = (0x[0-9a-f]+)$", out, re.M)]
        assert pcs[0] == m.base + symbol_value(so, "dbg_entry"), out
        values = re.findall(r"^\$\d+ = (-?\d+)$", out, re.M)
        assert values[:2] == ["4", "7"], out          # first argument, memory
        assert re.search(r"Breakpoint 1, (0x[0-9a-f]+ in )?dbg_leaf \(x=5\)", out), out
        frames = re.findall(r"^#(\d+) +(?:0x[0-9a-f]+ in )?(\w+)", out, re.M)
        assert frames[:3] == [("0", "dbg_leaf"), ("1", "dbg_middle"), ("2", "dbg_entry")], out
        assert "Old value = 100" in out and "New value = 105" in out, out
        assert pcs[1] != pcs[2], out                  # stepi moved
        assert "exited normally" in out, out
        # gdb's write landed in guest memory; the module works without gdb
        assert int.from_bytes(m.read(counter, 4), "little") == 105
        assert f(1) == expected_entry(1)


@needs_gdb
def test_cli_run_with_gdb(debuggee):
    so = debuggee("riscv64")
    cli = subprocess.Popen([sys.executable, "-m", "elfkit", "run", str(so), "--call", "dbg_entry",
                            "--sig", "i32(i32)", "--arg", "9", "--gdb", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = cli.stderr.readline()                   # type: ignore[union-attr]
        port = re.search(r"127\.0\.0\.1:(\d+)", line)
        assert port, line
        out = finish(gdb_batch(so, int(port.group(1)), ["break dbg_middle", "continue",
                                                        "continue"]))
        stdout, stderr = cli.communicate(timeout=GDB_TIMEOUT)
    finally:
        cli.kill()
    assert "Breakpoint 1, dbg_middle (x=9)" in out, out
    assert "exited normally" in out, out
    assert cli.returncode == 0, stderr
    assert stdout.strip() == str(expected_entry(9))


@needs_gdb
def test_detach_lets_the_call_finish(debuggee):
    so = debuggee("aarch64")
    with elfkit.load(so, backend="emulated") as m:
        port = m.debug(0, accept_timeout=GDB_TIMEOUT)
        proc = gdb_batch(so, port, ["break dbg_leaf", "continue", "detach"])
        t, box = call_in_thread(m.function("dbg_entry", "i32(i32)"), 2)
        out = finish(proc)
        t.join(GDB_TIMEOUT)
        assert box.get("result") == expected_entry(2), (box, out)
        assert "detached" in out, out


def test_port_in_use_and_native_module(plugins, debuggee):
    so = debuggee("arm")
    with socket.socket() as taken, elfkit.load(so, backend="emulated") as m:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        with pytest.raises(ExecutionError, match=r"cannot listen for gdb on 127\.0\.0\.1:\d+"):
            m.debug(taken.getsockname()[1])
        assert m.call("dbg_entry", 0, restype="i32") == expected_entry(0)
    host = elfkit.arch.host()
    if host is None:
        pytest.skip("no native backend on this host")
    with elfkit.load(plugins.path("kernels", host.name), backend="native") as native, \
            pytest.raises(BackendError, match="emulated"):
        native.debug(0)


def test_client_vanishing_and_no_client(debuggee):
    so = debuggee("i386")
    with elfkit.load(so, backend="emulated") as m:
        f = m.function("dbg_entry", "i32(i32)")
        port = m.debug(0, accept_timeout=GDB_TIMEOUT)
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"+$qSupported#37")       # start talking, then go away mid-call
        t, box = call_in_thread(f, 3)
        client.recv(100)
        client.close()
        t.join(GDB_TIMEOUT)
        assert isinstance(box.get("error"), ExecutionError), box
        assert "disconnected during the call" in str(box["error"])
        assert f(3) == expected_entry(3)            # usable, and no longer stops
        m.debug(0, accept_timeout=0.2)
        with pytest.raises(ExecutionError, match="no gdb connected"):
            f(3)
        assert f(3) == expected_entry(3)
        m.debug(0)                                  # waits for gdb forever, but not
        with pytest.raises(ExecutionError, match="cancelled or timed out"):
            f(3, timeout=0.5)                       # past the call's own timeout
        assert f(3) == expected_entry(3)


@needs_gdb
def test_kill_from_gdb_fails_the_call(debuggee):
    so = debuggee("riscv32")
    with elfkit.load(so, backend="emulated") as m:
        f = m.function("dbg_entry", "i32(i32)")
        port = m.debug(0, accept_timeout=GDB_TIMEOUT)
        proc = gdb_batch(so, port, ["stepi", "kill"])
        t, box = call_in_thread(f, 6)
        out = finish(proc)
        t.join(GDB_TIMEOUT)
        assert isinstance(box.get("error"), ExecutionError), (box, out)
        assert "killed from gdb" in str(box["error"])
        assert "killed" in out, out
        assert f(6) == expected_entry(6)


def test_bad_elfkit_gdb_variable(debuggee):
    so = debuggee("riscv64")
    env = {**os.environ, "ELFKIT_GDB": "not-a-port"}
    proc = subprocess.run([sys.executable, "-m", "elfkit", "run", str(so), "--call", "dbg_entry",
                           "--sig", "i32(i32)", "--arg", "1"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=GDB_TIMEOUT)
    assert proc.returncode != 0 and proc.stdout == ""
    assert "ELFKIT_GDB='not-a-port': expected PORT or HOST:PORT" in proc.stderr
    assert "Traceback" not in proc.stderr
