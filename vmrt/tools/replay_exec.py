"""Re-running an IREE device replay capture on vmrt's local CPU HAL.

:class:`Replayer` walks a capture's records in order and does what each
operation did: buffers are 64-byte aligned host memory (byte memoryviews), executables
load through :class:`~vmrt.hal.local.loader.ExecutableLoader` (embedded
ELF of any CPU elfkit runs: a foreign one is emulated), command buffers are
lists of recorded commands run at ``queue_execute`` over its binding table,
semaphores are timeline values.  The capture's order is the host's order,
and every submission runs to completion when it is issued, so each wait is
satisfied by an earlier signal (a valid schedule of the recorded graph).

The host's read-backs (``buffer.map_range`` with read access) are the
outputs: their bytes as the replay produced them are kept, with the bytes
the capture recorded for them when it did (vmrt's captures record them on
the ``buffer.invalidate_range`` of the read-back; IREE's record none).

Operations without replay semantics here (channels, collectives, host
calls, file writes, virtual memory) are refused by name.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable, Mapping, Sequence

from elfkit.support import DataRecord

from ..errors import ReplayError, StatusCode, VmError
from ..hal.buffer import BUFFER_ALIGNMENT, HostBytes, address_of
from .replay_format import (
    ALLOCATE,
    BLOB,
    BUFFER_OBJECT,
    BUFFER_RANGE,
    BUFFER_RANGE_DATA,
    COPY_BUFFER,
    DISPATCH,
    FILL_BUFFER,
    IMPORT_BUFFER,
    OBJECT,
    OBJECT_TYPES,
    OP,
    OPERATION,
    PREPARE,
    QUEUE_ALLOCA,
    QUEUE_COPY,
    QUEUE_DEALLOCA,
    QUEUE_EXECUTE,
    QUEUE_FILL,
    QUEUE_UPDATE,
    SCOPE,
    SEMAPHORE_OBJECT,
    SESSION,
    UNSUPPORTED,
    UPDATE_BUFFER,
    BufferRef,
    Capture,
    Payload,
    Record,
    operation_name,
    parse_metadata,
    ref,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

WHOLE = (1 << 64) - 1          # IREE_HAL_WHOLE_BUFFER
READ, WRITE = 1, 2             # memory access bits
FILE_OBJECT = struct.Struct("<6Q5IHHI32s4x")
QUEUE_READ = struct.Struct("<QQ32sQQQQQ")

#: operations that change nothing a replay on a CPU can observe
NO_OPS = frozenset({
    "replay.scope_begin", "replay.scope_end", "device.trim", "device.query_i64",
    "device.query_capabilities", "device.assign_topology_info", "device.refine_topology_edge",
    "device.query_queue_pool_backend", "device.profiling_begin", "device.profiling_flush",
    "device.profiling_end", "device.external_capture_begin", "device.external_capture_end",
    "device.queue_flush", "device.create_executable_cache", "device.create_event",
    "allocator.trim", "allocator.query_memory_heaps",
    "command_buffer.begin", "command_buffer.end", "executable.function_count",
    "executable.function_info", "executable.function_parameters",
    "executable.lookup_function_by_name", "executable_cache.infer_format",
    "executable_cache.can_prepare_format"})
#: commands recorded into command buffers that a synchronous in-order
#: execution satisfies by construction
NO_COMMANDS = frozenset({
    "command_buffer.execution_barrier", "command_buffer.signal_event",
    "command_buffer.reset_event", "command_buffer.wait_events",
    "command_buffer.begin_debug_group", "command_buffer.end_debug_group",
    "command_buffer.advise_buffer"})


class Output(DataRecord):
    """One range the host read back: its bytes after the replay, and the
    bytes the capture recorded for it (None when it recorded none)."""
    record: int                        # index of the map_range record
    buffer_id: int
    offset: int
    length: int
    raw: bytearray                     # a copy of the range's bytes
    recorded: bytes | None = None
    #: the element type the name of the last dispatch that bound the buffer
    #: ends in (``..._f32``), or None
    element_type: str | None = None

    @property
    def data(self) -> Any:
        """The bytes as a numpy ``uint8`` array (over :attr:`raw`)."""
        import numpy as np
        return np.frombuffer(self.raw, np.uint8)


class Substitution(DataRecord, frozen=True):
    """``--replay_executable_substitution``: executable ``target`` (an id,
    or None for all) replaced by the library at ``path`` (``fmt``: its
    IREE executable format, or "")."""
    target: int | None
    fmt: str
    path: str


class Loaded(DataRecord):
    exe: Any
    exports: list[Any]                 # captured function ordinal -> export
    fmt: str


class Replayer:
    """Runs one capture.  ``loader`` is an ExecutableLoader; ``threads``
    the worker count of each dispatch (local-task); ``backend`` how ELF
