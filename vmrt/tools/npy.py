"""numpy's ``.npy`` format read and written without numpy, for the arrays a
plain ``vmrt run`` takes and prints: little-endian integers, bool, f16, f32
and f64 in C order.  Anything else (big-endian data, Fortran order, other
dtypes, a damaged file) returns None here and the caller asks numpy, which
also words the errors.

A file is ``\\x93NUMPY``, a major and minor version byte, the header length
(2 bytes in version 1, 4 in versions 2 and 3), the header — a Python dict
literal such as ``{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }``
padded with spaces to a multiple of 64 bytes and ending in a newline — and
then the elements."""
from __future__ import annotations

import os
import re
import struct

from ..hal.buffer_view import BufferView
from ..hal.element_types import element_bits, npy_descr

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import BinaryIO

MAGIC = b"\x93NUMPY"
#: numpy pads the header so that the data starts at a multiple of this
_ALIGN = 64
#: numpy leaves room in the header for the first dimension to grow to this many digits
_GROWTH_DIGITS = 21
#: descr -> element type name, from element_types' table (numpy's signed
#: integers are IREE's siN; numpy's bool, one byte, is IREE's i1)
_TYPES = {"|b1": "i1", **{str(npy_descr(t)): t for t in (
    "si8", "ui8", "si16", "ui16", "si32", "ui32", "si64", "ui64", "f16", "f32", "f64")}}
_ITEM = re.compile(r"\s*'(descr|fortran_order|shape)'\s*:\s*"
                   r"('[^']*'|True|False|\(\s*(?:\d+\s*,\s*)*(?:\d+\s*)?\))\s*,?")


def _header(text: str) -> tuple[str, tuple[int, ...]] | None:
    """(descr, shape) of a C-order header with a plain descr, else None."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    items: dict[str, str] = {}
    pos, inner = 0, body[1:-1]
    while pos < len(inner.rstrip()):
        m = _ITEM.match(inner, pos)
        if m is None or m.group(1) in items:
            return None
        items[m.group(1)] = m.group(2)
        pos = m.end()
    if len(items) != 3 or items["fortran_order"] != "False":
        return None
    descr = items["descr"][1:-1] if items["descr"].startswith("'") else ""
    if descr not in _TYPES:
        return None
    dims = items["shape"].strip("() \t")
    try:
        shape = tuple(int(d) for d in dims.split(",") if d.strip())
    except ValueError:
        return None
    return descr, shape


def read_npy(fh: BinaryIO) -> BufferView | None:
    """The next array of ``fh`` as a buffer view over 64-byte aligned memory,
    the file left after it; None (``fh`` back where it was) when this reader
    does not handle it."""
    start = fh.tell()
    view = _read(fh)
    if view is None:
        fh.seek(start)
    return view


def _read(fh: BinaryIO) -> BufferView | None:
    lead = fh.read(8)
    if len(lead) != 8 or lead[:6] != MAGIC or lead[6] not in (1, 2, 3) or lead[7] != 0:
        return None
    size_fmt = "<H" if lead[6] == 1 else "<I"
    raw_len = fh.read(struct.calcsize(size_fmt))
    if len(raw_len) != struct.calcsize(size_fmt):
        return None
    text = fh.read(struct.unpack(size_fmt, raw_len)[0])
    try:
        parsed = _header(text.decode("utf-8" if lead[6] == 3 else "latin1"))
    except UnicodeDecodeError:
        return None
    if parsed is None:
        return None
    descr, shape = parsed
    count = 1
    for d in shape:
        count *= d
    nbytes = count * (element_bits(_TYPES[descr]) // 8)
    try:
        left = os.fstat(fh.fileno()).st_size - fh.tell()
    except (OSError, AttributeError, ValueError):
        return None
    if nbytes > left:                       # numpy says how much is missing
        return None
    view = BufferView.zeros(_TYPES[descr], shape, "input file")
    if nbytes and fh.readinto(view.storage) != nbytes:   # type: ignore[attr-defined]
        return None
    return view


def npy_bytes(element_type: str, shape: tuple[int, ...], data: bytes) -> bytes | None:
    """What ``numpy.save`` writes for a C-order array of ``element_type``
    (its plain types only; else None) with ``shape`` and raw ``data``."""
    descr = npy_descr(element_type)
    if descr is None:
        return None
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"
    if shape:
        header += " " * (_GROWTH_DIGITS - len(repr(shape[0])))
    size = len(header) + 1
    pad = _ALIGN - (len(MAGIC) + 2 + 2 + size) % _ALIGN
    if size + pad > 0xFFFF:
        return None                         # numpy writes version 2 for such headers
    return (MAGIC + b"\x01\x00" + struct.pack("<H", size + pad) + header.encode("latin1")
            + b" " * pad + b"\n" + data)


__all__ = ["MAGIC", "npy_bytes", "read_npy"]
