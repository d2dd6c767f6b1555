"""A real copy-on-write filesystem for the reflink tests: a btrfs image
(sparse, 300 MiB) made with ``mkfs.btrfs`` (Debian's btrfs-progs; .ci/run
installs it) and loop-mounted.  Where that cannot be had (not root, no
mkfs.btrfs, no loop devices, a kernel without btrfs) the tests skip and
say why.  ``shared_blocks`` reads the extent map with ``filefrag -v``
(e2fsprogs), independent of elfkit."""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"


def _tool(name: str) -> str:
    path = shutil.which(name, path=f"{os.environ.get('PATH', '')}:{_SBIN}")
    if not path:
        pytest.skip(f"{name} is not installed (it comes with "
                    f"{'btrfs-progs' if 'btrfs' in name else 'e2fsprogs / util-linux'})")
    return path


@contextmanager
def btrfs_mount(base: Path) -> Iterator[Path]:
    """A freshly made btrfs mounted under ``base``; unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a btrfs image needs root")
    mkfs, mount, umount = _tool("mkfs.btrfs"), _tool("mount"), _tool("umount")
    _tool("filefrag")
    image, mnt = base / "btrfs.img", base / "mnt"
    mnt.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(300 << 20)
    made = subprocess.run([mkfs, "-q", str(image)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"mkfs.btrfs failed: {made.stderr.strip()[:200]}")
    mounted = subprocess.run([mount, "-o", "loop", str(image), str(mnt)], capture_output=True,
                             text=True)
    if mounted.returncode:
        image.unlink()
        pytest.skip(f"cannot loop-mount a btrfs image here: {mounted.stderr.strip()[:200]}")
    try:
        yield mnt
    finally:
        subprocess.run([umount, str(mnt)], check=True)
        image.unlink()


def shared_blocks(path: Path) -> int:
    """How many of ``path``'s blocks lie in extents flagged ``shared``."""
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
    out = subprocess.run([_tool("filefrag"), "-v", str(path)], capture_output=True, text=True,
                         check=True).stdout
    total = 0
    for line in out.splitlines():
        cols = line.split(":")
        if len(cols) >= 5 and cols[0].strip().isdigit() and "shared" in cols[-1]:
            total += int(cols[3].strip())
    return total
