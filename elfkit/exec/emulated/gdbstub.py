"""A GDB remote-serial-protocol stub for an emulated machine
(``EmulatedMachine.debug``), so a real gdb (``gdb-multiarch``) debugs guest
code: registers, memory, software breakpoints, single step, watchpoints.

The stub runs inside the calling thread.  The machine installs two hooks
while a session is open: one before every guest instruction (``on_insn``)
and one on every guest data access (``on_mem``).  When the stub decides to
stop (the first instruction of the first call, a breakpoint, a finished
step, a watchpoint hit, an interrupt from gdb), it answers gdb's packets
right there, inside the hook, until gdb resumes (``c``/``s``), detaches
(``D``) or kills (``k``).  Nothing is stopped or restarted in unicorn, so
calls, nested calls from host callbacks and limits work as without gdb.

The register file and the target description (``target.xml``, built by
:mod:`.gdbtarget`) come from the architecture's ``gdb_regs``
(``elfkit/arch/``): general registers everywhere, and the float/vector ones
(x87 and SSE, RISC-V F/D, aarch64 V0-V31 with FPSR/FPCR, arm D0-D31 with
FPSCR).

``qOffsets`` reports the load bias of the module being debugged, so
``file plugin.so`` in gdb gives symbols at their loaded addresses; every
other module of the machine is listed as a shared library
(``qXfer:libraries-svr4`` / ``qXfer:libraries``, see :mod:`.gdbtarget`), so
gdb reads its symbols too.  A module loaded or closed while gdb is attached
is reported with a ``library`` stop, after which gdb reads the list again
and resumes by itself.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket
    from pathlib import Path

from ..._support import arguments
from ...errors import BackendError, ExecutionError, InvalidArgumentError, SignatureError
from .gdbtarget import elf_copy, library_list, library_list_svr4, target_xml

#: gdb's watchpoint packet numbers (Z2/Z3/Z4) and stop-reply keys
_WATCH_KEYS = {2: "watch", 3: "rwatch", 4: "awatch"}
_POLL_EVERY = 0x1000        # instructions between checks for an interrupt (Ctrl-C) from gdb
_WAKE = 0.25                # seconds between checks for a cancelled call while waiting for gdb


#: the longest packet read (we announce PacketSize=4000, in hex) and the most
#: memory one ``m`` packet reads (a reply may be shorter than asked for)
MAX_PACKET = 0x4000
MAX_READ = 0x2000
_THREAD_REPLIES = {"qC": "QC1", "qfThreadInfo": "m1", "qsThreadInfo": "l"}  # one thread, id 1
_MAX_RESENDS = 16           # copies of a reply sent to a peer that keeps answering '-'
_HEX = frozenset("0123456789abcdefABCDEF")

#: ``ELFKIT_GDB=[HOST:]PORT``: the first emulated machine made in the process serves gdb
ENV = "ELFKIT_GDB"
_requests: list[tuple[str, int]] = []
_env_seen = False
_req_lock = threading.Lock()


def request(port: int, host: str = "127.0.0.1") -> None:
    """Make the next emulated machine created in this process serve gdb on
    ``host:port`` (the way ``ELFKIT_GDB`` does; ``vmrt run --gdb``): it stops
    before the first guest instruction it runs and announces on stderr which
    module that is and a copy of its ELF file for gdb's ``file`` command."""
    with _req_lock:
        _requests.append((host, port))


def take_request() -> tuple[str, int] | None:
    """The pending request (``request`` or ``ELFKIT_GDB``), consumed; None if none."""
    global _env_seen
    with _req_lock:
        if not _env_seen:
            _env_seen = True
            value = os.environ.get(ENV, "").strip()
            if value:
                m = re.fullmatch(r"(?:([!-~]+):)?([0-9]+)", value)
                if m is None or int(m.group(2)) > 0xFFFF:
                    raise ExecutionError(f"{ENV}={value!r}: expected PORT or HOST:PORT")
                _requests.append((m.group(1) or "127.0.0.1", int(m.group(2))))
        return _requests.pop(0) if _requests else None


class _Vanished(Exception):
    pass


