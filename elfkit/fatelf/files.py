"""Reading input files with a bounded size (``read_input``, what
``elfkit.load`` and the ``elfkit`` commands read a path with), over the
regular-file checks of :mod:`elfkit._support.files` (re-exported here).
"""
from __future__ import annotations

import os

from .._support.files import file_kind, open_regular, open_special_output
from ..errors import ElfkitError
from .format import MAGIC_BYTES

__all__ = ["MAX_ELF_SIZE", "file_kind", "open_regular", "open_special_output", "read_input"]

#: the largest plain ELF file read into memory (a FatELF may be larger: its
#: slices are mapped, and each must fit this bound to be copied)
MAX_ELF_SIZE = 1 << 30


def read_input(path: str | os.PathLike[str], limit: int = MAX_ELF_SIZE,
               what: str = "input") -> memoryview:
    """The bytes of a regular file, read with a bounded size.

    Up to ``limit`` bytes are read into memory.  A larger FatELF is mapped
    read-only instead (a FatELF followed by a long tail: its slices are
    what gets used); anything else larger is refused with ElfkitError, as
    are FIFOs, devices and directories."""
    name = os.fspath(path)
    fd, size = open_regular(name, what)
    try:
        if size > limit:
            if os.pread(fd, 4, 0) == MAGIC_BYTES:
                import mmap  # only here: reading a small file does not load it
                return memoryview(mmap.mmap(fd, 0, access=mmap.ACCESS_READ))
            raise ElfkitError(f"{name}: is {size} bytes, more than the {_size(limit)} elfkit "
                              f"reads (only a FatELF may be larger)")
        buf = bytearray(size)
        view = memoryview(buf)
        done = 0
        while done < size:
            k = os.readv(fd, [view[done:]]) if hasattr(os, "readv") else _read_into(fd, view, done)
            if k <= 0:
                break   # the file shrank while being read
            done += k
        return view[:done]
    finally:
        os.close(fd)


def _read_into(fd: int, view: memoryview, at: int) -> int:  # pragma: no cover (no readv)
    data = os.read(fd, len(view) - at)
    view[at:at + len(data)] = data
    return len(data)


def _size(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 and not n % (1 << 30) else \
        f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n} bytes"
