"""Google Benchmark's output, as ``iree-benchmark-module`` and
``iree-benchmark-executable`` print it: the run context (date, executable,
CPUs and caches, load average, warnings), then one row per run in one of
three formats:

* ``console``: the context on stderr, a table on stdout
  (``Benchmark  Time  CPU  Iterations UserCounters...``);
* ``json``: ``{"context": {...}, "benchmarks": [...]}`` with the library's
  keys (``name``, ``run_name``, ``run_type``, ``repetitions``, ...,
  ``time_unit``, then each counter as a key of its own);
* ``csv``: the context on stderr, ``name,iterations,real_time,...`` rows.

A row is a :class:`Row`; :func:`aggregates` makes the ``_mean``,
``_median``, ``_stddev`` and ``_cv`` rows of repeated runs."""
from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence

import elfkit
from elfkit.support import DataRecord, field

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: seconds -> the unit a row's times are printed in
TIME_UNITS = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}
FORMATS = ("console", "json", "csv")
#: the statistics of repeated runs, in Google Benchmark's order
STATISTICS = ("mean", "median", "stddev", "cv")


class Row(DataRecord):
    """One reported run: an iteration (one repetition) or an aggregate.
    Times are seconds per iteration; ``counters`` are per-iteration values
    (``rates`` names those printed per second)."""
    run_name: str
    iterations: int
    real_seconds: float
    cpu_seconds: float
    time_unit: str = "ms"
    repetitions: int = 1
    repetition_index: int = 0
    family_index: int = 0
    counters: dict[str, float] = field(default_factory=dict)
    rates: frozenset[str] = frozenset()
    aggregate_name: str = ""

    @property
    def name(self) -> str:
        return f"{self.run_name}_{self.aggregate_name}" if self.aggregate_name else self.run_name

    @property
    def percentage(self) -> bool:
        """A ``_cv`` row: its times and counters are ratios, not seconds."""
        return self.aggregate_name == "cv"

    def time(self, seconds: float) -> float:
        return seconds if self.percentage else seconds * TIME_UNITS[self.time_unit]

    def as_json(self) -> dict[str, Any]:
        """The row as Google Benchmark's JSON reporter writes it."""
        d: dict[str, Any] = {"name": self.name, "family_index": self.family_index,
                             "per_family_instance_index": 0, "run_name": self.run_name,
                             "run_type": "aggregate" if self.aggregate_name else "iteration",
                             "repetitions": self.repetitions}
        if self.aggregate_name:
            d.update(threads=1, aggregate_name=self.aggregate_name,
                     aggregate_unit="percentage" if self.percentage else "time")
        else:
            d.update(repetition_index=self.repetition_index, threads=1)
        d.update(iterations=self.iterations, real_time=self.time(self.real_seconds),
                 cpu_time=self.time(self.cpu_seconds), time_unit=self.time_unit)
        d.update(sorted(self.counters.items()))
        return d


