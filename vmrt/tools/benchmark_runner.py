"""The benchmark loop behind ``vmrt benchmark`` and ``vmrt executable
benchmark``: Google Benchmark's ``--benchmark_*`` flags
(:data:`BENCHMARK_VALUES`, :data:`BENCHMARK_BOOLS`, read by
:func:`benchmark_options`) and its way of running a benchmark
(:func:`run_benchmarks`):

* ``--benchmark_min_time=Nx`` runs exactly N iterations (rounded up to the
  benchmark's batch); ``Ns`` (or a bare number of seconds, default 0.5)
  grows the iteration count (1, then up to 10x, aiming at 1.4x the time
  left) until one run lasts that long.  Repetitions after the first reuse
  the first one's count;
* ``--benchmark_repetitions=N`` adds ``_mean``, ``_median``, ``_stddev``
  and ``_cv`` rows; ``--benchmark_report_aggregates_only`` keeps only those
  (display and file), ``--benchmark_display_aggregates_only`` only on the
  display;
* ``--benchmark_out=FILE`` (format ``--benchmark_out_format``, default
  json) is written when every benchmark ran: a failure leaves no file.

A benchmark is a :class:`Benchmark`: a name, a timed body running N
iterations and an untimed pass measuring per-iteration counters (the guest
instructions of emulated code)."""
from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence

from elfkit.support import DataRecord, field

from ..errors import StatusCode, UsageError
from .benchmark_format import (
    FORMATS,
    TIME_UNITS,
    ConsoleTable,
    Row,
    aggregates,
    context_text,
    csv_text,
    json_text,
    name_width,
    run_context,
)
from .flags import parse_bool

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from .flags import Flags

#: value flags of Google Benchmark both commands accept
BENCHMARK_VALUES = frozenset({
    "benchmark_filter", "benchmark_min_time", "benchmark_min_warmup_time",
    "benchmark_repetitions", "benchmark_format", "benchmark_out", "benchmark_out_format",
    "benchmark_color", "benchmark_context", "benchmark_time_unit", "v"})
#: boolean flags of Google Benchmark both commands accept
BENCHMARK_BOOLS = frozenset({
    "benchmark_list_tests", "benchmark_dry_run", "benchmark_enable_random_interleaving",
    "benchmark_report_aggregates_only", "benchmark_display_aggregates_only",
    "benchmark_counters_tabular"})

#: Google Benchmark's cap on the iteration count a timed search may reach
MAX_ITERATIONS = 1_000_000_000
DEFAULT_MIN_TIME = 0.5


class Benchmark(DataRecord):
    """One benchmark: ``body(n)`` runs n iterations (timed); ``counters()``
    (untimed, once) gives per-iteration counters; ``items(n)`` the items
    processed by n iterations (``items_per_second``); iterations run in
    multiples of ``batch``."""
    name: str
    body: Callable[[int], None]
    time_unit: str = "ms"
    batch: int = 1
    items: Callable[[int], float] | None = None
    counters: Callable[[], dict[str, float]] | None = None


class BenchmarkOptions(DataRecord):
    """The ``--benchmark_*`` flags, checked."""
    filter: str = "."
    min_time: float = DEFAULT_MIN_TIME
    iterations: int | None = None            # ``Nx``
    warmup: float = 0.0
    repetitions: int = 1
    format: str = "console"
    out: str | None = None
    out_format: str = "json"
    list_tests: bool = False
    dry_run: bool = False
    aggregates_only: bool = False             # report (display and file)
    display_aggregates_only: bool = False
    tabular: bool = False
    context: dict[str, str] = field(default_factory=dict)


def _seconds(flag: str, text: str) -> float:
    body = text[:-1] if text.endswith("s") else text
    try:
        v = float(body)
    except ValueError:
        v = math.nan
    if not 0 <= v < math.inf:
        raise UsageError(f"flag --{flag} expects `<integer>x` or `<float>s`, got '{text}'")
    return v


