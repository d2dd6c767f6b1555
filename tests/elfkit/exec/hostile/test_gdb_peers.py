"""The gdb stub against a hostile peer (issue 29, item 6): malformed packets
are answered with an error reply or a ``-``, never raise out of the call; a
connection reset while guest code runs is elfkit's ExecutionError; bad
ports, hosts and timeouts are elfkit's errors; the ELF copies written for
gdb never go through a link someone planted in the temporary directory.

The client is :class:`fuzz.gdb_packets.Client` (a raw socket speaking the
remote protocol); the hostile plugin's ``spin`` loops forever, so the
stub's poll for gdb's data always runs.  A fixed-seed run of the packet
fuzzer itself is in tests/integration/test_fuzz.py.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

import elfkit
from elfkit.errors import ExecutionError, InvalidArgumentError, SignatureError

pytest.importorskip("unicorn")

from fuzz.gdb_packets import Client, frame
from tests.elfkit.exec.emulated.test_gdbstub import call_in_thread
from tests.plugins import REPO

ARCH = "aarch64"
TIMEOUT = 60


@pytest.fixture
def stopped(hostile):
    """(module, client, thread, box): a call of ``spin`` stopped at its first
    instruction, a client connected in acknowledged mode."""
    with elfkit.load(hostile(ARCH), backend="emulated",
                     imports={"host_add": (lambda a, b: a + b, "i32(i32,i32)")}) as m:
        port = m.debug(0, accept_timeout=TIMEOUT)
        t, box = call_in_thread(m.function("spin", "void()"))
        client = Client(port)
        try:
            yield m, client, t, box
        finally:
            client.close()
            t.join(TIMEOUT)


def test_malformed_packets_get_error_replies(stopped):
    m, client, t, box = stopped
    nregs = len(m.arch.gdb_regs)
    last = client.ask(f"p{nregs - 1:x}")
    assert last and not last.startswith("E")
    # a checksum that is not hex: refused ('-'), and the stub goes on
    client.send(b"$g#zz")
    assert client.ask("qC") == "QC1"
    # numbers are hex digits only: no sign, prefix, blank or underscore
    for bad in ("p-1", "p -1", "p0x1", "p1_0", "P-1=" + "00" * 8, "P -1=00", "m-1,4",
                f"m{1 << 64:x},4", "m0,-4", "c-1", f"c{1 << 64:x}", "Z0,-1,4", "G0",
                "qXfer:features:read:target.xml:-1,10"):
        assert client.ask(bad).startswith("E"), bad
    assert client.ask(f"p{nregs - 1:x}") == last      # P -1 wrote nothing
    assert client.ask(f"p{nregs:x}").startswith("E")
    # a packet cut short by the next one, and one over the announced size
    client.send(b"$m0,4$qC#b4")
    assert client.reply() == "QC1"
    client.send(b"$" + b"0" * 0x5000 + b"#00")
    assert client.ask("qC") == "QC1"
    assert not box                                  # the call waits, stopped
    client.send(frame(b"k"))
    t.join(TIMEOUT)
    assert isinstance(box.get("error"), ExecutionError), box
    assert "killed from gdb" in str(box["error"])


def test_a_register_value_the_cpu_refuses_is_an_error_reply(hostile):
    """x86_64's FS takes only a null selector here: P/G writing another one is
    ``E16`` (it raised BackendError out of the call; found by the fuzzer)."""
    with elfkit.load(hostile("x86_64"), backend="emulated",
                     imports={"host_add": (lambda a, b: a + b, "i32(i32,i32)")}) as m:
        fs = next(i for i, r in enumerate(m.arch.gdb_regs) if r.name == "fs")
        port = m.debug(0, accept_timeout=TIMEOUT)
        t, box = call_in_thread(m.function("spin", "void()"))
        client = Client(port)
        try:
            before = client.ask(f"p{fs:x}")
            assert client.ask(f"P{fs:x}=34120000") == "E16"
            regs = m.arch.gdb_regs
            at = sum(r.bits // 8 for r in regs[:fs])
            whole = bytearray.fromhex(client.ask("g"))
            whole[at:at + 4] = (0x1234).to_bytes(4, "little")
            assert client.ask("G" + whole.hex()) == "E16"
            assert client.ask(f"p{fs:x}") == before
            client.send(frame(b"k"))
        finally:
            client.close()
            t.join(TIMEOUT)
        assert isinstance(box.get("error"), ExecutionError), box
        assert "killed from gdb" in str(box["error"])


def test_a_reset_while_running_is_an_execution_error(stopped):
    _m, client, t, box = stopped
    client.send(frame(b"c"))
    while b"+" not in client.sock.recv(1):          # the stub read "c": spin runs, and the
        pass                                        # stub reads again only to poll for Ctrl-C
    _reset(client.sock)
    t.join(TIMEOUT)
    assert not t.is_alive()
    assert isinstance(box.get("error"), ExecutionError), box
    assert "disconnected" in str(box["error"])


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()                                    # RST, not FIN


def test_a_reset_after_a_nak_is_an_execution_error(stopped):
    _m, client, t, box = stopped
    client.send(frame(b"g"))
    while b"#" not in client.sock.recv(1 << 16):    # the reply: not acknowledged
        pass
    client.sock.sendall(b"-")                       # "send it again" -- to a closed peer
    _reset(client.sock)
    t.join(TIMEOUT)
    assert isinstance(box.get("error"), ExecutionError), box
    assert "disconnected" in str(box["error"])


def test_debug_arguments_are_checked(hostile):
    with elfkit.load(hostile(ARCH), backend="emulated",
                     imports={"host_add": (lambda a, b: a + b, "i32(i32,i32)")}) as m:
        for port in (70000, 65536, -1):
            with pytest.raises(SignatureError, match="port"):
                m.debug(port)
        for port in ("1", 1.0, True):
            with pytest.raises(InvalidArgumentError, match="port"):
                m.debug(port)
        with pytest.raises(InvalidArgumentError, match="accept_timeout"):
            m.debug(0, accept_timeout="5")
        for bad in (0, -1, float("nan"), float("inf")):
            with pytest.raises(SignatureError, match="accept_timeout"):
                m.debug(0, accept_timeout=bad)
        with pytest.raises(ExecutionError, match="cannot listen"):
            m.machine.debug(0, host="h\u00f6st\u0000")
        with pytest.raises(InvalidArgumentError, match="host"):
            m.machine.debug(0, host=b"127.0.0.1")
        assert m.call("fmul", 2.0, 3.0, restype="f64") == 6.0     # no session was left open


def _elfkit_run(plugin: Path, *args: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elfkit", "run", str(plugin), "--call", "fmul",
                           "--sig", "f64(f64,f64)", "--arg", "2", "--arg", "3", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=TIMEOUT,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("how", ["--gdb 70000", "ELFKIT_GDB=70000", "ELFKIT_GDB=\u0663\u0664",
                                 "ELFKIT_GDB=h\u00f6st:1234", "ELFKIT_GDB=\u00e9"])
def test_bad_ports_on_the_command_line_are_one_line(hostile, how):
    if how.startswith("--"):
        proc = _elfkit_run(hostile(ARCH), "--backend", "emulated", *how.split())
    else:
        name, _, value = how.partition("=")
        proc = _elfkit_run(hostile(ARCH), "--backend", "emulated", env={name: value})
    assert proc.returncode != 0 and proc.stdout == "", proc
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "ELFKIT_GDB" in proc.stderr or "0-65535" in proc.stderr, proc.stderr


# -- the ELF copies gdb reads -----------------------------------------------------

@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """tempfile's directory (and $TMPDIR) pointed at a fresh directory."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _plant(kind: str, folder: Path, victim: Path) -> None:
    if kind == "symlink to a directory":
        os.symlink(victim.parent, folder)
    elif kind == "plain file":
        folder.write_bytes(b"planted")
    elif kind == "open directory":
        folder.mkdir(mode=0o777)
        os.chmod(folder, 0o777)
    elif kind == "another user's directory":
        folder.mkdir(mode=0o700)
        if os.getuid() != 0:
            pytest.skip("needs root to give the directory to another user")
        os.chown(folder, 65534, 65534)


