"""The context: an ordered set of modules with their states, linked together.

Import resolution follows IREE's algorithm: a module sees only the modules
registered before it; the module-level dependency check scans oldest first,
per-import binding scans newest first with no fall-through to older
same-named modules; NOT_FOUND on an optional import leaves the slot null.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..errors import (
    ArgumentError,
    BudgetExceeded,
    Cancelled,
    FunctionNotFoundError,
    InvocationError,
    LinkError,
    StatusCode,
    VmError,
)
from .instance import Instance
from .lifecycle import Closeable
from .module import BoundFunction, DependencyFlags, Function, Linkage, Module, cconv_fragments
from .types import RefObject
from .values import to_vm

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


#: the largest instruction budget (IREE counts in int64)
MAX_BUDGET = (1 << 63) - 1


def check_limits(budget: Any, timeout: Any, where: str) -> None:
    """Refuse a ``budget`` that is not None or an int in [0, 2^63) (0: no
    instruction may run; None: no limit) and a ``timeout`` that is not None
    or a finite number of seconds >= 0 (NaN is not "no limit")."""
    if budget is not None:
        if isinstance(budget, bool) or not hasattr(budget, "__index__"):
            raise ArgumentError(f"{where}: budget must be an integer number of instructions or "
                                f"None, not {type(budget).__name__}",
                                StatusCode.INVALID_ARGUMENT)
        if not 0 <= budget.__index__() <= MAX_BUDGET:
            raise ArgumentError(f"{where}: budget must be between 0 and 2^63-1 instructions, "
                                f"got {budget}", StatusCode.OUT_OF_RANGE)
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) and \
                not hasattr(timeout, "__float__"):
            raise ArgumentError(f"{where}: timeout must be a number of seconds or None, not "
                                f"{type(timeout).__name__}", StatusCode.INVALID_ARGUMENT)
        t = float(timeout)
        if not (0 <= t < float("inf")):       # NaN fails both
            raise ArgumentError(f"{where}: timeout must be a finite number of seconds >= 0, "
                                f"got {timeout!r}", StatusCode.INVALID_ARGUMENT)


class ExecutionLimits:
    """Instruction budget, wall-clock deadline and cancel flag shared by one
    invocation.

    Interpreters subtract the number of instructions of each basic block
    from ``left`` and call :meth:`tick` when it drops below zero (at least
    every ``CHUNK`` instructions), which raises when the budget is spent,
    the deadline passed or :meth:`cancel` was called.  Code that runs
    outside the interpreter (an emulated dispatch, a nested vmvx context)
    takes at most :attr:`remaining` instructions, reports what it ran with
    :meth:`charge`, checks :meth:`check` between steps and registers a stop
    function with :meth:`stopping` so that a cancel reaches it in flight.
    """

    CHUNK = 1 << 16

    __slots__ = ("left", "budget", "deadline", "cancelled", "parent", "_remaining", "_issued",
                 "_stoppers", "_lock", "_gen")

    def __init__(self, budget: int | None = None, timeout: float | None = None,
                 parent: ExecutionLimits | None = None):
        if budget is not None or timeout is not None:
            check_limits(budget, timeout, "execution limits")
            budget = None if budget is None else budget.__index__()
        self.budget = budget
        self.deadline = None if timeout is None else time.monotonic() + timeout
        #: set by :meth:`cancel`; cleared when a new top-level invocation starts
        self.cancelled = False
        #: the limits of the invocation this one runs inside (a cancel of it stops this one)
        self.parent = parent
        self._remaining = budget
        self._issued = 0
        self._stoppers: list[Callable[[], object]] = []
        self._lock = threading.Lock()
        self._gen = 0               # which top-level invocation these limits serve now
        self.left = 0
        self._refill(0)

    @property
    def executed(self) -> int:
        """Instructions executed so far under these limits."""
        return self._issued - self.left

    @property
    def remaining(self) -> int | None:
        """Instructions left of the budget; None: no budget."""
        if self._remaining is None:
            return None
        return max(0, self._remaining + self.left)

    def _refill(self, need: int) -> None:
        chunk = self.CHUNK
        if self._remaining is not None:
            chunk = min(chunk + need, self._remaining)
            self._remaining -= chunk
        else:
            chunk += need
        self._issued += chunk
        self.left += chunk

    def tick(self) -> None:
        self.check()
        if self.left >= 0:
            return
        if self._remaining is not None and self._remaining + self.left < 0:
            self._issued += self._remaining
            self.left += self._remaining
            self._remaining = 0
            raise BudgetExceeded(f"instruction budget of {self.budget} exhausted",
                                 StatusCode.RESOURCE_EXHAUSTED)
        self._refill(-self.left)

    def cancel_requested(self) -> bool:
        """Whether this invocation (or the one it runs inside) was cancelled."""
        return self.cancelled or (self.parent is not None and self.parent.cancel_requested())

    def check(self) -> None:
        """Raise if the invocation was cancelled or its deadline passed."""
        if self.cancelled or (self.parent is not None and self.parent.cancel_requested()):
            raise Cancelled("the invocation was cancelled", StatusCode.CANCELLED)
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExceeded("execution timed out", StatusCode.DEADLINE_EXCEEDED)

    def charge(self, count: int) -> None:
        """Count ``count`` instructions run outside the interpreter; raises
        like :meth:`tick` when that spends the budget."""
        self.left -= count
        if self.left < 0:
            self.tick()

    def begin(self) -> int:
        """A new top-level invocation starts under these limits: clear the
        cancel flag; returns the invocation's number for :meth:`cancel`."""
        lock = self._lock       # (acquire and release: a with statement costs twice as much)
        lock.acquire()
        try:
            self._gen += 1
            self.cancelled = False
            return self._gen
        finally:
            lock.release()

    def cancel(self, invocation: int | None = None) -> None:
        """Make the invocation stop (thread-safe): the interpreter raises
        :class:`~vmrt.errors.Cancelled` at its next tick, code running
        outside it is stopped through its stop functions.  With
        ``invocation`` (from :meth:`begin`), only if that one still runs."""
        with self._lock:
            if invocation is not None and invocation != self._gen:
                return
            self.cancelled = True
            stoppers = list(self._stoppers)
        for stop in stoppers:
            stop()

    @contextlib.contextmanager
    def stopping(self, stop: Callable[[], object]) -> Iterator[None]:
        """Call ``stop`` (from another thread) if this invocation or the one
        it runs inside is cancelled while the block runs."""
        chain: list[ExecutionLimits] = []
        cur: ExecutionLimits | None = self
        while cur is not None:
            chain.append(cur)
            cur = cur.parent
        for lim in chain:
            with lim._lock:
                lim._stoppers.append(stop)
        try:
            yield
        finally:
            for lim in chain:
                with lim._lock:
                    lim._stoppers.remove(stop)


