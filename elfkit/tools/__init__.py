"""The ``elfkit`` command (the console script and ``python -m elfkit`` call :func:`main`).

Each command family declares its commands next to its concept, as data
(elfkit/tools/cli_spec.py): ``inspect`` (elfkit/tools/inspect.py), ``run`` and ``disasm``
(elfkit/tools/run.py), ``fatelf`` (elfkit/tools/fatelf.py), ``toolchain``
(elfkit/tools/toolchain.py); only the family the command line names is imported.
A plain, well-formed command line is parsed by elfkit.tools.cli_spec.parse; ``--help``,
usage errors and anything unusual by the argparse parser built from the same
description (elfkit/tools/cli_argparse.py), so ``elfkit fatelf list`` starts fast.
``--cmake-dir`` and ``--include-dir`` print where the CMake package and the
plugin ABI header are (elfkit/toolchain/paths.py), as pybind11's do.
"""
from __future__ import annotations

import gc
import os
import sys

from .._version import __version__
from ..errors import ElfkitError
from .cli_spec import Arg, Command, Exit, Lazy, Namespace, parse, terminal_width

__all__ = ["ROOT", "fail", "main", "terminal_width"]


def _print_dir(which: str) -> int:
    """``--cmake-dir`` / ``--include-dir``: print the directory (exit code 0)."""
    from ..toolchain import paths
    try:
        where = paths.cmake_dir() if which == "cmake" else paths.include_dir()
    except ElfkitError as e:
        return fail(str(e), 1)
    print(where)
    return 0


#: the whole command line; each family's commands are in its module's ``COMMANDS``
ROOT = Command(
    "elfkit",
    Arg("--version", action="version", version=f"elfkit {__version__}"),
    Arg("--cmake-dir", action=Exit(lambda: _print_dir("cmake")),
        help="print the directory of elfkit's CMake package (elfkitConfig.cmake, "
             "toolchain files) for find_package(elfkit CONFIG) and exit"),
    Arg("--include-dir", action=Exit(lambda: _print_dir("include")),
        help="print the directory of elfkit_plugin.h (the plugin ABI header) and exit"),
    description="Inspect, pack, load and run bare-metal ELF plugins (natively or under "
                "emulation).",
    commands=(Lazy("inspect", "elfkit.tools.inspect"), Lazy("run", "elfkit.tools.run"),
              Lazy("disasm", "elfkit.tools.run"), Lazy("fatelf", "elfkit.tools.fatelf"),
              Lazy("toolchain", "elfkit.tools.toolchain")),
    dest="command", metavar="COMMAND")


def fail(message: str, code: int = 2) -> int:
    """Print one line on stderr and return the exit code."""
    msg = " ".join(str(message).split("\n")[0:1]) if "\n" in str(message) else str(message)
    print(f"elfkit: error: {msg}", file=sys.stderr)
    return code


#: the young-generation collection threshold while a command runs (Python's
#: default is 700), as vmrt's commands do: a command's imports and the ELF it
#: reads make thousands of long-lived objects (modules, classes, records), and
#: collecting them young again and again is work that frees nothing (1.2 M
#: instructions of an ``elfkit inspect``'s 92 M, 1.3%); garbage cycles are still
#: collected, in larger batches
GEN0_THRESHOLD = 50_000


def main(argv: list[str] | None = None) -> int:
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GEN0_THRESHOLD), *old[1:])
    try:
        return _command(sys.argv[1:] if argv is None else argv)
    finally:
        gc.set_threshold(*old)
        if argv is None:
            # the console script: the process ends after the command, and its final
            # collections would walk every object start-up made; keep them out of
            # the collector (refcounting still frees them)
            gc.freeze()


def _argparse(argv: list[str]) -> object:
    """``argv`` through the argparse parser (for ``--help``: it prints and exits)."""
    from .cli_argparse import build_parser
    return build_parser(ROOT, argv).parse_args(argv, Namespace())


def _command(argv: list[str]) -> int:
    if argv[-1:] in (["--help"], ["-h"]):   # argparse's help, kept: exits if it was
        from .cli_help import cached_help
        cached_help(ROOT, argv, lambda: _argparse(argv))
    args = parse(ROOT, argv)
    if args is None:            # --help, a usage error or an unusual command line
        from .cli_argparse import build_parser
        parser = build_parser(ROOT, argv)
        args = parser.parse_args(argv, Namespace())
        if not getattr(args, "func", None):
            parser.print_help()
            return 0 if not argv else 2
    try:
        return int(args.func(args) or 0)
    except ElfkitError as e:
        # Multi-line reports (relocation lists, fault reports) keep their
        # first line on stderr; commands print details themselves if asked.
        return fail(str(e))
    except BrokenPipeError:        # `elfkit ... | head`: the reader went away
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process
        except OSError:
            pass
        return 0
    except OSError as e:
        where = f" {e.filename!r}" if getattr(e, "filename", None) else ""
        return fail(f"{e.strerror or e}{where}")
    except KeyboardInterrupt:
        return fail("interrupted", 130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