@pytest.mark.parametrize("kind", ["symlink to a directory", "plain file", "open directory",
                                  "another user's directory"])
def test_elf_copies_never_go_through_a_planted_folder(hostile, tmpdir_env, kind):
    from elfkit.exec.emulated.gdbtarget import elf_copy
    victim_dir = tmpdir_env / "victim"
    victim_dir.mkdir()
    with elfkit.load(hostile(ARCH), backend="emulated",
                     imports={"host_add": (lambda a, b: a + b, "i32(i32,i32)")}) as m:
        folder = tmpdir_env / f"elfkit-gdb-{os.getpid()}"
        name = Path(str(m.name)).name
        victim = victim_dir / name
        victim.write_bytes(b"precious")
        if kind in ("open directory", "another user's directory"):
            _plant(kind, folder, victim)
            os.symlink(victim, folder / name)           # and a link where the copy goes
        else:
            _plant(kind, folder, victim)
        with pytest.warns(UserWarning, match="not a private directory"):
            path = elf_copy(m)
        assert victim.read_bytes() == b"precious"
        assert path.parent != folder and not path.is_symlink()
        assert path.read_bytes() == bytes(m.elf.data)
        assert (path.parent.stat().st_mode & 0o777) == 0o700
        if kind == "plain file":
            assert folder.read_bytes() == b"planted"


def test_an_elf_copy_replaces_a_link_in_its_own_folder(hostile, tmpdir_env):
    from elfkit.exec.emulated.gdbtarget import elf_copy
    victim = tmpdir_env / "precious"
    victim.write_bytes(b"precious")
    with elfkit.load(hostile(ARCH), backend="emulated",
                     imports={"host_add": (lambda a, b: a + b, "i32(i32,i32)")}) as m:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            first = elf_copy(m)                         # the private folder, no warning
        first.unlink()
        os.symlink(victim, first)
        again = elf_copy(m)
        assert again == first and not again.is_symlink()
        assert again.read_bytes() == bytes(m.elf.data)
        assert victim.read_bytes() == b"precious"
