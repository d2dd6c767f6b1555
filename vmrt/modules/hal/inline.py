"""A minimal host-side ``hal`` module: buffer views over numpy arrays.

Programs compiled with ``--iree-execution-model=host-only`` cannot compute on
tensors, but they can take and return ``!hal.buffer_view`` values and use the
``hal.buffer_view.*`` / ``hal.buffer.*`` ops, which import functions from the
``hal`` module.  This module implements those imports over host memory
(numpy), so ``vmrt run --input=4xf32=...`` works like iree-run-module for
such programs.  Devices, allocators, command buffers and executables are not
here: a HAL that dispatches executables can subclass :class:`HalModule` and
add exports (and a provider replacing :data:`PROVIDER`).
"""
from __future__ import annotations

import struct

from ...hal.buffer_view import BUFFER_VIEW_TYPE, BufferView
from ...errors import StatusCode, VmError
from ...vm.instance import Instance
from ...vm.native_module import NativeModule, export
from ...vm.types import RefObject, RefType

BUFFER_TYPE = RefType("hal.buffer")

# iree_hal_element_type_t = numerical_type << 24 | bit_count
_NUMERICAL = {"i": 0x10, "si": 0x11, "ui": 0x12, "b": 0x13, "f": 0x21, "bf": 0x22}
ENCODING_DENSE_ROW_MAJOR = 1


def element_type_code(name: str) -> int:
    """IREE's element type value for a name like ``f32``, ``i8``, ``ui16``, ``i1``."""
    if name == "i1":
        return (_NUMERICAL["b"] << 24) | 8
    for prefix in ("si", "ui", "bf", "i", "f"):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return (_NUMERICAL[prefix] << 24) | int(name[len(prefix):])
    raise VmError(f"unsupported element type '{name}'", StatusCode.INVALID_ARGUMENT)


def element_type_name(code: int) -> str:
    numerical, bits = code >> 24, code & 0xFFFFFF
    for prefix, value in _NUMERICAL.items():
        if value == numerical:
            if prefix == "b":
                return "i1"
            return f"{prefix}{bits}"
    raise VmError(f"unsupported element type {code:#010x}", StatusCode.INVALID_ARGUMENT)


class HalBuffer(RefObject):
    """``hal.buffer``: a flat byte view (numpy uint8) of host memory."""

    __slots__ = ("bytes",)
    vm_type = BUFFER_TYPE

    def __init__(self, data):
        self.bytes = data

    def __len__(self) -> int:
        return int(self.bytes.size)

    def _range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.bytes.size:
            raise VmError(f"out-of-bounds access detected (offset={offset}, length={length}, "
                          f"buffer length={self.bytes.size})", StatusCode.OUT_OF_RANGE)


def register_types(instance: Instance) -> None:
    instance.register_type(BUFFER_TYPE)
    instance.register_type(BUFFER_VIEW_TYPE)


def _view(bv) -> BufferView:
    if bv is None:
        raise VmError("buffer_view is null", StatusCode.INVALID_ARGUMENT)
    return bv


def _buffer(b) -> HalBuffer:
    if b is None:
        raise VmError("buffer is null", StatusCode.INVALID_ARGUMENT)
    return b


class HalModule(NativeModule):
    """Host-memory subset of IREE's ``hal`` module (version 0)."""

    name = "hal"
    version = 0

    def __init__(self, instance: Instance | None = None):
        if instance is not None:
            register_types(instance)
        super().__init__()

    # -- buffer views ------------------------------------------------------
    @export("buffer_view.buffer", "0r_r", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_buffer(self, state, bv):
        arr = _view(bv).array
        return HalBuffer(arr.reshape(-1).view("uint8"))

    @export("buffer_view.rank", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_rank(self, state, bv):
        return _view(bv).array.ndim

    @export("buffer_view.dim", "0ri_I", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_dim(self, state, bv, index):
        shape = _view(bv).shape
        if not 0 <= index < len(shape):
            raise VmError(f"dimension index {index} out of bounds (rank {len(shape)})",
                          StatusCode.OUT_OF_RANGE)
        return shape[index]

    @export("buffer_view.element_type", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_element_type(self, state, bv):
        return element_type_code(_view(bv).element_type)

    @export("buffer_view.encoding_type", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_encoding_type(self, state, bv):
        _view(bv)
        return ENCODING_DENSE_ROW_MAJOR

    @export("buffer_view.create", "0rIIiiCID_r", arg_types=(BUFFER_TYPE,))
    def buffer_view_create(self, state, buf, offset, length, element_type, encoding, shape):
        from ...hal.buffer_view import _dtype
        b = _buffer(buf)
        b._range(offset, length)
        name = element_type_name(element_type)
        dt = _dtype(name)
        count = 1
        for d in shape:
            if d < 0:
                raise VmError(f"negative dimension {d}", StatusCode.INVALID_ARGUMENT)
            count *= d
        if count * dt.itemsize != length:
            raise VmError(f"buffer view of shape {list(shape)} x {name} needs "
                          f"{count * dt.itemsize} bytes but the range has {length}",
                          StatusCode.INVALID_ARGUMENT)
        arr = b.bytes[offset:offset + length].view(dt).reshape(tuple(shape))
        return BufferView(arr, name)

    # -- buffers -----------------------------------------------------------
    @export("buffer.length", "0r_I", arg_types=(BUFFER_TYPE,))
    def buffer_length(self, state, buf):
        return len(_buffer(buf))

    @export("buffer.load", "0rIi_i", arg_types=(BUFFER_TYPE,))
    def buffer_load(self, state, buf, offset, length):
        b = _buffer(buf)
        if length not in (1, 2, 4):
            raise VmError(f"unsupported load length {length}", StatusCode.INVALID_ARGUMENT)
        b._range(offset, length)
        value = int.from_bytes(b.bytes[offset:offset + length].tobytes(), "little")
        return value - (1 << 32) if value >= 1 << 31 else value

    @export("buffer.store", "0irIi_v", arg_types=(None, BUFFER_TYPE))
    def buffer_store(self, state, value, buf, offset, length):
        b = _buffer(buf)
        if length not in (1, 2, 4):
            raise VmError(f"unsupported store length {length}", StatusCode.INVALID_ARGUMENT)
        b._range(offset, length)
        raw = struct.pack("<I", value & 0xFFFFFFFF)[:length]
        b.bytes[offset:offset + length] = list(raw)


class _Provider:
    """Delegates to :data:`vmrt.modules.hal.device.PROVIDER`: the device module when
    the run names a device or executable plugins or a program imports device
    functions, this host-only module otherwise."""
    name = "hal"

    def register_types(self, instance: Instance) -> None:
        from .device import PROVIDER as DEVICE
        DEVICE.register_types(instance)

    def create(self, instance: Instance, options=None) -> HalModule:
        from .device import PROVIDER as DEVICE
        return DEVICE.create(instance, options)


PROVIDER = _Provider()
