"""The ``elfkit`` command line as data, and an exact parser for plain command lines.

Each command family declares its commands as :class:`Command` trees whose arguments are
:class:`Arg` (the arguments of argparse's ``add_argument``) and :class:`OneOf` (a mutually
exclusive group).  From that one description:

- elfkit/tools/cli_argparse.py builds the argparse parser, which prints ``--help``, reports
  usage errors and parses anything unusual;
- :func:`parse` here reads plain, well-formed command lines without importing argparse
  (which with gettext and locale is most of a short command's start-up time): exact command
  names, exact option names (``--opt v``, ``--opt=v``, ``-o v``), the positionals in one
  run, ``--`` before them.  On anything else (an abbreviation, an unknown option, ``-h``, a
  missing or extra argument, a value that does not convert or is not a choice, an option
  value starting with ``-``) it returns None and the caller asks argparse, which then gives
  the same :class:`Namespace` or its usual error.  tests/elfkit/test_cli_spec.py parses a
  corpus built from every command's description both ways.
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = ["Arg", "Command", "Exit", "Lazy", "Namespace", "OneOf", "parse", "terminal_width"]

# what an Arg may say (argparse's names); actions that put a value in the namespace
_KEYS = frozenset({"action", "nargs", "type", "default", "required", "choices", "metavar",
                   "help", "dest", "version"})
_VALUE_ACTIONS = frozenset({"store", "store_true", "append", "extend"})


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


class Namespace:
    """The parsed command line, one attribute per destination (as argparse's
    Namespace; argparse parses into this class too, so both parsers give the same)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Namespace):
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, key: str) -> bool:
        return key in self.__dict__

    def __repr__(self) -> str:
        return "Namespace(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"

    if TYPE_CHECKING:       # attributes are the commands' destinations (argparse's typing)
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...


