"""``vmrt test``: runs every test function of a program with the ``check``
module, like ``iree-check-module``.

Each public export of the main (last) module (no ``__`` prefix, no ``$``)
must take and return nothing (or, compiled with
``--iree-execution-model=async-external``, take just its two fences, which
vmrt passes; iree-check-module refuses those); each runs in a fresh context (fresh device)
with a :class:`vmrt.modules.check.CheckModule` registered first.  The
output is googletest's, as iree-check-module prints it (failure locations
are ``check.expect_eq`` and the like instead of ``file:line``; times are
real).  From Python, :func:`run_tests` returns the results::

    run = vmrt.tools.test.run_tests("tests.vmfb")
    for r in run.results:
        print(r.name, r.passed, [str(f) for f in r.failures])
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Sequence

import elfkit
from elfkit.support import DataRecord, field

from ..errors import UsageError, VmError
from ..modules.check import CheckFailure, CheckModule
from ..vm.module import Module, cconv_fragments
from . import usage
from .async_calls import invoke as invoke_fenced
from .async_calls import takes_fences
from .dispatch_trace import TracePrinter
from .flags import FlagSpec, parse_flags, report_error
from .module_specs import (
    ContextSettings,
    LoadedModules,
    RunOptions,
    as_list,
    context_settings,
    load_modules,
    new_context,
    static_library_list,
)

__all__ = ["TEST_FLAGS", "TestResult", "TestRun", "main", "run_tests", "find_test_functions"]

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

USAGE = usage.TEST

#: the flags of ``vmrt test`` (iree-check-module's, plus vmrt's extensions)
TEST_FLAGS = FlagSpec(
    lists=frozenset({"module", "device", "executable_plugin", "parameters", "static_library"}),
    values=frozenset({"module_mode", "instruction_budget", "timeout", "parameter_mode"}),
    bools=frozenset({"help", "version", "expect_failure", "trace_execution",
                     "print_statistics"}))

#: what googletest shows as the expression of the failed invocation
INVOKE_EXPRESSION = ("iree_vm_invoke(context_, function_, IREE_VM_INVOCATION_FLAG_NONE, "
                     "nullptr, nullptr, nullptr, iree_vm_instance_allocator(instance_))")


class TestResult(DataRecord):
    """One test function: its export ``name`` and ``ordinal``, the failed
    expectations, the error that ended it (if any) and its time."""

    __test__ = False        # not a pytest class

    name: str
    ordinal: int
    failures: list[CheckFailure] = field(default_factory=list)
    error: VmError | None = None
    elapsed_ms: int = 0
    #: per module name, the statistics of the test's context (only when the
    #: run was asked for statistics; see :meth:`vmrt.Context.statistics`)
    statistics: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures and self.error is None


class TestRun(DataRecord):
    """All test functions of one program, in export order; ``suite`` is the
    main module's name."""

    __test__ = False

    suite: str
    results: list[TestResult] = field(default_factory=list)
    elapsed_ms: int = 0

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[TestResult]:
        return [r for r in self.results if not r.passed]


