"""A run's timeline as a picture (``vmrt run --profile=FILE``,
``vmrt.load(..., profile=FILE)``): a Chrome/Perfetto trace-event JSON file
(``{"traceEvents": [...], "displayTimeUnit": "ns"}``) that ui.perfetto.dev
and chrome://tracing open.

What it shows, on the threads that did it (one ``tid`` per host thread,
each named by an ``M`` metadata event):

* ``invocation``: each top-level function call (and the context's creation,
  where the modules' initializers run) as an ``X`` slice on the calling
  thread, ``args.function`` its name;
* ``dispatch``: each dispatch as a slice inside its invocation (name: the
  export; args: executable, export, workgroup count, backend, arch); its
  category says ``native`` or ``emulated`` (``vmvx`` for the vmvx module);
* ``workgroups``: the workgroups of a dispatch as one slice per contiguous
  range a thread ran (the calling thread's inside the dispatch slice,
  local-task workers' on their own threads), args ``first`` and ``count``
  (``order`` instead of ``first`` for workgroups a tool, ``--check_races``,
  runs in an order of its own);
* ``transfer``: fill, update and copy commands of command buffers, with
  the bytes they wrote;
* ``memory``: each device allocation and free as an ``i`` instant event
  (bytes, heap), and a ``C`` counter track of the live bytes per heap.

A path ending in ``.ireeperf.jsonl`` (or ``format="ireeperf-jsonl"``)
gets the same records as IREE's own ireeperf-jsonl interchange instead, for
``iree-profile-render`` (:mod:`vmrt.tools.profile_ireeperf`); one ending in
``.ireeprof`` IREE's binary profile bundle, for ``iree-profile``
(:mod:`vmrt.tools.profile_ireeprof`).

Timestamps are microseconds (with nanosecond digits) since the profile
started.  The dispatch, transfer and workgroup hooks exist only while a
profile watches (:mod:`vmrt.hal.dispatch_observer`); without one nothing is
installed.  Allocations come from the device statistics
(:func:`vmrt.hal.statistics.listening`), so profiling turns them on.

A profile is written when the run ends, also when it fails (the failing
invocation's slice carries ``args.error``): the timeline up to a failure
is what one debugging it wants.  The file appears whole or not at all
(written next to the target, then renamed over it); a target that cannot
be written is refused before anything runs.
"""
from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ..errors import StatusCode, UsageError, VmError
from ..hal.dispatch_observer import (
    ObservedDispatch,
    current_observer,
    observe_dispatches,
    record_workgroup_ranges,
)
from ..hal.statistics import listening
from .files import StagedOutputs
from .profile_ireeperf import IREEPERF_SUFFIX, ireeperf_records, ireeperf_text

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

__all__ = ["FORMATS", "MAX_ORDER", "Profile", "open_profile"]

#: the formats a profile is written in
FORMATS = ("trace-event", "ireeperf-jsonl", "ireeprof")

#: the most workgroup indices a slice of workgroups run in a tool's order lists
MAX_ORDER = 64

