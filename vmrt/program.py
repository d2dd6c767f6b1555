"""``vmrt.load``: a ``.vmfb`` program whose exports are called like Python
functions, set up the way ``vmrt run`` sets it up.

    prog = vmrt.load("m.vmfb", device="local-sync",
                     executable_plugins=["plugin.sos"])
    out = prog["main"](a, b)          # or prog.main(a, b)

Arguments follow each function's calling convention: numpy arrays (and
numpy scalars) are copied into ``hal.buffer_view`` s for ref arguments,
Python/numpy numbers are converted to i32/i64/f32/f64 (wrapping and
rounding like the VM does).  Results come back like ``iree.runtime``'s
functions return them: ``None`` for none, the value for one, a tuple for
several; buffer views as numpy arrays (copies owned by the caller; ``i1``
as ``bool``), i32/i64 as ``int``, f32/f64 as ``float``, ``vm.list`` s as
Python lists.
"""
from __future__ import annotations

import contextlib
import math
import os
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import FunctionNotFoundError, StatusCode, UsageError, VmError
from .hal.buffer import aligned_memory
from .hal.buffer_view import BufferView, view_of_bytes
from .hal.element_types import dtype_of, element_type_of, is_packed
from .tools.async_calls import check_fence, takes_fences
from .tools.async_calls import invoke as invoke_fenced
from .tools.dispatch_trace import NpyFolder, Sink, TracePrinter
from .tools.module_specs import (
    RunOptions,
    as_list,
    load_modules,
    new_context,
    static_library_list,
)
from .vm.context import Context
from .vm.lifecycle import Closeable
from .vm.list import VmList
from .vm.module import Module, cconv_fragments

__all__ = ["Program", "ProgramFunction", "load"]


# ------------------------------------------------------------ conversions ---
def _array_arg(v: Any) -> Any:
    """A numpy array or scalar becomes a buffer view over a copy (programs
    may write to their arguments; iree.runtime copies them to the device
    too); anything else is left to the context's conversion (refs, None,
    lists, bytes)."""
    if v.__class__ is np.ndarray or isinstance(v, (np.ndarray, np.generic)):
        arr = v if v.__class__ is np.ndarray else np.asarray(v)
        name = _plain_types.get(arr.dtype, "")
        if name == "":
            name = _plain_types[arr.dtype] = _plain_type(arr.dtype)
        try:
            if name is None:
                return BufferView(np.array(v, order="C"))
            # copied into device-aligned memory: dispatches use it in place
            data, addr = aligned_memory(arr.nbytes, "argument")
        except MemoryError:
            raise UsageError(f"cannot copy a {'x'.join(map(str, v.shape)) or 'scalar'} "
                             f"{v.dtype} argument ({v.nbytes} bytes): out of memory",
                             StatusCode.RESOURCE_EXHAUSTED) from None
        view = view_of_bytes(data, name, arr.shape, addr)
        try:
            data[:] = arr.data.cast("B")    # a C-contiguous array: its bytes
        except (TypeError, ValueError, BufferError):    # strided, empty, no buffer format
            view.array[...] = arr
        return view
    return v


#: numpy dtype -> its element type name when a buffer view of that name
#: holds exactly that dtype (not packed, not bool), else None
_plain_types: dict[Any, str | None] = {}


def _plain_type(dtype: Any) -> str | None:
    try:
        name = element_type_of(dtype)
    except VmError:
        return None
    return None if is_packed(name) or dtype_of(name) != dtype else name


#: element type name -> the numpy dtype its storage holds as is (None: packed
#: sub-byte integers and i1, converted through ``BufferView.array``)
_host_dtypes: dict[str, Any] = {}
_UNSEEN = object()


