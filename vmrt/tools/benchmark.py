"""``vmrt benchmark``: behaves like ``iree-benchmark-module``.

One benchmark per function: ``BM_<function>/process_time/real_time`` (wall
time per iteration, process CPU time, ``items_per_second``), for
``--function`` or else every export that can run without inputs (as
iree-benchmark-module picks them: ``iree.benchmark`` = ``dispatch`` /
``entry`` exports, plain exports without arguments, coarse-fences exports
taking only their fences).  Modules, devices, plugins and inputs are set up
as ``vmrt run`` sets them up.

Programs whose dispatches run emulated (a library for another CPU) or on
vmvx get per-iteration counters of the instructions those dispatches ran:
``guest_instructions`` and ``guest_instructions:<export>`` per dispatch
export.  They are counted in one untimed invocation after the timed ones,
and are deterministic: a CI job can see a kernel get slower on a CPU it
does not have, without timing noise.  Native dispatches are not counted
(no counters)."""
from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence

import elfkit

from ..errors import FunctionNotFoundError, StatusCode, UsageError, VmError
from ..vm.module import cconv_fragments
from . import usage
from .async_calls import invoke as invoke_fenced
from .async_calls import takes_fences
from .benchmark_runner import (
    BENCHMARK_BOOLS,
    BENCHMARK_VALUES,
    Benchmark,
    benchmark_options,
    run_benchmarks,
)
from .devices import TASK_VALUES, task_topology
from .dispatch_trace import TracePrinter
from .flags import Flags, FlagSpec, parse_flags, report_error
from .function_io import parse_inputs
from .module_specs import context_settings, create_context

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from ..vm.context import Context
    from ..vm.module import Module

USAGE = usage.BENCHMARK

#: the flags of ``vmrt benchmark``
BENCHMARK_FLAGS = FlagSpec(
    lists=frozenset({"module", "input", "device", "executable_plugin", "task_topology_cpu_ids"}),
    values=frozenset({"function", "module_mode", "batch_size", "batch_concurrency", "time_unit",
                      *TASK_VALUES, *BENCHMARK_VALUES}),
    bools=frozenset({"help", "version", "print_statistics", "task_abort_on_failure",
                     *BENCHMARK_BOOLS}),
    raw=frozenset({"input"}))

#: an instruction budget no program reaches: it only makes emulated dispatches count
COUNTING_BUDGET = 1 << 62
TIME_UNITS = ("ms", "us", "ns")


