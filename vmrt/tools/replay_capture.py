"""``vmrt run --device_replay_output=FILE``: write the run's device work as
an IREE device replay capture (``.ireereplay``, format 2.0) that IREE's
``iree-run-replay`` / ``iree-dump-replay`` and ``vmrt replay`` read.

:class:`CaptureRecorder` is a dispatch observer
(:mod:`vmrt.hal.dispatch_observer`): it sees every dispatch and transfer
command the run's command buffers execute, and records each as one
command buffer submitted with ``device.queue_execute``:

* each host buffer a command touches becomes a capture buffer
  (``allocator.allocate_buffer``; a buffer inside one already recorded,
  a subspan, is that one at an offset);
* before a command, the bytes of its buffers that changed since the
  capture last knew them (written by the host, or by work the observer
  does not see) are recorded as a host write (``buffer.map_range`` +
  ``buffer.unmap_range`` with the bytes);
* each executable is recorded once (``executable_cache.prepare_executable``
  with its ELF and its exports' ABI), each dispatch with its workgroup
  count, constants and buffer ranges.

At the end the results are recorded as host read-backs (``map_range`` with
read access, ``invalidate_range`` carrying the bytes the run read, which
IREE's replay skips, and ``unmap_range``; IREE's own captures record no
read bytes): ``vmrt replay`` checks them.  The file is
written whole, to a temporary file renamed into place: a failed run or
write leaves no capture behind.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ReplayError, StatusCode
from .replay_format import (
    ALLOCATE,
    BUFFER_OBJECT,
    BUFFER_RANGE,
    BUFFER_RANGE_DATA,
    CACHE_OBJECT,
    COMMAND_BUFFER_OBJECT,
    COPY_BUFFER,
    DISPATCH,
    FILL_BUFFER,
    OBJECT,
    OPERATION,
    PAYLOAD,
    PREPARE,
    QUEUE_EXECUTE,
    SCOPE,
    SEMAPHORE_OBJECT,
    SESSION,
    TIMEPOINT,
    UPDATE_BUFFER,
    BufferRef,
    CaptureWriter,
    executable_metadata,
    pack_ref,
)

DEVICE, ALLOCATOR = 1, 2          # the ids of the one device and its allocator
BUFFER, COMMAND_BUFFER, EXECUTABLE_CACHE, EXECUTABLE, SEMAPHORE = 4, 5, 6, 7, 8
ANY_QUEUE = (1 << 64) - 1
#: usage, memory type and access of a host-visible device buffer (as IREE's
#: local devices report the buffers iree-run-module allocates)
USAGE, MEMORY_TYPE, ACCESS = 0x0B000C03, 0x32, 0x7
READ, WRITE_DISCARD = 0x1, 0x6


class _Region:
    """A capture buffer: the host memory it stands for and the bytes the
    capture's device holds in it (what a replay will have there)."""

    def __init__(self, ident: int, buf: Any, address: int, size: int):
        self.id = ident
        self.buf = buf                   # the HalBuffer (kept alive: its address stays taken)
        self.address = address
        self.size = size
        self.known = np.zeros(size, np.uint8)

    def host(self) -> Any:
        return np.frombuffer(self.buf.bytes, np.uint8)


