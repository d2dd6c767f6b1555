"""The ``.ireereplay`` file format (IREE HAL device replay, format 2.0):
reading a capture into :class:`Record` s, decoding the payloads CPU
programs produce, and writing a capture (:class:`CaptureWriter`).

A capture is a 24-byte header (magic ``IRRP``, version, header length,
flags, final file length) followed by records, each a 96-byte header
(record and payload lengths, sequence ordinal, thread, device / object /
related object ids, record type and flags, payload type, object type,
operation code, status) and its payload.  Everything is little-endian;
payload structs are C structs (padded to 8 bytes) followed by their
variable parts (semaphore lists, constants, buffer references, data).

Every length and count is checked against the bytes there are: a truncated
or corrupt capture is a :class:`~vmrt.errors.ReplayError` naming the record
and its offset, never an IndexError.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Sequence

from elfkit.support import DataRecord, replace_file

from ..errors import ReplayError, StatusCode

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

MAGIC = 0x50525249
VERSION = (2, 0)
FILE_HEADER = struct.Struct("<IHHIIQ")
RECORD_HEADER = struct.Struct("<7QIHHIIIII4xQ")
OPTIONAL = 1            # record flag: readers may skip the record

RECORD_TYPES = {1: "session", 2: "object", 3: "operation", 4: "blob", 5: "unsupported"}
SESSION, OBJECT, OPERATION, BLOB, UNSUPPORTED = 1, 2, 3, 4, 5
OBJECT_TYPES = {1: "device", 2: "allocator", 3: "pool", 4: "buffer", 5: "command_buffer",
                6: "executable_cache", 7: "executable", 8: "semaphore", 9: "file", 10: "event",
                11: "channel", 12: "host_call"}
OPERATIONS = {
    1: "device.trim", 2: "device.query_i64", 3: "device.query_capabilities",
    4: "device.refine_topology_edge", 5: "device.assign_topology_info",
    6: "device.create_channel", 7: "device.create_command_buffer", 8: "device.create_event",
    9: "device.create_executable_cache", 10: "device.import_file",
    11: "device.create_semaphore", 12: "device.query_queue_pool_backend",
    13: "device.queue_alloca", 14: "device.queue_dealloca", 15: "device.queue_fill",
    16: "device.queue_update", 17: "device.queue_copy", 18: "device.queue_read",
    19: "device.queue_write", 20: "device.queue_host_call", 21: "device.queue_dispatch",
    22: "device.queue_execute", 23: "device.queue_flush", 24: "device.profiling_begin",
    25: "device.profiling_flush", 26: "device.profiling_end",
    27: "device.external_capture_begin", 28: "device.external_capture_end",
    50: "replay.scope_begin", 51: "replay.scope_end",
    100: "allocator.trim", 101: "allocator.query_memory_heaps",
    102: "allocator.allocate_buffer", 103: "allocator.import_buffer",
    104: "allocator.export_buffer", 105: "allocator.virtual_memory_query_granularity",
    106: "allocator.virtual_memory_reserve", 107: "allocator.virtual_memory_release",
    108: "allocator.physical_memory_allocate", 109: "allocator.physical_memory_free",
    110: "allocator.virtual_memory_map", 111: "allocator.virtual_memory_unmap",
    112: "allocator.virtual_memory_protect", 113: "allocator.virtual_memory_advise",
    200: "buffer.map_range", 201: "buffer.unmap_range", 202: "buffer.invalidate_range",
    203: "buffer.flush_range",
    300: "command_buffer.begin", 301: "command_buffer.end",
    302: "command_buffer.begin_debug_group", 303: "command_buffer.end_debug_group",
    304: "command_buffer.execution_barrier", 305: "command_buffer.signal_event",
    306: "command_buffer.reset_event", 307: "command_buffer.wait_events",
    308: "command_buffer.advise_buffer", 309: "command_buffer.fill_buffer",
    310: "command_buffer.update_buffer", 311: "command_buffer.copy_buffer",
    312: "command_buffer.collective", 313: "command_buffer.dispatch",
    400: "executable_cache.infer_format", 401: "executable_cache.can_prepare_format",
    402: "executable_cache.prepare_executable",
    500: "executable.function_count", 501: "executable.function_info",
    502: "executable.function_parameters", 503: "executable.lookup_function_by_name",
}
OP = {name: code for code, name in OPERATIONS.items()}
#: object type of the object an operation is called on (by its name's prefix)
OBJECT_KINDS = {name: code for code, name in OBJECT_TYPES.items()}
#: payload type numbers of the payloads this module writes
PAYLOAD = {"buffer_object": 1, "allocator_allocate_buffer": 2, "buffer_range": 3,
           "buffer_range_data": 4, "command_buffer_object": 5, "executable_cache_object": 6,
           "executable_prepare": 7, "dispatch": 8, "device_queue_execute": 9,
           "semaphore_object": 10, "command_buffer_copy_buffer": 11,
           "command_buffer_execution_barrier": 13, "command_buffer_fill_buffer": 18,
           "command_buffer_update_buffer": 19, "replay_scope": 27}

# payload structs (C layouts, padded to 8 bytes)
BUFFER_REF = struct.Struct("<QQQI4x")                   # buffer_id, offset, length, slot
TIMEPOINT = struct.Struct("<QQ")                        # semaphore_id, value
ALLOCATE = struct.Struct("<QQQIIH6x")                   # size, affinity, align, usage, type, access
BUFFER_OBJECT = struct.Struct("<4QIIIH10x")
BUFFER_RANGE = struct.Struct("<QQIH10x")                # offset, length, mode, access
BUFFER_RANGE_DATA = struct.Struct("<QQQIH10x")           # offset, length, data_length, mode, access
COMMAND_BUFFER_OBJECT = struct.Struct("<IIQQ")
CACHE_OBJECT = struct.Struct("<QQ")
#: affinity, data length, constant count, caching mode, format length, metadata length
PREPARE = struct.Struct("<QQQIII4x")
METADATA_HEADER = struct.Struct("<QQQQ")               # functions, parameters, names, reserved
FUNCTION_METADATA = struct.Struct("<Q3IHHHH4x")
PARAMETER_METADATA = struct.Struct("<HHBBH")
DISPATCH = struct.Struct("<QQII3I3I32sI4xQQQQ")
QUEUE_EXECUTE = struct.Struct("<QQQQQQ")
SEMAPHORE_OBJECT = struct.Struct("<QQQ8x")
COPY_BUFFER = struct.Struct("<32s32sI12x")
FILL_BUFFER = struct.Struct("<32sI4xQ")
UPDATE_BUFFER = struct.Struct("<32sI4xQQ")
BARRIER = struct.Struct("<QQQQQ")
SCOPE = struct.Struct("<QI12x")
QUEUE_ALLOCA = struct.Struct("<40sQQQQ")
QUEUE_DEALLOCA = struct.Struct("<32sQQQQ")
QUEUE_FILL = struct.Struct("<32sQQQQQ")
QUEUE_UPDATE = struct.Struct("<32sQQQQQQ")
QUEUE_COPY = struct.Struct("<32s32sQQQQ")
IMPORT_BUFFER = struct.Struct("<40sIIQ")

#: how many bytes of executable or buffer data a capture may hold (like a module)
MAX_CAPTURE_SIZE = 1 << 34


def operation_name(code: int) -> str:
    return OPERATIONS.get(code, f"operation {code}")


class BufferRef(DataRecord, frozen=True, slots=True):
    """A buffer range operand: a buffer id, or 0 and a binding-table slot."""
    buffer_id: int
    offset: int
    length: int
    slot: int


class Record(DataRecord, frozen=True, slots=True):
    """One record of a capture."""
    index: int                  # position in the file (0 = first record)
    offset: int                 # byte offset of its header
    record_type: int
    flags: int
    sequence: int
    thread: int
    device_id: int
    object_id: int
    related_id: int
    payload_type: int
    object_type: int
    operation: int
    status: int
    payload: bytes

    def where(self) -> str:
        kind = RECORD_TYPES.get(self.record_type, f"type {self.record_type}")
        what = operation_name(self.operation) if self.record_type == OPERATION else kind
        return f"record #{self.index} ({what}) at offset {self.offset}"


class Capture(DataRecord, frozen=True):
    """A parsed capture: its source, version and records."""
    source: str
    version: tuple[int, int]
    file_length: int
    records: tuple[Record, ...]


class Payload:
    """Reads one record's payload front to back; any read past its end is
    a ReplayError naming the record."""

    def __init__(self, record: Record, source: str):
        self.record = record
        self.data = record.payload
        self.pos = 0
        self.source = source

    def error(self, message: str, code: StatusCode = StatusCode.DATA_LOSS) -> ReplayError:
        return ReplayError(f"'{self.source}': {self.record.where()}: {message}", code)

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise self.error(f"payload too short for {what} ({n} bytes at payload offset "
                             f"{self.pos}, {len(self.data) - self.pos} left)")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def struct(self, s: struct.Struct, what: str) -> tuple[Any, ...]:
        return s.unpack(self.take(s.size, what))

    def count(self, n: int, size: int, what: str) -> int:
        """``n`` items of ``size`` bytes must fit in what is left."""
        if n * size > len(self.data) - self.pos:
            raise self.error(f"{what}: {n} entries do not fit in the payload")
        return n

    def refs(self, n: int, what: str) -> list[BufferRef]:
        self.count(n, BUFFER_REF.size, what)
        return [ref(self.take(BUFFER_REF.size, what)) for _ in range(n)]

    def timepoints(self, n: int, what: str) -> list[tuple[int, int]]:
        self.count(n, TIMEPOINT.size, what)
        return [TIMEPOINT.unpack(self.take(TIMEPOINT.size, what)) for _ in range(n)]

    def done(self) -> None:
        if self.pos != len(self.data):
            raise self.error(f"{len(self.data) - self.pos} unexpected bytes at the end of the "
                             "payload")


def ref(raw: bytes) -> BufferRef:
    return BufferRef(*BUFFER_REF.unpack(raw))


def pack_ref(r: BufferRef) -> bytes:
    return BUFFER_REF.pack(r.buffer_id, r.offset, r.length, r.slot)


def parse(data: bytes, source: str) -> Capture:
    """The records of capture bytes ``data`` (from file ``source``)."""
    if len(data) < FILE_HEADER.size:
        raise ReplayError(f"'{source}': not an IREE replay capture: {len(data)} bytes, too "
                          f"small for the {FILE_HEADER.size}-byte header", StatusCode.DATA_LOSS)
    magic, major, minor, header_length, flags, file_length = FILE_HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ReplayError(f"'{source}': not an IREE replay capture (bad magic "
                          f"0x{magic:08x})", StatusCode.INVALID_ARGUMENT)
    if major != VERSION[0]:
        raise ReplayError(f"'{source}': replay format version {major}.{minor} is not supported "
                          f"(vmrt reads {VERSION[0]}.x)", StatusCode.UNIMPLEMENTED)
    if not FILE_HEADER.size <= header_length <= len(data) or flags:
        raise ReplayError(f"'{source}': corrupt capture header (header length {header_length}, "
                          f"flags 0x{flags:x})", StatusCode.DATA_LOSS)
    if file_length == 0:
        raise ReplayError(f"'{source}': the capture was never closed (file length 0 in its "
                          "header): the capturing program stopped early", StatusCode.DATA_LOSS)
    if file_length < header_length or file_length > len(data):
        raise ReplayError(f"'{source}': truncated capture: its header says {file_length} bytes, "
                          f"the file has {len(data)}", StatusCode.DATA_LOSS)
    records: list[Record] = []
    pos = header_length
    while pos < file_length:
        record, length = _record(data, pos, file_length, len(records), source)
        records.append(record)
        pos += length
    return Capture(source, (major, minor), file_length, tuple(records))


def _record(data: bytes, pos: int, end: int, index: int, source: str) -> tuple[Record, int]:
    where = f"'{source}': record #{index} at offset {pos}"
    if end - pos < RECORD_HEADER.size:
        raise ReplayError(f"{where}: truncated record header ({end - pos} of "
                          f"{RECORD_HEADER.size} bytes)", StatusCode.DATA_LOSS)
    (length, payload_length, seq, thread, device, obj, related, header_length, rtype, rflags,
     ptype, otype, op, status, reserved0, reserved1) = RECORD_HEADER.unpack_from(data, pos)
    if rflags & ~OPTIONAL or reserved0 or reserved1:
        raise ReplayError(f"{where}: corrupt record header (reserved fields or flags set)",
                          StatusCode.DATA_LOSS)
    if length > end - pos:
        raise ReplayError(f"{where}: record of {length} bytes extends past the end of the "
                          f"capture ({end - pos} bytes left)", StatusCode.DATA_LOSS)
    if not RECORD_HEADER.size <= header_length <= length or \
            payload_length != length - header_length:
        raise ReplayError(f"{where}: corrupt record lengths (record {length}, header "
                          f"{header_length}, payload {payload_length})", StatusCode.DATA_LOSS)
    if rtype not in RECORD_TYPES and not rflags & OPTIONAL:
        raise ReplayError(f"{where}: unknown record type {rtype} (not marked optional)",
                          StatusCode.UNIMPLEMENTED)
    start = pos + header_length
    return Record(index, pos, rtype, rflags, seq, thread, device, obj, related, ptype, otype, op,
                  status, bytes(data[start:start + payload_length])), length


def read_capture(path: str) -> Capture:
    """Read and parse the capture file ``path``."""
    from ..files import read_input
    data = read_input(path, "replay capture", MAX_CAPTURE_SIZE, ReplayError)
    return parse(data, path)


class CaptureWriter:
    """Builds a capture record by record (sequence ordinals in order) and
    writes it atomically: a temporary file next to the target, renamed over
    it when complete, so a failed write leaves no partial capture."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.sequence = 0
        self.next_id = 1
        self.size = FILE_HEADER.size

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def record(self, record_type: int, payload: bytes = b"", *, device: int = 0, obj: int = 0,
               related: int = 0, payload_type: int = 0, object_type: int = 0,
               operation: str | None = None, flags: int = 0) -> None:
        op = OP[operation] if operation else 0
        if operation and not object_type:     # the kind of object the call is made on
            object_type = OBJECT_KINDS.get(operation.partition(".")[0], 0)
        header = RECORD_HEADER.pack(RECORD_HEADER.size + len(payload), len(payload),
                                    self.sequence, 0, device, obj, related, RECORD_HEADER.size,
                                    record_type, flags, payload_type, object_type, op, 0, 0,
                                    0)
        self.sequence += 1
        self.parts += (header, payload)
        self.size += len(header) + len(payload)

    def write(self, path: str) -> None:
        header = FILE_HEADER.pack(MAGIC, VERSION[0], VERSION[1], FILE_HEADER.size, 0, self.size)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            import tempfile  # only writing a capture needs it (start-up time)
            fd, tmp = tempfile.mkstemp(prefix=".vmrt-replay-", dir=directory)
        except OSError as e:
            raise ReplayError(f"cannot write replay capture '{path}': {e.strerror or e}",
                              StatusCode.from_errno(e.errno)) from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                for p in self.parts:
                    f.write(p)
            os.chmod(tmp, 0o644)
            replace_file(tmp, path)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise ReplayError(f"cannot write replay capture '{path}': {e.strerror or e}",
                              StatusCode.from_errno(e.errno)) from None


