"""The ``vmrt`` command: ``vmrt run`` (like ``iree-run-module``), ``vmrt
test`` (like ``iree-check-module``), ``vmrt benchmark`` (like
``iree-benchmark-module``) and ``vmrt executable`` (dispatch libraries;
``vmrt executable benchmark`` is like ``iree-benchmark-executable``) and ``vmrt
replay`` (like ``iree-run-replay``).  Each sub-command imports only
what it needs, so the command starts fast."""
from __future__ import annotations

import gc
import sys
from collections.abc import Iterable, Sequence

import elfkit

from ..errors import VmError, os_error
from . import usage

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

COMMANDS = ("run", "test", "benchmark", "executable", "replay")
#: the sub-commands of the commands that have some (``vmrt executable list``, ...)
SUBCOMMANDS = {"executable": ("list", "imports", "dispatch", "benchmark")}

#: ``vmrt WORDS --help`` prints this text of vmrt.tools.usage (what the command itself
#: would print for it)
_HELP: dict[tuple[str, ...], str] = {
    ("run",): "RUN", ("test",): "TEST", ("benchmark",): "BENCHMARK", ("replay",): "REPLAY",
    ("executable",): "EXECUTABLE", ("executable", "benchmark"): "EXECUTABLE_BENCHMARK",
    **{("executable", c): "EXECUTABLE" for c in ("list", "imports", "dispatch")}}

#: the young-generation collection threshold while a command runs (Python's default
#: is 700): start-up allocates a hundred thousand long-lived objects (modules, classes,
#: the translated program), and collecting them young again and again costs a run
#: several milliseconds; garbage cycles are still collected, just in larger batches
GEN0_THRESHOLD = 50_000


def main(argv: Sequence[str] | None = None, *, providers: Iterable[Any] = (),
         stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Entry point of the ``vmrt`` console script.

    ``providers`` adds module providers for ``vmrt run`` (objects with
    ``name``, ``register_types(instance)`` and ``create(instance, options)``),
    e.g. a HAL module; they override built-in and entry-point providers of
    the same name.
    """
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GEN0_THRESHOLD), *old[1:])
    out = _Output(stdout or sys.stdout)
    err = stderr or sys.stderr
    try:
        try:
            rc = _command(argv, providers, out, err)
            out.flush()
            return rc
        except VmError as e:
            # the results could not be written (a full disk, a closed pipe)
            err.write(f"{e}\n")
            if stdout is None:
                _silence_stdout()
            return 1
    finally:
        gc.set_threshold(*old)
        if argv is None:
            # the console script / ``python -m vmrt``: the process ends now, and its
            # final collections would walk every object start-up made (~2 ms): keep
            # them out of the collector instead (refcounting still frees them)
            gc.freeze()


class _Output:
    """The command's standard output: a failed write or flush (``>/dev/full``,
    a closed pipe) becomes a :class:`VmError`, reported in one line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failed = False

    def write(self, text: str) -> int:
        if self.failed:         # already reported: drop the rest
            return len(text)
        try:
            return self.stream.write(text)
        except OSError as e:
            raise self._failed(e) from None

    def flush(self) -> None:
        if self.failed:
            return
        try:
            self.stream.flush()
        except OSError as e:
            raise self._failed(e) from None

    def _failed(self, e: OSError) -> VmError:
        self.failed = True
        return os_error(e, "cannot write the standard output")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so that the interpreter's final
    flush of what is still buffered cannot fail again after the one line."""
    import os
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError):
        pass


def _command(argv: Sequence[str] | None, providers: Iterable[Any],
             out: Any, err: TextIO) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("--help", "-h", "help"):
        out.write(usage.RUN)
        return 0 if args else 1
    text = _HELP.get(tuple(args[:-1])) if args[-1] == "--help" else None
    if text is not None:        # ``vmrt CMD --help``: the text, without importing CMD
        out.write(getattr(usage, text))
        return 0
    if args[0] == "--version":
        out.write(f"vmrt {elfkit.__version__}\n")
        return 0
    if args[0] == "benchmark":
        from .benchmark import main as benchmark_main
        return benchmark_main(args[1:], providers=providers, stdout=out, stderr=err)
    if args[0] == "executable" and args[1:2] == ["benchmark"]:
        from .executable_benchmark import main as executable_benchmark_main
        return executable_benchmark_main(args[2:], stdout=out, stderr=err)
    if args[0] == "executable":
        from .executable import main as executable_main
        return executable_main(args[1:], stdout=out, stderr=err)
    if args[0] == "replay":
        from .replay import main as replay_main
        return replay_main(args[1:], stdout=out, stderr=err)
    if args[0] == "run":
        from .run import main as run_main
        return run_main(args[1:], providers=providers, stdout=out, stderr=err)
    if args[0] == "test":
        from .test import main as test_main
        return test_main(args[1:], providers=providers, stdout=out, stderr=err)
    err.write(f"INVALID_ARGUMENT; unknown command '{args[0]}' (try 'vmrt --help')\n")
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
