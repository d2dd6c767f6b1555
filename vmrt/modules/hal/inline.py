"""A minimal host-side ``hal`` module: buffer views over host memory.

Programs compiled with ``--iree-execution-model=host-only`` cannot compute on
tensors, but they can take and return ``!hal.buffer_view`` values and use the
``hal.buffer_view.*`` / ``hal.buffer.*`` ops, which import functions from the
``hal`` module.  This module implements those imports over host memory, so
``vmrt run --input=4xf32=...`` works like iree-run-module for such programs.
Devices, allocators, command buffers and executables are not here: a HAL
that dispatches executables can subclass :class:`HalModule` and add exports
(as :mod:`vmrt.modules.hal.device` does).

``hal.buffer_view.trace`` (imported by programs compiled with
``--iree-flow-trace-dispatch-tensors``: a key such as ``main_dispatch_0::...
inputs`` and the tensors) hands its key and buffer views to the module's
``debug_sink``, a callable ``(key, views)``; without one it does nothing, as
IREE's hal module with a null debug sink does.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

from ...errors import HalError, StatusCode
from ...hal.buffer import HAL_BUFFER_TYPE, HalBuffer
from ...hal.buffer_view import BUFFER_VIEW_TYPE, BufferView
from ...hal.element_types import (
    ENCODING_DENSE_ROW_MAJOR,
    dtype_name,
    element_type_code,
    element_type_name,
    storage_size,
)
from ...vm.buffer import Buffer
from ...vm.instance import Instance
from ...vm.native_module import NativeModule, export

#: receives each ``hal.buffer_view.trace``: the key and the buffer views
DebugSink = Callable[[str, list[BufferView]], None]


def register_types(instance: Instance) -> None:
    instance.register_type(HAL_BUFFER_TYPE)
    instance.register_type(BUFFER_VIEW_TYPE)


def _view(bv) -> BufferView:
    if bv is None:
        raise HalError("buffer_view is null", StatusCode.INVALID_ARGUMENT)
    return bv


def _buffer(b) -> HalBuffer:
    if b is None:
        raise HalError("buffer is null", StatusCode.INVALID_ARGUMENT)
    return b


class HalModule(NativeModule):
    """Host-memory subset of IREE's ``hal`` module (version 0)."""

    name = "hal"
    version = 0

    def __init__(self, instance: Instance | None = None, debug_sink: DebugSink | None = None):
        if instance is not None:
            register_types(instance)
        super().__init__()
        #: where ``hal.buffer_view.trace`` sends its tensors (None: nowhere)
        self.debug_sink = debug_sink

    @export("buffer_view.trace", "0rCrD_v")
    def buffer_view_trace(self, state, key, views):
        if not isinstance(key, Buffer):
            raise HalError("hal.buffer_view.trace key is "
                           f"{'null' if key is None else 'a ' + type(key).__name__}, expected a "
                           "vm.buffer", StatusCode.INVALID_ARGUMENT)
        checked = []
        for i, bv in enumerate(views):
            if not isinstance(bv, BufferView):
                raise HalError(f"hal.buffer_view.trace value {i} is "
                               f"{'null' if bv is None else 'a ' + type(bv).__name__}, expected "
                               "a hal.buffer_view", StatusCode.INVALID_ARGUMENT)
            checked.append(bv)
        if self.debug_sink is not None:
            self.debug_sink(bytes(key.data).decode("utf-8", "replace"), checked)

    # -- buffer views ------------------------------------------------------
    @export("buffer_view.buffer", "0r_r", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_buffer(self, state, bv):
        view = _view(bv)
        if view.backing is not None:
            return view.backing
        return HalBuffer(view.storage, address=view.address)

    @export("buffer_view.rank", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_rank(self, state, bv):
        return len(_view(bv).shape)

    @export("buffer_view.dim", "0ri_I", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_dim(self, state, bv, index):
        shape = _view(bv).shape
        if not 0 <= index < len(shape):
            raise HalError(f"dimension index {index} out of bounds (rank {len(shape)})",
                          StatusCode.OUT_OF_RANGE)
        return shape[index]

    @export("buffer_view.element_type", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_element_type(self, state, bv):
        return element_type_code(_view(bv).element_type)

    @export("buffer_view.encoding_type", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_encoding_type(self, state, bv):
        _view(bv)
        return ENCODING_DENSE_ROW_MAJOR

    @export("buffer_view.create", "0rIIiiCID_r", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_view_create(self, state, buf, offset, length, element_type, encoding, shape):
        b = _buffer(buf)
        size = len(b.bytes)
        if offset < 0 or length < 0 or offset + length > size:
            # IREE takes a subspan of the buffer first
            raise HalError("attempted to access an address outside of the valid buffer range "
                           f"(offset={offset}, adjusted_length={length}, "
                           f"end={offset + length - 1}, buffer byte_length={size}); invalid "
                           f"subspan of an existing buffer (source_offset={offset}, "
                           f"length={length})", StatusCode.OUT_OF_RANGE)
        name = element_type_name(element_type)
        dtype_name(name)                        # an element type vmrt cannot hold fails here
        count = 1
        for d in shape:
            if d < 0:
                raise HalError(f"negative dimension {d}", StatusCode.INVALID_ARGUMENT)
            count *= d
        need = storage_size(name, count)
        # IREE's rule: the view may be smaller than its range (it covers the
        # range's first bytes), never larger
        if need > length:
            raise HalError(f"buffer view byte length {need} exceeds backing buffer byte length "
                           f"{length}", StatusCode.OUT_OF_RANGE)
        base = b.address
        address = None if base == -1 else base + offset
        view = BufferView.over(b.bytes[offset:offset + need], name, tuple(shape), address)
        # hal.buffer_view.buffer gives back the whole range, as IREE's does
        view.backing = b if offset == 0 and length == size else \
            HalBuffer(b.bytes[offset:offset + length], b.read_only, address)
        return view

    # -- buffers -----------------------------------------------------------
    @export("buffer.length", "0r_I", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_length(self, state, buf):
        return len(_buffer(buf))

    @export("buffer.load", "0rIi_i", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_load(self, state, buf, offset, length):
        b = _buffer(buf)
        if length not in (1, 2, 4):
            raise HalError(f"unsupported load length {length}", StatusCode.INVALID_ARGUMENT)
        b.check_range(offset, length)
        value = int.from_bytes(b.bytes[offset:offset + length], "little")
        return value - (1 << 32) if value >= 1 << 31 else value

    @export("buffer.store", "0irIi_v", arg_types=(None, HAL_BUFFER_TYPE))
    def buffer_store(self, state, value, buf, offset, length):
        b = _buffer(buf)
        if length not in (1, 2, 4):
            raise HalError(f"unsupported store length {length}", StatusCode.INVALID_ARGUMENT)
        b.check_range(offset, length)
        raw = struct.pack("<I", value & 0xFFFFFFFF)[:length]
        b.bytes[offset:offset + length] = raw
