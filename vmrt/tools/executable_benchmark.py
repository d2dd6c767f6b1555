"""``vmrt executable benchmark``: behaves like ``iree-benchmark-executable``.

Usage: :data:`vmrt.tools.usage.EXECUTABLE_BENCHMARK` (``USAGE``)."""
from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import ExecutableError, StatusCode, UsageError
from . import usage
from .benchmark_runner import (
    BENCHMARK_BOOLS,
    BENCHMARK_VALUES,
    Benchmark,
    benchmark_options,
    run_benchmarks,
)
from .executable import parse_bindings
from .files import MAX_MODULE_SIZE, check_input, check_plugin_specs
from .flags import Flags, FlagSpec, parse_flags, report_error

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from ..hal.local.elf_executable import Executable

USAGE = usage.EXECUTABLE_BENCHMARK

EXECUTABLE_BENCHMARK_FLAGS = FlagSpec(
    lists=frozenset({"workgroup_count", "binding", "constant", "executable_constant",
                     "executable_plugin"}),
    values=frozenset({"executable_format", "executable_file", "entry_point", "batch_size",
                      "device", *BENCHMARK_VALUES}),
    bools=frozenset({"help", *BENCHMARK_BOOLS}),
    raw=frozenset({"binding"}),
    positional=True)

#: IREE's architecture suffixes of executable formats -> elfkit arch names
FORMAT_ARCHES = {"x86_64": "x86_64", "arm_64": "aarch64", "riscv_64": "riscv64",
                 "arm_32": "arm", "x86_32": "i386", "riscv_32": "riscv32"}
#: an instruction budget no dispatch reaches: it only makes emulated code count
COUNTING_BUDGET = 1 << 62


def _u32(flag: str, text: str) -> int:
    try:
        v = int(text.strip(), 0)
    except ValueError:
        v = -1
    if not 0 <= v <= 0xFFFFFFFF:
        raise UsageError(f"invalid {flag} value `{text}`; expects uint32_t")
    return v


def _workgroup_count(text: str) -> tuple[int, int, int]:
    parts = text.split(",")
    try:
        if len(parts) != 3:
            raise ValueError
        x, y, z = (_u32("workgroup count", p) for p in parts)
    except (ValueError, UsageError):
        raise UsageError(f"invalid workgroup count string `{text}`; expects `X,Y,Z`") from None
    return x, y, z


def _format_arch(fmt: str) -> str | None:
    if not fmt:
        return None
    for prefix in ("embedded-elf-", "system-dll-", "system-elf-"):
        if fmt.startswith(prefix) and fmt[len(prefix):] in FORMAT_ARCHES:
            return FORMAT_ARCHES[fmt[len(prefix):]]
    raise UsageError(f"executable format '{fmt}' is not supported (embedded-elf-ARCH or "
                     f"system-dll-ARCH, ARCH one of {', '.join(FORMAT_ARCHES)})",
                     StatusCode.UNIMPLEMENTED)


class DispatchSetup:
    """What to dispatch: the library, its plugins and the dispatch
    parameters, from flags over a ``--dump_dispatches`` folder's defaults."""

    def __init__(self, flags: Flags):
        lists, values = flags.lists, flags.values
        if len(flags.positional) > 1:
            raise UsageError("expected at most one executable file or dispatch folder")
        source = flags.positional[0] if flags.positional else values.get("executable_file", "")
        if flags.positional and values.get("executable_file"):
            raise UsageError("give the executable as --executable_file or as an argument, "
                             "not both")
        if not source:
            raise UsageError("no executable given (--executable_file=FILE or a "
                             "--dump_dispatches folder)")
        dump: dict[str, Any] = {}
        plugins: list[str] = []
        if os.path.isdir(source):
            dump, plugins = _dump_folder(source)
            self.file = os.path.join(source, "executable.so")
            bindings = [f"@{os.path.join(source, b)}" for b in dump.get("bindings", [])]
        else:
            self.file = source
            bindings = []
        self.plugins = plugins + list(lists["executable_plugin"])
        self.arch = _format_arch(values.get("executable_format", ""))
        self.bindings = list(lists["binding"]) or bindings
        self.constants = [_u32("push constant", c) for c in lists["constant"]] if \
            lists["constant"] else [int(c) & 0xFFFFFFFF for c in dump.get("constants", [])]
        self.executable_constants = [_u32("executable constant", c)
                                     for c in lists["executable_constant"]]
        self.entry_point = _u32("entry point", values["entry_point"]) \
            if "entry_point" in values else int(dump.get("export_ordinal", 0))
        counts = [_workgroup_count(w) for w in lists["workgroup_count"]]
        if not counts and dump.get("workgroup_count"):
            counts = [_workgroup_count(",".join(str(x) for x in dump["workgroup_count"]))]
        self.workgroup_counts: list[tuple[int, int, int]] = counts
        batch = flags.count("batch_size")
        if batch is not None and batch < 1:
            raise UsageError(f"flag --batch_size expects an integer >= 1, got '{batch}'")
        self.batch = 64 if batch is None else batch
        device = values.get("device", "local-sync")
        if device not in ("local-sync", "local-task", "local"):
            raise UsageError(f"vmrt executable benchmark runs on local-sync or local-task, "
                             f"not '{device}'", StatusCode.UNIMPLEMENTED)
        self.threads = 1
        if device == "local-task":
            from ..modules.hal.task import TaskTopology
            self.threads = TaskTopology().workers()


