"""The argparse parser of a command line described in elfkit/tools/cli_spec.py.

It prints ``--help`` and usage errors, and parses the command lines
:func:`elfkit.tools.cli_spec.parse` leaves to it.  Help text wraps at
:func:`~elfkit.tools.cli_spec.terminal_width`, the width argparse itself would use.
"""
from __future__ import annotations

import argparse
import sys

from .cli_spec import Command, Exit, OneOf, terminal_width

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["HelpFormatter", "RawDescriptionHelpFormatter", "build_parser"]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, its width from :func:`terminal_width`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_width() if width is None else width)


class RawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """argparse's RawDescriptionHelpFormatter, its width from :func:`terminal_width`."""


class _ExitAction(argparse.Action):
    """An :class:`~elfkit.tools.cli_spec.Exit` option: run its function, exit with its code."""

    def __init__(self, option_strings: list[str], dest: str, run: Exit,
                 help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)
        self.run = run

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        parser.exit(self.run.run())


def build_parser(root: Command, words: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of ``root`` (its ``name`` is the program's).  Where ``words`` (the
    command line) name a sub-command exactly, only that one's parser is built (each
    costs a formatter and gettext look-ups, and a lazy family's import); elsewhere all
    are, for the usage, the help and the choices."""
    parser = argparse.ArgumentParser(prog=root.name, **_texts(root))
    _fill(parser, root, list(words), family=False)
    return parser


def _texts(cmd: Command) -> dict[str, Any]:
    kw: dict[str, Any] = {"formatter_class": RawDescriptionHelpFormatter if cmd.raw
                          else HelpFormatter}
    for key in ("description", "epilog"):
        if getattr(cmd, key) is not None:
            kw[key] = getattr(cmd, key)
    return kw


def _fill(parser: argparse.ArgumentParser, cmd: Command, words: list[str],
          family: bool = True) -> None:
    for x in cmd.args:
        if isinstance(x, OneOf):
            group = parser.add_mutually_exclusive_group(required=x.required)
            for a in x.args:
                group.add_argument(*a.flags, **_kwargs(a.kwargs))
        else:
            parser.add_argument(*x.flags, **_kwargs(x.kwargs))
    if not cmd.commands:
        parser.set_defaults(func=cmd.run)
        return
    # prog given: argparse would otherwise format the usage just to find it (a command
    # with sub-commands has no positionals, so it is the parser's own prog)
    sub = parser.add_subparsers(dest=cmd.dest, metavar=cmd.metavar, prog=parser.prog)
    if family:                  # the program itself prints its help in elfkit.tools.main
        parser.set_defaults(func=lambda args: _no_subcommand(parser))
    wanted = cmd.subcommand(words[0]) if words else None
    for c in [wanted] if wanted is not None else cmd.subcommands():
        kw = _texts(c)
        if c.help is not None:
            kw["help"] = c.help
        _fill(sub.add_parser(c.name, **kw), c, words[1:] if wanted is not None else [])


def _kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    action = kwargs.get("action")
    if isinstance(action, Exit):
        return {**kwargs, "action": _ExitAction, "run": action}
    return kwargs


def _no_subcommand(parser: argparse.ArgumentParser) -> int:
    """A family named without a sub-command: its help, on stderr, and exit code 2."""
    parser.print_help(sys.stderr)
    return 2
