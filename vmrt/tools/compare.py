"""Lockstep comparison of two builds of one program (``vmrt run
--compare_with=B.vmfb``, :func:`compare_programs` from Python).

Each program runs in its own context on its own thread; every dispatch is
observed (:func:`vmrt.hal.dispatch_observer.observe_dispatches`): the thread
runs it, hands its bindings (before and after) to the coordinator and waits.
The coordinator compares the two dispatches of the same ordinal and lets
both threads go on only when they agree, so the first differing dispatch is
found after running just that far, and no dispatch ever runs on data an
earlier difference spoiled.  When every dispatch agrees, the results are
compared too.

    import vmrt.tools.compare as cmp
    out = cmp.compare_programs("x86.vmfb", "riscv.vmfb", "predict", [x],
                               executable_plugins=["kernels.sos"])
    print(out.mismatch.describe() if out.mismatch else "all agree")
"""
from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from elfkit.support import DataRecord, replace

from ..errors import UsageError, VmError
from ..hal.buffer_view import BufferView
from ..hal.dispatch_observer import ObservedDispatch, observe_dispatches
from ..hal.element_types import element_type_of, export_element_type
from ..program import load
from .async_calls import invoke as invoke_fenced
from .async_calls import takes_fences
from .binding_diff import Difference, diff, diff_bytes, dispatch_element_type


class DispatchRecord(DataRecord, frozen=True):
    """One dispatch of one program as it ran: its bindings before and after."""
    ordinal: int                       # in the program: 0 is its first dispatch
    executable: str
    export: str
    workgroups: tuple[int, int, int]
    before: tuple[Any, ...]            # uint8 copies per binding
    after: tuple[Any, ...]

    def describe(self) -> str:
        x, y, z = self.workgroups
        return f"executable '{self.executable}' export '{self.export}', {x}x{y}x{z} workgroups"


class Mismatch(DataRecord, frozen=True):
    """The first place the two programs disagree: dispatch ``dispatch``'s
    binding ``index`` (or, when ``dispatch`` is None, result ``index``)."""
    dispatch: int | None
    index: int
    difference: Difference
    a: DispatchRecord | None = None
    b: DispatchRecord | None = None
    inputs_differed: bool = False

    def describe(self, a_label: str = "a", b_label: str = "b") -> str:
        """What ``vmrt run --compare_with`` prints after ``[FAILED] ``: the
        values are tagged A (``a_label``'s) and B."""
        d = self.difference.describe("A", "B")
        if self.dispatch is None:
            return (f"result[{self.index}] differs (every dispatch agreed)\n"
                    f"  A = {a_label}, B = {b_label}\n  result[{self.index}]: {d}\n")
        assert self.a is not None and self.b is not None
        text = (f"dispatch {self.dispatch} differs in binding {self.index}\n"
                f"  A = {a_label}: {self.a.describe()}\n"
                f"  B = {b_label}: {self.b.describe()}\n"
                f"  binding {self.index}: {d}\n")
        if self.inputs_differed:
            text += (f"  (binding {self.index} already differed before the dispatch: the "
                     "difference comes from a transfer or the host, not a dispatch)\n")
        return text


class LockstepResult(DataRecord, frozen=True):
    """``dispatches`` agreed; then ``mismatch`` (None when all agree; then
    ``results`` holds both programs' results)."""
    dispatches: int
    mismatch: Mismatch | None
    results: tuple[Any, Any] | None


class _Stop(BaseException):
    """Ends a lane's program early (not an Exception, so no layer wraps it)."""


