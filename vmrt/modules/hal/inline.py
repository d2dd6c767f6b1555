"""A minimal host-side ``hal`` module: buffer views over host memory.

Programs compiled with ``--iree-execution-model=host-only`` cannot compute on
tensors, but they can take and return ``!hal.buffer_view`` values and use the
``hal.buffer_view.*`` / ``hal.buffer.*`` ops, which import functions from the
``hal`` module.  This module implements those imports over host memory, so
``vmrt run --input=4xf32=...`` works like iree-run-module for such programs.
Devices, allocators, command buffers and executables are not here: a HAL
that dispatches executables can subclass :class:`HalModule` and add exports
(as :mod:`vmrt.modules.hal.module` does).

``hal.buffer_view.trace`` (imported by programs compiled with
``--iree-flow-trace-dispatch-tensors``: a key such as ``main_dispatch_0::...
inputs`` and the tensors) hands its key and buffer views to the module's
``debug_sink``, a callable ``(key, views)``; without one it does nothing, as
IREE's hal module with a null debug sink does.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from ...errors import HalError, StatusCode, VmError
from ...hal.buffer import HAL_BUFFER_TYPE, HalBuffer, buffer_range
from ...hal.buffer_view import BUFFER_VIEW_TYPE, BufferView, view_of_bytes
from ...hal.element_types import (
    ENCODING_DENSE_ROW_MAJOR,
    dtype_name,
    element_bits,
    element_type_code,
    element_type_name,
    storage_size,
)
from ...vm.buffer import Buffer
from ...vm.instance import Instance
from ...vm.native_module import NativeModule, NativeState, StateT, export

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: receives each ``hal.buffer_view.trace``: the key and the buffer views
DebugSink = Callable[[str, list[BufferView]], None]


def register_types(instance: Instance) -> None:
    instance.register_type(HAL_BUFFER_TYPE)
    instance.register_type(BUFFER_VIEW_TYPE)


def need(value: object, cls: type, what: str) -> Any:
    """``value`` when it is a ``cls``; INVALID_ARGUMENT naming ``what`` when it
    is null or of another type (the argument checks of the HAL modules)."""
    if value is None:
        raise HalError(f"{what} is null", StatusCode.INVALID_ARGUMENT)
    if not isinstance(value, cls):
        raise HalError(f"{what} is a {type(value).__name__}, expected {cls.__name__}",
                       StatusCode.INVALID_ARGUMENT)
    return value


def _view(bv: Any) -> BufferView:
    if bv is None:
        raise HalError("buffer_view is null", StatusCode.INVALID_ARGUMENT)
    return bv


def _buffer(b: Any) -> HalBuffer:
    if b is None:
        raise HalError("buffer is null", StatusCode.INVALID_ARGUMENT)
    return b


def _type_name(code: int) -> str:
    try:
        return element_type_name(code)
    except VmError:
        return f"{code:08X}"


def _compatible(have: int, want: int) -> bool:
    """IREE's rule for buffer_view.assert: equal types, or integers (signless,
    signed or unsigned) of the same width (a .npy int32 passes for i32)."""
    ints = (0x10, 0x11, 0x12)
    return have == want or ((have >> 24) in ints and (want >> 24) in ints
                            and (have & 0xFFFFFF) == (want & 0xFFFFFF))


def _shape(dims: Sequence[int]) -> str:
    return "x".join(str(d) for d in dims)


def assert_buffer_view(bv: BufferView, name: str, element_type: int, encoding_type: int,
                       shape: Sequence[int]) -> None:
    """``buffer_view.assert`` of the ``hal`` and ``hal_inline`` modules (IREE
    shares it between them): ``bv`` has ``element_type`` (or an integer type
    of its width), ``encoding_type`` and ``shape``; ``name`` is the
    program's word for the value (e.g. ``input0``)."""
    have = element_type_code(bv.element_type)
    if not _compatible(have, element_type):
        raise HalError(f"{name} element type mismatch; expected {_type_name(element_type)} "
                       f"({element_type:08X}) but have {_type_name(have)} ({have:08X})",
                       StatusCode.INVALID_ARGUMENT)
    if encoding_type != ENCODING_DENSE_ROW_MAJOR:
        raise HalError(f"{name} encoding mismatch; expected {encoding_type:08X} but have "
                       f"{ENCODING_DENSE_ROW_MAJOR:08X}", StatusCode.INVALID_ARGUMENT)
    actual = bv.shape
    if tuple(shape) == actual:
        return
    shapes = f"expected shape `{_shape(shape)}`, actual shape `{_shape(actual)}`"
    if len(actual) != len(shape):
        raise HalError(f"{name} shape rank mismatch; expected {len(shape)} but have "
                       f"{len(actual)}; {shapes}", StatusCode.INVALID_ARGUMENT)
    for i, (want, got) in enumerate(zip(shape, actual)):
        if want != got:
            raise HalError(f"{name} shape dimension {i} mismatch; expected {want} but have "
                           f"{got}; {shapes}", StatusCode.INVALID_ARGUMENT)


def subspan(buf: HalBuffer, offset: int, length: int, what: str) -> HalBuffer:
    """A buffer over ``[offset, offset + length)`` of ``buf`` (``length`` -1:
    to the end), sharing its memory and access; OUT_OF_RANGE naming ``what``
    when the range is not inside it."""
    view = buffer_range(buf, offset, length, what)
    return HalBuffer(view, read_only=buf.read_only,
                     address=None if buf.address == -1 else buf.address + offset)


