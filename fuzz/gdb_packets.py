"""Fuzzer of the gdb stub's packet handling: ``python -m fuzz.gdb_packets
PLUGIN [--seed N] [--packets N] [--export NAME]``.

Loads PLUGIN emulated, lets its gdb stub (``Module.debug``) stop a call to
EXPORT at its first instruction, connects as gdb would and sends random and
mutated remote-protocol packets: every packet gdb sends with random hex
numbers (negative, huge, empty, not hex), characters inserted, deleted or
replaced (``$``, ``#``, ``}``, ``*``, NUL, bytes over 127, Ctrl-C),
checksums that are wrong or not hex, stray acknowledgements and unframed
noise, in the ``+``/``-`` acknowledged mode or not.  Packets that resume or
end the call (``c``, ``s``, ``D``, ``k``, ``vKill``) are left out.

Invariants (a finding otherwise): after every packet the stub still answers
a well-formed ``qC`` (within ``REPLY_TIMEOUT`` seconds), and the call,
ended by ``k`` at the end, fails with elfkit's own error (``ElfkitError``)
and nothing else.  ``run`` returns the findings (empty: none); the command
exits 1 with them printed.
"""
from __future__ import annotations

import argparse
import random
import socket
import sys
import threading
from typing import Any

import elfkit

REPLY_TIMEOUT = 20.0
#: packets as gdb sends them; ``{a}`` an address, ``{n}`` a number, ``{h}`` hex bytes
TEMPLATES = (
    "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+", "?", "qAttached", "qAttached:{n}",
    "qC", "qfThreadInfo", "qsThreadInfo", "qOffsets", "qSymbol::", "Hg{n}", "Hc-1", "T{n}",
    "g", "G{h}", "p{n}", "P{n}={h}", "m{a},{n}", "M{a},{n}:{h}", "Z0,{a},{n}", "z0,{a},{n}",
    "Z1,{a},{n}", "Z2,{a},{n}", "Z3,{a},{n}", "Z4,{a},{n}", "z4,{a},{n}", "Z{n},{a},{n}",
    "qXfer:features:read:target.xml:{n},{n}", "qXfer:libraries-svr4:read::{n},{n}",
    "qXfer:libraries:read::{n},{n}", "vMustReplyEmpty", "vCont?", "X{a},{n}:{h}",
    "QStartNoAckMode", "qTStatus", "!", "",
)
RESUMING = ("c", "s", "D", "k", "vKill", "C", "S", "vCont;")
NOISE = (b"$", b"#", b"}", b"*", b"\x00", b"\x03", b"\xff", b"+", b"-", b"-", b":", b",",
         b";", b"=", b" ")


def _number(rng: random.Random, bits: int) -> str:
    r = rng.random()
    if r < 0.35:
        return f"{rng.randrange(64):x}"
    if r < 0.55:
        return f"{rng.getrandbits(rng.choice((8, 16, 32, bits))):x}"
    return rng.choice(["-1", "-0", "", "0x10", " 1", "1_0", "+1", "zz", "g", "1" * 40,
                       f"{(1 << bits) - 1:x}", f"{1 << bits:x}", f"{1 << 64:x}", "٣", "ff" * 9])


def packet(rng: random.Random, bits: int) -> bytes:
    """One payload: a template filled with random numbers, then mutated."""
    text = rng.choice(TEMPLATES)
    for field in ("{a}", "{n}", "{h}"):
        while field in text:
            if field == "{h}":
                v = rng.randbytes(rng.choice((0, 1, 4, 8, 16, 300))).hex()
                v = v[:-1] if rng.random() < 0.1 else v
            else:
                v = _number(rng, bits)
            text = text.replace(field, v, 1)
    data = bytearray(text.encode("utf-8"))
    for _ in range(rng.choice((0, 0, 1, 2, 4))):
        op, at = rng.random(), rng.randrange(len(data) + 1)
        if op < 0.4:
            data[at:at] = rng.choice(NOISE + (bytes([rng.randrange(256)]),))
        elif op < 0.7 and data:
            del data[min(at, len(data) - 1)]
        elif data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
    if data[:1] == b"}" or bytes(data).startswith(tuple(p.encode() for p in RESUMING)):
        data[:0] = b"q"                  # an escaped or resuming command: stay stopped
    return bytes(data)


