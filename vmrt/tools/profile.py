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
  local-task workers' on their own threads), args ``first`` and ``count``;
* ``transfer``: fill, update and copy commands of command buffers, with
  the bytes they wrote;
* ``memory``: each device allocation and free as an ``i`` instant event
  (bytes, heap), and a ``C`` counter track of the live bytes per heap.

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

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

__all__ = ["Profile", "open_profile"]

#: a slice: (tid, name, categories, start ns, end ns, args)
_Slice = tuple


class Profile:
    """The events of one run and where they go (see the module docstring).
    ``target`` is a path (staged: the file appears at :meth:`close`) or a
    text stream (written at :meth:`close`)."""

    def __init__(self, target: str | os.PathLike | TextIO, process: str = "vmrt"):
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
        self.pid = os.getpid()
        self.t0 = time.perf_counter_ns()
        self.slices: list[_Slice] = []
        #: (tid, name, categories, time ns, args)
        self.instants: list[tuple[int, str, str, int, dict]] = []
        #: (time ns, name, values)
        self.counters: list[tuple[int, str, dict[str, int]]] = []
        self.threads: dict[int, str] = {}
        self.dispatches = 0
        #: (executable, ordinal) -> (the executable, name, categories, fixed args)
        self._kinds: dict[tuple[int, int], tuple[Any, str, str, dict]] = {}
        self.closed = False

    # -- the calling thread's hooks -------------------------------------------------------
    def thread_id(self) -> int:
        """The calling thread's ``tid`` (named after the thread at its first event)."""
        tid = threading.get_native_id()
        if tid not in self.threads:     # (two pools' threads may share a name)
            name = threading.current_thread().name
            self.threads[tid] = f"{name} ({tid})" if name in self.threads.values() else name
        return tid

    @contextmanager
    def invocation(self, function: str, category: str = "invocation") -> Iterator[None]:
        """A slice named ``function`` on the calling thread, during which its
        dispatches, transfers and allocations are recorded (an observer
        already watching, ``--check_races`` say, still runs each dispatch)."""
        inner = current_observer()
        tid = self.thread_id()
        args: dict[str, Any] = {"function": function}
        start = time.perf_counter_ns()
        try:
            with listening(self.memory), observe_dispatches(_Observer(self, inner)):
                yield
        except BaseException as e:
            args["error"] = _describe(e)
            raise
        finally:
            self.slices.append((tid, function, category, start, time.perf_counter_ns(), args))

    def dispatch(self, obs: ObservedDispatch, inner: Any) -> None:
        """Run one observed dispatch (through ``inner``, if an observer was
        there first), timing it and its workgroup ranges."""
        cmd = obs.command
        name, cats, fixed = self._kind(obs)
        index = self.dispatches
        self.dispatches += 1
        args = {"dispatch": index, "command": obs.what, **fixed}
        tid = self.thread_id()
        ranges = _Ranges(self, index, name, cats.replace("dispatch", "workgroups"))
        start = time.perf_counter_ns()
        try:
            with record_workgroup_ranges(ranges):
                if inner is None:
                    obs.run()
                else:
                    inner(obs)
        except BaseException as e:
            args["error"] = _describe(e)
            raise
        finally:
            end = time.perf_counter_ns()
            if not ranges.seen:     # an executable without range hooks (vmvx): its workgroups
                x, y, z = cmd.workgroups    # ran here, one after another
                self.slices.append((tid, f"{name} workgroups", ranges.cats, start, end,
                                    {"dispatch": index, "first": 0, "count": x * y * z}))
            self.slices.append((tid, name, cats, start, end, args))

    def _kind(self, obs: ObservedDispatch) -> tuple[str, str, dict]:
        cmd = obs.command
        exe = cmd.executable.exe
        hit = self._kinds.get((id(exe), cmd.ordinal))
        if hit is None or hit[0] is not exe:
            exe_name, export = obs.names()
            backend = str(getattr(exe, "backend", "vmvx"))
            arch = getattr(getattr(exe, "arch", None), "name", None) or "vmvx"
            fixed = {"executable": exe_name, "export": export, "backend": backend,
                     "arch": arch}
            hit = self._kinds[(id(exe), cmd.ordinal)] = (exe, export, f"dispatch,{backend}",
                                                         fixed)
        x, y, z = cmd.workgroups
        return hit[1], hit[2], {**hit[3], "workgroup_count": f"{x}x{y}x{z}",
                                "workgroups": x * y * z}

    def transfer(self, cmd: Any, what: str, run: Callable[..., int], *args: Any) -> int:
        """A fill, update or copy command, timed (its slice says the bytes)."""
        tid = self.thread_id()
        start = time.perf_counter_ns()
        size = run(*args)
        kind = type(cmd).__name__.lower()
        self.slices.append((tid, kind, "transfer", start, time.perf_counter_ns(),
                            {"bytes": size, "command": what}))
        return size

    def memory(self, kind: str, heap: str, size: int, live: dict[str, int]) -> None:
        """An allocation or a free (:func:`vmrt.hal.statistics.listening`)."""
        if self.closed:
            return
        now = time.perf_counter_ns()
        self.instants.append((self.thread_id(), kind, "memory", now, {"bytes": size, "heap": heap}))
        self.counters.append((now, "live bytes", dict(live)))

    # -- the file -------------------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        """The trace events recorded so far (Trace Event Format)."""
        pid, t0 = self.pid, self.t0

        def us(ns: int) -> float:
            return round((ns - t0) / 1000, 3)

        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
             "args": {"name": self.process}}]
        main = next(iter(self.threads), None)
        for k, (tid, name) in enumerate(sorted(self.threads.items(),
                                               key=lambda item: (item[0] != main, item[1]))):
            out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                        "args": {"name": name}})
            out.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid,
                        "tid": tid, "args": {"sort_index": k}})
        # parents before children: by start, the longer first
        for tid, name, cats, start, end, args in sorted(self.slices,
                                                        key=lambda s: (s[3], s[3] - s[4])):
            out.append({"name": name, "cat": cats, "ph": "X", "ts": us(start),
                        "dur": round((end - start) / 1000, 3), "pid": pid, "tid": tid,
                        "args": args})
        for tid, name, cats, at, args in self.instants:
            out.append({"name": name, "cat": cats, "ph": "i", "s": "t", "ts": us(at),
                        "pid": pid, "tid": tid, "args": args})
        tid0 = main if main is not None else 0
        for at, name, values in self.counters:
            out.append({"name": name, "cat": "memory", "ph": "C", "ts": us(at), "pid": pid,
                        "tid": tid0, "args": values})
        return out

    def close(self) -> None:
        """Write the profile (once; later calls do nothing)."""
        if self.closed:
            return
        self.closed = True
        text = json.dumps({"traceEvents": self.events(), "displayTimeUnit": "ns",
                           "otherData": {"producer": "vmrt", "dispatches": self.dispatches}},
                          separators=(",", ":"))
        if self.files is None:
            self.stream.write(text)
            self.stream.flush()
            return
        try:
            try:
                self.stream.write(text.encode())
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