class _Program:
    """The context and the calls of one ``vmrt benchmark``."""

    def __init__(self, ctx: Context, main: Module, batch: int, concurrency: int):
        self.ctx = ctx
        self.main = main
        self.batch = batch
        self.concurrency = concurrency

    def call(self, name: str, fn: Any, args: list[Any], budget: int | None = None) -> None:
        if takes_fences(self.main, name):
            if budget is None:
                invoke_fenced(self.ctx, fn, args, name)
                return
            from ..hal.objects import Fence
            signal = Fence()
            self.ctx.invoke(fn, [*args, None, signal], budget=budget)
            signal.wait(f"the signal fence of '{name}'")
        else:
            self.ctx.invoke(fn, args, budget=budget)

    def benchmark(self, name: str, args: list[Any], unit: str, batch: int) -> Benchmark:
        fn = self.main.lookup_function(name)
        assert fn is not None
        # a step counts ``batch`` iterations: one invocation (the program repeats
        # its dispatches), or for coarse-fences functions a batch of invocations
        calls = -(-batch // self.concurrency) * self.concurrency \
            if takes_fences(self.main, name) else 1

        def body(n: int) -> None:
            for _ in range(n // batch):
                for _ in range(calls):
                    self.call(name, fn, args)

        def counters() -> dict[str, float]:
            return count_guest_instructions(lambda: self.call(name, fn, args, COUNTING_BUDGET))

        return Benchmark(f"BM_{name}/process_time/real_time", body, unit, batch,
                         items=float, counters=counters)


def count_guest_instructions(invoke: Any) -> dict[str, float]:
    """Run ``invoke()`` (an invocation under an instruction budget) watching
    its dispatches: the instructions emulated and vmvx dispatches ran, in
    total and per export; {} when none ran any (native dispatches)."""
    from ..hal.dispatch_observer import ObservedDispatch, observe_dispatches
    from ..vm.context import current_limits
    per_export: dict[str, float] = {}

    def observer(obs: ObservedDispatch) -> None:
        limits = current_limits()
        before = None if limits is None else limits.executed
        obs.run()
        if limits is not None and before is not None:
            key = f"guest_instructions:{obs.names()[1]}"
            per_export[key] = per_export.get(key, 0.0) + (limits.executed - before)

    with observe_dispatches(observer):
        invoke()
    total = sum(per_export.values())
    if not total:
        return {}
    return {"guest_instructions": total, **{k: v for k, v in per_export.items() if v}}


def _count(flags: Flags, name: str, default: int) -> int:
    value = flags.count(name)
    if value is None:
        return default
    if value < 1:
        raise UsageError(f"flag --{name} expects an integer >= 1, got '{flags.values[name]}'")
    return value


def _benchmarks(program: _Program, flags: Flags) -> list[Benchmark]:
    """What iree-benchmark-module registers: --function with the inputs, or
    every export runnable without inputs."""
    main = program.main
    unit = flags.values.get("time_unit")
    if unit is not None and unit not in TIME_UNITS:
        raise UsageError(f"flag --time_unit expects ms, us or ns, got '{unit}'")
    name = flags.values.get("function")
    if name:
        fn = main.lookup_function(name)
        if fn is None:
            raise FunctionNotFoundError(f"no function `{name}` exported by module",
                                        StatusCode.NOT_FOUND).annotate(
                                            f"looking up function '{name}'")
        args = parse_inputs(flags.lists["input"], fn.cconv)
        return [program.benchmark(name, args, unit or "ms", program.batch)]
    out = []
    for export in main.exports:
        kind = main.function_attrs(export.name).get("iree.benchmark")
        fn = main.lookup_function(export.name)
        if fn is None:
            continue
        if kind == "dispatch":      # takes the batch size; its iterations are batched
            out.append(program.benchmark(export.name, [program.batch], unit or "us",
                                         program.batch))
            continue
        if kind != "entry":
            if export.name.startswith("__") or "$" in export.name:
                continue
            count = len(cconv_fragments(fn.cconv)[0])
            if count != (2 if takes_fences(main, export.name) else 0):
                continue
        out.append(program.benchmark(export.name, [], unit or "ms", program.batch))
    return out


def _open(flags: Flags, providers: Iterable[Any], stderr: TextIO) -> tuple[Context, Module]:
    settings = context_settings(flags)
    settings.options.extra["debug_sink"] = TracePrinter(stderr)
    settings.options.extra["task"] = task_topology(flags)
    try:
        ctx, user = create_context(settings.modules, settings.options, providers,
                                   statistics=settings.print_statistics)
    except VmError as e:
        e.annotate("creating benchmark context")
        raise
    return ctx, user[-1]


def benchmark(flags: Flags, stdout: TextIO, stderr: TextIO,
              providers: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Execute ``vmrt benchmark``; returns the rows (JSON objects)."""
    options = benchmark_options(flags)
    batch = _count(flags, "batch_size", 1)
    concurrency = _count(flags, "batch_concurrency", 1)
    ctx, main = _open(flags, providers, stderr)
    with ctx:
        benchmarks = _benchmarks(_Program(ctx, main, batch, concurrency), flags)
        rows = run_benchmarks(benchmarks, options, stdout, stderr)
        if "print_statistics" in flags.bools:
            for stats in ctx.statistics().values():
                stderr.write(stats.format())
            stderr.flush()
    return rows


def benchmark_program(module: str | os.PathLike[str], *, function: str | None = None,
                      inputs: Sequence[str] = (), device: str | None = None,
                      executable_plugins: Sequence[str] = (), min_time: str | None = None,
                      repetitions: int = 1, filter: str | None = None,
                      providers: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Benchmark ``module`` as ``vmrt benchmark`` does and return its rows,
    Google Benchmark JSON objects (``name``, ``run_type``, ``iterations``,
    ``real_time``, ``cpu_time``, ``time_unit``, counters such as
    ``guest_instructions``).  ``inputs`` use ``--input`` syntax; ``min_time``
    is ``"Nx"`` (N iterations) or ``"Ts"``."""
    argv = [f"--module={os.fspath(module)}", f"--benchmark_repetitions={repetitions}"]
    argv += [f"--input={i}" for i in inputs]
    argv += [f"--executable_plugin={p}" for p in executable_plugins]
    for flag, value in (("function", function), ("device", device),
                        ("benchmark_min_time", min_time), ("benchmark_filter", filter)):
        if value is not None:
            argv.append(f"--{flag}={value}")
    quiet = io.StringIO()
    return benchmark(parse_flags(argv, BENCHMARK_FLAGS), quiet, quiet, providers)


def main(argv: Sequence[str], *, providers: Iterable[Any] = (), stdout: TextIO,
         stderr: TextIO) -> int:
    """``vmrt benchmark FLAGS`` (``argv`` without the leading 'benchmark')."""
    try:
        flags = parse_flags(argv, BENCHMARK_FLAGS)
        if "help" in flags.bools:
            stdout.write(USAGE)
            return 0
        if "version" in flags.bools:
            stdout.write(f"vmrt {elfkit.__version__}\n")
            return 0
        benchmark(flags, stdout, stderr, providers)
        return 0
    except BaseException as e:  # noqa: BLE001 - the CLI reports every failure as a status
        return report_error(e, stdout, stderr)


__all__ = ["BENCHMARK_FLAGS", "USAGE", "benchmark", "benchmark_program",
           "count_guest_instructions", "main"]