class _Lane:
    """One program on its own thread, pausing after each dispatch."""

    def __init__(self, call: Callable[[], Any], name: str,
                 cancel: Callable[[], object] | None = None):
        self.call = call
        self.name = name
        self.cancel = cancel
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.go = threading.Semaphore(0)
        self.stopping = False
        self.count = 0
        self.thread = threading.Thread(target=self._main, name=f"lockstep {name}", daemon=True)

    def _main(self) -> None:
        try:
            with observe_dispatches(self._observe):
                out = self.call()
        except BaseException as e:  # noqa: BLE001 - handed to the coordinator
            self.events.put(("error", e))
            return
        self.events.put(("done", out))

    def _observe(self, obs: ObservedDispatch) -> None:
        if self.stopping:
            raise _Stop
        n = len(obs.ranges)
        before = tuple(obs.binding(i).copy() for i in range(n))
        obs.run()
        after = tuple(obs.binding(i).copy() for i in range(n))
        exe, export = obs.names()
        self.events.put(("dispatch", DispatchRecord(self.count, exe, export,
                                                    obs.command.workgroups, before, after)))
        self.count += 1
        self.go.acquire()
        if self.stopping:
            raise _Stop

    def next(self) -> tuple[str, Any]:
        kind, value = self.events.get()
        if kind == "error":
            if isinstance(value, VmError):
                value.annotate(f"running {self.name}")
            raise value
        return kind, value

    def stop(self) -> None:
        """End the lane: at its next dispatch, or at once through ``cancel``
        when it is running VM code (the other lane failed, Ctrl-C)."""
        self.stopping = True
        self.go.release()
        if self.cancel is None:
            self.thread.join()
            return
        while self.thread.is_alive():
            self.cancel()
            self.thread.join(0.05)


def _shape_error(n: int, a: DispatchRecord, b: DispatchRecord, names: tuple[str, str]) -> None:
    sa = [x.size for x in a.after]
    sb = [x.size for x in b.after]
    if sa != sb:
        raise UsageError(f"the programs' dispatch sequences differ in shape at dispatch {n}: "
                         f"{names[0]} ({a.describe()}) binds {len(sa)} binding(s) of {sa} bytes, "
                         f"{names[1]} ({b.describe()}) {len(sb)} of {sb} bytes")


def compare_dispatch(n: int, a: DispatchRecord, b: DispatchRecord,
                     thresholds: dict[str, float] | None,
                     element_type: str | None = None) -> Mismatch | None:
    """The first binding in which two records of the same shape differ after
    the dispatch (element type from the export names, else ``element_type``,
    else bytes), or None."""
    etype = export_element_type(a.export) or export_element_type(b.export, element_type)
    for i, (xa, xb) in enumerate(zip(a.after, b.after)):
        d = diff_bytes(xa, xb, etype, thresholds)
        if d is not None:
            return Mismatch(n, i, d, a, b,
                            diff_bytes(a.before[i], b.before[i], etype, thresholds) is not None)
    return None


def _as_array(v: Any) -> tuple[Any, str]:
    import numpy as np
    if isinstance(v, BufferView):
        return v.array, v.element_type
    arr = np.asarray(v)
    return arr, element_type_of(arr.dtype)


def compare_results(ra: Sequence[Any], rb: Sequence[Any],
                    thresholds: dict[str, float] | None) -> Mismatch | None:
    """The first result that differs (values, BufferViews or numpy arrays)."""
    for i, (x, y) in enumerate(zip(ra, rb)):
        (xa, ta), (ya, tb) = _as_array(x), _as_array(y)
        if ta != tb or xa.shape != ya.shape:
            raise UsageError(f"result[{i}] differs in type: {ta}{list(xa.shape)} and "
                             f"{tb}{list(ya.shape)}")
        d = diff(xa, ya, ta, thresholds)
        if d is not None:
            return Mismatch(None, i, d)
    return None


def lockstep(call_a: Callable[[], Sequence[Any]], call_b: Callable[[], Sequence[Any]], *,
             thresholds: dict[str, float] | None = None, element_type: str | None = None,
             names: tuple[str, str] = ("a", "b"),
             cancel: tuple[Callable[[], object], Callable[[], object]] | None = None
             ) -> LockstepResult:
    """Run ``call_a`` and ``call_b`` (each runs one program and returns its
    results) dispatch by dispatch; stop at the first difference.
    ``element_type``: of the bindings of dispatches whose export name ends
    in none (default: compare bytes).  ``cancel``: for each program, what
    stops it while it runs VM code (``Context.cancel``), so that an error
    or Ctrl-C ends both at once instead of waiting for their next dispatch."""
    lanes = (_Lane(call_a, names[0], cancel[0] if cancel else None),
             _Lane(call_b, names[1], cancel[1] if cancel else None))
    for lane in lanes:
        lane.thread.start()
    try:
        n = 0
        while True:
            (ka, va), (kb, vb) = lanes[0].next(), lanes[1].next()
            if ka == kb == "done":
                return LockstepResult(n, compare_results(va, vb, thresholds), (va, vb))
            if ka != kb:
                ran, other = (names[0], names[1]) if ka == "dispatch" else (names[1], names[0])
                raise UsageError(f"the programs' dispatch sequences differ in shape: {other} "
                                 f"finished after {n} dispatch(es), {ran} runs dispatch {n} "
                                 f"({(va if ka == 'dispatch' else vb).describe()})")
            _shape_error(n, va, vb, names)
            m = compare_dispatch(n, va, vb, thresholds, element_type)
            if m is not None:
                return LockstepResult(n, m, None)
            n += 1
            for lane in lanes:
                lane.go.release()
    finally:
        for lane in lanes:
            lane.stop()