def _stat(name: str, values: Sequence[float]) -> float:
    import statistics  # only for repetitions' aggregates (start-up time)
    if name == "mean":
        return statistics.fmean(values)
    if name == "median":
        return statistics.median(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    if name == "stddev":
        return sd
    mean = statistics.fmean(values)
    return sd / mean if len(values) > 1 and mean else 0.0


def aggregates(runs: Sequence[Row]) -> list[Row]:
    """The statistics rows of one benchmark's repetitions (none for one run)."""
    if len(runs) < 2:
        return []
    first = runs[0]
    out = []
    for stat in STATISTICS:
        counters = {k: _stat(stat, [r.counters.get(k, 0.0) for r in runs])
                    for k in first.counters}
        out.append(Row(first.run_name, len(runs), _stat(stat, [r.real_seconds for r in runs]),
                       _stat(stat, [r.cpu_seconds for r in runs]), first.time_unit,
                       first.repetitions, 0, first.family_index, counters, first.rates, stat))
    return out


# -- the run context ----------------------------------------------------------------

def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _cpu_mhz() -> float:
    khz = _read("/sys/devices/system/cpu/cpu0/tsc_freq_khz") or \
        _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if khz and khz.isdigit():
        return int(khz) / 1000.0
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("cpu mhz", "bogomips"):
            try:
                return float(value)
            except ValueError:
                continue
    return 0.0


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip()
    if text and text[-1] in units and text[:-1].isdigit():
        return int(text[:-1]) * units[text[-1]]
    return int(text) if text.isdigit() else 0


def _caches() -> list[dict[str, Any]]:
    base = "/sys/devices/system/cpu/cpu0/cache"
    out = []
    for i in range(16):
        d = f"{base}/index{i}"
        level, kind, size = _read(f"{d}/level"), _read(f"{d}/type"), _read(f"{d}/size")
        if level is None or kind is None or size is None or not level.isdigit():
            break
        shared = _read(f"{d}/shared_cpu_map") or "1"
        sharing = sum(bin(int(p, 16)).count("1") for p in shared.split(",") if p.strip())
        out.append({"type": kind, "level": int(level), "size": _size(size),
                    "num_sharing": sharing})
    return out


def _scaling_enabled(cpus: int) -> bool:
    for i in range(cpus):
        governor = _read(f"/sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor")
        if governor is not None and governor != "performance":
            return True
    return False


def _local_date() -> str:
    """Now, local time, ISO 8601 to the second with the UTC offset (``datetime``'s
    ``now().astimezone().isoformat(timespec="seconds")``, without importing it)."""
    now = time.localtime()
    offset = now.tm_gmtoff or 0
    sign = "-" if offset < 0 else "+"
    hours, rest = divmod(abs(offset), 3600)
    minutes, seconds = divmod(rest, 60)
    zone = f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")
    return time.strftime("%Y-%m-%dT%H:%M:%S", now) + zone


def run_context(executable: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``context`` object of the JSON output (the console header's facts)."""
    cpus = os.cpu_count() or 1
    try:
        cpus = int(os.sysconf("SC_NPROCESSORS_ONLN"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    ctx: dict[str, Any] = {
        "date": _local_date(),
        "host_name": os.uname().nodename, "executable": executable, "num_cpus": cpus,
        "mhz_per_cpu": int(_cpu_mhz()), "cpu_scaling_enabled": _scaling_enabled(cpus),
        "aslr_enabled": (_read("/proc/sys/kernel/randomize_va_space") or "0") != "0",
        "caches": _caches(), "load_avg": load,
        "library_version": f"vmrt {elfkit.__version__}", "library_build_type": "release",
        "json_schema_version": 1}
    ctx.update(extra or {})
    return ctx


def context_text(ctx: dict[str, Any], extra: dict[str, str] | None = None) -> str:
    """The context as the console and CSV reporters print it (on stderr)."""
    cpus = ctx["num_cpus"]
    lines = [ctx["date"], f"Running {ctx['executable']}",
             f"Run on ({cpus} X {ctx['mhz_per_cpu']:g} MHz CPU {'s' if cpus > 1 else ''})"]
    if ctx["caches"]:
        lines.append("CPU Caches:")
        for c in ctx["caches"]:
            share = f" (x{cpus // c['num_sharing']})" if c["num_sharing"] else ""
            lines.append(f"  L{c['level']} {c['type']} {c['size'] // 1024} KiB{share}")
    if ctx["load_avg"]:
        lines.append("Load Average: " + ", ".join(f"{v:.2f}" for v in ctx["load_avg"]))
    lines += [f"{k}: {v}" for k, v in (extra or {}).items()]
    if ctx["cpu_scaling_enabled"]:
        lines.append("***WARNING*** CPU scaling is enabled, the benchmark real time "
                     "measurements may be noisy and will incur extra overhead.")
    if ctx["aslr_enabled"]:
        lines.append("***WARNING*** ASLR is enabled, the results may have unreproducible "
                     "noise in them.")
    return "\n".join(lines) + "\n"


# -- numbers as the reporters print them --------------------------------------------

def human_number(value: float) -> str:
    """A counter on the console as Google Benchmark 1.9 spells it: 6
    significant digits, divided by 1000 while above 999 (k, M, G, ...),
    multiplied by 1000 below 0.01 until at least 1 (m, u, n, ...)."""
    sign = "-" if value < 0 else ""
    v = abs(value)
    if v > 999.0:
        for prefix in "kMGTPEZY":
            v /= 1000.0
            if v <= 999.0:
                return f"{sign}{v:g}{prefix}"
        return f"{value:g}"
    if 0 < v < 0.01:
        for prefix in "munpfazy":
            v *= 1000.0
            if v >= 1.0:
                return f"{sign}{v:g}{prefix}"
    return f"{value:g}"


def console_time(t: float) -> str:
    """A time column: 10 characters, 3 to 0 decimals as the value grows."""
    if t < 1.0:
        return f"{t:10.3f}"
    if t < 10.0:
        return f"{t:10.2f}"
    if t < 100.0:
        return f"{t:10.1f}"
    if t > 9999999999:
        return f"{t:1.4e}"
    return f"{t:10.0f}"


def _json_number(v: Any) -> str:
    import json  # only for the JSON output (start-up time)
    if isinstance(v, bool) or not isinstance(v, float):
        return json.dumps(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "-Infinity" if v < 0 else "Infinity"
    return f"{v:.16e}"


# -- reporters ---------------------------------------------------------------------

class ConsoleTable:
    """The console reporter's table: a header (again whenever the counters
    change in tabular mode), then a line per row."""

    def __init__(self, name_width: int, tabular: bool = False):
        self.width = name_width
        self.tabular = tabular
        self.header_for: tuple[str, ...] | None = None

    def header(self, counters: Sequence[str]) -> str:
        text = f"{'Benchmark':<{self.width}} {'Time':>13} {'CPU':>15} {'Iterations':>12}"
        if counters:
            text += "".join(f" {c:>10}" for c in counters) if self.tabular \
                else " UserCounters..."
        line = "-" * len(text)
        return f"{line}\n{text}\n{line}\n"

    def line(self, row: Row) -> str:
        names = tuple(sorted(row.counters))
        out = ""
        if self.header_for is None or (self.tabular and names != self.header_for):
            out = self.header(names)
            self.header_for = names
        out += f"{row.name:<{self.width}} "
        if row.percentage:
            out += f"{100 * row.real_seconds:10.2f} {'%':<4} {100 * row.cpu_seconds:10.2f} " \
                   f"{'%':<4} "
        else:
            u = row.time_unit
            out += f"{console_time(row.time(row.real_seconds))} {u:<4} " \
                   f"{console_time(row.time(row.cpu_seconds))} {u:<4} "
        out += f"{row.iterations:10d}"
        for name in names:
            value = row.counters[name]
            if row.percentage:
                text, unit = f"{value * 100:.2f}", "%"
            else:
                text, unit = human_number(value), "/s" if name in row.rates else ""
            if self.tabular:
                out += f" {text:>{max(10, len(name)) - len(unit)}}{unit}"
            else:
                out += f" {name}={text}{unit}"
        return out + "\n"


def name_width(names: Sequence[str], repeated: bool) -> int:
    """The width of the console's name column."""
    width = max([10, *map(len, names)])
    return width + 1 + max(map(len, STATISTICS)) if repeated else width


def json_text(ctx: dict[str, Any], rows: Sequence[Row]) -> str:
    """The JSON reporter's output (2-space indent, doubles as ``%.16e``)."""
    import json  # only for the JSON output (start-up time)

    def obj(d: dict[str, Any], indent: str) -> str:
        items = []
        for k, v in d.items():
            if k == "caches":
                inner = ",\n".join(obj(c, indent + "    ") for c in v)
                items.append(f'{indent}  "caches": [\n{inner}\n{indent}  ]')
            elif k == "load_avg":
                items.append(f'{indent}  "load_avg": [{",".join(f"{x:g}" for x in v)}]')
            else:
                items.append(f"{indent}  {json.dumps(k)}: {_json_number(v)}")
        return indent + "{\n" + ",\n".join(items) + "\n" + indent + "}"
    body = ",\n".join(obj(r.as_json(), "    ") for r in rows)
    return ('{\n  "context": ' + obj(ctx, "  ").lstrip() + ',\n  "benchmarks": [\n'
            + body + ("\n" if rows else "") + "  ]\n}\n")


CSV_COLUMNS = ("name", "iterations", "real_time", "cpu_time", "time_unit", "bytes_per_second",
               "items_per_second", "label", "error_occurred", "error_message")


def csv_text(rows: Sequence[Row]) -> str:
    """The CSV reporter's header and rows."""
    extra: list[str] = []
    for r in rows:
        extra += [k for k in sorted(r.counters) if k not in extra and k not in CSV_COLUMNS]
    lines = [",".join(CSV_COLUMNS) + "".join(f',"{k}"' for k in extra)]
    for r in rows:
        cells = ['"' + r.name.replace('"', '""') + '"', str(r.iterations),
                 f"{r.time(r.real_seconds):g}", f"{r.time(r.cpu_seconds):g}",
                 "" if r.percentage else r.time_unit]
        cells += [f"{r.counters[k]:g}" if k in r.counters else ""
                  for k in ("bytes_per_second", "items_per_second")]
        cells += ["", "", ""]
        cells += [f"{r.counters[k]:g}" if k in r.counters else "" for k in extra]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


__all__ = ["CSV_COLUMNS", "FORMATS", "STATISTICS", "TIME_UNITS", "ConsoleTable", "Row",
           "aggregates", "console_time", "context_text", "csv_text", "human_number",
           "json_text", "name_width", "run_context"]
