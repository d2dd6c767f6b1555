"""Checks and conversions of :meth:`Executable.dispatch`'s arguments: the
grid, the bindings and the push constants."""
from __future__ import annotations

import struct
import sys
from collections.abc import Sequence

from ...errors import DispatchError
from ..buffer import HostBytes

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


def xyz(value: Any, where: str, what: str) -> tuple[int, int, int]:
    """An int or a 1- to 3-tuple as an (x, y, z) triple of u32 values."""
    if isinstance(value, int):
        value = (value, 1, 1)
    v = tuple(int(x) for x in value)
    if len(v) > 3 or len(v) == 0:
        raise DispatchError(f"{where}: {what} must have 1 to 3 dimensions, got {len(v)}")
    v = v + (1,) * (3 - len(v))
    for x in v:
        if x < 0 or x > 0xFFFFFFFF:
            raise DispatchError(f"{where}: {what} {v} out of range")
    return v[0], v[1], v[2]


def grid(workgroup_count: Any, workgroup_size: Sequence[int] | None,
         default_size: Sequence[int], where: str
         ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The workgroup count and size of a dispatch (the size defaults to the
    export's, each dimension at least 1)."""
    wc = xyz(workgroup_count, where, "workgroup_count")
    if wc[2] > 0xFFFF:
        raise DispatchError(f"{where}: workgroup_count z={wc[2]} exceeds 65535")
    if workgroup_size is None:
        x, y, z = (max(v, 1) for v in default_size)
        ws3 = (x, y, z)
    else:
        ws3 = xyz(workgroup_size, where, "workgroup_size")
        if 0 in ws3:
            raise DispatchError(f"{where}: workgroup_size must be at least 1 in every "
                                f"dimension, got {ws3}")
    return wc, ws3


def binding_arrays(bindings: list[Any], expected: int | None, where: str) -> list[Any]:
    """``bindings`` checked: ``expected`` of them (None: any number), each a
    non-empty C-contiguous numpy array or :class:`vmrt.hal.buffer.HostBytes`."""
    if expected is not None and len(bindings) != expected:
        raise DispatchError(f"{where} takes {expected} binding(s), "
                            f"{len(bindings)} given")
    np: Any = sys.modules.get("numpy")     # numpy arrays come only from callers that imported it
    arrays = []
    for i, b in enumerate(bindings):
        if b.__class__ is not HostBytes:
            if np is None or not isinstance(b, np.ndarray):
                raise DispatchError(f"{where}: binding {i} is a {type(b).__name__}, expected "
                                    f"a numpy array")
            if not b.flags.c_contiguous:
                raise DispatchError(f"{where}: binding {i} is not C-contiguous "
                                    f"(use np.ascontiguousarray)")
        if b.nbytes == 0:
            raise DispatchError(f"{where}: binding {i} is empty")
        arrays.append(b)
    return arrays


def host_address(binding: Any) -> int:
    """The host address of a checked binding (see :func:`binding_arrays`)."""
    return binding.address if binding.__class__ is HostBytes else int(binding.ctypes.data)


def host_view(binding: Any) -> memoryview:
    """A checked binding's bytes as a flat byte memoryview (no copy)."""
    return binding.view if binding.__class__ is HostBytes \
        else memoryview(binding.reshape(-1).view("u1"))


def host_writable(binding: Any) -> bool:
    return binding.writeable if binding.__class__ is HostBytes else binding.flags.writeable


def workgroup_order(order: Sequence[int], total: int, where: str) -> list[int]:
    """``order`` checked: linear workgroup indices in ``[0, total)``."""
    out = [int(k) for k in order]
    bad = [k for k in out if not 0 <= k < total]
    if bad:
        raise DispatchError(f"{where}: workgroup index {bad[0]} out of range (the grid has "
                            f"{total} workgroups)")
    return out


def workgroup_xyz(k: int, wc: tuple[int, int, int]) -> str:
    """``(x, y, z)`` of linear workgroup ``k`` of grid ``wc`` (x fastest)."""
    return f"({k % wc[0]}, {(k // wc[0]) % wc[1]}, {k // (wc[0] * wc[1])})"


def u32_words(values: Any, what: str) -> bytes:
    """Push constants as little-endian 32-bit words: ints as u32 (or i32),
    floats as f32 bits; a numpy array of 32-bit elements as is."""
    np: Any = sys.modules.get("numpy")   # numpy values come only from callers that imported it
    floats: Any = (float,) if np is None else (float, np.floating)
    ints: Any = (int,) if np is None else (int, np.integer)
    if np is not None and isinstance(values, np.ndarray):
        if values.dtype.itemsize != 4:
            raise DispatchError(f"{what}: a {values.dtype} array; use 32-bit elements")
        return np.ascontiguousarray(values).tobytes()
    out = bytearray()
    for v in values:
        if isinstance(v, floats):
            out += struct.pack("<f", float(v))
        elif isinstance(v, ints):
            iv = int(v)
            if not -(1 << 31) <= iv < (1 << 32):
                raise DispatchError(f"{what}: {iv} does not fit in 32 bits")
            out += struct.pack("<I", iv & 0xFFFFFFFF)
        else:
            raise DispatchError(f"{what}: {type(v).__name__} is not an int or float")
    return bytes(out)