executables run ("auto": native when built for the host); ``remaps``
(captured prefix, replacement) pairs for the paths of referenced files
(their length is checked, not their identity: they may have moved);
``load_file(path,
    what)`` reads a substituted library or a referenced external file."""

    def __init__(self, capture: Capture, loader: Any, *, threads: int = 1,
                 substitutions: Sequence[Substitution] = (), backend: str = "auto",
                 remaps: Sequence[tuple[str, str]] = (),
                 load_file: Callable[[str, str], bytes] | None = None):
        self.capture = capture
        self.remaps = list(remaps)
        self.backend = backend
        self.loader = loader
        self.threads = threads
        self.substitutions = list(substitutions)
        self.load_file = load_file or _read
        self.buffers: dict[int, Any] = {}
        self.executables: dict[int, Loaded] = {}
        self.command_buffers: dict[int, list[tuple[str, Payload]]] = {}
        self.semaphores: dict[int, int] = {}
        self.files: dict[int, bytes] = {}
        self.mapped: dict[tuple[int, int, int], Output] = {}
        self.outputs: list[Output] = []
        self.dispatches = 0
        #: id() of a buffer's bytes -> the export that last bound them (copies carry it)
        self.writers: dict[int, str] = {}
        self.executable_ids: list[int] = []
        self.ops: dict[str, Callable[[Payload], None]] = {
            "device.create_command_buffer": self._create_command_buffer,
            "device.create_semaphore": self._create_semaphore,
            "allocator.allocate_buffer": self._allocate,
            "allocator.import_buffer": self._import_buffer,
            "device.import_file": self._import_file,
            "executable_cache.prepare_executable": self._prepare,
            "buffer.map_range": self._map,
            "buffer.unmap_range": self._unmap,
            "buffer.flush_range": self._unmap,
            "buffer.invalidate_range": self._unmap,
            "device.queue_alloca": self._queue_alloca,
            "device.queue_dealloca": self._queue_dealloca,
            "device.queue_fill": self._queue_fill,
            "device.queue_update": self._queue_update,
            "device.queue_copy": self._queue_copy,
            "device.queue_read": self._queue_read,
            "device.queue_execute": self._queue_execute,
            "device.queue_dispatch": self._queue_dispatch,
        }
        self.commands: dict[str, Callable[[Payload, Sequence[Any]], None]] = {
            "command_buffer.dispatch": self._dispatch,
            "command_buffer.copy_buffer": self._copy,
            "command_buffer.fill_buffer": self._fill,
            "command_buffer.update_buffer": self._update,
        }

    # -- the walk ---------------------------------------------------------------
    def run(self) -> list[Output]:
        for record in self.capture.records:
            p = Payload(record, self.capture.source)
            try:
                self._record(record, p)
            except ReplayError:
                raise
            except VmError as e:
                raise ReplayError(f"'{self.capture.source}': {record.where()}: {e.message}",
                                  e.code) from None
        # one output per range read back, in the order first read, as last read
        # (assigning an existing key keeps its place in a dict)
        from ..hal.element_types import export_element_type
        last: dict[tuple[int, int, int], Output] = {}
        for o in self.outputs:
            last[(o.buffer_id, o.offset, o.length)] = o
            writer = self.writers.get(id(self.buffers[o.buffer_id]))
            o.element_type = export_element_type(writer) if writer else None
        return list(last.values())

    def _record(self, record: Record, p: Payload) -> None:
        if record.record_type in (SESSION, BLOB) or record.record_type not in (
                OBJECT, OPERATION, UNSUPPORTED):
            return                       # metadata, blobs, optional records of later versions
        if record.status != 0:
            return                       # a failed call: the host went on without it
        if record.record_type == UNSUPPORTED:
            raise p.error(f"the capture marks {operation_name(record.operation)} as an "
                          "operation it could not record faithfully", StatusCode.UNIMPLEMENTED)
        if record.record_type == OBJECT:
            self._object(record, p)
            return
        name = operation_name(record.operation)
        if name.startswith("command_buffer.") and name not in ("command_buffer.begin",
                                                                "command_buffer.end"):
            self._record_command(name, record, p)
            return
        if name in ("replay.scope_begin", "replay.scope_end"):
            (n, _flags) = p.struct(SCOPE, "scope")
            p.take(n, "scope name")          # a marker: checked, nothing to do
            return
        if name in NO_OPS:
            return
        op = self.ops.get(name)
        if op is None:
            raise p.error(f"vmrt does not replay {name}", StatusCode.UNIMPLEMENTED)
        op(p)

    def _object(self, record: Record, p: Payload) -> None:
        kind = OBJECT_TYPES.get(record.object_type, "")
        if kind in ("channel", "host_call", "pool"):
            raise p.error(f"vmrt does not replay {kind} objects", StatusCode.UNIMPLEMENTED)
        if kind == "buffer" and record.payload:
            (size, byte_offset, byte_length, *_rest) = p.struct(BUFFER_OBJECT, "buffer object")
            if record.object_id not in self.buffers:
                self.buffers[record.object_id] = _zeros(p, max(size, byte_offset + byte_length))
        elif kind == "command_buffer":
            self.command_buffers.setdefault(record.object_id, [])

    # -- objects ------------------------------------------------------------------
    def _create_command_buffer(self, p: Payload) -> None:
        self.command_buffers[p.record.related_id] = []

    def _create_semaphore(self, p: Payload) -> None:
        _affinity, initial, _flags = p.struct(SEMAPHORE_OBJECT, "semaphore")
        self.semaphores[p.record.related_id] = initial

    def _allocate(self, p: Payload) -> None:
        size, *_rest = p.struct(ALLOCATE, "allocation")
        self.buffers[p.record.related_id] = _zeros(p, size)

    def _import_buffer(self, p: Payload) -> None:
        alloc, _type, _flags, n = p.struct(IMPORT_BUFFER, "imported buffer")
        size = ALLOCATE.unpack(alloc)[0]
        data = p.take(n, "imported bytes")
        buf = _zeros(p, max(size, n))
        buf[:n] = data
        self.buffers[p.record.related_id] = buf

    def _import_file(self, p: Payload) -> None:
        (_aff, length, _dev, _inode, _mtime, ref_len, _access, _flags, _handle, ref_type,
         _validation, _digest_type, _r0, _r1, _digest) = p.struct(FILE_OBJECT, "file object")
        reference = p.take(ref_len, "file reference")
        if ref_type == 2:                       # the bytes inline
            self.files[p.record.related_id] = reference
        elif ref_type == 1:                     # a path the replay reads
            path = reference.decode("utf-8", "replace")
            for old, new in self.remaps:
                if path.startswith(old):
                    path = new + path[len(old):]
                    break
            try:
                self.files[p.record.related_id] = self.load_file(path, "referenced file")
            except ReplayError as e:
                raise p.error(f"{e.message} (--replay_file_remap=CAPTURED=HERE remaps a "
                              "moved file's folder)", e.code) from None
        elif ref_type == 3:                     # each queue_read carries its bytes
            self.files[p.record.related_id] = b""
        else:
            raise p.error(f"file reference type {ref_type} is not one vmrt replays",
                          StatusCode.UNIMPLEMENTED)
        if ref_type != 3 and len(self.files[p.record.related_id]) < length:
            raise p.error(f"file of {length} bytes has only "
                          f"{len(self.files[p.record.related_id])} bytes of contents")

    def _prepare(self, p: Payload) -> None:
        (_aff, data_len, n_constants, _caching, fmt_len, meta_len) = p.struct(
            PREPARE, "executable")
        fmt = p.take(fmt_len, "executable format").decode("utf-8", "replace")
        data = p.take(data_len, "executable data")
        constants = _words(p.take(4 * p.count(n_constants, 4, "constants"), "constants"))
        metadata = parse_metadata(p, p.take(meta_len, "executable metadata"))
        exe_id = p.record.related_id
        self.executable_ids.append(exe_id)
        sub = next((s for s in self.substitutions if s.target in (exe_id, None)), None)
        from ..hal.local.loader import supports_format
        if sub is None and not supports_format(fmt):
            raise p.error(f"executable format '{fmt}' is not a CPU format vmrt runs (the "
                          "capture was made on another kind of device)", StatusCode.UNIMPLEMENTED)
        if sub is not None:
            data = self.load_file(sub.path, "substituted executable")
            fmt = sub.fmt         # none: the library's own CPU (or the host's slice)
        exe = self._load(p, data, constants, fmt, sub)
        self.executables[exe_id] = Loaded(exe, _function_map(p, exe, metadata, sub), fmt)

    def _load(self, p: Payload, data: bytes, constants: list[int], fmt: str,
              sub: Substitution | None) -> Any:
        from ..hal.local.elf_executable import ElfExecutable
        from ..hal.local.loader import FORMAT_SUFFIXES
        arch = next((a for a, sfx in FORMAT_SUFFIXES.items()        # the format's CPU
                     if fmt in (f"embedded-elf-{sfx}", f"system-elf-{sfx}")), None)
        try:
            if sub is not None or arch is not None and fmt.startswith("embedded-elf-"):
                exe = ElfExecutable.load(data, plugins=self.loader.plugins, arch=arch,
                                         backend=self.backend, constants=constants or None,
                                         name=os.path.basename(sub.path) if sub else None)
                self.loader.executables.append(exe)
                return exe
            return self.loader.load(data, constants or None, executable_format=fmt)
        except VmError as e:
            what = f"substituted executable '{sub.path}'" if sub else "executable"
            raise p.error(f"{what} ({fmt or 'any CPU'}) cannot be loaded: {e.message}",
                          e.code) from None

    # -- host access ----------------------------------------------------------------
    def _map(self, p: Payload) -> None:
        offset, length, _mode, access = p.struct(BUFFER_RANGE, "mapped range")
        buf = self._buffer(p, p.record.object_id)
        length = len(buf) - offset if length == WHOLE else length
        _check(p, buf, offset, length, "mapped range")
        if access & READ and not access & WRITE:
            out = Output(p.record.index, p.record.object_id, offset, length,
                         bytearray(buf[offset:offset + length]))
            self.outputs.append(out)
            self.mapped[(p.record.object_id, offset, length)] = out

    def _unmap(self, p: Payload) -> None:
        if p.record.payload_type != 4:             # no bytes captured: nothing to do
            return
        offset, length, n, _mode, access = p.struct(BUFFER_RANGE_DATA, "unmapped range")
        data = p.take(n, "unmapped bytes")
        buf = self._buffer(p, p.record.object_id)
        _check(p, buf, offset, n, "unmapped range")
        out = self.mapped.get((p.record.object_id, offset, length))
        if p.record.operation == OP["buffer.invalidate_range"] and out is None:
            raise p.error(f"read bytes recorded for [{offset}, +{length}), a range the host "
                          "did not map for reading")
        if access & WRITE or out is None:
            buf[offset:offset + n] = data
        else:
            out.recorded = data                     # what the captured run read there

    # -- queue operations ----------------------------------------------------------------
    def _signal(self, p: Payload, waits: int, signals: int) -> Callable[[], None]:
        p.timepoints(waits, "wait semaphores")
        sig = p.timepoints(signals, "signal semaphores")

        def done() -> None:
            for sem, value in sig:
                self.semaphores[sem] = max(self.semaphores.get(sem, 0), value)
        return done

    def _queue_alloca(self, p: Payload) -> None:
        alloc, _aff, _flags, waits, signals = p.struct(QUEUE_ALLOCA, "queue alloca")
        done = self._signal(p, waits, signals)
        self.buffers[p.record.related_id] = _zeros(p, ALLOCATE.unpack(alloc)[0])
        done()

    def _queue_dealloca(self, p: Payload) -> None:
        _ref, _aff, _flags, waits, signals = p.struct(QUEUE_DEALLOCA, "queue dealloca")
        self._signal(p, waits, signals)()

    def _queue_fill(self, p: Payload) -> None:
        target, _aff, _flags, waits, signals, n = p.struct(QUEUE_FILL, "queue fill")
        done = self._signal(p, waits, signals)
        self._fill_range(p, ref(target), p.take(n, "fill pattern"), ())
        done()

    def _queue_update(self, p: Payload) -> None:
        target, _aff, _flags, _src, n, waits, signals = p.struct(QUEUE_UPDATE, "queue update")
        done = self._signal(p, waits, signals)
        self._write(p, ref(target), p.take(n, "update bytes"), ())
        done()

    def _queue_copy(self, p: Payload) -> None:
        source, target, _aff, _flags, waits, signals = p.struct(QUEUE_COPY, "queue copy")
        done = self._signal(p, waits, signals)
        self._copy_range(p, ref(source), ref(target), ())
        done()

    def _queue_read(self, p: Payload) -> None:
        (file_id, src_offset, target, _aff, _flags, captured, waits, signals) = p.struct(
            QUEUE_READ, "queue read")
        done = self._signal(p, waits, signals)
        t = ref(target)
        if captured:
            data = p.take(captured, "captured file bytes")
        else:
            if file_id not in self.files:
                raise p.error(f"reads file {file_id}, which the capture never imported")
            data = self.files[file_id][src_offset:src_offset + t.length]
            if len(data) != t.length:
                raise p.error(f"reads [{src_offset}, +{t.length}) past the end of file "
                              f"{file_id} ({len(self.files[file_id])} bytes)")
        self._write(p, t, data, ())
        done()

    def _queue_execute(self, p: Payload) -> None:
        cb, _aff, _flags, waits, signals, n = p.struct(QUEUE_EXECUTE, "queue execute")
        done = self._signal(p, waits, signals)
        table = [self._resolve(p, r, ()) for r in p.refs(n, "binding table")]
        if cb:
            if cb not in self.command_buffers:
                raise p.error(f"executes command buffer {cb}, which the capture never created")
            for name, cp in self.command_buffers[cb]:
                try:
                    self.commands[name](Payload(cp.record, cp.source), table)
                except ReplayError as e:
                    e.annotate(f"executing command buffer {cb} ({p.record.where()})")
                    raise
        done()

    def _queue_dispatch(self, p: Payload) -> None:
        self._dispatch(p, ())

    # -- commands ------------------------------------------------------------------------
    def _record_command(self, name: str, record: Record, p: Payload) -> None:
        if name in NO_COMMANDS:
            return
        if name not in self.commands:
            raise p.error(f"vmrt does not replay {name}", StatusCode.UNIMPLEMENTED)
        if record.object_id not in self.command_buffers:
            raise p.error(f"records into command buffer {record.object_id}, which the capture "
                          "never created")
        self.command_buffers[record.object_id].append((name, p))

    def _dispatch(self, p: Payload, table: Sequence[Any]) -> None:
        (exe_id, _aff, ordinal, _flags, _sx, _sy, _sz, cx, cy, cz, count_ref, _local, waits,
         signals, n_constants, n_bindings) = p.struct(DISPATCH, "dispatch")
        done = self._signal(p, waits, signals)
        raw = p.take(n_constants, "constants")
        if len(raw) % 4:
            raise p.error(f"{len(raw)} bytes of constants (not 32-bit words)")
        constants = _words(raw)
        refs = p.refs(n_bindings, "dispatch bindings")
        loaded = self.executables.get(exe_id)
        if loaded is None:
            raise p.error(f"dispatches executable {exe_id}, which the capture never prepared")
        if not 0 <= ordinal < len(loaded.exports):
            raise p.error(f"function ordinal {ordinal} out of range (executable {exe_id} has "
                          f"{len(loaded.exports)})")
        wc_ref = ref(count_ref)
        if wc_ref.buffer_id or wc_ref.length:       # indirect: the counts are in a buffer
            buf, start, _n = self._resolve(p, BufferRef(wc_ref.buffer_id, wc_ref.offset, 12,
                                                        wc_ref.slot), table)
            cx, cy, cz = struct.unpack_from("<3I", buf, start)
        ranges = [self._resolve(p, r, table) for r in refs]
        export = loaded.exports[ordinal]
        loaded.exe.dispatch(export, (cx, cy, cz),
                            [HostBytes(buf[start:start + n], address_of(buf) + start, buf)
                             for buf, start, n in ranges], constants, threads=self.threads)
        for buf, _start, _n in ranges:
            self.writers[id(buf)] = export.name
        self.dispatches += 1
        done()

    def _copy(self, p: Payload, table: Sequence[Any]) -> None:
        source, target, _flags = p.struct(COPY_BUFFER, "copy")
        self._copy_range(p, ref(source), ref(target), table)

    def _fill(self, p: Payload, table: Sequence[Any]) -> None:
        target, _flags, n = p.struct(FILL_BUFFER, "fill")
        self._fill_range(p, ref(target), p.take(n, "fill pattern"), table)

    def _update(self, p: Payload, table: Sequence[Any]) -> None:
        target, _flags, _src, n = p.struct(UPDATE_BUFFER, "update")
        self._write(p, ref(target), p.take(n, "update bytes"), table)

    # -- buffer ranges ----------------------------------------------------------------------
    def _buffer(self, p: Payload, buffer_id: int) -> Any:
        buf = self.buffers.get(buffer_id)
        if buf is None:
            raise p.error(f"uses buffer {buffer_id}, which the capture never created")
        return buf

    def _resolve(self, p: Payload, r: BufferRef, table: Sequence[Any]) -> tuple[Any, int, int]:
        if r.buffer_id:
            buf = self._buffer(p, r.buffer_id)
            start, limit = r.offset, len(buf)
        else:
            if not 0 <= r.slot < len(table):
                raise p.error(f"binding table slot {r.slot} out of range ({len(table)} "
                              "bindings submitted)")
            buf, base, n = table[r.slot]
            start, limit = base + r.offset, base + n
        length = limit - start if r.length == WHOLE else r.length
        if start > limit or length > limit - start:
            raise p.error(f"buffer range [{r.offset}, +{length}) out of bounds")
        return buf, start, length

    def _write(self, p: Payload, r: BufferRef, data: bytes, table: Sequence[Any]) -> None:
        buf, start, n = self._resolve(p, r, table)
        if len(data) != n:
            raise p.error(f"{len(data)} bytes for a range of {n}")
        buf[start:start + n] = data

    def _fill_range(self, p: Payload, r: BufferRef, pattern: bytes,
                    table: Sequence[Any]) -> None:
        buf, start, n = self._resolve(p, r, table)
        if not pattern or n % len(pattern):
            raise p.error(f"fill pattern of {len(pattern)} bytes for a range of {n}")
        buf[start:start + n] = pattern * (n // len(pattern))

    def _copy_range(self, p: Payload, source: BufferRef, target: BufferRef,
                    table: Sequence[Any]) -> None:
        sb, ss, sn = self._resolve(p, source, table)
        tb, ts, tn = self._resolve(p, target, table)
        if sn != tn:
            raise p.error(f"copies {sn} bytes into a range of {tn}")
        tb[ts:ts + tn] = bytes(sb[ss:ss + sn])
        if id(sb) in self.writers:
            self.writers[id(tb)] = self.writers[id(sb)]


#: the largest buffer a replay allocates
MAX_BUFFER_SIZE = 1 << 32
_MAPPED = 1 << 25           # buffers from this size on are anonymous mappings


def _zeros(p: Payload, size: int) -> Any:
    if size > MAX_BUFFER_SIZE:
        raise p.error(f"buffer of {size} bytes is larger than the {MAX_BUFFER_SIZE} bytes vmrt "
                      "replays", StatusCode.RESOURCE_EXHAUSTED)
    try:
        if size >= _MAPPED:     # zero pages until written (a bytearray is zeroed eagerly)
            import mmap
            return memoryview(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
        mem = memoryview(bytearray(size + BUFFER_ALIGNMENT))   # zeroed
    except (MemoryError, OSError):
        raise p.error(f"cannot allocate a buffer of {size} bytes",
                      StatusCode.RESOURCE_EXHAUSTED) from None
    skip = -address_of(mem) % BUFFER_ALIGNMENT
    return mem[skip:skip + size]


def _words(raw: bytes) -> list[int]:
    """Little-endian 32-bit words."""
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


def _check(p: Payload, buf: Any, offset: int, length: int, what: str) -> None:
    if offset > len(buf) or length > len(buf) - offset:
        raise p.error(f"{what} [{offset}, +{length}) is outside the buffer of {len(buf)} bytes")


def _read(path: str, what: str) -> bytes:
    from ..files import read_input
    from .replay_format import MAX_CAPTURE_SIZE
    return read_input(path, what, MAX_CAPTURE_SIZE, ReplayError)


def _function_map(p: Payload, exe: Any, metadata: list[tuple[str, int, int, int]],
                  sub: Substitution | None) -> list[Any]:
    """The export of each captured function ordinal: by the captured names
    when the capture has them (as IREE's replay maps them), checking the
    ABI; by ordinal otherwise."""
    if not metadata:
        return list(exe.exports)
    by_name: Mapping[str, Any] = {e.name: e for e in exe.exports}
    what = f"substituted executable '{sub.path}'" if sub else "executable"
    if len(exe.exports) != len(metadata):
        raise p.error(f"{what} has {len(exe.exports)} exports, the captured one "
                      f"{len(metadata)}", StatusCode.FAILED_PRECONDITION)
    out = []
    for name, _flags, constants, bindings in metadata:
        e = by_name.get(name)
        if e is None:
            raise p.error(f"{what} has no export '{name}' (it has "
                          f"{', '.join(by_name) or 'none'})", StatusCode.FAILED_PRECONDITION)
        if (e.constant_count, e.binding_count) != (constants, bindings):
            raise p.error(f"{what}: export '{name}' takes {e.constant_count} constants and "
                          f"{e.binding_count} bindings, the captured one {constants} and "
                          f"{bindings}", StatusCode.FAILED_PRECONDITION)
        out.append(e)
    return out


__all__ = ["Output", "Replayer", "Substitution"]