class CaptureRecorder:
    """The observer of ``vmrt run --device_replay_output``; :meth:`finish`
    records the results and writes the file."""

    def __init__(self, path: str):
        self.path = path
        self.w = CaptureWriter()
        self.regions: list[_Region] = []
        self.executables: dict[int, tuple[Any, int]] = {}   # id(exe) -> (exe, capture id)
        self.cache = 0
        self.semaphore = 0
        self.timeline = 0
        self.w.record(SESSION)
        self._scope("replay.scope_begin", "execute")
        self.w.record(OBJECT, device=0, obj=self.w.new_id(), object_type=DEVICE)
        self.w.record(OBJECT, device=DEVICE, obj=self.w.new_id(), object_type=ALLOCATOR)

    # -- the observer protocol ------------------------------------------------
    def __call__(self, obs: Any) -> None:
        cmd = obs.command
        exe_id = self._executable(cmd.executable)
        refs = [self._range(buf, start, length) for buf, start, length in obs.ranges]
        bufs = [buf for buf, _s, _n in obs.ranges]
        self._sync(bufs)                      # the inputs as the host left them
        obs.run()
        ordinal = int(cmd.ordinal)
        constants = b"".join(struct.pack("<I", int(c) & 0xFFFFFFFF) for c in cmd.constants)
        x, y, z = (int(v) for v in cmd.workgroups)
        payload = DISPATCH.pack(exe_id, 0, ordinal, 0, 0, 0, 0, x, y, z, bytes(32), 0, 0, 0,
                                len(constants), len(refs)) + constants + \
            b"".join(pack_ref(r) for r in refs)
        self._submit("command_buffer.dispatch", payload, PAYLOAD["dispatch"], bufs)

    def transfer(self, command: Any, what: str, run: Any, *args: Any) -> Any:
        from ..hal.command_buffer import Copy, Fill, Update, resolve_all
        table = args[1]
        if isinstance(command, Fill):
            ((buf, s, n),) = resolve_all((command.target,), table, (what,))
            target = self._range(buf, s, n)
            payload = FILL_BUFFER.pack(pack_ref(target), 0, len(command.pattern)) + \
                bytes(command.pattern)
            op, ptype, bufs = "command_buffer.fill_buffer", "command_buffer_fill_buffer", [buf]
        elif isinstance(command, Update):
            ((buf, s, n),) = resolve_all((command.target,), table, (what,))
            target = self._range(buf, s, n)
            payload = UPDATE_BUFFER.pack(pack_ref(target), 0, 0, n) + bytes(command.source[:n])
            op, ptype, bufs = "command_buffer.update_buffer", "command_buffer_update_buffer", \
                [buf]
        elif isinstance(command, Copy):
            (sb, ss, sn), (tb, ts, tn) = resolve_all((command.source, command.target), table,
                                                     (what, what))
            source, target = self._range(sb, ss, sn), self._range(tb, ts, tn)
            payload = COPY_BUFFER.pack(pack_ref(source), pack_ref(target), 0)
            op, ptype, bufs = "command_buffer.copy_buffer", "command_buffer_copy_buffer", \
                [sb, tb]
        else:
            return run(*args)
        self._sync(bufs)
        result = run(*args)
        self._submit(op, payload, PAYLOAD[ptype], bufs)
        return result

    # -- records ------------------------------------------------------------------
    def _scope(self, op: str, name: str) -> None:
        data = name.encode()
        self.w.record(OPERATION, SCOPE.pack(len(data), 0) + data, operation=op,
                      payload_type=PAYLOAD["replay_scope"])

    def _executable(self, hal_exe: Any) -> int:
        exe = hal_exe.exe
        known = self.executables.get(id(exe))
        if known is not None:
            return known[1]
        fmt = str(getattr(hal_exe, "format", ""))
        data = getattr(exe, "data", b"")
        if not fmt.startswith("embedded-elf-") or not bytes(data[:4]) == b"\x7fELF":
            raise ReplayError(f"cannot capture executable '{getattr(exe, 'name', '?')}' (format "
                              f"'{fmt}'): replay captures hold embedded ELF executables",
                              StatusCode.UNIMPLEMENTED)
        if not self.cache:
            self.cache = self.w.new_id()
            payload = CACHE_OBJECT.pack(0, 0)
            self.w.record(OPERATION, payload, device=DEVICE, obj=DEVICE, related=self.cache,
                          operation="device.create_executable_cache",
                          payload_type=PAYLOAD["executable_cache_object"])
            self.w.record(OBJECT, payload, device=DEVICE, obj=self.cache,
                          object_type=EXECUTABLE_CACHE,
                          payload_type=PAYLOAD["executable_cache_object"])
        functions = []
        for e in exe.exports:
            if e.parameter_count:
                raise ReplayError(f"cannot capture executable '{exe.name}': export '{e.name}' "
                                  "reflects parameters", StatusCode.UNIMPLEMENTED)
            functions.append((e.flags, tuple(e.workgroup_size), e.constant_count,
                              e.binding_count, e.name))
        meta = executable_metadata(functions)
        constants = b"".join(struct.pack("<I", c) for c in getattr(exe, "constants", ()))
        fmt_bytes = fmt.encode()
        payload = PREPARE.pack(ANY_QUEUE, len(data), len(constants) // 4, 7, len(fmt_bytes),
                               len(meta)) + fmt_bytes + bytes(data) + constants + meta
        ident = self.w.new_id()
        self.w.record(OPERATION, payload, device=DEVICE, obj=self.cache, related=ident,
                      operation="executable_cache.prepare_executable",
                      payload_type=PAYLOAD["executable_prepare"])
        self.w.record(OBJECT, device=DEVICE, obj=ident, object_type=EXECUTABLE)
        self.executables[id(exe)] = (exe, ident)
        return ident

    def _region(self, buf: Any) -> tuple[_Region, int]:
        """The capture buffer holding host buffer ``buf`` and its offset there."""
        address, size = int(buf.address), len(buf.bytes)
        for r in self.regions:
            if r.buf is buf or (address >= 0 and r.address <= address and
                                address + size <= r.address + r.size and r.address >= 0):
                return r, (0 if r.buf is buf else address - r.address)
        r = _Region(self.w.new_id(), buf, address, size)
        alloc = ALLOCATE.pack(size, ANY_QUEUE, 0, USAGE, MEMORY_TYPE, ACCESS)
        self.w.record(OPERATION, alloc, device=DEVICE, obj=ALLOCATOR, related=r.id,
                      operation="allocator.allocate_buffer",
                      payload_type=PAYLOAD["allocator_allocate_buffer"])
        self.w.record(OBJECT, BUFFER_OBJECT.pack(size, 0, size, 0, 0, MEMORY_TYPE, USAGE, ACCESS),
                      device=DEVICE, obj=r.id, object_type=BUFFER,
                      payload_type=PAYLOAD["buffer_object"])
        self.regions.append(r)
        return r, 0

    def _range(self, buf: Any, start: int, length: int) -> BufferRef:
        r, base = self._region(buf)
        return BufferRef(r.id, base + start, length, 0)

    def _sync(self, bufs: Sequence[Any]) -> None:
        """Record the bytes of ``bufs`` that the capture does not hold yet as
        host writes (the changed span of each)."""
        for buf in bufs:
            r, _base = self._region(buf)
            host = r.host()
            changed = np.flatnonzero(host != r.known)
            if changed.size == 0:
                continue
            lo, hi = int(changed[0]), int(changed[-1]) + 1
            data = host[lo:hi].tobytes()
            self.w.record(OPERATION, BUFFER_RANGE.pack(lo, hi - lo, 1, WRITE_DISCARD),
                          device=DEVICE, obj=r.id, operation="buffer.map_range",
                          payload_type=PAYLOAD["buffer_range"])
            self.w.record(OPERATION, BUFFER_RANGE_DATA.pack(lo, hi - lo, len(data), 0,
                                                            WRITE_DISCARD) + data,
                          device=DEVICE, obj=r.id, operation="buffer.unmap_range",
                          payload_type=PAYLOAD["buffer_range_data"])
            r.known[lo:hi] = host[lo:hi]

    def _submit(self, op: str, payload: bytes, ptype: int, bufs: Sequence[Any]) -> None:
        """One command buffer holding the command ``op`` (which has run),
        submitted and waited for; the capture's device then holds what the
        run's buffers ``bufs`` hold."""
        cb = self.w.new_id()
        obj = COMMAND_BUFFER_OBJECT.pack(0x1, 0x3, ANY_QUEUE, 0)   # one-shot, transfer|dispatch
        self.w.record(OPERATION, obj, device=DEVICE, obj=DEVICE, related=cb,
                      operation="device.create_command_buffer",
                      payload_type=PAYLOAD["command_buffer_object"])
        self.w.record(OBJECT, obj, device=DEVICE, obj=cb, object_type=COMMAND_BUFFER,
                      payload_type=PAYLOAD["command_buffer_object"])
        self.w.record(OPERATION, device=DEVICE, obj=cb, operation="command_buffer.begin")
        self.w.record(OPERATION, payload, device=DEVICE, obj=cb, operation=op, payload_type=ptype)
        self.w.record(OPERATION, device=DEVICE, obj=cb, operation="command_buffer.end")
        if not self.semaphore:
            self.semaphore = self.w.new_id()
            sem = SEMAPHORE_OBJECT.pack(ANY_QUEUE, 0, 0)
            self.w.record(OPERATION, sem, device=DEVICE, obj=DEVICE, related=self.semaphore,
                          operation="device.create_semaphore",
                          payload_type=PAYLOAD["semaphore_object"])
            self.w.record(OBJECT, sem, device=DEVICE, obj=self.semaphore, object_type=SEMAPHORE,
                          payload_type=PAYLOAD["semaphore_object"])
        self.timeline += 1
        self.w.record(OPERATION, QUEUE_EXECUTE.pack(cb, ANY_QUEUE, 0, 0, 1, 0) +
                      TIMEPOINT.pack(self.semaphore, self.timeline), device=DEVICE, obj=DEVICE,
                      related=cb, operation="device.queue_execute",
                      payload_type=PAYLOAD["device_queue_execute"])
        for buf in bufs:
            r, _base = self._region(buf)
            r.known[:] = r.host()

    # -- the end ---------------------------------------------------------------------
    def finish(self, results: Sequence[Any]) -> None:
        """Record the results (buffer views) as host read-backs and write
        the capture."""
        for value in results:
            storage = getattr(value, "storage", None)
            if storage is None:
                continue                      # a scalar or a list: no device bytes
            host = np.frombuffer(storage, np.uint8)
            address = int(host.__array_interface__["data"][0]) if host.size else -1
            region = next((r for r in self.regions if r.address >= 0 and address >= 0 and
                           r.address <= address and
                           address + host.size <= r.address + r.size), None)
            if region is None:                # bytes the device never touched: a new buffer
                from ..hal.buffer import HalBuffer
                region, start = self._region(HalBuffer(storage))
            else:
                start = address - region.address
            self._sync([region.buf])
            n = host.size
            self.w.record(OPERATION, BUFFER_RANGE.pack(start, n, 1, READ), device=DEVICE,
                          obj=region.id, operation="buffer.map_range",
                          payload_type=PAYLOAD["buffer_range"])
            # the bytes read ride on invalidate_range (the host's "about to
            # read" boundary), which a replay need not act on: IREE's skips it
            self.w.record(OPERATION, BUFFER_RANGE_DATA.pack(start, n, n, 0, READ) +
                          host.tobytes(), device=DEVICE, obj=region.id,
                          operation="buffer.invalidate_range",
                          payload_type=PAYLOAD["buffer_range_data"])
            self.w.record(OPERATION, BUFFER_RANGE.pack(start, n, 0, READ), device=DEVICE,
                          obj=region.id, operation="buffer.unmap_range",
                          payload_type=PAYLOAD["buffer_range"])
        self._scope("replay.scope_end", "execute")
        self.w.write(self.path)


def check_output_path(path: str) -> None:
    """Refuse, before the run, a capture path that cannot be a new file
    (empty, a folder, or in a folder that is not there)."""
    import os
    folder = os.path.dirname(os.path.abspath(path)) if path else ""
    if not path or os.path.isdir(path):
        raise ReplayError(f"cannot write replay capture '{path}': not a file name",
                          StatusCode.INVALID_ARGUMENT)
    if not os.path.isdir(folder):
        raise ReplayError(f"cannot write replay capture '{path}': no folder '{folder}'",
                          StatusCode.NOT_FOUND)


__all__ = ["CaptureRecorder", "check_output_path"]
