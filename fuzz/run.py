"""Long-running fuzzer: ``python -m fuzz.run TARGET [SEED_FILE...] [--seconds N]``.

Uses atheris (coverage-guided) when it is installed, otherwise byte-level
random mutation of the seed files.  Prints the number of inputs tried; any
exception other than the package's own error is a finding and stops the run
with the input saved to fuzz-crash-*.bin.  Without seed files, targets that
have default seeds (``plugin-emulated``, ``cli``) build them from the test
catalogue (tests/plugins.py).

``--watchdog`` (the default for ``plugin-emulated``, which runs guest code in
this process) runs the loop in a child process that saves each input before
trying it: a child killed by a signal (a segfault in the emulator) or silent
for ``--hang`` seconds is a finding too (fuzz-crash-*.bin / fuzz-hang-*.bin).

``--replay FILE...`` runs the target once on each file and reports.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from fuzz.targets import DEFAULT_SEEDS, INTACT_SHARE, TARGETS, WATCHDOG


def mutate(rng: random.Random, seed: bytes) -> bytes:
    b = bytearray(seed)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        if not b:
            b = bytearray(rng.randbytes(64))
        if op < 0.4:                      # overwrite a byte
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.6:                    # set an aligned word to an interesting value
            i = rng.randrange(0, max(1, len(b) - 8)) & ~3
            v = rng.choice([0, 1, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, 2**63 - 1])
            b[i:i + 8] = (v & (2**64 - 1)).to_bytes(8, "little")
        elif op < 0.8:                    # truncate
            del b[rng.randrange(len(b)):]
        else:                             # duplicate a chunk
            i = rng.randrange(len(b))
            b[i:i] = b[i:i + rng.randint(1, 64)]
    return bytes(b)


def _save(kind: str, data: bytes) -> str:
    name = f"fuzz-{kind}-{hashlib.sha1(data).hexdigest()[:12]}.bin"
    Path(name).write_bytes(data)
    return name


def loop(target: str, seeds: list[bytes], seconds: float, seed: int,
         current: Path | None = None, keep_going: bool = False,
         inputs: int | None = None) -> int:
    """The random-mutation loop; with ``current``, each input is written
    there before it is tried and progress lines go to stdout (for the
    watchdog).  ``keep_going``: save every finding and go on, printing each
    distinct one (by exception type and first line) once."""
    fn = TARGETS[target]
    intact = INTACT_SHARE.get(target, 0.0)
    rng = random.Random(seed)
    n = 0
    seen: dict[str, int] = {}
    end = time.monotonic() + seconds
    last = time.monotonic()
    while time.monotonic() < end and (inputs is None or n < inputs):
        base = rng.choice(seeds)
        data = base + rng.randbytes(8) if rng.random() < intact else mutate(rng, base)
        if current is not None:
            current.write_bytes(data)
            if time.monotonic() - last > 2:
                last = time.monotonic()
                print(f"progress {n}", flush=True)
        try:
            fn(data)
        except Exception as e:  # noqa: BLE001 - any exception is a finding
            name = _save("crash", data)
            key = f"{type(e).__name__}: {getattr(e, 'key', None) or _first_line(e)}"
            if key not in seen:
                print(f"finding after {n} inputs: {type(e).__name__}: {e} (saved {name})",
                      flush=True)
            seen[key] = seen.get(key, 0) + 1
            if not keep_going:
                return 1
        n += 1
    if seen:
        print(f"{target}: {n} inputs, {sum(seen.values())} finding(s), {len(seen)} distinct:",
              flush=True)
        for key, count in seen.items():
            print(f"  {count} x {key}", flush=True)
        return 1
    print(f"{target}: {n} inputs, no findings", flush=True)
    return 0


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return lines[0][:200] if lines else ""


def watchdog(target: str, seed_files: list[str], seconds: float, seed: int,
             hang: float, keep_going: bool = False, inputs: int | None = None) -> int:
    """Run ``loop`` in a child process; record a signal death or a hang."""
    current = Path(f"fuzz-current-{os.getpid()}.bin")
    cmd = [sys.executable, "-m", "fuzz.run", target, *seed_files, "--seconds", str(seconds),
           "--seed", str(seed), "--no-watchdog", "--current", str(current),
           *(["--keep-going"] if keep_going else []),
           *(["--inputs", str(inputs)] if inputs is not None else [])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    progress = [0, time.monotonic()]

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("progress "):
                progress[:] = [int(line.split()[1]), time.monotonic()]
            else:
                print(line, end="", flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            try:
                quiet = time.time() - current.stat().st_mtime
            except FileNotFoundError:
                quiet = 0.0          # still starting (building seeds)
            if quiet > hang:
                proc.kill()
                proc.wait()
                name = _save("hang", current.read_bytes())
                print(f"finding after about {progress[0]} inputs: the process was stuck on one "
                      f"input for {quiet:.0f} s (saved {name})", flush=True)
                return 1
        reader.join(5)
        if proc.returncode < 0:
            sig = signal.Signals(-proc.returncode).name
            name = _save("crash", current.read_bytes())
            print(f"finding after about {progress[0]} inputs: the process died of {sig} "
                  f"(saved {name})", flush=True)
            return 1
        return proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        current.unlink(missing_ok=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("seeds", nargs="*")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inputs", type=int, help="stop after this many inputs (or --seconds)")
    ap.add_argument("--watchdog", action=argparse.BooleanOptionalAction, default=None,
                    help="run in a child process; signal deaths and hangs are findings "
                         "(default: on for targets that run guest code in-process)")
    ap.add_argument("--hang", type=float, default=30.0,
                    help="watchdog: seconds without a new input that count as a hang")
    ap.add_argument("--keep-going", action="store_true",
                    help="save every finding and go on; print a summary at the end")
    ap.add_argument("--current", help=argparse.SUPPRESS)
    ap.add_argument("--replay", nargs="+", metavar="FILE", help="run the target on FILE(s)")
    args = ap.parse_args()
    fn = TARGETS[args.target]
    if args.replay:
        bad = 0
        for f in args.replay:
            try:
                fn(Path(f).read_bytes())
                print(f"{f}: ok")
            except Exception as e:  # noqa: BLE001
                bad += 1
                print(f"{f}: {type(e).__name__}: {e}")
        return 1 if bad else 0
    if not args.seeds and args.target not in DEFAULT_SEEDS:
        ap.error(f"{args.target} needs seed files")
    use_watchdog = args.target in WATCHDOG if args.watchdog is None else args.watchdog
    try:
        import atheris  # type: ignore[import-not-found]
    except ImportError:
        atheris = None
    if use_watchdog and atheris is None:
        return watchdog(args.target, args.seeds, args.seconds, args.seed, args.hang,
                        args.keep_going, args.inputs)
    seeds = ([Path(p).read_bytes() for p in args.seeds] if args.seeds
             else DEFAULT_SEEDS[args.target]())
    if atheris is not None:
        def one(data: bytes) -> None:
            fn(data)
        atheris.Setup([sys.argv[0], f"-max_total_time={int(args.seconds)}"], one)
        atheris.Fuzz()
        return 0
    return loop(args.target, seeds, args.seconds, args.seed,
                Path(args.current) if args.current else None, args.keep_going, args.inputs)


if __name__ == "__main__":
    sys.exit(main())