class Profile:
    """The events of one run and where they go (see the module docstring).
    ``target`` is a path (staged: the file appears at :meth:`close`) or a
    text stream (written at :meth:`close`)."""

    def __init__(self, target: str | os.PathLike[str] | TextIO, process: str = "vmrt",
                 format: str | None = None):
        if format is not None and format not in FORMATS:
            raise UsageError(f"unknown profile format '{format}' (expected "
                             f"{' or '.join(FORMATS)})")
        self.process = process
        self.stream: Any = None
        self.files: StagedOutputs | None = None
        self.path = ""
        if hasattr(target, "write"):
            self.stream = target
        else:
            self.path = os.fspath(target)
            if not self.path:
                raise UsageError("the profile path is empty (expected a file name)")
            self.files = StagedOutputs()
            try:    # fails here, before anything runs, when the file cannot be written
                self.stream = self.files.open(self.path, False)
            except OSError as e:
                self.files.discard()
                raise UsageError(f"cannot write the profile to '{self.path}': "
                                 f"{e.strerror or e}", StatusCode.NOT_FOUND
                                 if e.errno == errno.ENOENT else StatusCode.PERMISSION_DENIED
                                 ) from None
        #: "trace-event" (Chrome/Perfetto JSON) or "ireeperf-jsonl" (IREE's
        #: interchange, :mod:`vmrt.tools.profile_ireeperf`): by default the latter
        #: for a path ending in ``.ireeperf.jsonl``
        self.format = format or ("ireeperf-jsonl" if self.path.endswith(IREEPERF_SUFFIX)
                                 else "ireeprof" if self.path.endswith(".ireeprof")
                                 else "trace-event")
        if self.format == "ireeprof" and self.files is None:
            raise UsageError("an .ireeprof profile is binary: give a path, not a text stream")
        self.pid = os.getpid()
        self.t0 = time.perf_counter_ns()
        # what the hooks record, as plain tuples (formatted at close: the hooks stay cheap)
        #: (tid, function, category, start ns, end ns, error or None)
        self.invocations: list[tuple[Any, ...]] = []
        #: (tid, kind, dispatch index, command label, start, end, error or None)
        self.dispatch_records: list[tuple[Any, ...]] = []
        #: (tid, dispatch index, first workgroup, count, start, end)
        self.ranges: list[tuple[Any, ...]] = []
        #: (tid, "fill" / "update" / "copy", command label, bytes, start, end)
        self.transfers: list[tuple[Any, ...]] = []
        #: (tid, "allocate" / "free", heap, bytes, time, live bytes per heap after it)
        self.memory_records: list[tuple[Any, ...]] = []
        self.threads: dict[int, str] = {}
        self.local = threading.local()      # .tid: the thread's id
        self.lock = threading.Lock()        # (naming a thread)
        self.dispatches = 0
        #: the dispatch running (its index; a range recorder reads it)
        self.current = -1
        self.ranged = -1            # the last dispatch a range was recorded for
        #: per dispatch kind: (name, categories, fixed args)
        self.kinds: list[tuple[str, str, dict[Any, Any]]] = []
        #: per dispatch kind: (executable name, export ordinal, the executable's
        #: export count, the export's ExportInfo or None)
        self.functions: list[tuple[str, int, int, Any]] = []
        #: id(recorded command) -> (the command, its kind)
        self._kind_of: dict[int, tuple[Any, int]] = {}
        self.closed = False

    # -- the hooks ------------------------------------------------------------------------
    def thread_id(self) -> int:
        """The calling thread's ``tid`` (named after the thread at its first event)."""
        try:
            return self.local.tid       # (get_native_id is a system call)
        except AttributeError:
            pass
        tid = self.local.tid = threading.get_native_id()
        with self.lock:
            if tid not in self.threads:     # (two pools' threads may share a name)
                name = threading.current_thread().name
                self.threads[tid] = f"{name} ({tid})" if name in self.threads.values() \
                    else name
        return tid

    @contextmanager
    def invocation(self, function: str, category: str = "invocation") -> Iterator[None]:
        """A slice named ``function`` on the calling thread, during which its
        dispatches, transfers and allocations are recorded (an observer
        already watching, ``--check_races`` say, still runs each dispatch)."""
        inner = current_observer()
        tid = self.thread_id()
        error = None
        start = time.perf_counter_ns()
        try:
            with listening(self.memory), observe_dispatches(_Observer(self, inner)), \
                    record_workgroup_ranges(self.workgroup_range):
                yield
        except BaseException as e:
            error = _describe(e)
            raise
        finally:
            self.invocations.append((tid, function, category, start, time.perf_counter_ns(),
                                     error))

    def dispatch(self, obs: ObservedDispatch, inner: Any) -> None:
        """Run one observed dispatch (through ``inner``, if an observer was
        there first), timing it and its workgroup ranges."""
        cmd = obs.command
        hit = self._kind_of.get(id(cmd))
        kind = hit[1] if hit is not None and hit[0] is cmd else self._kind(obs)
        index = self.current = self.dispatches
        self.dispatches = index + 1
        tid = self.thread_id()
        error = None
        start = time.perf_counter_ns()
        try:
            if inner is None:
                obs.run()
            else:
                inner(obs)
        except BaseException as e:
            error = _describe(e)
            raise
        finally:
            end = time.perf_counter_ns()
            if self.ranged != index:    # an executable without range hooks (vmvx): its
                x, y, z = cmd.workgroups    # workgroups ran here, one after another
                self.ranges.append((tid, index, 0, x * y * z, start, end))
            self.dispatch_records.append((tid, kind, index, obs.what, start, end, error))

    def _kind(self, obs: ObservedDispatch) -> int:
        cmd = obs.command
        exe = cmd.executable.exe
        exe_name, export = obs.names()
        backend = str(getattr(exe, "backend", "vmvx"))
        x, y, z = cmd.workgroups
        fixed = {"executable": exe_name, "export": export, "backend": backend,
                 "arch": getattr(getattr(exe, "arch", None), "name", None) or "vmvx",
                 "workgroup_count": f"{x}x{y}x{z}", "workgroups": x * y * z}
        self.kinds.append((export, f"dispatch,{backend}", fixed))
        try:
            info = exe.export(cmd.ordinal)
        except (AttributeError, VmError):
            info = None
        self.functions.append((exe_name, cmd.ordinal, len(getattr(exe, "exports", ())), info))
        self._kind_of[id(cmd)] = (cmd, len(self.kinds) - 1)
        return len(self.kinds) - 1

    def workgroup_range(self, indices: Sequence[int], run: Callable[..., Any], *args: Any
                        ) -> Any:
        """The range recorder (:func:`vmrt.hal.dispatch_observer.record_workgroup_ranges`):
        runs ``run(*args)`` on this thread, recorded as workgroups ``indices``
        of the dispatch running."""
        index = self.ranged = self.current
        tid = self.thread_id()
        start = time.perf_counter_ns()
        try:
            return run(*args)
        finally:
            end = time.perf_counter_ns()
            if isinstance(indices, range) and indices.step == 1 or len(indices) < 2:
                self.ranges.append((tid, index, indices[0] if len(indices) else 0,
                                    len(indices), start, end))
            else:       # a tool's order (--check_races): the indices, in it
                self.ranges.append((tid, index, tuple(indices[:MAX_ORDER]), len(indices),
                                    start, end))

    def transfer(self, cmd: Any, what: str, run: Callable[..., int], *args: Any) -> int:
        """A fill, update or copy command, timed (its slice says the bytes)."""
        tid = self.thread_id()
        start = time.perf_counter_ns()
        size = run(*args)
        self.transfers.append((tid, type(cmd).__name__.lower(), what, size, start,
                               time.perf_counter_ns()))
        return size

    def memory(self, kind: str, heap: str, size: int, live: dict[str, int]) -> None:
        """An allocation or a free (:func:`vmrt.hal.statistics.listening`)."""
        if not self.closed:
            self.memory_records.append((self.thread_id(), kind, heap, size,
                                        time.perf_counter_ns(), live))

    # -- the file -------------------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        """The trace events recorded so far (Trace Event Format)."""
        pid, t0 = self.pid, self.t0

        def us(ns: int) -> float:
            return round((ns - t0) / 1000, 3)

        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
             "args": {"name": self.process}}]
        main = next(iter(self.threads), 0)
        for k, (tid, name) in enumerate(sorted(self.threads.items(),
                                               key=lambda item: (item[0] != main, item[1]))):
            out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                        "args": {"name": name}})
            out.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid,
                        "tid": tid, "args": {"sort_index": k}})
        # (tid, name, categories, start, end, args)
        slices: list[tuple[int, str, str, int, int, dict[Any, Any]]] = []
        for tid, function, category, start, end, error in self.invocations:
            args: dict[str, Any] = {"function": function}
            if error is not None:
                args["error"] = error
            slices.append((tid, function, category, start, end, args))
        names = {}
        for tid, kind, index, what, start, end, error in self.dispatch_records:
            name, cats, fixed = self.kinds[kind]
            names[index] = (name, cats.replace("dispatch", "workgroups"))
            args = {"dispatch": index, "command": what, **fixed}
            if error is not None:
                args["error"] = error
            slices.append((tid, name, cats, start, end, args))
        for tid, index, first, count, start, end in self.ranges:
            name, cats = names.get(index, ("?", "workgroups"))
            if isinstance(first, tuple):
                slices.append((tid, f"{name} workgroups ({count} in an order)", cats, start,
                               end, {"dispatch": index, "count": count, "order": list(first)}))
                continue
            label = f"{first}" if count == 1 else f"{first}-{first + count - 1}"
            slices.append((tid, f"{name} workgroups {label}", cats, start, end,
                           {"dispatch": index, "first": first, "count": count}))
        for tid, kind, what, size, start, end in self.transfers:
            slices.append((tid, kind, "transfer", start, end, {"bytes": size, "command": what}))
        # parents before children: by start, the longer first, then (a vmvx dispatch and
        # its one range span the same time) invocations, dispatches, workgroups
        rank = {"load": 0, "invocation": 0, "workgroups": 2}
        for tid, name, cats, start, end, args in sorted(
                slices, key=lambda s: (s[3], s[3] - s[4], rank.get(s[2].split(",")[0], 1))):
            out.append({"name": name, "cat": cats, "ph": "X", "ts": us(start),
                        "dur": round((end - start) / 1000, 3), "pid": pid, "tid": tid,
                        "args": args})
        for tid, kind, heap, size, at, live in self.memory_records:
            out.append({"name": kind, "cat": "memory", "ph": "i", "s": "t", "ts": us(at),
                        "pid": pid, "tid": tid, "args": {"bytes": size, "heap": heap}})
            out.append({"name": "live bytes", "cat": "memory", "ph": "C", "ts": us(at),
                        "pid": pid, "tid": main, "args": live})
        return out

    def close(self) -> None:
        """Write the profile (once; later calls do nothing)."""
        if self.closed:
            return
        self.closed = True
        if self.files is None:
            self.stream.write(self.text())
            self.stream.flush()
            return
        try:
            try:
                self.stream.write(self.data())
            finally:
                self.stream.close()
            self.files.commit()
        except OSError as e:
            self.files.discard()
            raise VmError(f"cannot write the profile to '{self.path}': {e.strerror or e}",
                          StatusCode.PERMISSION_DENIED) from None
        except BaseException:
            self.files.discard()
            raise

    def text(self) -> str:
        """The profile in a text format (an .ireeprof bundle's records as
        ireeperf-jsonl)."""
        if self.format != "trace-event":
            return ireeperf_text(self)
        return json.dumps({"traceEvents": self.events(), "displayTimeUnit": "ns",
                           "otherData": {"producer": "vmrt", "dispatches": self.dispatches}},
                          separators=(",", ":"))

    def data(self) -> bytes:
        """The profile file's bytes."""
        if self.format == "ireeprof":
            from .profile_ireeprof import ireeprof_bytes  # (binary: only when asked for)
            return ireeprof_bytes(ireeperf_records(self), "vmrt")
        return self.text().encode()

    @contextmanager
    def writing(self, on_success: bool = True) -> Iterator[None]:
        """Writes the profile when the block fails (an error writing it then
        is not reported: the block's is) and, with ``on_success``, when it
        ends."""
        try:
            yield
        except BaseException:
            try:
                self.close()
            except VmError:
                pass
            raise
        if on_success:
            self.close()

    def discard(self) -> None:
        """Drop the profile: nothing is written."""
        if not self.closed:
            self.closed = True
            if self.files is not None:
                self.stream.close()
                self.files.discard()


