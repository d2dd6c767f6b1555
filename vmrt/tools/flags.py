"""Command-line conventions shared by every ``vmrt`` sub-command: one flag
parser (IREE's ``--name=value`` / ``--name value`` style, repeatable list
flags, booleans, ``--flagfile``) and one way to report a failure (one line
on stderr in IREE's ``CODE; message`` form, exit code 1)."""
from __future__ import annotations

import builtins
import math
import re
from collections.abc import Sequence

from elfkit.support import DataRecord, field

from ..errors import UsageError, VmError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import TextIO

#: a flagfile may name another flagfile at most this deep
MAX_FLAGFILE_DEPTH = 8


class FlagSpec(DataRecord, frozen=True):
    """The flags one sub-command accepts.  ``raw`` values keep their
    whitespace (``--input`` text is data); ``positional`` allows bare
    arguments (file names)."""

    lists: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    bools: frozenset[str] = frozenset({"help", "version"})
    raw: frozenset[str] = frozenset()
    positional: bool = False
    #: value flags whose value may be left out (``--name`` alone is ``''``);
    #: they never take the next argument as their value
    optional: frozenset[str] = frozenset()


class Flags(DataRecord):
    """Parsed flags: list flags in order given, the last value of each value
    flag, the set of boolean flags that are on, and positional arguments."""

    lists: dict[str, list[str]] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    bools: set[str] = field(default_factory=set)
    positional: list[str] = field(default_factory=list)

    def int(self, name: str, default: int | None) -> int | None:
        """A value flag as an integer (``0x`` prefixes allowed)."""
        text = self.values.get(name)
        if text is None:
            return default
        try:
            return int(text, 0)
        except ValueError:
            raise UsageError(f"flag --{name} expects an integer, got '{text}'") from None

    def float(self, name: str, default: float | None, what: str = "a number") -> float | None:
        text = self.values.get(name)
        if text is None:
            return default
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"flag --{name} expects {what}, got '{text}'") from None


    def seconds(self, name: str) -> builtins.float | None:
        """A value flag as a finite, non-negative number of seconds (nan,
        inf and negative values are refused: they would mean no limit)."""
        value = self.float(name, None, "a number of seconds")
        if value is not None and not 0 <= value < math.inf:
            raise UsageError(f"flag --{name} expects a finite number of seconds >= 0, got "
                             f"'{self.values[name]}'")
        return value

    def count(self, name: str) -> builtins.int | None:
        """A value flag as a non-negative integer."""
        value = self.int(name, None)
        if value is not None and value < 0:
            raise UsageError(f"flag --{name} expects an integer >= 0, got '{self.values[name]}'")
        return value


def parse_flags(argv: Sequence[str], spec: FlagSpec, flags: Flags | None = None,
                depth: int = 0) -> Flags:
    """Parse ``argv`` against ``spec``.  Booleans take ``--name``,
    ``--name=true|1`` or ``--name=false|0``; ``--flagfile=PATH`` reads more
    flags from PATH, one per line (``#`` starts a comment line)."""
    if flags is None:
        flags = Flags(lists={k: [] for k in spec.lists})
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("--"):
            if spec.positional:
                flags.positional.append(arg)
                continue
            raise UsageError(f"unexpected argument '{arg}' (flags are --name=value)")
        name, eq, value = arg[2:].partition("=")
        name = name.strip()
        if name == "h":
            name = "help"
        if name in spec.bools:
            _set_bool(flags, name, value if eq else None)
            continue
        if name in spec.optional:
            flags.values[name] = value.strip()
            continue
        if name not in spec.lists and name not in spec.values and name != "flagfile":
            raise UsageError(f"flag '{name}' not recognized")
        if not eq:
            if i >= len(args) or args[i].startswith("--"):
                raise UsageError(f"flag '{name}' needs a value (--{name}=VALUE)")
            value = args[i]
            i += 1
        if name not in spec.raw:
            value = value.strip()
        if name == "flagfile":
            parse_flags(_read_flagfile(value, depth), spec, flags, depth + 1)
        elif name in spec.lists:
            flags.lists[name].append(value)
        else:
            flags.values[name] = value
    return flags


TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


def parse_bool(text: str | None, what: str, default: bool = False) -> bool:
    """A boolean flag or module parameter: ``true/1/yes/on`` or
    ``false/0/no/off`` (any case); None or an empty value gives ``default``.
    Anything else is a :class:`UsageError` naming ``what``."""
    word = (text or "").strip().lower()
    if not word:
        return default
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise UsageError(f"{what} is a boolean (true/false/1/0), got '{text}'")


def _set_bool(flags: Flags, name: str, text: str | None) -> None:
    if parse_bool(text, f"flag --{name}", default=True):
        flags.bools.add(name)
    else:
        flags.bools.discard(name)


def _read_flagfile(path: str, depth: int) -> list[str]:
    if depth >= MAX_FLAGFILE_DEPTH:
        raise UsageError(f"--flagfile nesting deeper than {MAX_FLAGFILE_DEPTH} (at '{path}')")
    from .files import MAX_FLAGFILE_SIZE, read_input
    data = read_input(path, "flagfile", MAX_FLAGFILE_SIZE)   # bounded; no FIFOs or devices
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"cannot read flagfile '{path}': not UTF-8 text") from None
    if "\0" in text:
        raise UsageError(f"cannot read flagfile '{path}': not text (contains NUL bytes)")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and
            not ln.lstrip().startswith("#")]


_CONTROL = r"[\x00-\x1f\x7f]"     # compiled when first used (start-up time)


def one_line(text: str) -> str:
    """``text`` as one terminal-safe line: line breaks become spaces, other
    control characters (from a flag value or a file, echoed in a message)
    ``\\xNN`` escapes."""
    return re.sub(_CONTROL, lambda m: f"\\x{ord(m.group()):02x}",
                  " ".join(text.splitlines()))


def report_error(e: BaseException, stdout: TextIO, stderr: TextIO) -> int:
    """One line on stderr in IREE's ``CODE; message`` style and exit code 1;
    never a traceback on the command line."""
    if isinstance(e, (SystemExit, GeneratorExit)):
        raise e
    if isinstance(e, VmError):
        try:
            stdout.flush()
        except (OSError, VmError):     # the output itself failed: the line below says why
            pass
        stderr.write(one_line(str(e)) + "\n")
    elif isinstance(e, KeyboardInterrupt):
        stderr.write("CANCELLED; interrupted\n")
    elif isinstance(e, RecursionError):
        stderr.write("RESOURCE_EXHAUSTED; call stack exhausted\n")
    else:
        stderr.write(f"INTERNAL; {type(e).__name__}: {one_line(str(e))}\n")
    return 1


__all__ = ["FALSE_WORDS", "FlagSpec", "Flags", "MAX_FLAGFILE_DEPTH", "TRUE_WORDS", "one_line",
           "parse_bool", "parse_flags", "report_error"]