def _dump_folder(folder: str) -> tuple[dict[str, Any], list[str]]:
    """dispatch.json and the plugin specs of replay.sh of a dump folder."""
    import json  # only a dump folder's benchmark reads these (start-up time)
    import shlex
    path = os.path.join(folder, "dispatch.json")
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"'{folder}' is not a --dump_dispatches folder: cannot read "
                         f"dispatch.json: {e}") from None
    if not isinstance(info, dict):
        raise UsageError(f"'{path}': not a dispatch description (a JSON object)")
    plugins = []
    try:
        with open(os.path.join(folder, "replay.sh"), encoding="utf-8") as f:
            words = shlex.split(f.read(), comments=True)
    except (OSError, ValueError):
        words = []
    for w in words:
        if w.startswith("--executable_plugin="):
            plugins.append(os.path.join(folder, w.partition("=")[2]))
    return info, plugins


def count_dispatch_instructions(exe: Executable, run: Any) -> int:
    """Guest instructions ``run()`` (one dispatch of ``exe``) executes; 0 for
    a native executable."""
    if exe.backend == "native":
        run()
        return 0
    from ..vm.context import ExecutionLimits, running_under
    limits = ExecutionLimits(COUNTING_BUDGET)
    with running_under(limits):
        before = limits.executed
        run()
        return limits.executed - before


def _benchmark(exe: Executable, setup: DispatchSetup, wc: tuple[int, int, int],
               arrays: list[Any]) -> Benchmark:
    export = exe.export(setup.entry_point)
    workgroups = wc[0] * wc[1] * wc[2]

    def one() -> None:
        exe.dispatch(export, wc, arrays, setup.constants, threads=setup.threads)

    def body(n: int) -> None:
        for _ in range(n):
            one()

    def counters() -> dict[str, float]:
        n = count_dispatch_instructions(exe, one)
        if not n:
            return {}
        return {"guest_instructions": float(n),
                "guest_instructions_per_workgroup": n / workgroups if workgroups else 0.0}

    return Benchmark(f"BM_dispatch_{wc[0]}x{wc[1]}x{wc[2]}/process_time/real_time", body, "ns",
                     setup.batch, items=lambda n: float(n * workgroups), counters=counters)


def benchmark_executable(flags: Flags, stdout: TextIO, stderr: TextIO) -> list[dict[str, Any]]:
    """Execute ``vmrt executable benchmark``; returns the rows (JSON objects)."""
    from ..hal.local.elf_executable import Executable
    from ..hal.local.plugins.manager import register_plugins
    options = benchmark_options(flags)
    setup = DispatchSetup(flags)
    check_input(setup.file, "executable file", MAX_MODULE_SIZE, ExecutableError)
    check_plugin_specs(setup.plugins)
    arrays = parse_bindings(setup.bindings)
    mgr = register_plugins(setup.plugins)
    try:
        exe = Executable.load(setup.file, plugins=mgr, arch=setup.arch,
                              constants=setup.executable_constants or None)
        try:
            benchmarks = [_benchmark(exe, setup, wc, arrays) for wc in setup.workgroup_counts]
            return run_benchmarks(benchmarks, options, stdout, stderr)
        finally:
            exe.close()
    finally:
        mgr.close()


def main(argv: Sequence[str], *, stdout: TextIO, stderr: TextIO) -> int:
    """``vmrt executable benchmark FLAGS``."""
    try:
        flags = parse_flags(argv, EXECUTABLE_BENCHMARK_FLAGS)
        if "help" in flags.bools:
            stdout.write(USAGE)
            return 0
        benchmark_executable(flags, stdout, stderr)
        return 0
    except BaseException as e:  # noqa: BLE001 - the CLI reports every failure as a status
        return report_error(e, stdout, stderr)


__all__ = ["EXECUTABLE_BENCHMARK_FLAGS", "USAGE", "benchmark_executable",
           "count_dispatch_instructions", "main"]