class _Observer:
    """The dispatch observer of one invocation (a dispatch observer with a
    ``transfer`` method: see :mod:`vmrt.hal.dispatch_observer`)."""

    __slots__ = ("profile", "inner", "transfer")

    def __init__(self, profile: Profile, inner: Any):
        self.profile = profile
        self.inner = inner
        self.transfer = profile.transfer

    def __call__(self, obs: ObservedDispatch) -> None:
        self.profile.dispatch(obs, self.inner)


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0] if text else type(e).__name__


def open_profile(target: Any, process: str = "vmrt", format: str | None = None) -> Profile:
    """The :class:`Profile` ``target`` asks for: a path or a text stream
    (anything with ``write``); ``format`` one of :data:`FORMATS` (by default
    ireeperf-jsonl for a path ending in ``.ireeperf.jsonl``, else trace-event).
    A :class:`Profile` not yet written is taken as it is (a text stream in
    IREE's format: ``vmrt.load(..., profile=open_profile(stream,
    format="ireeperf-jsonl"))``)."""
    if isinstance(target, Profile) and not target.closed:
        return target
    if not isinstance(target, (str, os.PathLike)) and not hasattr(target, "write"):
        raise UsageError(f"profile must be a path or a text stream, got a "
                         f"{type(target).__name__}")
    return Profile(target, process, format)

