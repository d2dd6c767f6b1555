"""GuestMemory.cstrs reads many NUL-terminated strings (a library's export
names) as read_cstr reads each one alone, with fewer reads."""
from __future__ import annotations

import random

import pytest

from elfkit import ElfkitError
from vmrt.hal.local.guest import CSTR_WINDOW, read_cstr, read_cstrs

BASE = 0x10000


class Memory:
    """Guest memory of ``data`` mapped at BASE; a read past its end fails as
    a machine's does; counts the reads."""

    def __init__(self, data: bytes):
        self.data = data
        self.reads = 0

    def read(self, addr: int, size: int) -> bytes:
        self.reads += 1
        at = addr - BASE
        if at < 0 or at + size > len(self.data):
            raise ElfkitError(f"read of {size} bytes at {addr:#x} is outside the mapping")
        return self.data[at:at + size]


def _alone(mem: Memory, addrs: list[int], limit: int = 4096) -> list[str]:
    return [read_cstr(mem.read, a, limit) for a in addrs]


def test_names_side_by_side_take_one_read():
    names = [f"dispatch_{i}_matmul_{i * 7}x{i}" for i in range(240)]
    blob = b"".join(n.encode() + b"\0" for n in names) + bytes(100)
    addrs, at = [], BASE
    for n in names:
        addrs.append(at)
        at += len(n) + 1
    mem = Memory(blob)
    assert read_cstrs(mem.read, addrs) == names == _alone(Memory(blob), addrs)
    assert mem.reads == 1


@pytest.mark.parametrize("seed", range(20))
def test_same_answers_as_one_at_a_time(seed):
    """Random memory and addresses: strings running to the end of the mapping
    (the one read fails), addresses far apart (over the window), zeros,
    invalid UTF-8, unterminated within the limit."""
    rng = random.Random(seed)
    size = rng.choice([300, 5000, CSTR_WINDOW + 3000])
    data = bytes(rng.choice(b"ab\xff\0") if rng.random() < 0.9 else 0 for _ in range(size))
    addrs = [0 if rng.random() < 0.1 else BASE + rng.randrange(size)
             for _ in range(rng.randrange(1, 30))]
    limit = rng.choice([8, 64, 4096])
    assert _outcome(lambda: read_cstrs(Memory(data).read, addrs, limit)) == \
        _outcome(lambda: _alone(Memory(data), addrs, limit))


def _outcome(run):
    """The strings, or that the reads failed (a string running off the end)."""
    try:
        return run()
    except ElfkitError:
        return "fails"


def test_an_address_outside_the_memory_fails_as_alone():
    mem = Memory(b"abc\0def\0")
    with pytest.raises(ElfkitError):
        read_cstr(mem.read, BASE - 4096)
    with pytest.raises(ElfkitError):
        read_cstrs(mem.read, [BASE, BASE - 4096])
