"""The ``io_parameters`` module (IREE's ``iree/modules/io/parameters``): what
programs with ``#flow.parameter.named<"scope"::"key">`` globals import.

Each call names a scope (a ``vm.buffer`` string, null for the empty scope)
and a list of parameters as three ``vm.buffer`` tables: key table (u32
offset, u32 length per parameter, into the key data), key data, and spans
(u64 parameter offset, u64 buffer offset, u64 length per parameter).

- ``load`` returns a ``vm.list`` of ``hal.buffer`` s, one per span,
  holding ``length`` bytes of the parameter from its offset: read-only
  buffers over the file's own memory when the range is aligned (no copy),
  else new buffers;
- ``gather`` copies each span of a parameter into one target buffer at the
  span's buffer offset;
- ``scatter`` copies each span of one source buffer into a parameter
  (only parameters over writable memory given from Python can change).

Queues are synchronous (vmrt's device): the wait fence must be signalled,
the signal fence is signalled when the copies are done.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ...errors import HalError, ParameterError, StatusCode, VmError
from ...hal.buffer import (
    BUFFER_ALIGNMENT,
    HAL_BUFFER_TYPE,
    HalBuffer,
    address_of,
    buffer_range,
    new_buffer,
)
from ...hal.local.device import Device
from ...hal.objects import Fence, check_waits
from ...vm.buffer import Buffer
from ...vm.instance import Instance
from ...vm.list import VmList
from ...vm.native_module import NativeModule, NativeState, export
from .index import ParameterIndex

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .entries import ParameterEntry

_KEY = struct.Struct("<II")
_SPAN = struct.Struct("<QQQ")


def _need(value: Any, cls: type, what: str) -> Any:
    if not isinstance(value, cls):
        got = "null" if value is None else f"a {type(value).__name__}"
        raise HalError(f"{what} is {got}, expected {cls.__name__}", StatusCode.INVALID_ARGUMENT)
    return value


def _scope(buf: Any) -> str:
    if buf is None:
        return ""
    return bytes(_need(buf, Buffer, "parameter scope").data).decode("utf-8", "replace")


def spans(key_table: Any, key_data: Any, span_table: Any) -> list[tuple[str, int, int, int]]:
    """(key, parameter offset, buffer offset, length) of each parameter a
    call names, every table range checked."""
    table = bytes(_need(key_table, Buffer, "key table").data)
    names = bytes(_need(key_data, Buffer, "key data").data)
    raw = bytes(_need(span_table, Buffer, "span table").data)
    if len(raw) % _SPAN.size:
        raise ParameterError(f"span table of {len(raw)} bytes is not a whole number of "
                             f"{_SPAN.size}-byte spans")
    count = len(raw) // _SPAN.size
    if len(table) < count * _KEY.size:
        raise ParameterError(f"key table of {len(table)} bytes is too small for {count} spans")
    out = []
    keys = _KEY.iter_unpack(table[:count * _KEY.size])
    for i, ((p_off, b_off, length), (k_off, k_len)) in enumerate(zip(_SPAN.iter_unpack(raw),
                                                                      keys)):
        if k_off + k_len > len(names):
            raise ParameterError(f"key {i} (offset={k_off}, length={k_len}) is outside the "
                                 f"{len(names)}-byte key data", StatusCode.OUT_OF_RANGE)
        key = names[k_off:k_off + k_len].decode("utf-8", "replace")
        out.append((key, p_off, b_off, length))
    return out


class ParametersModule(NativeModule[NativeState]):
    """``io_parameters`` (version 0) over one :class:`ParameterIndex` per scope."""

    name = "io_parameters"
    version = 0

    def __init__(self, instance: Instance | None = None,
                 indexes: Sequence[ParameterIndex] = ()):
        super().__init__()
        self.indexes = {i.scope: i for i in reversed(list(indexes))}   # the first one wins

    def index(self, scope: str) -> ParameterIndex:
        idx = self.indexes.get(scope)
        if idx is None:
            known = ", ".join(f"'{s}'" for s in self.indexes) or "none; pass --parameters="
            raise ParameterError(f"no parameters registered for scope '{scope}' (scopes: "
                                 f"{known})", StatusCode.NOT_FOUND)
        return idx

    def _begin(self, device: Any, wait: Any, signal: Any, what: str) -> None:
        _need(device, Device, "device")
        if wait is not None:
            check_waits(_need(wait, Fence, "wait fence"), what)
        if signal is not None:
            _need(signal, Fence, "signal fence")

    @export("load", "0rIrrrIiirrr_r")
    def load(self, state: NativeState, device: Any, affinity: int, wait: Any, signal: Any,
             scope: Any, target_affinity: int, memory_types: int, usage: int, key_table: Any,
             key_data: Any, span_table: Any) -> VmList:
        self._begin(device, wait, signal, "io_parameters.load")
        buffers = []
        with _signalling(signal):
            idx = self.index(_scope(scope))
            for key, p_off, _b_off, length in spans(key_table, key_data, span_table):
                entry = idx.lookup(key)
                entry.check_range(p_off, length)
                buf = _imported(entry, p_off, length)
                if buf is None:
                    buf = new_buffer(length, f"io_parameters.load of `{key}`")  # bounded size
                    buf.bytes[:] = entry.read(p_off, length)
                if device.statistics is not None:
                    device.statistics.record_allocation(buf, memory_types)
                buffers.append(buf)
        return VmList(HAL_BUFFER_TYPE, buffers)

    @export("gather", "0rIrrrrrrr_v")
    def gather(self, state: NativeState, device: Any, affinity: int, wait: Any, signal: Any,
               scope: Any, target: Any, key_table: Any, key_data: Any, span_table: Any) -> None:
        what = "io_parameters.gather"
        self._begin(device, wait, signal, what)
        with _signalling(signal):
            idx = self.index(_scope(scope))
            buf = _need(target, HalBuffer, "target buffer")
            for key, p_off, b_off, length in spans(key_table, key_data, span_table):
                entry = idx.lookup(key)
                entry.check_range(p_off, length)
                buf.writable(what)
                buffer_range(buf, b_off, length, f"{what} of `{key}`")[:] = \
                    entry.read(p_off, length)

    @export("scatter", "0rIrrrrrrr_v")
    def scatter(self, state: NativeState, device: Any, affinity: int, wait: Any, signal: Any,
                source: Any, scope: Any, key_table: Any, key_data: Any,
                span_table: Any) -> None:
        what = "io_parameters.scatter"
        self._begin(device, wait, signal, what)
        with _signalling(signal):
            buf = _need(source, HalBuffer, "source buffer")
            idx = self.index(_scope(scope))
            for key, p_off, b_off, length in spans(key_table, key_data, span_table):
                data = buffer_range(buf, b_off, length, f"{what} of `{key}`")
                idx.lookup(key).write(p_off, data)


def _imported(entry: ParameterEntry, offset: int, length: int) -> HalBuffer | None:
    """A read-only buffer over the entry's ``length`` bytes from ``offset``
    themselves (a parameter's bytes in a mapped or preloaded file, which
    nothing writes) when they are a whole, aligned range, as IREE imports a
    mapped parameter file's memory instead of copying it; None otherwise (a
    splat, memory given from Python, a misaligned entry): the caller copies.
    (The range is checked: ``entry.check_range``.)"""
    whole = entry.data
    if entry.pattern is not None or not (isinstance(whole, memoryview) and whole.readonly):
        return None
    data = whole[offset:offset + length]
    if not len(data) == length > 0:
        return None
    if entry.address >= 0:
        addr = entry.address + offset
    else:
        try:
            addr = address_of(data)
        except (TypeError, ValueError):
            return None
    if addr % BUFFER_ALIGNMENT:
        return None
    return HalBuffer(data, read_only=True, address=addr)


@contextmanager
def _signalling(signal: Fence | None) -> Iterator[None]:
    """Signal ``signal`` when the block completes; fail it with the error's
    status when it raises (as IREE fails a batch's signal semaphores)."""
    try:
        yield
    except VmError as e:
        if signal is not None:
            signal.fail(int(e.code))
        raise
    if signal is not None:
        signal.signal()


__all__ = ["ParametersModule", "spans"]
