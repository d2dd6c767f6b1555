"""A run's profile as IREE's ``ireeperf-jsonl`` (``vmrt run
--profile=FILE.ireeperf.jsonl``): the schema-versioned interchange stream
that ``iree-profile export --format=ireeperf-jsonl`` writes from a
``.ireeprof`` capture and that ``iree-profile-render`` turns into a Perfetto
``.pftrace``.

One JSON object a line, keyed by ``record_type``, schema version 15 (IREE
3.13's).  What vmrt records maps onto the records IREE's local CPU devices
write with ``--device_profiling_mode=host-execution,memory-events,
executable-metadata``:

* ``schema``, then ``session`` ``begin``; one ``device`` (ordinal 0) with
  one ``queue`` (ordinal 0, stream 0); ``session`` ``end`` last;
* ``executable`` and ``executable_function`` per executable and export the
  run dispatched (ids numbered from 1 in the order first dispatched; the
  export's binding, constant and parameter counts and workgroup size);
* ``host_execution_event`` per dispatch (``op`` ``dispatch``, ``key`` the
  export, its workgroup count; ``tile_count`` the workgroups it ran and
  ``tile_duration_sum_ns`` the time of the workgroup ranges on all threads
  together, as IREE's local-task device counts its tiles) and per fill,
  copy and update (``payload_length`` the bytes written);
* ``memory_event`` ``buffer_allocate`` / ``buffer_free`` per device
  allocation (device-scope: the allocations are the allocator's, not queue
  operations; ``memory_type`` the heap's IREE memory type).

Times are the host's monotonic clock in nanoseconds (``iree_host_time_ns``).
Not in it, because the interchange has no record for them: VM invocations,
which thread ran which workgroups (tiles are only counted), and command
buffer identities (vmrt's observers see the commands, not the buffer they
came from: ``command_buffer_id`` is 0, as for IREE's queue operations).
``iree-profile`` itself reads binary ``.ireeprof`` bundles: the same
records packed as one (``--profile=FILE.ireeprof``,
:mod:`vmrt.tools.profile_ireeprof`).
"""
from __future__ import annotations

import json
from collections import defaultdict

from ..hal.statistics import MEMORY_TYPE_HOST_LOCAL

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["IREEPERF_SUFFIX", "SCHEMA_VERSION", "ireeperf_records", "ireeperf_text"]

#: the schema version of IREE 3.13's ireeperf-jsonl
SCHEMA_VERSION = 15
#: the file name ending that selects this format (IREE's documentation's)
IREEPERF_SUFFIX = ".ireeperf.jsonl"

_NONE32 = 0xFFFFFFFF        # an absent ordinal or index
#: IREE_HAL_PROFILE_QUEUE_EVENT_TYPE_* of the operations recorded
_TYPE_VALUES = {"dispatch": 2, "copy": 4, "fill": 5, "update": 6}
#: IREE_HAL_PROFILE_MEMORY_EVENT_TYPE_BUFFER_ALLOCATE / _FREE
_MEMORY_EVENTS = {"allocate": ("buffer_allocate", 9), "free": ("buffer_free", 10)}
#: IREE_HAL_MEMORY_TYPE_DEVICE_LOCAL (device-visible | device-local)
_DEVICE_LOCAL = 0x30


def _schema() -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "record_type": "schema",
            "format": "ireeperf-jsonl", "contract": "schema_versioned_interchange",
            "row_key": "record_type", "source_format": "vmrt",
            "time_domains": {"iree_host_time_ns": "host monotonic clock nanoseconds"}}


def _session(event: str) -> dict[str, Any]:
    return {"record_type": "session", "event": event,
            "session_id": 1, "stream_id": 0, "event_id": 0, "session_status_code": 0,
            "session_status": "OK"}


def _host_event(event_id: int, op: str, start: int, end: int, *, key: str | None = None,
                executable_id: int = 0, ordinal: int = _NONE32,
                workgroups: tuple[int, int, int] = (0, 0, 0),
                workgroup_size: tuple[int, int, int] = (0, 0, 0), status: int = 0,
                payload: int = 0, tiles: int = 0, tile_sum: int = 0) -> dict[str, Any]:
    return {"record_type": "host_execution_event", "physical_device_ordinal": 0,
            "queue_ordinal": 0, "stream_id": 0, "event_id": event_id, "submission_id": 0,
            "command_buffer_id": 0, "command_index": _NONE32,
            "executable_id": executable_id, "function_ordinal": ordinal, "allocation_id": 0,
            "op": op, "key": key, "type_value": _TYPE_VALUES[op], "flags": 0,
            "status_code": status, "workgroup_count": list(workgroups),
            "workgroup_size": list(workgroup_size), "host_time_domain": "iree_host_time_ns",
            "start_host_time_ns": start, "end_host_time_ns": end, "duration_ns": end - start,
            "valid": True, "payload_length": payload, "tile_count": tiles,
            "tile_duration_sum_ns": tile_sum, "operation_count": 1}