def executable_metadata(functions: Sequence[tuple[int, tuple[int, int, int], int, int, str]]
                        ) -> bytes:
    """The executable ABI metadata of a prepare payload: per function
    (flags, workgroup size, constant count, binding count, name)."""
    names = b"".join(f[4].encode() for f in functions)
    out = [METADATA_HEADER.pack(len(functions), 0, len(names), 0)]
    for flags, wg, constants, bindings, name in functions:
        out.append(FUNCTION_METADATA.pack(flags, *wg, constants, bindings, 0,
                                          len(name.encode())))
    return b"".join(out) + names


def parse_metadata(p: Payload, data: bytes) -> list[tuple[str, int, int, int]]:
    """(name, flags, constant count, binding count) per function of
    executable metadata ``data`` (of ``p``'s record)."""
    if not data:
        return []
    if len(data) < METADATA_HEADER.size:
        raise p.error("executable metadata too short")
    n_fn, n_par, name_len, reserved = METADATA_HEADER.unpack_from(data)
    expected = METADATA_HEADER.size + n_fn * FUNCTION_METADATA.size + \
        n_par * PARAMETER_METADATA.size + name_len
    if reserved or expected != len(data):
        raise p.error(f"corrupt executable metadata ({n_fn} functions, {n_par} parameters, "
                      f"{name_len} name bytes in {len(data)} bytes)")
    names_at = METADATA_HEADER.size + n_fn * FUNCTION_METADATA.size + \
        n_par * PARAMETER_METADATA.size
    out = []
    for i in range(n_fn):
        flags, _x, _y, _z, consts, binds, _np, nl = FUNCTION_METADATA.unpack_from(
            data, METADATA_HEADER.size + i * FUNCTION_METADATA.size)
        name = data[names_at:names_at + nl]
        if names_at + nl > len(data):
            raise p.error("executable metadata names run past its end")
        names_at += nl
        out.append((name.decode("utf-8", "replace"), flags, consts, binds))
    return out


__all__ = ["BufferRef", "Capture", "CaptureWriter", "MAGIC", "OP", "OPERATIONS", "PAYLOAD",
           "Payload", "Record", "executable_metadata", "operation_name", "parse",
           "parse_metadata", "read_capture", "ref"]
