"""The ``elfkit`` command.

Each command family lives next to its concept and registers itself here:
``inspect`` (elfkit/loader/cli.py), ``run`` and ``disasm`` (elfkit/exec/cli.py),
``fatelf`` (elfkit/fatelf/cli.py), ``toolchain`` (elfkit/toolchain/cli.py).
Registration imports nothing heavy, so ``elfkit fatelf list`` starts fast.
``--cmake-dir`` and ``--include-dir`` print where the CMake package and the
plugin ABI header are (elfkit/toolchain/paths.py), as pybind11's do.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys

from ._version import __version__
from .errors import ElfkitError

# (module, attribute, takes the words) of each command family's register function:
# register(subparsers), or register(subparsers, words) for a family that builds only
# the parser of the sub-command the words after the family's name ask for
_FAMILIES = (
    ("elfkit.loader.cli", "register", False),
    ("elfkit.exec.cli", "register", False),
    ("elfkit.fatelf.cli", "register", True),
    ("elfkit.toolchain.cli", "register", False),
)
# which family defines each command: only that one is imported to run it
_COMMANDS = {"inspect": "elfkit.loader.cli", "run": "elfkit.exec.cli",
             "disasm": "elfkit.exec.cli", "fatelf": "elfkit.fatelf.cli",
             "toolchain": "elfkit.toolchain.cli"}


def terminal_width() -> int:
    """The help text width argparse would use (``shutil.get_terminal_size()``'s
    columns less 2: ``$COLUMNS``, else the terminal's, else 80), without importing
    shutil, which with its compression modules costs each command start-up time."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):   # no stdout (None), not a terminal
            columns = 0
    return (columns or 80) - 2


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, its width from :func:`terminal_width`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_width() if width is None else width)


class RawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """argparse's RawDescriptionHelpFormatter, its width from :func:`terminal_width`."""


class _PrintDir(argparse.Action):
    """``--cmake-dir`` / ``--include-dir``: print the directory and exit (like ``--version``)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help=str(kwargs.get("help", "")))

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        from .toolchain import paths
        try:
            where = paths.cmake_dir() if self.dest == "cmake_dir" else paths.include_dir()
        except ElfkitError as e:
            parser.exit(fail(str(e), 1))
        print(where)
        parser.exit(0)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="elfkit", formatter_class=HelpFormatter,
        description="Inspect, pack, load and run bare-metal ELF plugins (natively or under "
                    "emulation).")
    p.add_argument("--version", action="version", version=f"elfkit {__version__}")
    p.add_argument("--cmake-dir", action=_PrintDir,
                   help="print the directory of elfkit's CMake package (elfkitConfig.cmake, "
                        "toolchain files) for find_package(elfkit CONFIG) and exit")
    p.add_argument("--include-dir", action=_PrintDir,
                   help="print the directory of elfkit_plugin.h (the plugin ABI header) and exit")
    # prog given: argparse would otherwise format the usage just to find "elfkit"
    sub = p.add_subparsers(dest="command", metavar="COMMAND", prog=p.prog)
    first = argv[0] if argv else None
    wanted = _COMMANDS.get(first) if first else None
    for modname, attr, takes_words in _FAMILIES:
        if wanted is not None and modname != wanted:
            continue
        try:
            __import__(modname)    # as importlib.import_module, without importing importlib
            mod = sys.modules[modname]
        except ModuleNotFoundError as e:  # a family not built yet
            if e.name != modname:
                raise
            continue
        if takes_words and wanted is not None and argv:
            getattr(mod, attr)(sub, argv[1:])
        else:
            getattr(mod, attr)(sub)
    return p


def fail(message: str, code: int = 2) -> int:
    """Print one line on stderr and return the exit code."""
    msg = " ".join(str(message).split("\n")[0:1]) if "\n" in str(message) else str(message)
    print(f"elfkit: error: {msg}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        # the console script: the process ends after the command, and its final
        # collections would walk every object start-up made; keep them out of the
        # collector (refcounting still frees them)
        try:
            return _command(sys.argv[1:])
        finally:
            gc.freeze()
    return _command(argv)


def _command(argv: list[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
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