class _Ranges:
    """The workgroup range recorder of one dispatch: each range a thread
    runs becomes a slice on that thread."""

    __slots__ = ("profile", "index", "name", "cats", "seen")

    def __init__(self, profile: Profile, index: int, name: str, cats: str):
        self.profile, self.index, self.name, self.cats = profile, index, name, cats
        self.seen = False

    def __call__(self, indices: Sequence[int], run: Callable[..., Any], *args: Any) -> Any:
        self.seen = True
        profile = self.profile
        tid = profile.thread_id()
        start = time.perf_counter_ns()
        try:
            return run(*args)
        finally:
            end = time.perf_counter_ns()
            first, count = (indices[0] if len(indices) else 0), len(indices)
            label = f"{first}" if count == 1 else f"{first}-{first + count - 1}"
            profile.slices.append((tid, f"{self.name} workgroups {label}", self.cats, start,
                                   end, {"dispatch": self.index, "first": first,
                                         "count": count}))


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0] if text else type(e).__name__


def open_profile(target: Any, process: str = "vmrt") -> Profile:
    """The :class:`Profile` ``target`` asks for: a path or a text stream
    (anything with ``write``)."""
    if not isinstance(target, (str, os.PathLike)) and not hasattr(target, "write"):
        raise UsageError(f"profile must be a path or a text stream, got a "
                         f"{type(target).__name__}")
    return Profile(target, process)

