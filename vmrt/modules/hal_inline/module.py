"""The ``hal_inline`` module (IREE's ``iree/modules/hal/inline``): buffers and
buffer views over host memory for programs compiled with
``--iree-execution-model=inline-static`` or ``inline-dynamic``.

Such programs have no device, allocator, queue or command buffer: they
allocate a ``hal.buffer`` together with its *storage* (a ``vm.buffer`` over
the same bytes) and compute on the storage, with VM code (``vmvx-inline``)
or with dispatches of embedded ELF executables through ``hal_loader``
(:mod:`vmrt.modules.hal_loader`).  The buffer-view exports are those of
vmrt's host-only ``hal`` module (:class:`vmrt.modules.hal.inline.HalModule`),
under this module's name; the rest are below.  Every buffer is 64-byte
aligned (a larger power-of-two alignment is honoured), so a binding of its
storage reaches compiled code at the address that code assumes.
"""
from __future__ import annotations

from ...errors import HalError, StatusCode
from ...hal.buffer import BUFFER_ALIGNMENT, HAL_BUFFER_TYPE, HalBuffer, aligned_memory, new_buffer
from ...hal.buffer_view import BufferView
from ...vm.buffer import Buffer
from ...vm.instance import Instance
from ...vm.native_module import NativeState, export
from ..hal.inline import DebugSink, HalModule, assert_buffer_view, need, subspan
from .cpu import host_cpu_value

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

VERSION = 0     # hal_inline 0.0, what the programs of iree-compile 3.13 require

#: ``hal`` host-module exports that IREE's ``hal_inline`` does not have
_NOT_INLINE = ("buffer.load", "buffer.store")


class StorageBuffer(Buffer):
    """The ``vm.buffer`` of ``hal_inline.buffer.storage``: the bytes of a
    ``hal.buffer`` (no copy: what the program stores lands in the buffer
    and in the buffer views over it), mutable unless the buffer is
    read-only.  ``hal_buffer`` keeps the buffer, and its known address,
    with it."""

    __slots__ = ("hal_buffer",)

    def __init__(self, hal_buffer: HalBuffer):
        # (Buffer.__init__ would copy a writable memoryview into a bytearray)
        self.data = hal_buffer.bytes
        self.readonly = hal_buffer.read_only or hal_buffer.bytes.readonly
        self.hal_buffer = hal_buffer


def _vm_range(buf: Buffer, offset: int, length: int, what: str) -> memoryview:
    """``buf``'s bytes ``[offset, offset + length)`` (no copy), checked as
    IREE maps a ``vm.buffer`` range (OUT_OF_RANGE)."""
    size = len(buf.data)
    if offset < 0 or length < 0 or offset + length > size:
        raise HalError(f"{what}: out-of-bounds access detected (offset={offset}, "
                       f"length={length}, buffer length={size})", StatusCode.OUT_OF_RANGE)
    data = buf.data
    view = data if isinstance(data, memoryview) else memoryview(data)
    return view[offset:offset + length]


def allocate(alignment: int, size: int, what: str) -> HalBuffer:
    """A zeroed host buffer of ``size`` bytes at an address that is a multiple
    of ``alignment`` (0: the default 64; else a power of two)."""
    if alignment < 0 or alignment & (alignment - 1):
        raise HalError(f"{what}: alignment {alignment} is not a power of two",
                       StatusCode.INVALID_ARGUMENT)
    if alignment <= BUFFER_ALIGNMENT:
        return new_buffer(size, what)
    if size < 0:
        raise HalError(f"{what}: negative size {size}", StatusCode.INVALID_ARGUMENT)
    mem, addr = aligned_memory(size + alignment, what)
    skip = (-addr) % alignment
    return HalBuffer(mem[skip:skip + size], address=addr + skip)


def storage(buf: HalBuffer) -> StorageBuffer:
    """``hal_inline.buffer.storage``: the buffer's bytes as a ``vm.buffer``."""
    return StorageBuffer(buf)