def benchmark_options(flags: Flags) -> BenchmarkOptions:
    """:class:`BenchmarkOptions` from parsed flags; a bad value is a UsageError."""
    v, b = flags.values, flags.bools
    o = BenchmarkOptions()
    o.filter = v.get("benchmark_filter", ".") or "."
    try:
        re.compile(o.filter[1:] if o.filter.startswith("-") else o.filter)
    except re.error as e:
        raise UsageError(f"flag --benchmark_filter: bad regular expression '{o.filter}': "
                         f"{e}") from None
    text = v.get("benchmark_min_time")
    if text is not None:
        if text.endswith("x"):
            if not text[:-1].isdigit() or int(text[:-1]) < 1:
                raise UsageError(f"flag --benchmark_min_time expects `<integer>x` (at least "
                                 f"1x) or `<float>s`, got '{text}'")
            o.iterations = int(text[:-1])
        else:
            o.min_time = _seconds("benchmark_min_time", text)
    o.warmup = _seconds("benchmark_min_warmup_time", v.get("benchmark_min_warmup_time", "0"))
    reps = v.get("benchmark_repetitions", "1")
    if not reps.isdigit() or int(reps) < 1:
        raise UsageError(f"flag --benchmark_repetitions expects an integer >= 1, got '{reps}'")
    o.repetitions = int(reps)
    for flag, attr in (("benchmark_format", "format"), ("benchmark_out_format", "out_format")):
        text = v.get(flag, getattr(o, attr))
        if text not in FORMATS:
            raise UsageError(f"flag --{flag} expects console, json or csv, got '{text}'")
        setattr(o, attr, text)
    if "benchmark_out" in v:
        if not v["benchmark_out"]:
            raise UsageError("flag --benchmark_out expects a file name")
        o.out = v["benchmark_out"]
        parent = os.path.dirname(os.path.abspath(o.out))
        if not os.path.isdir(parent) or os.path.isdir(o.out):
            raise UsageError(f"flag --benchmark_out: cannot write '{o.out}' (no such directory "
                             f"or a directory)", StatusCode.NOT_FOUND)
    if v.get("benchmark_color", "auto") != "auto":     # checked; vmrt prints no colours
        parse_bool(v["benchmark_color"], "flag --benchmark_color")
    if v.get("benchmark_time_unit", "ms") not in TIME_UNITS:
        raise UsageError(f"flag --benchmark_time_unit expects ns, us, ms or s, got "
                         f"'{v['benchmark_time_unit']}'")
    if not v.get("v", "0").lstrip("-").isdigit():
        raise UsageError(f"flag --v expects an integer, got '{v['v']}'")
    for pair in filter(None, v.get("benchmark_context", "").split(",")):
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"flag --benchmark_context expects key=value,..., got '{pair}'")
        o.context[key] = value
    o.list_tests = "benchmark_list_tests" in b
    o.dry_run = "benchmark_dry_run" in b
    o.aggregates_only = "benchmark_report_aggregates_only" in b
    o.display_aggregates_only = "benchmark_display_aggregates_only" in b
    o.tabular = "benchmark_counters_tabular" in b
    return o


def _selected(benchmarks: Sequence[Benchmark], pattern: str) -> list[Benchmark]:
    negate = pattern.startswith("-")
    rx = re.compile(pattern[1:] if negate else pattern)
    return [bm for bm in benchmarks if bool(rx.search(bm.name)) != negate]


def _measure(bm: Benchmark, n: int) -> tuple[float, float]:
    real, cpu = time.perf_counter(), time.process_time()
    bm.body(n)
    return time.perf_counter() - real, time.process_time() - cpu


