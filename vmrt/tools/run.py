"""``vmrt run``: behaves like ``iree-run-module``."""
from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from contextlib import nullcontext

import elfkit

from ..errors import FunctionNotFoundError, StatusCode, UsageError, VmError
from ..vm.context import Context
from ..vm.module import Module, cconv_fragments
from . import usage
from .async_calls import invoke as invoke_fenced
from .async_calls import takes_fences
from .devices import (
    ACTIONS,
    TASK_VALUES,
    dump_devices,
    dump_task_topology,
    first_action,
    list_devices,
    list_drivers,
    task_topology,
)
from .dispatch_tools import dispatch_observer
from .dispatch_trace import NpyFolder, Sink, TracePrinter, chain
from .files import StagedOutputs
from .flags import Flags, FlagSpec, parse_flags, report_error
from .function_io import check_expected, format_results, parse_inputs, write_output
from .module_specs import context_settings, create_context

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

USAGE = usage.RUN

#: the flags of ``vmrt run`` (iree-run-module's, plus vmrt's extensions)
RUN_FLAGS = FlagSpec(
    lists=frozenset({"module", "input", "output", "device", "executable_plugin",
                     "expected_output", "task_topology_cpu_ids", "parameters",
                     "static_library"}),
    values=frozenset({"function", "output_max_element_count", "module_mode",
                      "instruction_budget", "timeout", "gdb", "expected_f16_threshold",
                      "expected_f32_threshold", "expected_f64_threshold", "compare_with",
                      "expected_bf16_threshold", "expected_rtol", "equality_mode",
                      "dump_dispatches", "dispatch_element_type", "trace_dispatch_tensors",
                      "parameter_mode", "profile", "guest_profile", "device_replay_output",
                      *TASK_VALUES}),
    bools=frozenset({"help", "trace_execution", "print_statistics", "version",
                     "check_races", "task_abort_on_failure"}),
    raw=frozenset({"input"}), optional=frozenset(ACTIONS))


def _pick_function(main: Module, name: str | None) -> str:
    if name:
        return name
    candidates = [e.name for e in main.exports
                  if not e.name.startswith("__") and "$" not in e.name]
    if not candidates:
        raise UsageError("no exported functions found in module; at least one must be present")
    if len(candidates) > 1:
        raise UsageError("more than one exported function present; --function= must be "
                         "specified explicitly")
    return candidates[0]


def run(flags: Flags, stdout: TextIO, providers: Iterable[Any] = (), stdin: Any = None,
        stderr: TextIO | None = None) -> int:
    """Execute ``vmrt run``; raises VmError on failure, returns the exit code.
    The trace and the statistics go to ``stderr`` (default ``sys.stderr``)."""
    stderr = sys.stderr if stderr is None else stderr
    max_elements = flags.int("output_max_element_count", 1024) or 0
    thresholds = {kind: _tolerance(flags, f"expected_{kind}_threshold", default) for kind, default
                  in (("f16", 0.001), ("f32", 0.0001), ("f64", 0.0001), ("bf16", 0.01))}
    rtol = _tolerance(flags, "expected_rtol", 1e-5)
    mode = flags.values.get("equality_mode", "approximate")
    if mode not in ("approximate", "exact"):
        raise UsageError(f"flag --equality_mode expects approximate or exact, got '{mode}'")
    if "compare_with" in flags.values:
        for other in ("trace_dispatch_tensors", "profile", "guest_profile", "device_replay_output"):
            if other in flags.values:
                raise UsageError(f"--compare_with cannot be combined with --{other}")
        from .compare import lockstep_cli  # imported only when asked for
        return lockstep_cli(flags, stdout, lambda f: _open(f, providers, stdin, stderr),
                            thresholds, max_elements)
    observer = dispatch_observer(flags)
    sinks: list[Sink] = [TracePrinter(stderr)]
    if "trace_dispatch_tensors" in flags.values:
        sinks.append(NpyFolder(flags.values["trace_dispatch_tensors"]))
    profile: Any = None
    if "profile" in flags.values:
        from .profile import open_profile  # imported only when asked for (start-up)
        profile = open_profile(flags.values["profile"], "vmrt run")
    guest = guest_profile_file(flags)
    with profile.writing(on_success=False) if profile else nullcontext(), \
            guest.stopped_on_error() if guest else nullcontext():
        ctx, main, name, fn = _open(flags, providers, stdin, stderr, chain(sinks), profile)
    stats = "print_statistics" in flags.bools
    with profile.writing() if profile else nullcontext(), \
            guest.stopped_on_error() if guest else nullcontext(), ctx:
        decl = main.function_attrs(name).get("iree.abi.declaration")
        try:
            args = parse_inputs(flags.lists["input"], fn.cconv)
        except VmError as e:
            if decl:
                e.annotate(f"`{decl}`")
            raise
        stdout.write(f"EXEC @{name}\n")
        stdout.flush()
        try:
            with observer.watching(), profile.invocation(name) if profile else nullcontext():
                if takes_fences(main, name):       # async-external: fences added
                    results = invoke_fenced(ctx, fn, args, name)
                else:
                    results = ctx.invoke(fn, args)
        except VmError as e:
            e.annotate(f"invoking function '{name}'")
            if decl:
                e.annotate(f"`{decl}`")
            raise
        if guest:
            guest.finish()
        observer.finish(results)
        if flags.lists["expected_output"]:
            try:
                ok, text = check_expected(results, fn.cconv, flags.lists["expected_output"],
                                          thresholds, max_elements, rtol, mode == "exact")
            except VmError as e:
                if decl:
                    e.annotate(f"`{decl}`")
                raise
            stdout.write(text + observer.report())
            stdout.flush()
            _print_statistics(ctx, stderr, stats)
            # the buffers go with the context (a profile records them freed)
            del results, args
            return 0 if ok and not observer.exit_code() else 1
        _write_results(flags.lists["output"], results, fn.cconv, max_elements, stdout)
        stdout.write(observer.report())
        stdout.flush()
        _print_statistics(ctx, stderr, stats)
        del results, args       # the buffers go with the context (a profile records them freed)
    return observer.exit_code()