class HalInlineModule(HalModule[NativeState]):
    """IREE's ``hal_inline`` module (version 0) over host memory."""

    name = "hal_inline"
    version = VERSION

    def __init__(self, instance: Instance | None = None, debug_sink: DebugSink | None = None):
        super().__init__(instance, debug_sink)
        for name in _NOT_INLINE:
            self.remove_export(name)

    # -- buffers -------------------------------------------------------------------
    @export("buffer.allocate", "0iI_rr")
    def buffer_allocate(self, state: Any, alignment: Any, size: Any) -> Any:
        buf = allocate(alignment, size, "hal_inline.buffer.allocate")
        return buf, storage(buf)

    @export("buffer.allocate.initialized", "0irII_rr")
    def buffer_allocate_initialized(self, state: Any, alignment: Any, source: Any, offset: Any,
                                    length: Any) -> Any:
        what = "hal_inline.buffer.allocate.initialized"
        data = _vm_range(need(source, Buffer, "source buffer"), offset, length, what)
        buf = allocate(alignment, length, what)
        buf.bytes[:] = data
        return buf, storage(buf)

    @export("buffer.wrap", "0rII_r")
    def buffer_wrap(self, state: Any, source: Any, offset: Any, length: Any) -> Any:
        """A buffer over a ``vm.buffer`` range, no copy (read-only when the
        ``vm.buffer`` is, e.g. rodata).  IREE's runtime answers UNIMPLEMENTED
        (its compiler does not emit the op); vmrt wraps."""
        vm_buf = need(source, Buffer, "source buffer")
        view = _vm_range(vm_buf, offset, length, "hal_inline.buffer.wrap")
        if isinstance(vm_buf, StorageBuffer):       # a storage: the buffer's own range
            return subspan(vm_buf.hal_buffer, offset, length, "hal_inline.buffer.wrap")
        return HalBuffer(view, read_only=vm_buf.readonly)

    @export("buffer.subspan", "0rII_r")
    def buffer_subspan(self, state: Any, buffer: Any, offset: Any, length: Any) -> Any:
        buf = need(buffer, HalBuffer, "buffer")
        try:
            return subspan(buf, offset, length, "hal_inline.buffer.subspan")
        except HalError as e:
            e.annotate(f"invalid subspan of an existing buffer (source_offset={offset}, "
                       f"length={length})")
            raise

    @export("buffer.storage", "0r_r", arg_types=(HAL_BUFFER_TYPE,))
    def buffer_storage(self, state: Any, buffer: Any) -> Any:
        return storage(need(buffer, HalBuffer, "buffer"))

    # -- buffer views --------------------------------------------------------------
    @export("buffer_view.assert", "0rriiCID_v")
    def buffer_view_assert(self, state: Any, view: Any, message: Any, element_type: Any,
                           encoding_type: Any, shape: Any) -> Any:
        name = _text(message)
        if view is None or not isinstance(view, BufferView):
            raise HalError(f"{name} buffer view is "
                           f"{'null' if view is None else 'a ' + type(view).__name__}, "
                           "expected a hal.buffer_view", StatusCode.INVALID_ARGUMENT)
        assert_buffer_view(view, name, element_type, encoding_type, shape)

    # -- device --------------------------------------------------------------------
    @export("device.query.i64", "0rr_iI")
    def device_query_i64(self, state: Any, category: Any, key: Any) -> Any:
        """``hal.cpu`` keys (the LLVM names of the host CPU's features, e.g.
        ``avx2``) answer 1 or 0; any other query is not found (ok=0)."""
        cat = _text(need(category, Buffer, "category"))
        value = host_cpu_value(_text(need(key, Buffer, "key"))) if cat == "hal.cpu" else None
        return (0, 0) if value is None else (1, value)


def _text(buf: Any) -> str:
    if buf is None:
        return ""
    return bytes(need(buf, Buffer, "string buffer").data).decode("utf-8", "replace")



__all__ = ["HalInlineModule", "StorageBuffer", "VERSION", "allocate",
           "storage"]