def ireeperf_records(profile: Any) -> list[dict[str, Any]]:
    """The records of ``profile`` (a :class:`vmrt.tools.profile.Profile`),
    in IREE's order: metadata first, then events by kind and time."""
    out: list[dict[str, Any]] = [
        _session("begin"),
        {"record_type": "device", "physical_device_ordinal": 0, "flags": 0,
         "queue_count": 1, "physical_device_uuid_present": False,
         "physical_device_uuid": None},
        {"record_type": "queue", "physical_device_ordinal": 0, "queue_ordinal": 0,
         "stream_id": 0}]
    # executables and their functions, numbered in the order first dispatched
    executables: dict[str, int] = {}
    functions: dict[int, tuple[int, int, tuple[int, int, int]]] = {}    # kind -> ids
    exe_records: list[dict[str, Any]] = []
    fn_records: list[dict[str, Any]] = []
    for kind, (exe_name, ordinal, export_count, info) in enumerate(profile.functions):
        if exe_name not in executables:
            executables[exe_name] = len(executables) + 1
            exe_records.append({"record_type": "executable",
                                "executable_id": executables[exe_name], "flags": 0,
                                "function_count": export_count,
                                "code_object_hash_present": False, "code_object_hash": None})
        size = tuple(info.workgroup_size) if info is not None else (0, 0, 0)
        functions[kind] = (executables[exe_name], ordinal, size)
        if any(r["executable_id"] == executables[exe_name] and r["function_ordinal"] == ordinal
               for r in fn_records):
            continue
        fn_records.append({"record_type": "executable_function",
                           "executable_id": executables[exe_name], "function_ordinal": ordinal,
                           "flags": 0, "name": profile.kinds[kind][0],
                           "constant_count": getattr(info, "constant_count", 0),
                           "binding_count": getattr(info, "binding_count", 0),
                           "parameter_count": getattr(info, "parameter_count", 0),
                           "workgroup_size": list(size), "function_hash_present": False,
                           "function_hash": None})
    out += exe_records + fn_records
    # what ran: dispatches (with their tiles) and transfers, by start time
    tile_sum: dict[int, int] = defaultdict(int)
    tiles: dict[int, int] = defaultdict(int)
    for _tid, index, _first, count, start, end in profile.ranges:
        tile_sum[index] += end - start
        tiles[index] += count
    ran: list[tuple[int, int, dict[str, Any]]] = []
    for _tid, kind, index, _what, start, end, error in profile.dispatch_records:
        exe_id, ordinal, size = functions[kind]
        fixed = profile.kinds[kind][2]
        x, y, z = (int(n) for n in fixed["workgroup_count"].split("x"))
        ran.append((start, end, {"op": "dispatch", "key": fixed["export"],
                                 "executable_id": exe_id, "ordinal": ordinal,
                                 "workgroups": (x, y, z), "workgroup_size": size,
                                 "status": 0 if error is None else 2,     # UNKNOWN
                                 "tiles": tiles[index], "tile_sum": tile_sum[index]}))
    for _tid, kind, _what, size, start, end in profile.transfers:
        ran.append((start, end, {"op": kind, "payload": size}))
    ran.sort(key=lambda r: (r[0], -r[1]))
    for n, (start, end, fields) in enumerate(ran, 1):
        out.append(_host_event(n, start=start, end=end, **fields))
    for n, (_tid, kind, heap, size, at, _live) in enumerate(profile.memory_records, 1):
        name, value = _MEMORY_EVENTS[kind]
        out.append({"record_type": "memory_event", "event_id": n, "event_type": name,
                    "event_type_value": value, "flags": 0, "result": 0, "host_time_ns": at,
                    "allocation_id": 0, "host_time_domain": "iree_host_time_ns",
                    "pool_id": 0, "backing_id": 0, "submission_id": 0,
                    "physical_device_ordinal": 0, "queue_ordinal": _NONE32,
                    "frontier_entry_count": 0,
                    "memory_type": MEMORY_TYPE_HOST_LOCAL if heap == "HOST_LOCAL"
                    else _DEVICE_LOCAL,
                    "buffer_usage": 0, "offset": 0, "length": size, "alignment": 0,
                    "externally_owned": False, "pool_stats_available": False,
                    "pool_bytes_reserved": 0, "pool_bytes_free": 0, "pool_bytes_committed": 0,
                    "pool_budget_limit": 0, "pool_reservation_count": 0, "pool_slab_count": 0})
    out.append(_session("end"))
    # IREE's key order: the version, the type, the index of the bundle record the
    # row comes from (one chunk per record type, as the .ireeprof file has them),
    # the fields
    rows = [_schema()]
    index, group = -1, ""
    for r in out:
        if r["record_type"] != group:       # (the records come grouped by type)
            index, group = index + 1, r["record_type"]
        rows.append({"schema_version": SCHEMA_VERSION, "record_type": group,
                     "source_record_index": index, **r})
    return rows


def ireeperf_text(profile: Any) -> str:
    """:func:`ireeperf_records` as JSON lines."""
    return "".join(json.dumps(r, separators=(",", ":")) + "\n"
                   for r in ireeperf_records(profile))
