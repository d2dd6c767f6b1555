"""Long-running fuzzer: ``python -m fuzz.run TARGET SEED_FILE... [--seconds N]``.

Uses atheris (coverage-guided) when it is installed, otherwise hypothesis
with a large budget of byte-level mutations of the seed files.  Prints the
number of inputs tried; any exception other than the package's own error
is a finding and stops the run with the input saved to fuzz-crash-*.bin.
"""
from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from pathlib import Path

from fuzz.targets import TARGETS


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("seeds", nargs="+")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    fn = TARGETS[args.target]
    seeds = [Path(p).read_bytes() for p in args.seeds]
    try:
        import atheris  # type: ignore[import-not-found]
    except ImportError:
        atheris = None
    if atheris is not None:
        def one(data: bytes) -> None:
            fn(data)
        atheris.Setup([sys.argv[0], f"-max_total_time={int(args.seconds)}"], one)
        atheris.Fuzz()
        return 0
    rng = random.Random(args.seed)
    n = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        data = mutate(rng, rng.choice(seeds))
        try:
            fn(data)
        except Exception as e:  # noqa: BLE001 - any exception is a finding
            name = f"fuzz-crash-{hashlib.sha1(data).hexdigest()[:12]}.bin"
            Path(name).write_bytes(data)
            print(f"finding after {n} inputs: {type(e).__name__}: {e} (saved {name})")
            return 1
        n += 1
    print(f"{args.target}: {n} inputs, no findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
