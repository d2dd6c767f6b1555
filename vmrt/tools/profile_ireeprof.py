"""A run's profile as IREE's binary HAL profile bundle (``vmrt run
--profile=FILE.ireeprof``), the file ``iree-run-module
--device_profiling_output`` writes and ``iree-profile`` reads (``summary``,
``statistics``, ``dispatch``, ``export --format=ireeperf-jsonl``, ...).

The bundle holds the records of :func:`~vmrt.tools.profile_ireeperf.
ireeperf_records` (see there for what they say and leave out) in IREE's
layout, bundle version 1.6, little-endian:

* a 24-byte file header (magic ``IRPF``, version, header length, flags, the
  bundle's length);
* records of a 104-byte header (lengths, session/stream/event/executable/
  command-buffer ids, device and queue ordinals, chunk flags, dropped
  records, session status, record type) followed by a content type, a name
  (the device's) and a payload: a session begin, one chunk per kind of
  record (``application/vnd.iree.hal.profile.devices``, ``.queues``,
  ``.executables``, ``.executable-functions``, ``.host-execution-events``,
  ``.memory-events``), a session end;
* each chunk's payload the records packed as IREE's C structures, each
  starting with its own length (an executable function's name follows its
  64 bytes).

``iree-profile export`` of this file gives back the records vmrt writes as
``.ireeperf.jsonl`` (the tests check it field by field).
"""
from __future__ import annotations

import struct

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["IREEPROF_SUFFIX", "ireeprof_bytes"]

#: the file name ending that selects this format (IREE's)
IREEPROF_SUFFIX = ".ireeprof"

_MAGIC = 0x46505249          # "IRPF"
_VERSION = (1, 6)
_NONE32 = 0xFFFFFFFF
_FILE_HEADER = struct.Struct("<IHHIIQ")
#: record_length, payload_length, session, stream, event, executable and
#: command-buffer ids; header_length, content type and name lengths, device
#: and queue ordinals, (padding); chunk flags, dropped records; session
#: status, record type, flags
_RECORD_HEADER = struct.Struct("<7Q5I4xQQIHH")
_SESSION_BEGIN, _CHUNK, _SESSION_END = 1, 2, 3
_CONTENT = "application/vnd.iree.hal.profile."

_DEVICE = struct.Struct("<4I16s")
_QUEUE = struct.Struct("<4IQ")
_EXECUTABLE = struct.Struct("<IIQII2Q")
_FUNCTION = struct.Struct("<IIQ4I3II2Q")
_HOST_EVENT = struct.Struct("<4I6Q4I3I3IqqQQqII")
_MEMORY_EVENT = struct.Struct("<4IQq4Q4I9QII")


def _device(r: dict[str, Any]) -> bytes:
    return _DEVICE.pack(_DEVICE.size, r["flags"], r["physical_device_ordinal"],
                        r["queue_count"], bytes(16))


def _queue(r: dict[str, Any]) -> bytes:
    return _QUEUE.pack(_QUEUE.size, r["physical_device_ordinal"], r["queue_ordinal"], 0,
                       r["stream_id"])


def _executable(r: dict[str, Any]) -> bytes:
    return _EXECUTABLE.pack(_EXECUTABLE.size, r["flags"], r["executable_id"],
                            r["function_count"], 0, 0, 0)


def _function(r: dict[str, Any]) -> bytes:
    name = r["name"].encode()
    return _FUNCTION.pack(_FUNCTION.size + len(name), r["flags"], r["executable_id"],
                          r["function_ordinal"], r["constant_count"], r["binding_count"],
                          r["parameter_count"], *r["workgroup_size"], len(name), 0, 0) + name


def _host_event(r: dict[str, Any]) -> bytes:
    return _HOST_EVENT.pack(
        _HOST_EVENT.size, r["type_value"], r["flags"], r["status_code"], r["event_id"],
        r["submission_id"], r["command_buffer_id"], r["executable_id"], r["allocation_id"],
        r["stream_id"], r["physical_device_ordinal"], r["queue_ordinal"], r["command_index"],
        r["function_ordinal"], *r["workgroup_count"], *r["workgroup_size"],
        r["start_host_time_ns"], r["end_host_time_ns"], r["payload_length"], r["tile_count"],
        r["tile_duration_sum_ns"], r["operation_count"], 0)


def _memory_event(r: dict[str, Any]) -> bytes:
    return _MEMORY_EVENT.pack(
        _MEMORY_EVENT.size, r["event_type_value"], r["flags"], r["result"], r["event_id"],
        r["host_time_ns"], r["allocation_id"], r["pool_id"], r["backing_id"],
        r["submission_id"], r["physical_device_ordinal"], r["queue_ordinal"],
        r["frontier_entry_count"], 0, r["memory_type"], r["buffer_usage"], r["offset"],
        r["length"], r["alignment"], 0, 0, 0, 0, 0, 0)


#: per record type of the interchange: its chunk's content type and packer
_CHUNKS = {"device": ("devices", _device), "queue": ("queues", _queue),
           "executable": ("executables", _executable),
           "executable_function": ("executable-functions", _function),
           "host_execution_event": ("host-execution-events", _host_event),
           "memory_event": ("memory-events", _memory_event)}


def _record(kind: int, content: str, name: bytes, payload: bytes = b"") -> bytes:
    ctype = (_CONTENT + content).encode()
    size = _RECORD_HEADER.size + len(ctype) + len(name) + len(payload)
    return _RECORD_HEADER.pack(size, len(payload), 1, 0, 0, 0, 0, _RECORD_HEADER.size,
                               len(ctype), len(name), _NONE32, _NONE32, 0, 0, 0, kind, 0
                               ) + ctype + name + payload


def ireeprof_bytes(records: list[dict[str, Any]], device: str) -> bytes:
    """The bundle of ``records`` (ireeperf-jsonl records, as
    :func:`~vmrt.tools.profile_ireeperf.ireeperf_records` makes them), the
    device named ``device``."""
    name = device.encode()
    payloads: dict[str, list[bytes]] = {}
    for r in records:
        chunk = _CHUNKS.get(r["record_type"])
        if chunk is not None:
            payloads.setdefault(chunk[0], []).append(chunk[1](r))
    body = [_record(_SESSION_BEGIN, "session", name)]
    body += [_record(_CHUNK, content, name, b"".join(parts))
             for content, parts in payloads.items()]
    body.append(_record(_SESSION_END, "session", name))
    total = _FILE_HEADER.size + sum(len(b) for b in body)
    return _FILE_HEADER.pack(_MAGIC, *_VERSION, _FILE_HEADER.size, 0, total) + b"".join(body)