def view_over(b: HalBuffer, offset: int, length: int, element_type: int, shape: Sequence[int],
              names: dict[int, tuple[str, int]] | None = None) -> BufferView:
    """``hal.buffer_view.create``: a view of ``shape`` and ``element_type``
    over ``[offset, offset + length)`` of ``b``; errors as IREE words them.
    ``names``: element type code -> (name, bits per element), of the types
    vmrt holds (filled in)."""
    size = len(b.bytes)
    if offset < 0 or length < 0 or offset + length > size:
        # IREE takes a subspan of the buffer first
        raise HalError("attempted to access an address outside of the valid buffer range "
                       f"(offset={offset}, adjusted_length={length}, "
                       f"end={offset + length - 1}, buffer byte_length={size}); invalid "
                       f"subspan of an existing buffer (source_offset={offset}, "
                       f"length={length})", StatusCode.OUT_OF_RANGE)
    known = None if names is None else names.get(element_type)
    if known is None:
        name = element_type_name(element_type)
        dtype_name(name)                        # an element type vmrt cannot hold fails here
        known = (name, element_bits(name))
        if names is not None and len(names) < 256:
            names[element_type] = known
    name, bits = known
    count = 1
    for d in shape:
        if d < 0:
            raise HalError(f"negative dimension {d}", StatusCode.INVALID_ARGUMENT)
        count *= d
    need = count * (bits >> 3) if not bits & 7 else storage_size(name, count)
    # IREE's rule: the view may be smaller than its range (it covers the
    # range's first bytes), never larger
    if need > length:
        raise HalError(f"buffer view byte length {need} exceeds backing buffer byte length "
                       f"{length}", StatusCode.OUT_OF_RANGE)
    base = b.address
    address = None if base == -1 else base + offset
    view = view_of_bytes(b.bytes[offset:offset + need], name, tuple(shape), address)
    # hal.buffer_view.buffer gives back the whole range, as IREE's does
    view.backing = b if offset == 0 and length == size else \
        HalBuffer(b.bytes[offset:offset + length], b.read_only, address)
    return view


class HalModule(NativeModule[StateT]):
    """Host-memory subset of IREE's ``hal`` module (version 0); generic over
    the state of the modules extending it (its own exports need none)."""

    name = "hal"
    version = 0

    def __init__(self, instance: Instance | None = None, debug_sink: DebugSink | None = None):
        if instance is not None:
            register_types(instance)
        super().__init__()
        #: where ``hal.buffer_view.trace`` sends its tensors (None: nowhere)
        self.debug_sink = debug_sink

    @export("buffer_view.trace", "0rCrD_v")
    def buffer_view_trace(self, state: NativeState, key: Any, views: list[Any]) -> None:
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
    def buffer_view_buffer(self, state: NativeState, bv: Any) -> Any:
        view = _view(bv)
        if view.backing is not None:
            return view.backing
        return HalBuffer(view.storage, address=view.address)

    @export("buffer_view.rank", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_rank(self, state: NativeState, bv: Any) -> int:
        return len(_view(bv).shape)

    @export("buffer_view.dim", "0ri_I", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_dim(self, state: NativeState, bv: Any, index: int) -> int:
        shape = _view(bv).shape
        if not 0 <= index < len(shape):
            raise HalError(f"dimension index {index} out of bounds (rank {len(shape)})",
                          StatusCode.OUT_OF_RANGE)
        return shape[index]

    @export("buffer_view.element_type", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_element_type(self, state: NativeState, bv: Any) -> int:
        return element_type_code(_view(bv).element_type)

    @export("buffer_view.encoding_type", "0r_i", arg_types=(BUFFER_VIEW_TYPE,))
    def buffer_view_encoding_type(self, state: NativeState, bv: Any) -> int:
        _view(bv)
        return ENCODING_DENSE_ROW_MAJOR

    @export("buffer_view.create", "0rIIiiCID_r", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_view_create(self, state: NativeState, buf: Any, offset: int, length: int,
                           element_type: int, encoding: int, shape: list[int]) -> Any:
        return view_over(_buffer(buf), offset, length, element_type, shape)

    # -- buffers -----------------------------------------------------------
    @export("buffer.length", "0r_I", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_length(self, state: NativeState, buf: Any) -> int:
        return len(_buffer(buf))

    @export("buffer.load", "0rIi_i", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_load(self, state: NativeState, buf: Any, offset: int, length: int) -> int:
        b = _buffer(buf)
        if length not in (1, 2, 4):
            raise HalError(f"unsupported load length {length}", StatusCode.INVALID_ARGUMENT)
        b.check_range(offset, length)
        value = int.from_bytes(b.bytes[offset:offset + length], "little")
        return value - (1 << 32) if value >= 1 << 31 else value

    @export("buffer.store", "0irIi_v", arg_types=(None, HAL_BUFFER_TYPE))
    def buffer_store(self, state: NativeState, value: int, buf: Any, offset: int,
                     length: int) -> None:
        b = _buffer(buf)
        if length not in (1, 2, 4):
            raise HalError(f"unsupported store length {length}", StatusCode.INVALID_ARGUMENT)
        b.check_range(offset, length)
        raw = struct.pack("<I", value & 0xFFFFFFFF)[:length]
        b.bytes[offset:offset + length] = raw