def to_host(v: Any) -> Any:
    """A VM result as a host value: buffer views as numpy arrays (copies),
    lists as Python lists, typed list elements as plain numbers; any other
    ref as it is."""
    if isinstance(v, BufferView):
        name = v.element_type
        dt = _host_dtypes.get(name, _UNSEEN)
        if dt is _UNSEEN:
            dt = _host_dtypes[name] = None if is_packed(name) or name == "i1" else dtype_of(name)
        if dt is not None and v.address is not None:
            # a view made over memory (BufferView.over): its ``array`` would be
            # that memory as ``dt`` (a view of a numpy array keeps the array's dtype)
            return np.ndarray(v.shape, dt, v.storage).copy()
        arr = v.array.copy()
        if name == "i1":
            arr = arr.astype(bool)
        return arr
    if isinstance(v, VmList):
        return [to_host(x) for x in v.items]
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):   # a variant (type, value)
        return v[1]
    return v


# -------------------------------------------------------------- functions ---
class ProgramFunction:
    """One export of a :class:`Program`; call it with host values."""

    __slots__ = ("program", "name", "cconv", "bound", "arity", "fenced", "_refs", "_results")

    def __init__(self, program: Program, name: str, bound: Any):
        self.program = program
        self.name = name
        self.bound = bound
        self.cconv = bound.cconv
        args, results = cconv_fragments(self.cconv)
        self.arity: int | None = None if "C" in args else len(args)   # C...D: a variadic span
        #: async-external (coarse-fences ABI): the last two arguments are a
        #: wait and a signal fence, which the caller may leave out
        self.fenced = self.arity is not None and self.arity >= 2 and \
            takes_fences(program.module, name)
        #: the positions of ref arguments (numpy arrays become buffer views)
        self._refs = tuple(i for i, c in enumerate(args) if c == "r")
        self._results = results

    @property
    def declaration(self) -> str | None:
        """The MLIR signature recorded by the compiler (``iree.abi.declaration``)."""
        return self.program.module.function_attrs(self.name).get("iree.abi.declaration")

    def __call__(self, *args: Any) -> Any:
        program = self.program
        ctx = program.context
        if ctx is None:
            raise VmError(f"cannot call '{self.name}': the program is closed",
                          StatusCode.FAILED_PRECONDITION)
        fences = None
        if self.fenced:
            assert self.arity is not None
            if len(args) == self.arity:            # the caller's own fences
                args, fences = args[:-2], [check_fence(args[-2], "wait", self.name),
                                           check_fence(args[-1], "signal", self.name)]
            elif len(args) != self.arity - 2:
                self._arity_error(len(args), self.arity - 2, " (then, optionally, a wait "
                                  "and a signal vmrt.Fence)")
            args = (*args, None, None)             # converted below, then replaced
        if self.arity is not None:
            if len(args) != self.arity:
                self._arity_error(len(args), self.arity, "")
            values = list(args)
            for i in self._refs:
                values[i] = _array_arg(values[i])
        else:
            values = [_array_arg(a) for a in args]
        profile = program.profile
        try:
            if profile is None:
                results = ctx.invoke(self.bound, values) if not self.fenced else \
                    self._invoke(ctx, values, fences)
            else:
                with profile.invocation(self.name):
                    results = self._invoke(ctx, values, fences)
        except VmError as e:
            e.annotate(f"invoking function '{self.name}'")
            decl = self.declaration
            if decl:
                e.annotate(f"`{decl}`")
            raise
        if not results:
            return None
        if len(results) == 1:
            return to_host(results[0])
        return tuple(to_host(r) for r in results)

    def _invoke(self, ctx: Context, values: list[Any], fences: list[Any] | None) -> list[Any]:
        if not self.fenced:
            return ctx.invoke(self.bound, values)
        if fences is not None:
            return ctx.invoke(self.bound, [*values[:-2], *fences])
        return invoke_fenced(ctx, self.bound, values[:-2], self.name)

    def _arity_error(self, given: int, want: int, note: str) -> None:
        raise UsageError(f"function '{self.name}' takes {want} argument{'' if want == 1 else 's'}"
                         f"{note} but {given} {'was' if given == 1 else 'were'} given "
                         f"(signature {self.declaration or self.cconv})")

    def __repr__(self) -> str:
        return f"<vmrt function {self.program.module.name}.{self.name} {self.cconv}>"