_CURRENT = threading.local()
#: the thread-local whose ``limits`` attribute (absent: none)
#: :func:`current_limits` reads, for hot paths that read it without the
#: function's frame (``getattr(INVOCATION, "limits", None)``); only
#: :class:`Context` and :func:`running_under` set it
INVOCATION = _CURRENT


def current_limits() -> ExecutionLimits | None:
    """The limits of the invocation running on this thread, if any (how
    executables reached from the VM find the budget, deadline and cancel
    of the call that dispatched them)."""
    return getattr(_CURRENT, "limits", None)


@contextlib.contextmanager
def running_under(limits: ExecutionLimits) -> Iterator[None]:
    """Within the block, :func:`current_limits` on this thread is ``limits``:
    host code that dispatches an executable directly (no VM invocation)
    gives it a budget to count against, as an invocation would."""
    outer = current_limits()
    _CURRENT.limits = limits
    try:
        yield
    finally:
        _CURRENT.limits = outer


class Context(Closeable):
    """Registers modules in order and links their imports.

    ``budget`` caps the VM instructions run in this context over its whole
    life (``__init`` included); ``timeout`` caps the wall time of each
    top-level invocation.  ``invoke(..., budget=, timeout=)`` overrides both
    for one call.

    ``trace``: a text stream (``sys.stderr``, a file, ``io.StringIO``) that
    gets one line per VM instruction executed in the bytecode modules
    registered from then on (IREE's ``--trace_execution`` format).
    ``statistics``: modules that keep statistics (the device ``hal``
    module: allocations, dispatches) collect them; see :meth:`statistics`.

    Threads: a context runs one invocation at a time.  Its module states
    (globals, the HAL module's devices and command buffers) and its limits
    belong to the invocation running, so :meth:`invoke` from several
    threads is safe: each call waits for the one running to end (IREE's
    contexts are not thread-safe at all; this is its contract made safe).
    :meth:`cancel` and :meth:`close` do not wait: closing while another
    thread's invocation runs is refused.
    """

    def __init__(self, instance: Instance, modules: Iterable[Module] = (), *,
                 budget: int | None = None, timeout: float | None = None,
                 trace: Any = None, statistics: bool = False):
        if trace is not None and not callable(getattr(trace, "write", None)):
            raise ArgumentError(f"trace must be a text stream with a write method, got "
                                f"{type(trace).__name__}", StatusCode.INVALID_ARGUMENT)
        check_limits(budget, timeout, "Context")
        self.instance = instance
        self.trace = trace
        self.collect_statistics = statistics
        self._modules: list[Module] = []
        self._states: list[Any] = []
        self.timeout = timeout
        self.limits = ExecutionLimits(budget, timeout)
        self._closed = False
        #: in flight (for cancel); changed by the invoking thread only, under
        #: ``_invoke_lock``, and read by :meth:`cancel` without a lock (a
        #: list's append, remove, slice and ``in`` are atomic under the GIL)
        self._running: list[tuple[ExecutionLimits, int]] = []
        #: held by the invocation running (re-entrant: a nested invocation
        #: from a native module on the same thread); see the class doc
        self._invoke_lock = threading.RLock()
        mods = list(modules)
        if mods:
            self.register_modules(mods)

    # ------------------------------------------------------------ modules --
    @property
    def modules(self) -> tuple[Module, ...]:
        return tuple(self._modules)

    def state_of(self, module: Module) -> Any:
        for m, s in zip(reversed(self._modules), reversed(self._states)):
            if m is module:
                return s
        raise LinkError(f"module '{module.name}' is not registered in this context",
                      StatusCode.NOT_FOUND)

    def register_modules(self, modules: Sequence[Module]) -> None:
        for i, m in enumerate(modules):
            if m is None:
                raise ArgumentError(f"modules[{i}] is null", StatusCode.INVALID_ARGUMENT)
        with self._invoke_lock:
            self._register(modules)

    def _register(self, modules: Sequence[Module]) -> None:
        start = len(self._modules)
        try:
            for m in modules:
                state = m.alloc_state(self)
                self._modules.append(m)
                self._states.append(state)
                try:
                    self._resolve_imports(m, state, start_count=len(self._modules) - 1)
                except VmError as e:
                    e.annotate(f"resolving module '{m.name}' imports")
                    raise
                init = m.lookup_function("__init", Linkage.EXPORT_OPTIONAL)
                if init is not None:
                    self._tracked(BoundFunction(init, state), [], self.limits, current_limits())
        except BaseException:
            # unwind only what this call added, newest first
            for m, s in zip(reversed(self._modules[start:]), reversed(self._states[start:])):
                self._deinit(m, s)
                try:
                    m.free_state(s)
                except VmError:
                    pass
            del self._modules[start:]
            del self._states[start:]
            raise

    def _resolve_imports(self, m: Module, state: Any, start_count: int) -> None:
        visible = self._modules[:start_count]
        visible_states = self._states[:start_count]
        for dep in m.dependencies():
            hit = next((v for v in visible if v.name == dep.name), None)
            if hit is not None:
                if dep.flags & DependencyFlags.REQUIRED and hit.version < dep.minimum_version:
                    raise LinkError(
                        f"required module '{dep.name}' version mismatch; have {hit.version} "
                        f"but require {dep.minimum_version}", StatusCode.NOT_FOUND)
            elif not dep.flags & DependencyFlags.OPTIONAL:
                raise LinkError(f"required module '{dep.name}' not registered on the context",
                                StatusCode.NOT_FOUND)
        for i, imp in enumerate(m.imports):
            full = imp.full_name
            mod_name, dot, fn_name = full.partition(".")
            if not dot:
                raise LinkError(f"import name not fully-qualified (module.func): '{full}'",
                                StatusCode.INVALID_ARGUMENT)
            target_idx = None
            for j in range(len(visible) - 1, -1, -1):
                if visible[j].name == mod_name:
                    target_idx = j
                    break
            fn: Function | None = None
            err: VmError | None = None
            if target_idx is None:
                err = LinkError(f"module '{mod_name}' required for import '{full}' not "
                                "registered with the context", StatusCode.NOT_FOUND)
            else:
                fn = visible[target_idx].lookup_function(fn_name, Linkage.EXPORT)
                if fn is None:
                    err = LinkError(f"function '{fn_name}' not exported by module "
                                    f"'{mod_name}' (required for import '{full}')",
                                    StatusCode.NOT_FOUND)
            if err is not None:
                if imp.optional and err.code == StatusCode.NOT_FOUND:
                    m.resolve_import(state, i, None)
                    continue
                raise err
            assert fn is not None and target_idx is not None
            if imp.cconv and fn.cconv != imp.cconv:
                raise LinkError(
                    f"import function {full} signature mismatch between {m.name} and source "
                    f"{fn.module.name}; expected {imp.cconv} but got {fn.cconv}",
                    StatusCode.INTERNAL)
            m.resolve_import(state, i, BoundFunction(fn, visible_states[target_idx]))

    # ---------------------------------------------------------- functions --
    def resolve_function(self, full_name: str) -> BoundFunction:
        """Find ``"module.fn"``; the newest module with that name wins."""
        mod_name, dot, fn_name = full_name.partition(".")
        if not dot or not mod_name or not fn_name:
            raise ArgumentError(f"function name not fully-qualified (module.func): '{full_name}'",
                          StatusCode.INVALID_ARGUMENT)
        for m, s in zip(reversed(self._modules), reversed(self._states)):
            if m.name == mod_name:
                fn = m.lookup_function(fn_name, Linkage.EXPORT)
                if fn is None:
                    break
                return BoundFunction(fn, s)
        raise FunctionNotFoundError(f"function '{full_name}' not found", StatusCode.NOT_FOUND)

    def statistics(self) -> dict[str, Any]:
        """Per module name, the statistics its module keeps when the context
        was made with ``statistics=True`` (the device ``hal`` module's
        :class:`vmrt.hal.statistics.DeviceStatistics`); empty once closed."""
        out: dict[str, Any] = {}
        for m, s in zip(self._modules, self._states):
            query = getattr(m, "statistics", None)
            value = query(s) if callable(query) else None
            if value is not None:
                out[m.name] = value
        return out

    def bind(self, function: Function) -> BoundFunction:
        return BoundFunction(function, self.state_of(function.module))

    def invoke(self, function: BoundFunction | Function | str, args: Sequence[Any] = (), *,
               budget: int | None = None, timeout: float | None = None) -> list[Any]:
        """Call a function with host values; returns the list of results.
        ``budget`` (VM instructions, plus the guest instructions of emulated
        dispatches; 0 lets none run) and ``timeout`` (seconds) bound this call
        instead of the context's limits."""
        if budget is not None or timeout is not None:
            check_limits(budget, timeout, "Context.invoke")
        if isinstance(function, str):
            function = self.resolve_function(function)
        elif isinstance(function, Function):
            function = self.bind(function)
        arg_codes, _ = cconv_fragments(function.cconv)
        args = list(args)
        if "C" not in arg_codes:
            if len(arg_codes) != len(args):
                raise ArgumentError(f"input list and function mismatch; expected {len(arg_codes)} "
                              f"arguments but passed {len(args)}", StatusCode.INVALID_ARGUMENT)
            # (a ref as it is: what to_vm does with it, without the call; in
            # place: no comprehension's frame per invocation)
            for i, c in enumerate(arg_codes):
                a = args[i]
                if c != "r" or not (a is None or isinstance(a, RefObject)):
                    args[i] = to_vm(a, c)
        # one invocation at a time (see the class doc); acquire and release:
        # a with statement costs twice as much
        lock = self._invoke_lock
        lock.acquire()
        try:
            if self._closed:            # (by another thread while this one waited)
                raise InvocationError("cannot invoke a function of a closed context",
                                      StatusCode.FAILED_PRECONDITION)
            if budget is None and timeout is None and self.timeout is None and \
                    current_limits() is None:   # what _invoke comes down to then
                return self._tracked(function, args, self.limits, None)
            return self._invoke(function, args, budget, timeout)
        finally:
            lock.release()

    def _invoke(self, function: BoundFunction, args: list[Any], budget: int | None,
                timeout: float | None) -> list[Any]:
        saved = self.limits
        outer = current_limits()
        if outer is not None and outer is not saved and budget is None:
            budget = outer.remaining       # a nested context spends its caller's budget
        if budget is not None or timeout is not None or outer is not None and outer is not saved:
            self.limits = ExecutionLimits(budget, timeout, parent=outer)
        elif self.timeout is not None:
            saved.deadline = time.monotonic() + self.timeout
        limits = self.limits
        try:
            results = self._tracked(function, args, limits, outer)
        except BaseException:
            if limits is not saved and outer is not None and outer is not saved:
                outer.left -= limits.executed
            raise
        finally:
            self.limits = saved
        if limits is not saved and outer is not None and outer is not saved:
            outer.charge(limits.executed)
        return results

    def _tracked(self, bound: BoundFunction, args: list[Any], limits: ExecutionLimits,
                 outer: ExecutionLimits | None) -> list[Any]:
        """Run a call as the invocation :meth:`cancel` and
        :func:`current_limits` see."""
        # a cancel never reaches a later invocation: each top-level one has its number
        entry = (limits, limits.begin() if outer is None else -1)
        _CURRENT.limits = limits
        running = self._running
        running.append(entry)
        try:
            return bound(args)
        except RecursionError:
            raise InvocationError("call stack exhausted (recursion too deep)",
                                  StatusCode.RESOURCE_EXHAUSTED) from None
        finally:
            running.remove(entry)
            _CURRENT.limits = outer

    def cancel(self, wait: float = 1.0) -> bool:
        """Stop the invocation running in this context on another thread
        (thread-safe): it raises :class:`~vmrt.errors.Cancelled`
        (``CANCELLED``) -- the interpreter at its next tick, an emulated
        dispatch at once, a native one between workgroups -- and the context
        stays usable.  Waits up to ``wait`` seconds for it to end; returns
        False if nothing was running.  A cancel never reaches an invocation
        started after it."""
        first = self._running[:1]       # (the list may empty meanwhile: one atomic read)
        if not first:
            return False
        entry = first[0]
        limits, invocation = entry
        end = time.monotonic() + wait
        while True:
            limits.cancel(invocation)   # again and again: a dispatch may start after the first
            if entry not in self._running:
                return True
            if time.monotonic() >= end:
                return True
            time.sleep(0.002)

    # ------------------------------------------------------------- teardown --
    def _deinit(self, m: Module, state: Any) -> None:
        fn = m.lookup_function("__deinit", Linkage.EXPORT_OPTIONAL)
        if fn is not None:
            try:
                BoundFunction(fn, state)([])
            except VmError:
                pass

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Run ``__deinit`` and free states, newest module first (idempotent).
        Refused (FAILED_PRECONDITION) while a call runs on another thread."""
        if self._closed:
            return
        if not self._invoke_lock.acquire(blocking=False):
            raise InvocationError("cannot close the context while an invocation runs in it on "
                                  "another thread (cancel it, and wait for it to end)",
                                  StatusCode.FAILED_PRECONDITION)
        try:
            if not self._closed:
                self._close()
        finally:
            self._invoke_lock.release()

    def _close(self) -> None:
        self._closed = True
        pairs = list(zip(self._modules, self._states))
        for m, s in reversed(pairs):
            self._deinit(m, s)
        for m, s in reversed(pairs):
            m.free_state(s)
        self._modules.clear()
        self._states.clear()
