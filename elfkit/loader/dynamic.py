"""PT_DYNAMIC: the dynamic entries, the flags a plugin must not use, the
dynamic string table, and the init/fini arrays.  Bounds-checked like the
rest of the parser (see :mod:`elfkit.loader.headers`)."""
from __future__ import annotations

import struct

from ..errors import ParseError, UnsupportedError
from . import tags as T
from .headers import TLS_MESSAGE, Segment, vaddr_to_offset

__all__ = ["read_dynamic", "check_dynamic_flags", "string_table", "cstr", "dynamic_array"]


def read_dynamic(data: memoryview, segments: list[Segment],
                 w: int) -> tuple[list[tuple[int, int]], dict[int, int], list[int]]:
    """``(entries, last value per tag, DT_NEEDED string offsets)`` of the
    first PT_DYNAMIC segment, up to DT_NULL."""
    n = len(data)
    dynseg = [s for s in segments if s.type == T.PT_DYNAMIC]
    if not dynseg:
        raise ParseError("no PT_DYNAMIC segment: not a dynamically linkable shared object")
    ds = dynseg[0]
    if ds.filesz == 0:
        raise ParseError(f"PT_DYNAMIC (program header {ds.index}) is empty")
    dyn_off = vaddr_to_offset(segments, n, ds.vaddr, ds.filesz, "PT_DYNAMIC")
    entsz = 2 * w
    dynamic: list[tuple[int, int]] = []
    dfmt = "<qQ" if w == 8 else "<iI"
    nent = ds.filesz // entsz
    for tag, val in struct.iter_unpack(dfmt, data[dyn_off:dyn_off + nent * entsz]):
        if tag == T.DT_NULL:
            break
        dynamic.append((tag, val))
    dyn: dict[int, int] = {}
    needed_offs: list[int] = []
    for tag, val in dynamic:
        if tag == T.DT_NEEDED:
            needed_offs.append(val)
        dyn[tag] = val
    return dynamic, dyn, needed_offs


def check_dynamic_flags(dyn: dict[int, int]) -> tuple[int, int]:
    """``(DT_FLAGS, DT_FLAGS_1)``; refuses text relocations, static TLS and
    DT_PREINIT_ARRAY."""
    flags = dyn.get(T.DT_FLAGS, 0)
    flags_1 = dyn.get(T.DT_FLAGS_1, 0)
    if T.DT_TEXTREL in dyn or flags & T.DF_TEXTREL:
        raise UnsupportedError("the object has text relocations (DT_TEXTREL): code would have to "
                               "be writable; rebuild with -fPIC")
    if flags & T.DF_STATIC_TLS:
        raise UnsupportedError(TLS_MESSAGE + " (DF_STATIC_TLS is set)")
    if T.DT_PREINIT_ARRAY in dyn:
        raise UnsupportedError("DT_PREINIT_ARRAY is only allowed in executables")
    return flags, flags_1


def string_table(data: memoryview, segments: list[Segment], dyn: dict[int, int]) -> tuple[int, int]:
    """``(file offset, size)`` of the dynamic string table."""
    if T.DT_STRTAB not in dyn or T.DT_STRSZ not in dyn:
        raise ParseError("PT_DYNAMIC has no DT_STRTAB/DT_STRSZ")
    strsz = dyn[T.DT_STRSZ]
    return vaddr_to_offset(segments, len(data), dyn[T.DT_STRTAB], strsz, "DT_STRTAB"), strsz


def cstr(data: memoryview, strtab: tuple[int, int], off: int, what: str) -> str:
    """The NUL-terminated string at ``off`` in the string table ``strtab``."""
    start, size = strtab
    if off < 0 or off >= size:
        raise ParseError(f"{what}: string offset {off} is outside the dynamic string table "
                         f"(DT_STRSZ {size})")
    end = bytes(data[start + off:start + size]).find(b"\0")
    if end < 0:
        raise ParseError(f"{what}: string at offset {off} is not NUL-terminated within DT_STRSZ")
    return bytes(data[start + off:start + off + end]).decode("utf-8", "replace")


def dynamic_array(dyn: dict[int, int], tag: int, sztag: int, w: int, what: str,
                  segments: list[Segment]) -> tuple[int, int]:
    """``(address, count)`` of DT_INIT_ARRAY-like arrays (``(0, 0)`` if absent),
    checked to lie in a PT_LOAD."""
    if tag not in dyn:
        return (0, 0)
    size = dyn.get(sztag, 0)
    if size % w:
        raise ParseError(f"{what}SZ {size} is not a multiple of the word size {w}")
    addr = dyn[tag]
    if size and not any(s.type == T.PT_LOAD and s.vaddr <= addr and addr + size <= s.vaddr + s.memsz
                        for s in segments):
        raise ParseError(f"{what} at {addr:#x} ({size} bytes) is outside every PT_LOAD segment")
    return (addr, size // w)