def _batched(n: int, batch: int) -> int:
    return -(-n // batch) * batch


def _search(bm: Benchmark, min_time: float, n: int) -> tuple[int, float, float]:
    """Grow the iteration count until one run lasts ``min_time`` seconds."""
    n = _batched(max(1, n), bm.batch)
    while True:
        real, cpu = _measure(bm, n)
        if n >= MAX_ITERATIONS or real >= min_time:
            return n, real, cpu
        multiplier = min_time * 1.4 / max(real, 1e-9) if real / min_time > 0.1 else 10.0
        n = _batched(min(MAX_ITERATIONS, round(max(multiplier * n, n + 1.0))), bm.batch)


def _run_one(bm: Benchmark, family: int, o: BenchmarkOptions) -> list[Row]:
    """The repetitions of one benchmark, then their aggregates."""
    reps = 1 if o.dry_run else o.repetitions
    if o.warmup > 0 and not o.dry_run:
        _search(bm, o.warmup, 1)
    rows = []
    n = 0
    for rep in range(reps):
        if o.dry_run:
            n, real, cpu = _batched(1, bm.batch), *_measure(bm, _batched(1, bm.batch))
        elif o.iterations is not None or rep:
            n = n or _batched(o.iterations or 1, bm.batch)
            real, cpu = _measure(bm, n)
        else:
            n, real, cpu = _search(bm, o.min_time, 1)
        counters = {}
        rates: frozenset[str] = frozenset()
        if bm.items is not None:
            counters["items_per_second"] = bm.items(n) / real if real > 0 else 0.0
            rates = frozenset({"items_per_second"})
        rows.append(Row(bm.name, n, real / n, cpu / n, bm.time_unit, reps, rep, family,
                        counters, rates))
    if bm.counters is not None:
        extra = bm.counters()           # deterministic: one untimed pass is enough
        for r in rows:
            r.counters.update(extra)
    return rows + aggregates(rows)


def run_benchmarks(benchmarks: Sequence[Benchmark], o: BenchmarkOptions, stdout: TextIO,
                   stderr: TextIO, executable: str | None = None) -> list[dict[str, Any]]:
    """Run the benchmarks the filter selects, print them in ``o.format``,
    write ``o.out``; returns every row (as JSON objects).  ``executable``
    is the context's program path (default: this process's ``argv[0]``)."""
    if executable is None:
        executable = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "vmrt"
    chosen = _selected(benchmarks, o.filter)
    if o.list_tests:
        stdout.write("".join(bm.name + "\n" for bm in chosen))
        return []
    if not chosen:
        stderr.write(f"Failed to match any benchmarks against regex: {o.filter}\n")
        return []
    ctx = run_context(executable, o.context)
    if o.format != "json":
        stderr.write(context_text(ctx, o.context))
        stderr.flush()
    # the name column has room for the statistics' suffixes whenever repetitions
    # were asked for (also in a dry run, which makes one)
    table = ConsoleTable(name_width([bm.name for bm in chosen], o.repetitions > 1), o.tabular)
    reported: list[Row] = []
    displayed: list[Row] = []
    for family, bm in enumerate(chosen):
        rows = _run_one(bm, family, o)
        keep = [r for r in rows if r.aggregate_name] if o.aggregates_only and \
            len(rows) > 1 else rows
        shown = [r for r in keep if r.aggregate_name] if o.display_aggregates_only and \
            len(keep) > 1 else keep
        reported += keep
        displayed += shown
        if o.format == "console":
            stdout.write("".join(table.line(r) for r in shown))
            stdout.flush()
    if o.format == "json":
        stdout.write(json_text(ctx, displayed))
    elif o.format == "csv":
        stdout.write(csv_text(displayed))
    stdout.flush()
    if o.out is not None:
        _write_out(o.out, o.out_format, ctx, reported, o.context)
    return [r.as_json() for r in reported]


def _write_out(path: str, fmt: str, ctx: dict[str, Any], rows: list[Row],
               extra: dict[str, str]) -> None:
    """``--benchmark_out``: the whole file or none (written aside, then renamed)."""
    # as Google Benchmark's file reporters: console and csv files start with the context
    if fmt == "json":
        text = json_text(ctx, rows)
    elif fmt == "csv":
        text = context_text(ctx, extra) + csv_text(rows)
    else:
        table = ConsoleTable(name_width([r.run_name for r in rows],
                                        any(r.aggregate_name for r in rows)))
        text = context_text(ctx, extra) + "".join(table.line(r) for r in rows)
    from .files import StagedOutputs
    files = StagedOutputs()
    try:
        with files.open(path, append=False) as f:
            f.write(text.encode())
        files.commit()
    except OSError as e:
        files.discard()
        raise UsageError(f"--benchmark_out: cannot write '{path}': {e.strerror or e}",
                         StatusCode.PERMISSION_DENIED) from None
    except BaseException:
        files.discard()
        raise


__all__ = ["BENCHMARK_BOOLS", "BENCHMARK_VALUES", "Benchmark", "BenchmarkOptions",
           "benchmark_options", "run_benchmarks"]