def frame(payload: bytes, rng: random.Random | None = None) -> bytes:
    """``$payload#cs``; with ``rng``, sometimes a wrong or non-hex checksum."""
    check = f"{sum(payload) & 0xFF:02x}".encode()
    if rng is not None:
        r = rng.random()
        if r < 0.08:
            check = rng.choice((b"zz", b"g0", b"-1", b" 1", b"\xff\xfe", b"0", b"#"))
        elif r < 0.15:
            check = f"{(sum(payload) + 1) & 0xFF:02x}".encode()
    return b"$" + payload + b"#" + check


class Client:
    """gdb's side of the connection: sends packets, reads replies (acknowledging each)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=REPLY_TIMEOUT)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self) -> str:
        """The next packet from the stub (acks skipped, each packet acked)."""
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                body = self.buf[start + 1:end]
                self.buf = self.buf[end + 3:]
                self.sock.sendall(b"+")
                return body.decode("latin-1")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the stub closed the connection")
            self.buf += chunk

    def ask(self, payload: str) -> str:
        self.send(frame(payload.encode()))
        return self.reply()

    def close(self) -> None:
        self.sock.close()


def run(plugin: str, seed: int, packets: int, export: str = "add_i32") -> list[str]:
    """Fuzz one session of ``packets`` packets; the findings (empty: none)."""
    rng = random.Random(seed)
    findings: list[str] = []
    box: dict[str, Any] = {}
    with elfkit.load(plugin, backend="emulated") as m:
        bits = m.arch.bits
        port = m.debug(0, accept_timeout=REPLY_TIMEOUT)
        assert port is not None
        call = m.function(export, "i64(i64,i64)")

        def work() -> None:
            try:
                box["result"] = call(2, 3)
            except BaseException as e:  # noqa: BLE001 - checked below
                box["error"] = e
        t = threading.Thread(target=work, daemon=True)
        t.start()
        client = Client(port)
        try:
            if rng.random() < 0.5:
                client.ask("QStartNoAckMode")
            for i in range(packets):
                sent = b"".join(rng.choice(NOISE) for _ in range(rng.randrange(3))) \
                    if rng.random() < 0.1 else b""
                sent += frame(packet(rng, bits), rng)
                client.send(sent)
                try:
                    got = client.ask("qC")
                    while got != "QC1":          # the fuzzed packet's own reply first
                        got = client.reply()
                except OSError as e:
                    findings.append(f"packet {i} ({sent!r}): the stub stopped answering: {e}")
                    break
            else:
                client.send(frame(b"k"))
        finally:
            client.close()
            t.join(REPLY_TIMEOUT)
        if t.is_alive():
            findings.append("the call did not end after the session")
        err = box.get("error")
        if err is not None and not isinstance(err, elfkit.ElfkitError):
            findings.append(f"the call raised {type(err).__name__}: {err}")
        elif err is None and not findings:
            findings.append(f"the call was not killed (returned {box.get('result')!r})")
    return findings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.gdb_packets", description=__doc__.split(
        "\n\n")[0])
    ap.add_argument("plugin")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--packets", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=1)
    ap.add_argument("--export", default="add_i32")
    args = ap.parse_args(argv)
    bad = 0
    for s in range(args.seed, args.seed + args.sessions):
        for f in run(args.plugin, s, args.packets, args.export):
            print(f"seed {s}: {f}")
            bad += 1
    print(f"{args.sessions} session(s) of {args.packets} packets: {bad} finding(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