class Exit:
    """The action of an option that runs ``run()`` and exits with the code it returns
    (like ``--version``; e.g. ``--cmake-dir``).  Only argparse parses such options."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[[], int]) -> None:
        self.run = run


class Arg:
    """One positional or option: ``Arg(*flags, **kwargs)`` takes what argparse's
    ``add_argument`` does, restricted to what :func:`parse` implements: actions store,
    store_true, append, extend, version or an :class:`Exit`; nargs None or ``+`` (and
    ``?`` for the last positional); ``type``, ``default``, ``required``, ``choices``,
    ``dest``, ``metavar``, ``help``.  Anything else raises ValueError (a wrong
    description is a bug in elfkit, found when its module is imported)."""

    __slots__ = ("flags", "kwargs", "dest", "action", "nargs", "type", "default", "required",
                 "choices")

    def __init__(self, *flags: str, **kwargs: Any) -> None:
        # (every elfkit command describes its arguments at import: kept cheap)
        get = kwargs.get
        action = get("action", "store")
        if not _KEYS.issuperset(kwargs) or not flags \
                or not (action in _VALUE_ACTIONS or action == "version"
                        or isinstance(action, Exit)):
            bad = sorted(set(kwargs) - _KEYS)
            raise ValueError(f"elfkit CLI description {flags}: unsupported {bad or action!r}")
        positional = flags[0][:1] != "-"
        nargs = get("nargs")
        if nargs not in ((None, "+", "?") if positional else (None, "+")) \
                or (positional and (len(flags) > 1 or "dest" in kwargs)):
            raise ValueError(f"elfkit CLI description {flags}: unsupported nargs {nargs!r} "
                             f"or names")
        self.flags = flags
        self.kwargs = kwargs
        self.action = action
        self.nargs = nargs
        self.type: Callable[[str], Any] | None = get("type")
        self.default = get("default", False if action == "store_true" else None)
        if (action == "append" or action == "extend") \
                and not (self.default is None or type(self.default) is list):
            raise ValueError(f"elfkit CLI description {flags}: default of {action} must be a "
                             f"list or None")
        self.required = bool(get("required", False))
        self.choices = get("choices")
        self.dest: str = get("dest") or (flags[0] if positional else _dest(flags))

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def sets_value(self) -> bool:
        """Whether the namespace gets this argument's value or default (not so for
        ``--version`` and :class:`Exit` options, which exit)."""
        return self.action in _VALUE_ACTIONS


def _dest(flags: Sequence[str]) -> str:
    """argparse's destination: a positional's name, else the first long option's
    (else the first short one's) without its dashes, ``-`` as ``_``."""
    if not flags[0].startswith("-"):
        return flags[0]
    name = next((f for f in flags if f.startswith("--")), flags[0])
    return name.lstrip("-").replace("-", "_")


class OneOf:
    """A mutually exclusive group of options (argparse's
    ``add_mutually_exclusive_group``): at most one, or exactly one if required."""

    __slots__ = ("args", "required")

    def __init__(self, *args: Arg, required: bool = False) -> None:
        if any(a.positional for a in args):
            raise ValueError("elfkit CLI description: a OneOf holds options only")
        self.args = args
        self.required = required


class Lazy:
    """A command declared by another module (its ``COMMANDS``), imported only when the
    command line names it (or help lists it)."""

    __slots__ = ("name", "module")

    def __init__(self, name: str, module: str) -> None:
        self.name = name
        self.module = module

    def resolve(self) -> Command:
        __import__(self.module)  # as importlib.import_module, without importing importlib
        for c in sys.modules[self.module].COMMANDS:
            if c.name == self.name:
                return c
        raise LookupError(f"{self.module}.COMMANDS has no command {self.name!r}")


class Command:
    """A command: its arguments and handler (``run(args) -> exit code``), or, for a
    command family, its sub-commands (``commands``, the name given stored in ``dest``;
    such a command takes no positionals).  ``raw`` keeps the description and epilog's
    line breaks in ``--help``."""

    def __init__(self, name: str, *args: Arg | OneOf, help: str | None = None,
                 description: str | None = None, epilog: str | None = None,
                 raw: bool = False, run: Callable[[Any], int] | None = None,
                 commands: Sequence[Command | Lazy] = (), dest: str | None = None,
                 metavar: str | None = None) -> None:
        self.name = name
        self.args = args
        self.help = help
        self.description = description
        self.epilog = epilog
        self.raw = raw
        self.run = run
        self.commands = tuple(commands)
        self.dest = dest
        self.metavar = metavar
        flat = self.arguments()
        positionals = [a for a in flat if a.positional]
        if self.commands and (positionals or run is not None):
            raise ValueError(f"elfkit CLI description {name}: a command with sub-commands "
                             f"takes no positionals and has no handler of its own")
        if not self.commands and run is None:
            raise ValueError(f"elfkit CLI description {name}: no handler")
        if any(a.nargs is not None for a in positionals[:-1]):
            raise ValueError(f"elfkit CLI description {name}: only the last positional may "
                             f"take a variable number of words")

    def arguments(self) -> list[Arg]:
        """Every Arg, those of OneOf groups in place."""
        return [a for x in self.args for a in (x.args if isinstance(x, OneOf) else (x,))]

    def subcommand(self, name: str) -> Command | None:
        """The sub-command called exactly ``name`` (importing its module if lazy)."""
        for c in self.commands:
            if c.name == name:
                return c.resolve() if isinstance(c, Lazy) else c
        return None

    def subcommands(self) -> list[Command]:
        return [c.resolve() if isinstance(c, Lazy) else c for c in self.commands]


# --------------------------------------------------------------------- parsing

def parse(root: Command, argv: Sequence[str]) -> Namespace | None:
    """``argv`` parsed as argparse would parse it with the parser built from ``root``
    (elfkit/tools/cli_argparse.py), or None when it is not a plain, well-formed command line
    (then argparse must decide: it may still accept it, or report the error)."""
    values: dict[str, Any] = {}
    ancestors: list[str] = []           # option strings of the families passed through
    cmd, i = root, 0
    while cmd.commands:
        _defaults(cmd, values)
        sub = cmd.subcommand(argv[i]) if i < len(argv) else None
        if sub is None:
            return None
        if cmd.dest:
            values[cmd.dest] = argv[i]
        ancestors += ["-h", "--help", *(f for a in cmd.arguments() for f in a.flags)]
        cmd, i = sub, i + 1
    words = argv[i:]
    # a family's parser also reads the words after its sub-command's name, and would take
    # a word that abbreviates one of its own options (an error if it abbreviates two)
    for w in words:
        if w == "--":
            break
        if w[:1] == "-" and w != "-" and _abbreviates(w, ancestors):
            return None
    leaf = _parse_command(cmd, words)
    if leaf is None:
        return None
    values.update(leaf)
    return Namespace(**values)


def _abbreviates(word: str, options: list[str]) -> bool:
    """Whether argparse would read ``word`` as one of ``options`` without it being one
    exactly (its _get_option_tuples)."""
    if word in options:
        return False
    if word[1:2] == "-":
        prefix = word.split("=", 1)[0]
        return prefix not in options and any(o.startswith(prefix) for o in options)
    return any(o == word[:2] or o.startswith(word) for o in options)


def _defaults(cmd: Command, values: dict[str, Any]) -> None:
    for a in cmd.arguments():
        if a.sets_value:
            values[a.dest] = a.default


def _parse_command(cmd: Command, words: Sequence[str]) -> dict[str, Any] | None:
    """The values of a command without sub-commands, or None."""
    options = {f: a for a in cmd.arguments() if not a.positional for f in a.flags}
    values: dict[str, Any] = {}
    _defaults(cmd, values)
    values["func"] = cmd.run
    seen: set[Arg] = set()
    chosen: set[Arg] = set()            # given a value that is not (``is``) its default
    loose: list[str] = []               # the positionals' words
    state = 0                           # 0: before the positionals, 1: in them, 2: after
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        if w == "--":                   # only before the positionals, once, not last
            if state or i + 1 == n or "--" in words[i + 1:]:
                return None
            loose += words[i + 1:]
            break
        if w[:1] != "-" or w == "-":
            if state == 2:
                return None
            state = 1
            loose.append(w)
            i += 1
            continue
        name, eq, explicit = w.partition("=") if w[:2] == "--" else (w, "", "")
        a = options.get(name)
        if a is None or not a.sets_value:       # unknown, or one that exits: argparse's
            return None
        state = 2 if state else 0
        i = _take_option(a, explicit if eq else None, words, i + 1, values, chosen)
        if i < 0:
            return None
        seen.add(a)
    if not _take_positionals(cmd, loose, values):
        return None
    return values if _complete(cmd, seen, chosen, values) else None


def _plain(word: str) -> bool:
    """A word argparse takes as a value wherever it stands (not an option, not ``--``;
    words starting with ``-`` that it may also take, such as ``-5``, go to argparse)."""
    return word[:1] != "-" or word == "-"


def _take_option(a: Arg, explicit: str | None, words: Sequence[str], i: int,
                 values: dict[str, Any], chosen: set[Arg]) -> int:
    """Apply option ``a`` whose words start at ``i``; the index after them, or -1.
    ``a`` joins ``chosen`` unless its value is its default object (argparse's test for
    conflicts within a group)."""
    if a.action == "store_true":
        if explicit is not None:
            return -1
        values[a.dest] = True
        chosen.add(a)
        return i
    if explicit is not None:
        if not explicit:
            return -1
        raw = [explicit]
    else:
        j = i
        while j < len(words) and _plain(words[j]) and (j == i or a.nargs == "+"):
            j += 1
        raw, i = list(words[i:j]), j
        if not raw:
            return -1
    got = _convert(a, raw)
    if got is None:
        return -1
    if a.nargs == "+" or got[0] is not a.default:
        chosen.add(a)
    if a.action == "store":
        values[a.dest] = got if a.nargs == "+" else got[0]
        return i
    old = values.get(a.dest)
    items = [] if old is None else list(old)     # argparse copies the default list
    if a.action == "append":
        items.append(got if a.nargs == "+" else got[0])
    else:                                        # extend
        items.extend(got)
    values[a.dest] = items
    return i


def _convert(a: Arg, raw: Sequence[str]) -> list[Any] | None:
    """The words through ``a``'s type, each one of its choices; None if not."""
    out = []
    for s in raw:
        try:
            v = a.type(s) if a.type is not None else s
        except Exception:   # noqa: BLE001 - argparse reports it (or lets it propagate)
            return None
        if a.choices is not None and v not in a.choices:
            return None
        out.append(v)
    return out


def _take_positionals(cmd: Command, words: list[str], values: dict[str, Any]) -> bool:
    """Share the positionals' words out as argparse does: one per positional, the last
    one (nargs ``?`` or ``+``) taking what is left."""
    pos = [a for a in cmd.arguments() if a.positional]
    fixed = pos[:-1] if pos and pos[-1].nargs else pos
    rest = words[len(fixed):]
    if len(words) < len(fixed):
        return False
    for a, w in zip(fixed, words):
        got = _convert(a, [w])
        if got is None:
            return False
        values[a.dest] = got[0]
    if len(fixed) == len(pos):
        return not rest
    last = pos[-1]
    if not rest:
        if last.nargs == "+":
            return False
        if isinstance(last.default, str):     # "?" without a word: its default, converted
            got = _convert(last, [last.default])
            if got is None:
                return False
            values[last.dest] = got[0]
        return True
    if last.nargs == "?" and len(rest) > 1:
        return False
    got = _convert(last, rest)
    if got is None:
        return False
    values[last.dest] = got if last.nargs == "+" else got[0]
    return True


def _complete(cmd: Command, seen: set[Arg], chosen: set[Arg], values: dict[str, Any]) -> bool:
    """Required options and groups present, no two of a group; string defaults of
    options not given converted by their type (as argparse does at the end)."""
    for x in cmd.args:
        if isinstance(x, OneOf):
            given = sum(a in chosen for a in x.args)
            if given > 1 or (x.required and not given):
                return False
    for a in cmd.arguments():
        if a.positional or a in seen:
            continue
        if a.required:
            return False
        if isinstance(a.default, str) and a.type is not None and a.sets_value:
            try:
                values[a.dest] = a.type(a.default)
            except Exception:   # noqa: BLE001 - argparse reports it
                return False
    return True