def find_test_functions(main: Module) -> list[tuple[int, str]]:
    """``(ordinal, name)`` of each test function of ``main``; an export that
    takes or returns values is iree-check-module's ``INVALID_ARGUMENT``."""
    out = []
    for ordinal, decl in enumerate(main.exports):
        if decl.name.startswith("__") or "$" in decl.name:
            continue
        args, results = cconv_fragments(decl.cconv)
        if args == "rr" and not results and takes_fences(main, decl.name):
            args = ""                     # async-external: vmrt passes the fences
        if args or results:
            raise UsageError(f"expected function with no inputs or outputs, but export "
                             f"'{decl.name}' has signature '{decl.cconv}'")
        out.append((ordinal, decl.name))
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class GtestPrinter:
    """googletest's default printer, as iree-check-module's output shows it."""

    def __init__(self, out: TextIO):
        self.out = out

    def _w(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def begin(self, suite: str, count: int) -> None:
        suites = 1 if count else 0
        self._w(f"[==========] Running {_plural(count, 'test')} from "
                f"{_plural(suites, 'test suite')}.\n"
                "[----------] Global test environment set-up.\n")
        if count:
            self._w(f"[----------] {_plural(count, 'test')} from {suite}\n")

    def test_start(self, suite: str, result: TestResult) -> None:
        self._w(f"[ RUN      ] {suite}.{result.name}\n")

    def failure(self, failure: CheckFailure) -> None:
        self._w(f"{failure}\n")

    def invoke_error(self, suite: str, result: TestResult, error: VmError) -> None:
        self._w(f"{suite}.{result.name}: Failure\nValue of: {INVOKE_EXPRESSION}\n"
                f"Expected: error code OK\n  Actual: whose error code is "
                f"{error.code.name}: {' '.join(str(error).splitlines())}\n")

    def test_end(self, suite: str, result: TestResult) -> None:
        if result.passed:
            self._w(f"[       OK ] {suite}.{result.name} ({result.elapsed_ms} ms)\n")
        else:
            self._w(f"[  FAILED  ] {suite}.{result.name}, where GetParam() = "
                    f"{result.ordinal} ({result.elapsed_ms} ms)\n")

    def end(self, run: TestRun) -> None:
        n = len(run.results)
        if n:
            suite_ms = sum(r.elapsed_ms for r in run.results)
            self._w(f"[----------] {_plural(n, 'test')} from {run.suite} ({suite_ms} ms total)"
                    "\n\n")
        passed = sum(1 for r in run.results if r.passed)
        text = ("[----------] Global test environment tear-down\n"
                f"[==========] {_plural(n, 'test')} from {_plural(1 if n else 0, 'test suite')}"
                f" ran. ({run.elapsed_ms} ms total)\n"
                f"[  PASSED  ] {_plural(passed, 'test')}.\n")
        failed = run.failed
        if failed:
            text += f"[  FAILED  ] {_plural(len(failed), 'test')}, listed below:\n"
            for r in failed:
                text += f"[  FAILED  ] {run.suite}.{r.name}, where GetParam() = {r.ordinal}\n"
            noun = "TEST" if len(failed) == 1 else "TESTS"
            text += f"\n{len(failed):2d} FAILED {noun}\n"
        self._w(text)


class _QuietPrinter(GtestPrinter):
    def __init__(self) -> None:
        super().__init__(None)  # type: ignore[arg-type]

    def _w(self, text: str) -> None:
        pass


def run_loaded(loaded: LoadedModules, check: CheckModule, options: RunOptions,
               printer: GtestPrinter, *, budget: int | None = None,
               timeout: float | None = None, trace: Any = None,
               statistics: bool = False, statistics_out: TextIO | None = None) -> TestRun:
    """Run the test functions of ``loaded.user[-1]`` (``check`` must be among
    ``loaded.user``), one fresh context each.  With ``statistics`` each
    result carries its context's statistics, also written to
    ``statistics_out`` when given."""
    main = loaded.user[-1]
    tests = find_test_functions(main)
    run = TestRun(main.name)
    start = time.monotonic()
    printer.begin(run.suite, len(tests))
    for ordinal, name in tests:
        result = TestResult(name, ordinal)
        run.results.append(result)
        printer.test_start(run.suite, result)
        t0 = time.monotonic()
        check.on_failure = printer.failure
        ctx = new_context(loaded, options, budget=budget, timeout=timeout, trace=trace,
                          statistics=statistics)
        try:
            try:
                fn = main.lookup_function(name)
                assert fn is not None            # name came from main's exports
                if takes_fences(main, name):
                    invoke_fenced(ctx, fn, [], name)
                else:
                    ctx.invoke(fn, [])
            except VmError as e:
                result.error = e.annotate(f"invoking function '{name}'")
                printer.invoke_error(run.suite, result, e)
            result.failures = list(ctx.state_of(check).failures)
            if statistics:
                result.statistics = ctx.statistics()
                _write_statistics(statistics_out, name, result.statistics)
        finally:
            check.on_failure = None
            ctx.close()
        result.elapsed_ms = int((time.monotonic() - t0) * 1000)
        printer.test_end(run.suite, result)
    run.elapsed_ms = int((time.monotonic() - start) * 1000)
    printer.end(run)
    return run


def _write_statistics(out: TextIO | None, test: str, stats: dict[str, Any]) -> None:
    if out is None:
        return
    for stat in stats.values():
        out.write(f"[ statistics of {test} ]\n{stat.format()}")
    out.flush()


def run_tests(source: str | os.PathLike[str] | bytes | Module, *,
              device: str | Sequence[str] | None = None,
              executable_plugins: Iterable[str | os.PathLike[str]] = (),
              static_libraries: Iterable[str | os.PathLike[str] | bytes] = (),
              modules: Iterable[Any] = (), providers: Iterable[Any] = (),
              budget: int | None = None, timeout: float | None = None,
              stdout: TextIO | None = None, trace: TextIO | None = None,
              statistics: bool = False) -> TestRun:
    """Run the test functions of a program like ``vmrt test`` and return
    the per-function results (arguments as for :func:`vmrt.load`; ``device``
    None picks the default device).  ``stdout``, if given, gets the
    googletest output; ``trace``, if given, the execution trace; with
    ``statistics`` each result's ``statistics`` holds its context's
    allocator and dispatch statistics."""
    from pathlib import Path  # (the command itself needs no pathlib)
    main: Any = Path(source) if isinstance(source, (str, os.PathLike)) else source
    options = RunOptions(
        devices=[str(d) for d in as_list(device, (str,))],
        executable_plugins=[os.fspath(p) for p in
                            as_list(executable_plugins, (str, os.PathLike))],
        static_libraries=static_library_list(static_libraries))
    options.extra["debug_sink"] = TracePrinter()     # hal.buffer_view.trace: to stderr
    check = CheckModule()
    user = [check, *as_list(modules, (str, Module, bytes, os.PathLike)), main]
    loaded = load_modules(user, providers)
    printer = GtestPrinter(stdout) if stdout is not None else _QuietPrinter()
    return run_loaded(loaded, check, options, printer, budget=budget, timeout=timeout,
                      trace=trace, statistics=statistics)


def _run_cli(settings: ContextSettings, providers: Iterable[Any], stdout: TextIO,
             stdin: Any = None, stderr: TextIO | None = None) -> int:
    settings.options.extra["debug_sink"] = TracePrinter(stderr)    # as iree-check-module
    check = CheckModule()
    loaded = load_modules([check, *settings.modules], providers, stdin=stdin)
    run = run_loaded(loaded, check, settings.options, GtestPrinter(stdout),
                     budget=settings.budget, timeout=settings.timeout,
                     trace=stderr if settings.trace_execution else None,
                     statistics=settings.print_statistics,
                     statistics_out=stderr if stderr is not None else sys.stderr)
    return 0 if run.passed else 1


def main(argv: Sequence[str], *, providers: Iterable[Any] = (), stdout: TextIO,
         stderr: TextIO, stdin: Any = None) -> int:
    """``vmrt test FLAGS`` (``argv`` without the leading 'test')."""
    try:
        flags = parse_flags(argv, TEST_FLAGS)
    except BaseException as e:  # noqa: BLE001 - the command line reports every failure
        return report_error(e, stdout, stderr)
    if "help" in flags.bools:
        stdout.write(USAGE)
        return 0
    if "version" in flags.bools:
        stdout.write(f"vmrt {elfkit.__version__}\n")
        return 0
    error: BaseException | None = None
    try:
        code = _run_cli(context_settings(flags), providers, stdout, stdin, stderr)
    except (VmError, RecursionError, KeyboardInterrupt) as e:
        code, error = 1, e
    stdout.flush()
    if "expect_failure" in flags.bools:
        stdout.write("Test failed as expected\n" if code else "Test passed but expected failure\n")
        return 0 if code else 1
    if code:
        stdout.write("Test failed\n")
        if error is None:
            stdout.write("OK\n")
        else:
            stdout.flush()
            report_error(error, stdout, stdout)
    return code