def compare_programs(a: str | os.PathLike[str], b: str | os.PathLike[str], function: str,
                     args: Sequence[Any] = (), *, thresholds: dict[str, float] | None = None,
                     element_type: str | None = None, **load_options: Any) -> LockstepResult:
    """:func:`lockstep` of two ``.vmfb`` files: ``function`` called with
    numpy ``args`` in each, loaded with ``vmrt.load(path, **load_options)``
    (``device``, ``executable_plugins``, ``timeout`` ...)."""
    progs = [load(a, **load_options)]
    try:
        progs.append(load(b, **load_options))
        fa, fb = progs[0][function], progs[1][function]
        return lockstep(lambda: _as_list(fa(*args)), lambda: _as_list(fb(*args)),
                        thresholds=thresholds, element_type=element_type,
                        names=(os.fspath(a), os.fspath(b)),
                        cancel=(lambda: progs[0].cancel(0), lambda: progs[1].cancel(0)))
    finally:
        for p in progs:
            p.close()


def _invoke(ctx: Any, module: Any, fn: Any, args: list[Any], name: str) -> list[Any]:
    """``ctx.invoke`` as ``vmrt run`` calls: an async-external function gets
    its wait and signal fences."""
    if takes_fences(module, name):
        return invoke_fenced(ctx, fn, args, name)
    return ctx.invoke(fn, args)


def _as_list(v: Any) -> list[Any]:
    return list(v) if isinstance(v, tuple) else [v]


def lockstep_cli(flags: Any, stdout: Any, open_program: Callable[[Any], Any],
                 thresholds: dict[str, float], max_elements: int) -> int:
    """``vmrt run ... --compare_with=B``: ``open_program(flags)`` gives
    (context, main module, function name, function) as ``vmrt run`` opens
    them; B replaces the last ``--module``.  Exit 1 at a difference."""
    from .function_io import format_results, parse_inputs
    other = flags.values["compare_with"]
    for bad in ("output", "expected_output", "dump_dispatches", "check_races"):
        if flags.lists.get(bad) or bad in flags.values or bad in flags.bools:
            raise UsageError(f"--compare_with cannot be combined with --{bad}")
    modules = flags.lists["module"]
    if not modules:
        raise UsageError("no --module= specified")
    names = (modules[-1], other)
    opened = [open_program(flags)]
    try:
        try:
            opened.append(open_program(replace(flags, lists={**flags.lists,
                                                             "module": [*modules[:-1], other]})))
        except VmError as e:
            e.annotate(f"opening --compare_with={other}")
            raise
        (ca, ma, name, fa), (cb, mb, nb, fb) = opened
        args_a = parse_inputs(flags.lists["input"], fa.cconv)
        args_b = parse_inputs(flags.lists["input"], fb.cconv)
        stdout.write(f"EXEC @{name}\n")
        stdout.flush()
        out = lockstep(lambda: _invoke(ca, ma, fa, args_a, name),
                       lambda: _invoke(cb, mb, fb, args_b, nb),
                       thresholds=thresholds, names=names,
                       element_type=dispatch_element_type(flags),
                       cancel=(lambda: ca.cancel(0), lambda: cb.cancel(0)))
        if out.mismatch is not None:
            stdout.write(f"[FAILED] {out.mismatch.describe(*names)}")
            return 1
        assert out.results is not None
        stdout.write(format_results(out.results[0], fa.cconv, max_elements))
        return 0
    finally:
        for ctx, *_rest in opened:
            ctx.close()
