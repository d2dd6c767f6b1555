"""FatELF pack / extract / split on a copy-on-write filesystem (a real,
loop-mounted btrfs; skipped with the reason where none can be mounted): the
slices are shared with their sources (reflinks, seen by ``filefrag``) and the
bytes are those of the documented layout."""
from __future__ import annotations

from pathlib import Path

import pytest

from elfkit import fatelf
from tests.elfkit.fatelf.fatelf_inputs import arch_elf, reference_fatelf
from tests.elfkit.reflink_fs import btrfs_mount, shared_blocks

_BLOCK = 4096


@pytest.fixture(scope="module")
def btrfs(tmp_path_factory):
    with btrfs_mount(tmp_path_factory.mktemp("fatelf_reflink")) as mnt:
        yield mnt


def test_pack_and_extract_share_the_slices(btrfs):
    big = bytearray(arch_elf("aarch64", 3 * (1 << 20) + 123))
    big[-4:] = b"tail"
    small = arch_elf("x86_64", 5000)
    (btrfs / "big.so").write_bytes(big)
    (btrfs / "small.so").write_bytes(small)
    out = btrfs / "both.sos"
    fatelf.pack_to(out, [btrfs / "big.so", btrfs / "small.so"])
    assert out.read_bytes() == reference_fatelf([bytes(big), small])
    # the big input ends at its file's end, so all its blocks are cloned; the small
    # one (under the writer's 64 KiB threshold) is copied
    assert shared_blocks(out) >= len(big) // _BLOCK

    fatelf.extract_to(btrfs / "back.so", out, "aarch64")     # a slice followed by another
    assert (btrfs / "back.so").read_bytes() == bytes(big)
    assert shared_blocks(btrfs / "back.so") >= len(big) // _BLOCK

    plan = fatelf.split(out, btrfs / "parts")
    assert [Path(p).read_bytes() for _r, p in plan] == [bytes(big), small]
    assert shared_blocks(Path(plan[0][1])) >= len(big) // _BLOCK


def test_pack_of_an_unaligned_layout_copies_instead(btrfs):
    """With align 16 the second slice starts mid-block: nothing to clone
    there, the buffered copy writes it and the bytes are still right."""
    a, b = arch_elf("aarch64", 9000, p_align=16), arch_elf("x86_64", 3 * _BLOCK + 7, p_align=16)
    (btrfs / "a.so").write_bytes(a)
    (btrfs / "b.so").write_bytes(b)
    out = btrfs / "tight.sos"
    fatelf.pack_to(out, [btrfs / "a.so", btrfs / "b.so"], align=16)
    assert out.read_bytes() == reference_fatelf([a, b], page=16)
    assert shared_blocks(out) == 0