def guest_profile_file(flags: Flags) -> Any:
    """``--guest_profile``: a started ``GuestProfileFile``, else None."""
    path = flags.values.get("guest_profile")
    if path is None:
        return None
    from ..hal.local.guest_profile import GuestProfileFile  # imported only when asked for
    guest = GuestProfileFile(path, f"vmrt run {path}")
    guest.start()
    return guest


def _device_info(action: str, flags: Flags) -> str:
    """What ``--list_drivers``, ``--list_devices``, ``--dump_devices`` or
    ``--dump_task_topologies`` print."""
    if action == "list_drivers":
        return list_drivers()
    if action == "dump_task_topologies":
        return dump_task_topology(task_topology(flags))
    which = flags.values[action]
    return list_devices(which) if action == "list_devices" else dump_devices(which)


def _tolerance(flags: Flags, name: str, default: float) -> float:
    """A finite, non-negative tolerance flag."""
    value = flags.float(name, default)
    assert value is not None
    if not 0 <= value < math.inf:
        raise UsageError(f"flag --{name} expects a finite number >= 0, got '{flags.values[name]}'")
    return value


def _print_statistics(ctx: Context, stderr: TextIO, wanted: bool) -> None:
    """``--print_statistics``: each module's statistics (the device's)."""
    if not wanted:      # (a profile collects them too)
        return
    for stats in ctx.statistics().values():
        stderr.write(stats.format())
    stderr.flush()


def _open(flags: Flags, providers: Iterable[Any], stdin: Any, stderr: TextIO,
          debug_sink: Sink | None = None, profile: Any = None
          ) -> tuple[Context, Module, str, Any]:
    """Load the modules, make the context and find the function to run;
    ``hal.buffer_view.trace`` goes to ``debug_sink`` (default: ``stderr``);
    ``profile`` records the context's creation."""
    settings = context_settings(flags)
    settings.options.extra["debug_sink"] = debug_sink or TracePrinter(stderr)
    settings.options.extra["task"] = task_topology(flags)
    try:
        with profile.invocation("(create context)", "load") if profile else nullcontext():
            ctx, user = create_context(settings.modules, settings.options, providers,
                                       stdin=stdin, budget=settings.budget,
                                       timeout=settings.timeout,
                                       trace=stderr if settings.trace_execution else None,
                                       statistics=settings.print_statistics
                                       or profile is not None)
        main = user[-1]
        try:
            name = _pick_function(main, flags.values.get("function"))
            fn = main.lookup_function(name)
            if fn is None:
                raise FunctionNotFoundError(f"no function `{name}` exported by module",
                              StatusCode.NOT_FOUND).annotate(f"looking up function '{name}'")
        except BaseException:
            ctx.close()
            raise
    except VmError as e:
        e.annotate("creating run context")
        raise
    return ctx, main, name, fn


def _write_results(outputs: Sequence[str], results: Sequence[Any], cconv: str,
                   max_elements: int, stdout: TextIO) -> None:
    if not outputs:
        stdout.write(format_results(results, cconv, max_elements))
        return
    if len(outputs) != len(results):
        raise UsageError(f"{len(outputs)} outputs specified but the provided variant list "
                      f"only has {len(results)} elements", StatusCode.OUT_OF_RANGE)
    codes = cconv_fragments(cconv)[1]
    files = StagedOutputs()   # all output files appear, or none
    try:
        for target, v, c in zip(outputs, results, codes):
            write_output(target, v, c, max_elements, stdout, files)
        files.commit()
    except BaseException:
        files.discard()
        raise


def main(argv: Sequence[str], *, providers: Iterable[Any] = (), stdout: TextIO,
         stderr: TextIO) -> int:
    """``vmrt run FLAGS`` (``argv`` without the leading 'run')."""
    try:
        flags = parse_flags(argv, RUN_FLAGS)
        if "help" in flags.bools:
            stdout.write(USAGE)
            return 0
        if "version" in flags.bools:
            stdout.write(f"vmrt {elfkit.__version__}\n")
            return 0
        action = first_action(argv, flags)
        if action is not None:
            stdout.write(_device_info(action, flags))
            return 0
        return run(flags, stdout, providers, stderr=stderr)
    except BaseException as e:  # noqa: BLE001 - the CLI reports every failure as a status
        return report_error(e, stdout, stderr)