class GdbStub:
    """Listens on ``host:port`` (port 0: any free port, see ``port``) and
    serves one gdb client.  ``offset``: the load bias reported by
    ``qOffsets``.  ``ignore``: [lo, hi) of addresses never stopped at (the
    machine's sentinel and callback stubs).  ``accept_timeout``: seconds to
    wait for gdb at the first stop (None: forever).  ``offset=None``: the
    load bias of the module holding the first stop, announced on stderr with
    a copy of that module's ELF file to give gdb."""

    def __init__(self, machine: Any, port: int, *, host: str = "127.0.0.1",
                 offset: int | None = 0, ignore: tuple[int, int] = (0, 0),
                 accept_timeout: float | None = None) -> None:
        self.m = machine
        self.host = host
        self.offset = offset
        self.accept_timeout = _accept_timeout(accept_timeout)
        port = _port(port)
        if not isinstance(host, str):
            raise InvalidArgumentError(f"debug(): host must be a str, not {type(host).__name__}")
        self._ignore = ignore
        self._regs = machine.arch.gdb_regs
        if not self._regs:
            raise ExecutionError(f"no gdb register layout for {machine.arch.name}")
        # the network modules only when a session opens
        import select
        import socket
        self._select = select.select
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._listener.bind((host, port))
            self._listener.listen(1)
        except (OSError, ValueError, TypeError) as e:   # UnicodeError, NUL: no host name
            self._listener.close()
            shown = host if host.isprintable() else repr(host)
            raise ExecutionError(f"cannot listen for gdb on {shown}:{port}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
        self.port: int = self._listener.getsockname()[1]
        self._conn: socket.socket | None = None
        self._buf = b""
        self._ack = True
        self._waiting = False       # gdb resumed us and waits for a stop reply
        self._stop_next = True      # stop before the first guest instruction
        self._stepping = False
        self._bps: set[int] = set()
        self._watches: list[tuple[int, int, int]] = []    # (address, length, 2/3/4)
        self._hit: str | None = None
        self._count = 0
        self._libs_changed = False  # modules loaded or closed since gdb last heard
        self._files: dict[int, tuple[Any, Path]] = {}     # id(module) -> (module, copy)
        self._taken: dict[str, int] = {}                   # copy names given out
        self._lib_xml = ""
        self.finished = False       # detached, killed or the client vanished

    # ------------------------------------------------------------ machine hooks
    def on_insn(self, addr: int) -> None:
        """Before each guest instruction: stop and serve gdb when due."""
        if self.finished or self._ignore[0] <= addr < self._ignore[1]:
            return
        if self._libs_changed:
            self._libs_changed = False
            if self._conn is not None:
                self._serve("T05library:;")  # gdb reads the module list and resumes
                if self.finished:
                    return
        if self._hit is not None:           # a watchpoint, also when a step ends here
            reply = self._hit
        elif self._stop_next or self._stepping or addr in self._bps:
            reply = "S05"
        else:
            self._count += 1
            if self._count % _POLL_EVERY or not self._interrupted():
                return
            reply = "S02"
        self._stop_next = self._stepping = False
        self._hit = None
        self._serve(reply)

    def modules_changed(self) -> None:
        """The machine loaded or closed a module: tell gdb at the next stop
        point (before the next guest instruction)."""
        self._libs_changed = True

    def on_mem(self, write: bool, addr: int, size: int) -> None:
        """On each guest data access: note a watchpoint hit (reported before
        the next instruction, as gdb expects)."""
        if self.finished or not self._watches:
            return
        for lo, n, kind in self._watches:
            if addr < lo + n and lo < addr + size and (kind == 4 or (kind == 2) == write):
                self._hit = f"T05{_WATCH_KEYS[kind]}:{lo:x};"
                return

    def close(self) -> None:
        """End the session: a waiting gdb hears that the program exited."""
        conn, self._conn = self._conn, None
        self.finished = True
        if conn is not None:
            try:
                if self._waiting:
                    self._send_on(conn, "W00")
            except OSError:
                pass
            conn.close()
        self._listener.close()
        self._remove_files()

    def _remove_files(self) -> None:
        """Delete the ELF copies written for gdb (and their folder once empty):
        gdb needs them only while the session lasts."""
        files, self._files = self._files, {}
        for _mod, path in files.values():
            try:
                path.unlink()
            except OSError:
                pass
        for _mod, path in list(files.values())[:1]:
            try:
                path.parent.rmdir()
            except OSError:                          # another session's files remain
                pass

    # ----------------------------------------------------------- serving gdb
    def _serve(self, reply: str) -> None:
        try:
            if self._conn is None:
                if self.offset is None:
                    self.offset = self._announce()
                self._accept()
            elif self._waiting:
                self._send(reply)
            self._waiting = False
            while not self._waiting:
                packet = self._read_packet()
                try:
                    answer = self._handle(packet, reply)
                except (ValueError, IndexError):     # a malformed packet
                    answer = "E01"
                if answer is not None:
                    self._send(answer)
        except _Vanished:
            self._drop()
            raise ExecutionError(f"the gdb client on {self.host}:{self.port} disconnected "
                                  f"during the call (stopped at "
                                  f"{self.m.symbolize(self._pc())}); the call was abandoned "
                                  f"and the machine reset") from None

    def _accept(self) -> None:
        self._listener.settimeout(_WAKE)
        deadline = None if self.accept_timeout is None else time.monotonic() + self.accept_timeout
        while True:
            try:
                conn, _ = self._listener.accept()
                break
            except TimeoutError:
                self._check_cancel()
                if deadline is not None and time.monotonic() >= deadline:
                    self.finished = True
                    raise ExecutionError(f"no gdb connected to {self.host}:{self.port} within "
                                          f"{self.accept_timeout} s") from None
        import socket
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(_WAKE)
        self._conn = conn

    def _check_cancel(self) -> None:
        """While waiting for gdb: give up when the call was cancelled or timed
        out (``cancel()``, the call's timeout, Ctrl-C in ``elfkit run``)."""
        if self.m.stop_requested:
            self._drop()
            raise ExecutionError(f"the call was stopped (cancelled or timed out) while waiting "
                                  f"for gdb on {self.host}:{self.port}")

    def _announce(self) -> int:
        """Say on stderr where gdb should connect and which file to give it
        (the ELF image of the module holding the stop, written to a temporary
        directory); returns that module's load bias."""
        pc = self._pc()
        mod = self.m.module_at(pc)
        where = f"{self.m.symbolize(pc)} ({self.m.arch.name})"
        if mod is None:
            print(f"elfkit: gdb: stopped at {where}; waiting for gdb on {self.host}:{self.port} "
                  f"(target remote :{self.port})", file=sys.stderr, flush=True)
            return 0
        path = self._file_of(mod)
        print(f"elfkit: gdb: stopped at {where}; waiting for gdb on {self.host}:{self.port}: "
              f"gdb-multiarch {path} -ex 'target remote :{self.port}'", file=sys.stderr,
              flush=True)
        return int(mod.base)

    def _file_of(self, mod: Any) -> Path:
        """The copy of ``mod``'s ELF file gdb reads (written once)."""
        known = self._files.get(id(mod))
        if known is None or known[0] is not mod:
            known = self._files[id(mod)] = (mod, elf_copy(mod, self._taken))
        return known[1]

    def _libraries(self) -> list[tuple[Any, Path]]:
        """Every module of the machine with an ELF image but the one gdb has
        from ``file`` (the one whose load bias ``qOffsets`` reports)."""
        mods = [mod for mod in self.m.modules if getattr(mod, "elf", None) is not None
                and not getattr(mod, "closed", False)]
        return [(mod, self._file_of(mod)) for mod in mods if int(mod.base) != self.offset]

    def _drop(self) -> None:
        self.finished = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _interrupted(self) -> bool:
        """Whether gdb sent an interrupt (Ctrl-C) while guest code ran."""
        conn = self._conn
        if conn is None or not self._select([conn], [], [], 0)[0]:
            return False
        try:
            data = conn.recv(1)
        except OSError:                     # reset by the peer
            data = b""
        if not data:
            self._drop()
            raise ExecutionError(f"the gdb client on {self.host}:{self.port} disconnected "
                                  f"during the call; the call was abandoned")
        return data == b"\x03"

    def _handle(self, p: str, reply: str) -> str | None:
        """The answer to one packet (None: no answer; resumes set _waiting)."""
        cmd = p[:1]
        if cmd not in ("q", "Q", "?"):
            return self._command(p, cmd)
        if p.startswith("qSupported"):
            return ("PacketSize=4000;qXfer:features:read+;qXfer:libraries-svr4:read+;"
                    "qXfer:libraries:read+;QStartNoAckMode+")
        if p == "QStartNoAckMode":
            self._send("OK")
            self._ack = False
            return None
        if p.startswith("qXfer:features:read:target.xml:"):
            off, _, n = p.rsplit(":", 1)[1].partition(",")
            return _chunk(target_xml(self.m.arch, self._regs), _hex(off), _hex(n))
        if p.startswith(("qXfer:libraries-svr4:read::", "qXfer:libraries:read::")):
            off, _, n = p.rsplit(":", 1)[1].partition(",")
            if _hex(off) == 0:      # a new read: the list as it is now
                render = library_list_svr4 if "svr4" in p else library_list
                self._lib_xml = render(self._libraries())
            return _chunk(self._lib_xml, _hex(off), _hex(n))
        if p == "qOffsets":
            bias = self.offset or 0
            return f"Text={bias:x};Data={bias:x};Bss={bias:x}"
        if p in ("?", "qAttached") or p.startswith("qAttached:"):
            return reply if p == "?" else "1"
        if p in _THREAD_REPLIES:
            return _THREAD_REPLIES[p]
        if p.startswith("qSymbol"):
            return "OK"
        return ""                   # not supported

    def _command(self, p: str, cmd: str) -> str | None:
        """The answer to a packet other than q, Q and ?."""
        if cmd in ("H", "T"):
            return "OK"
        if cmd == "g":
            return "".join(self._reg_hex(r) for r in self._regs)
        if cmd == "G":
            return self._write_all(_hexbytes(p[1:]))
        if cmd == "p":
            i = _hex(p[1:])
            return self._reg_hex(self._regs[i]) if i < len(self._regs) else "E45"
        if cmd == "P":
            n, _, v = p[1:].partition("=")
            return self._write_reg(_hex(n), _hexbytes(v))
        if cmd == "m":
            addr, _, n = p[1:].partition(",")
            data = self.m.try_read(self._address(addr), min(_hex(n), MAX_READ))
            return data.hex() if data else "E14"
        if cmd == "M":
            return self._write_mem(p[1:])
        if cmd in ("Z", "z"):
            return self._break(p)
        if cmd in ("c", "s"):
            if len(p) > 1:
                self.m.write_register(self.m.arch.cc.pc, self._address(p[1:]))
            self._stepping = cmd == "s"
            self._waiting = True
            return None
        if cmd == "D" or p.startswith("vKill") or cmd == "k":
            return self._end(p)
        return ""                   # not supported

    def _end(self, p: str) -> str | None:
        if p[:1] == "D":
            self._send("OK")
            self._drop()
            self._waiting = True    # leave the serve loop; the call goes on
            return None
        if p.startswith("vKill"):
            self._send("OK")
        self._drop()
        raise ExecutionError(f"the call was killed from gdb (at {self.m.symbolize(self._pc())}); "
                              f"the machine was reset")

    def _break(self, p: str) -> str:
        kind, addr_s, length_s = p[1:].split(";")[0].split(",")
        addr, length, k = self._address(addr_s), _hex(length_s), _hex(kind)
        insert = p[0] == "Z"
        if k in (0, 1):
            (self._bps.add if insert else self._bps.discard)(addr)
        elif k in _WATCH_KEYS:
            w = (addr, max(length, 1), k)
            if insert:
                self._watches.append(w)
            elif w in self._watches:
                self._watches.remove(w)
        else:
            return ""
        return "OK"

    # ----------------------------------------------------- registers, memory
    def _address(self, text: str) -> int:
        """A guest address in hex (ValueError, answered ``E01``, beyond the
        architecture's address space)."""
        addr = _hex(text)
        if addr >> self.m.arch.bits:
            raise ValueError(f"address {text} beyond {self.m.arch.bits} bits")
        return addr

    def _pc(self) -> int:
        return int(self.m.read_register(self.m.arch.cc.pc))

    def _reg_hex(self, r: Any) -> str:
        if not r.uc:
            return "00" * (r.bits // 8)
        v = self.m.read_register(r.uc)
        if isinstance(v, tuple):      # x87: (mantissa, exponent)
            data = (v[0] & (1 << 64) - 1).to_bytes(8, "little") + (v[1] & 0xFFFF).to_bytes(2,
                                                                                          "little")
            return data.hex()
        return (int(v) & ((1 << r.bits) - 1)).to_bytes(r.bits // 8, "little").hex()

    def _write_reg(self, i: int, data: bytes) -> str:
        if i >= len(self._regs):
            return "E45"
        r = self._regs[i]
        if r.uc and len(data) == r.bits // 8:
            value: Any = int.from_bytes(data, "little")
            if r.bits == 80:
                value = (int.from_bytes(data[:8], "little"), int.from_bytes(data[8:], "little"))
            try:
                self.m.write_register(r.uc, value)
            except BackendError:            # a value the CPU refuses (a segment selector ...)
                return "E16"
        return "OK"

    def _write_all(self, data: bytes) -> str:
        at, answer = 0, "OK"
        for i, r in enumerate(self._regs):
            n = r.bits // 8
            if at + n > len(data):
                break
            if self._write_reg(i, data[at:at + n]) != "OK":
                answer = "E16"              # the others are written all the same
            at += n
        return answer

    def _write_mem(self, args: str) -> str:
        where, _, hexdata = args.partition(":")
        addr, _, _n = where.partition(",")
        try:
            self.m.write(self._address(addr), _hexbytes(hexdata))
        except ExecutionError:
            raise
        except Exception:   # noqa: BLE001 - any refusal is gdb's "cannot access memory"
            return "E14"
        return "OK"

    # --------------------------------------------------------------- packets
    def _getc(self) -> bytes:
        if not self._buf:
            conn = self._conn
            if conn is None:
                raise _Vanished
            while True:
                try:
                    self._buf = conn.recv(4096)
                    break
                except TimeoutError:
                    self._check_cancel()
                except OSError:
                    self._buf = b""
                    break
            if not self._buf:
                raise _Vanished
        c, self._buf = self._buf[:1], self._buf[1:]
        return c

    def _read_packet(self) -> str:
        c = b""
        while True:
            while c != b"$":
                c = self._getc()    # acks, and interrupts while already stopped
            data = bytearray()
            while (c := self._getc()) not in (b"#", b"$") and len(data) <= MAX_PACKET:
                data += c
            if c != b"#":           # a new packet started ('$' is never raw inside one)
                if self._ack:       # or one too long: refused, and the stream resynchronised
                    self._raw(b"-")
                continue
            check = self._getc()
            if check != b"$":
                check += self._getc()
            if check[-1:] == b"$":  # a packet started where the checksum should be
                c = b"$"
                if self._ack:
                    self._raw(b"-")
                continue
            good = _is_hex(check) and int(check, 16) == sum(data) & 0xFF
            if self._ack:
                self._raw(b"+" if good else b"-")
            if good:
                return _unescape(bytes(data)).decode("latin-1")

    def _send(self, payload: str) -> None:
        conn = self._conn
        if conn is None:
            raise _Vanished
        try:
            self._send_on(conn, payload)
        except OSError:
            raise _Vanished from None
        if self._ack:
            for _ in range(_MAX_RESENDS):   # a peer rejecting every copy is not waited on forever
                c = self._getc()
                while c not in (b"+", b"-", b"$"):
                    c = self._getc()
                if c == b"$":       # the next packet: this one arrived (gdb went on)
                    self._buf = c + self._buf
                    return
                if c == b"+":
                    return
                try:
                    self._send_on(conn, payload)
                except OSError:
                    raise _Vanished from None

    @staticmethod
    def _send_on(conn: socket.socket, payload: str) -> None:
        data = payload.encode("latin-1")
        conn.sendall(b"$" + data + b"#" + f"{sum(data) & 0xFF:02x}".encode())

    def _raw(self, data: bytes) -> None:
        if self._conn is None:
            raise _Vanished
        try:
            self._conn.sendall(data)
        except OSError:
            raise _Vanished from None


def _is_hex(text: bytes | str) -> bool:
    return bool(text) and all(c in _HEX for c in (text.decode("latin-1")
                                                     if isinstance(text, bytes) else text))


def _hex(text: str) -> int:
    """A number in hex digits only (``int(text, 16)`` would also take a
    sign, spaces, underscores and a ``0x`` prefix: ``p -1`` is no register)."""
    if not _is_hex(text):
        raise ValueError(f"not a hex number: {text[:40]!r}")
    return int(text, 16)


def _hexbytes(text: str) -> bytes:
    if len(text) % 2 or (text and not _is_hex(text)):
        raise ValueError("not hex bytes")
    return bytes.fromhex(text)


def _port(port: Any) -> int:
    """A TCP port: an int 0..65535 (0: any free port)."""
    port = arguments.integer(port, "port", "debug()", minimum=0)
    if port > 0xFFFF:
        raise SignatureError(f"debug(): port must be a TCP port (0-65535), got {port}")
    return port


def _accept_timeout(value: Any) -> float | None:
    """None, or a positive finite number of seconds."""
    v = arguments.timeout(value, "debug()", "accept_timeout")
    if v is not None and v <= 0:
        raise SignatureError(f"debug(): accept_timeout must be a positive number of seconds "
                             f"or None, got {value!r}")
    return v


def _chunk(text: str, off: int, n: int) -> str:
    part = text[off:off + n]
    return ("l" if off + n >= len(text) else "m") + part


def _unescape(data: bytes) -> bytes:
    if b"}" not in data:
        return data
    out = bytearray()
    it = iter(data)
    for b in it:
        out.append(next(it, 0) ^ 0x20 if b == 0x7D else b)
    return bytes(out)