# ---------------------------------------------------------------- program ---
class Program(Closeable):
    """A loaded program: its context (``.context``), main module
    (``.module``) and exports (``.exports``, ``prog[name]``, ``prog.name``,
    ``name in prog``).  Close it (or use ``with``) to run ``__deinit`` and
    release the device.

    Its functions may be called from several threads: the calls run one at
    a time, each as if alone (:class:`vmrt.Context` serializes its
    invocations; the program's globals and device belong to the call
    running)."""

    def __init__(self, context: Context, module: Module, profile: Any = None,
                 guest_profile: Any = None, remake: Callable[[], Context] | None = None):
        self.context: Context | None = context
        self.module = module
        #: makes another context over the same loaded modules (:meth:`new_context`)
        self._remake = remake
        self._functions: dict[str, ProgramFunction] = {}
        #: the timeline being recorded (``load(profile=...)``), written at close
        #: (or when the program is collected unclosed, at the latest at exit)
        self.profile = profile
        if profile is not None:
            weakref.finalize(self, profile.close)
        #: the guest profile being collected (``load(guest_profile=...)``), written at close
        self.guest_profile = guest_profile
        if guest_profile is not None:
            weakref.finalize(self, guest_profile.stop)

    @property
    def closed(self) -> bool:
        return self.context is None

    def cancel(self, wait: float = 1.0) -> bool:
        """Stop the call running on another thread (thread-safe): it raises
        ``vmrt.Cancelled`` (``CANCELLED``) and the program stays usable; see
        :meth:`vmrt.Context.cancel`.  False if no call was running."""
        ctx = self.context
        return ctx.cancel(wait) if ctx is not None else False

    @property
    def exports(self) -> tuple[str, ...]:
        """The public exports of the main module (no ``__init``-style internal
        functions, no ``$async`` variants; those are still reachable by
        ``prog[name]``)."""
        return tuple(e.name for e in self.module.exports
                     if not e.name.startswith("__") and "$" not in e.name)

    def function(self, name: str) -> ProgramFunction:
        fn = self._functions.get(name)
        if fn is not None:
            return fn
        ctx = self.context
        if ctx is None:
            raise VmError(f"cannot look up '{name}': the program is closed",
                          StatusCode.FAILED_PRECONDITION)
        f = self.module.lookup_function(name) if isinstance(name, str) else None
        if f is None:
            listed = ", ".join(self.exports) or "(none)"
            raise FunctionNotFoundError(f"module '{self.module.name}' exports no function "
                                   f"{name!r}; its exports are: {listed}")
        fn = self._functions[name] = ProgramFunction(self, name, ctx.bind(f))
        return fn

    def __getitem__(self, name: str) -> ProgramFunction:
        return self.function(name)

    def __getattr__(self, name: str) -> ProgramFunction:
        if name.startswith("__") or name in ("context", "module", "_functions", "profile",
                                             "guest_profile", "_remake"):
            raise AttributeError(name)
        return self.function(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.module.lookup_function(name) is not None

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *(n for n in self.exports if n.isidentifier())})

    def statistics(self) -> Any:
        """The device's statistics (:class:`vmrt.hal.statistics.DeviceStatistics`:
        ``heaps``, ``dispatches``, ``format()``) when loaded with
        ``statistics=True`` (or ``profile=``), else None."""
        if self.context is None:
            raise VmError("cannot read statistics: the program is closed",
                          StatusCode.FAILED_PRECONDITION)
        return self.context.statistics().get("hal")

    def _close(self) -> None:
        """(:meth:`close`) Run the modules' ``__deinit`` and free their states.
        Refused (FAILED_PRECONDITION) while a call runs on another thread."""
        ctx = self.context
        if ctx is not None:
            if self.guest_profile is not None:      # while the executables are loaded
                self.guest_profile.finish()
            ctx.close()
        self.context = None
        self._functions.clear()
        if self.profile is not None:
            self.profile.close()

    def new_context(self) -> Program:
        """Another program over the same loaded modules (nothing is read or
        translated again: the module objects are shared) with fresh module
        states: globals at their initial values, a new HAL device, ``__init``
        run again.  Its options are :func:`load`'s (device, plugins,
        parameters, budget ...) except ``profile``, which stays with this
        program.  Each program is closed on its own; closing one leaves the
        other usable."""
        if self._remake is None:
            raise UsageError("this program was not made by vmrt.load: it cannot make "
                             "a new context", StatusCode.FAILED_PRECONDITION)
        if self.context is None:
            raise VmError("cannot make a new context: the program is closed",
                          StatusCode.FAILED_PRECONDITION)
        return Program(self._remake(), self.module, None, None, self._remake)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<vmrt.Program {self.module.name!r}{state} exports={list(self.exports)}>"


