"""The real CPU as the oracle of vmrt's emulated i386.

PyPI has no i386 build of IREE's runtime, but an x86-64 Linux host runs
32-bit code natively.  :func:`replaying` runs a program on vmrt's emulated
i386 as usual and, around every workgroup call of a dispatch, takes the
guest's memory (every readable page of :meth:`EmulatedMachine.regions`),
runs the same call in a 32-bit process on the host CPU over a copy of that
memory mapped at the same addresses (``i386_replay.c``, built freestanding
with ``gcc -m32``), and compares the memory after the call with the
emulator's, page for page, outside the guest's stack (the 32-bit process
runs on its own stack).  The dispatch function is called directly, not
through vmrt's flush-to-zero stub: IREE's generic i386 code uses the x87
FPU, which MXCSR does not govern.

``python -m tests.vmrt.onnx.real_i386 [--match RE]`` does this for every
case of the ONNX corpus that vmrt runs on i386 (the cached vmrt outcomes
say which) and prints the cases whose bytes differ.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import platform
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.vmrt.onnx.corpus import CACHE, write_atomic

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "i386_replay.c"
#: workgroup calls compared per program (the rest run emulated only)
MAX_CALLS = 24


class Unavailable(RuntimeError):
    """This host cannot run i386 code natively (says why)."""


@functools.cache
def harness() -> Path:
    """The 32-bit replay program, built once per source (cached in build/)."""
    if platform.machine() != "x86_64" or sys.platform != "linux":
        raise Unavailable(f"runs i386 code natively only on x86_64 Linux, not "
                          f"{sys.platform}/{platform.machine()}")
    gcc = shutil.which("gcc")
    if gcc is None:
        raise Unavailable("gcc is not installed")
    src = SOURCE.read_bytes()
    out = CACHE / "real_i386" / f"replay-{hashlib.sha256(src).hexdigest()[:16]}"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        p = subprocess.run([gcc, "-m32", "-O1", "-ffreestanding", "-fno-pic",
                            "-fno-stack-protector", "-nostdlib", "-static",
                            "-Wl,-Ttext-segment=0x70000000", "-o", str(tmp), str(SOURCE)],
                           capture_output=True, text=True, timeout=120)
        if p.returncode:
            raise Unavailable(f"gcc -m32 cannot build a freestanding i386 program here: "
                              f"{p.stderr.strip()[-300:]}")
        tmp.replace(out)
    probe = subprocess.run([str(out)], input=struct.pack("<5I", 0, 0, 0, 0, 0),
                           capture_output=True, timeout=30)
    if probe.returncode != 0:
        raise Unavailable(f"the kernel does not run 32-bit programs (exit {probe.returncode})")
    return out


@dataclass
class Replayed:
    """What :func:`replaying` saw: workgroup calls compared, and for each
    that differed, ``(region start, kind, first byte, last byte, bytes)``."""

    calls: int = 0
    same: int = 0
    differ: list[list[tuple[int, str, int, int, int]]] = field(default_factory=list)


def snapshot(machine: Any) -> list[tuple[int, bytes, str]]:
    """Every readable page of the guest, merged into runs: (address, bytes, kind)."""
    page = machine.page_size
    runs: list[tuple[int, bytes, str]] = []
    for start, size, kind in machine.regions():
        for a in range(start, start + size, page):
            b = machine.try_read(a, page)
            if b is None:
                continue
            if runs and runs[-1][0] + len(runs[-1][1]) == a and runs[-1][2] == kind:
                runs[-1] = (runs[-1][0], runs[-1][1] + b, kind)
            else:
                runs.append((a, b, kind))
    return runs


def native_call(target: int, env: int, ds: int, ws: int,
                memory: list[tuple[int, bytes, str]]) -> tuple[int, list[bytes]]:
    """The call on the host CPU over ``memory``: its result and the runs after it."""
    blob = bytearray(struct.pack("<5I", len(memory), target, env, ds, ws))
    for a, b, _k in memory:
        blob += struct.pack("<2I", a, len(b)) + b
    p = subprocess.run([str(harness())], input=bytes(blob), capture_output=True, timeout=120)
    if p.returncode:
        raise RuntimeError(f"the i386 replay exited with {p.returncode}")
    rc = struct.unpack_from("<i", p.stdout)[0]
    out, off = [], 4
    for _a, b, _k in memory:
        out.append(p.stdout[off:off + len(b)])
        off += len(b)
    return rc, out


@contextlib.contextmanager
def replaying(max_calls: int = MAX_CALLS) -> Iterator[Replayed]:
    """While active, every emulated i386 dispatch call is also run natively
    and compared (see the module docstring)."""
    from elfkit.exec import EmulatedMachine
    seen = Replayed()
    original = EmulatedMachine.function

    def function(self: Any, addr: int, sig: Any, name: str = "") -> Any:
        f = original(self, addr, sig, name)
        text = re.sub(r"\s", "", str(sig))
        if self.arch.name != "i386" or not re.fullmatch(r"i32\(u32,u32,u32(,u32)?\)", text):
            return f
        stub = text.count(",") == 3      # through vmrt's FPU stub: the target comes first

        def call(*args: int, **options: Any) -> int:
            if seen.calls >= max_calls:
                return int(f(*args, **options))
            target, env, ds, ws = args if stub else (addr, *args)
            before = snapshot(self)
            r = int(f(*args, **options))
            after = {a: b for a, b, _k in snapshot(self)}
            rc, native = native_call(target, env, ds, ws, before)
            seen.calls += 1
            bad = []
            for (a, b, kind), nb in zip(before, native):
                eb = after.get(a, b)
                if kind == "stack" or nb == eb:
                    continue
                d = [i for i in range(min(len(nb), len(eb))) if nb[i] != eb[i]]
                bad.append((a, kind, a + d[0], a + d[-1], len(d)))
            if rc != r:
                bad.append((0, f"result {rc} natively, {r} emulated", 0, 0, 0))
            if bad:
                seen.differ.append(bad)
            else:
                seen.same += 1
            return r
        return call

    EmulatedMachine.function = function     # type: ignore[method-assign]
    try:
        yield seen
    finally:
        EmulatedMachine.function = original   # type: ignore[method-assign]


def run_case(name: str) -> tuple[Replayed, str]:
    """Case ``name`` of the ONNX corpus on emulated i386, replayed natively:
    what was compared, and vmrt's error if the program failed."""
    import vmrt
    from tests.vmrt.onnx.corpus import compile_case, load_case
    case = load_case(name)
    vmfb = compile_case(case, "i386")
    error = ""
    with replaying() as seen, vmrt.load(vmfb) as prog:
        try:
            getattr(prog, name)(*case.inputs)
        except vmrt.VmError as e:
            error = str(e).split(";")[0]
    return seen, error


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m tests.vmrt.onnx.real_i386")
    ap.add_argument("--match", default="", help="only cases whose name matches this regex")
    ap.add_argument("--results", default="", help="a corpus results folder (…/results/<stamp>/"
                    "i386): run the cases vmrt ran there (default: the newest)")
    args = ap.parse_args(argv)
    try:
        harness()
    except Unavailable as e:
        print(f"python -m tests.vmrt.onnx.real_i386: {e}", file=sys.stderr)
        return 2
    folder = Path(args.results) if args.results else max(
        (CACHE / "results").glob("*/i386"), key=lambda p: p.stat().st_mtime)
    names = sorted(o["name"] for f in folder.glob("*.json")
                   if (o := json.loads(f.read_text()))["stage"] in ("pass", "vmrt-mismatch")
                   and re.search(args.match, o["name"]))
    totals = Replayed()
    differing = []
    for n in names:
        seen, error = run_case(n)
        totals.calls += seen.calls
        totals.same += seen.same
        if seen.differ:
            differing.append(n)
            first = seen.differ[0][0]
            print(f"DIFFERS {n}: {len(seen.differ)} of {seen.calls} calls; first at "
                  f"{first[2]:#x}-{first[3]:#x} ({first[4]} bytes, {first[1]})", flush=True)
    print(f"{len(names)} cases, {totals.calls} workgroup calls compared, "
          f"{totals.same} identical; "
          f"{len(differing)} cases differ: {' '.join(differing) or 'none'}")
    summary = CACHE / "real_i386" / "last-run.json"
    write_atomic(summary, json.dumps({"results": str(folder), "cases": len(names),
                                      "calls": totals.calls, "same": totals.same,
                                      "differ": differing}).encode())
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