def _debug_sink(spec: Any) -> Sink | None:
    """The ``hal.buffer_view.trace`` sink :func:`load`'s argument asks for."""
    if spec is None:
        return TracePrinter()
    if spec is False:
        return None
    if isinstance(spec, (str, os.PathLike)):
        return NpyFolder(spec)
    if not callable(spec):
        raise UsageError("trace_dispatch_tensors must be None, False, a folder or a callable "
                         f"(key, arrays), got a {type(spec).__name__}")

    def call(key: str, views: list[BufferView]) -> None:
        try:
            spec(key, [to_host(v) for v in views])
        except VmError:
            raise
        except Exception as e:      # the user's callback: say which trace failed
            raise VmError(f"the trace_dispatch_tensors callback failed on '{key}': "
                          f"{type(e).__name__}: {e}", StatusCode.ABORTED) from e
    return call


def load(source: str | os.PathLike[str] | bytes | Module, *, device: str | Sequence[str] | None
         = "local-sync", executable_plugins: Iterable[str | os.PathLike[str]] = (),
         static_libraries: Iterable[str | os.PathLike[str] | bytes] = (),
         modules: Iterable[Any] = (), providers: Iterable[Any] = (),
         budget: int | None = None, timeout: float | None = None, trace: Any = None,
         statistics: bool = False, trace_dispatch_tensors: Any = None,
         parameters: Any = (), parameter_mode: str = "file", profile: Any = None,
         guest_profile: str | os.PathLike[str] | None = None) -> Program:
    """Load a program like ``vmrt run --device=DEVICE --executable_plugin=...
    --module=M... --module=SOURCE`` does and return a :class:`Program`.

    ``source``: a ``.vmfb`` path, its bytes, or a module already loaded.
    ``device``: the HAL device URI (``local-sync``, ``local-task``), several,
    or None for programs that need no device (``--iree-execution-model=
    host-only``; a program that does need one then gets the default).
    ``executable_plugins``: ``--executable_plugin`` values, last asked first.
    ``static_libraries``: ``--static_library`` objects (paths or bytes of a
    ``.o`` from ``iree-compile --iree-llvmcpu-link-static``, or a FatELF of
    them) whose libraries run the program's ``static`` executables.
    ``modules``: extra modules registered before the main one, as
    ``vmrt.Module`` objects or ``--module`` spec strings (``lib.vmfb``,
    ``mods.py@create``).  ``providers``: extra module providers (the
    ``vmrt.modules`` entry points and the built-in ``hal`` are always there).
    ``budget`` / ``timeout``: ``--instruction_budget`` / ``--timeout``.
    ``trace``: a text stream that gets the execution trace
    (``--trace_execution``); ``statistics``: collect allocator and dispatch
    statistics (``--print_statistics``; see :meth:`Program.statistics`).
    ``trace_dispatch_tensors``: where the tensors of a program compiled with
    ``--iree-flow-trace-dispatch-tensors`` go: None prints them to stderr as
    iree-run-module (and iree.runtime) do, False drops them, a folder gets
    them as ``.npy`` files (``--trace_dispatch_tensors``), a callable is
    called with ``(key, list of numpy arrays)``.
    ``parameters``: what the program's ``#flow.parameter.named`` globals
    load (``--parameters``): a file path (the empty scope; a string may be
    ``"SCOPE=FILE"`` as on the command line), a ``(scope, path)`` pair,
    a mapping ``scope -> path``, ``scope -> [paths]`` or
    ``scope -> {key: numpy array}``, a
    :class:`vmrt.ParameterIndex`, or a list of these;
    ``parameter_mode``: ``"file"`` (files mapped) or ``"preload"``.
    ``profile``: a path or a text stream that gets the program's timeline as
    Chrome/Perfetto trace-event JSON (``--profile``; see
    :mod:`vmrt.tools.profile`) when the program is closed, as IREE's
    ireeperf-jsonl for a path ending in ``.ireeperf.jsonl`` (or a stream
    given as ``open_profile(stream, format="ireeperf-jsonl")``), as IREE's
    profile bundle for one ending in ``.ireeprof``; it turns the statistics
    on.
    ``guest_profile``: a path (``.svg`` or ``.json``) that gets the profile of
    the guest code of emulated dispatches by function and source line
    (``--guest_profile``; see :mod:`vmrt.hal.local.guest_profile`) when the
    program is closed.
    """
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 <= timeout < math.inf):
        raise UsageError(f"timeout must be a finite number of seconds >= 0, got {timeout!r}")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or budget < 0):
        raise UsageError(f"budget must be an integer >= 0, got {budget!r}")
    if isinstance(source, (str, os.PathLike)):
        main: Any = Path(source)
    elif isinstance(source, (bytes, bytearray, memoryview, Module)):
        main = source
    else:
        raise UsageError(f"cannot load a program from a {type(source).__name__} (expected a "
                         "path, bytes or a vmrt.Module)")
    options = RunOptions(
        static_libraries=static_library_list(static_libraries),
        devices=[str(d) for d in as_list(device, (str,))],
        executable_plugins=[os.fspath(p) for p in
                            as_list(executable_plugins, (str, os.PathLike))],
        # a list is several specs; anything else (a path, a pair, a mapping, an index) one
        parameters=list(parameters) if isinstance(parameters, list) else
        [] if parameters is None or (isinstance(parameters, tuple) and not parameters)
        else [parameters],
        parameter_mode=parameter_mode)
    options.extra["debug_sink"] = _debug_sink(trace_dispatch_tensors)
    user = [*as_list(modules, (str, Module, bytes, os.PathLike)), main]
    prof = None
    if profile is not None:
        from .tools.profile import open_profile  # imported only when asked for
        prof = open_profile(profile, "vmrt.load")
        statistics = True
    guest = None
    if guest_profile is not None:
        from .hal.local.guest_profile import GuestProfileFile  # imported only when asked for
        guest = GuestProfileFile(guest_profile, f"vmrt.load {os.fspath(guest_profile)}")
        guest.start()
    fresh = {"budget": budget, "timeout": timeout, "trace": trace, "statistics": bool(statistics)}
    with guest.stopped_on_error() if guest else contextlib.nullcontext():
        if prof is None:
            loaded = load_modules(user, providers)
            ctx = new_context(loaded, options, **fresh)
        else:
            with prof.writing(on_success=False), prof.invocation("(create context)", "load"):
                loaded = load_modules(user, providers)
                ctx = new_context(loaded, options, **fresh)

    def remake() -> Context:        # Program.new_context: the same modules, fresh states
        return new_context(loaded, options, **fresh)
    return Program(ctx, loaded.user[-1], prof, guest, remake)
