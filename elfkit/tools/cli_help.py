"""``elfkit ... --help`` from elfkit's cache (elfkit/_support/codecache.py).

Help is argparse's rendering of the command line's description
(elfkit/tools/cli_argparse.py), which needs argparse, gettext and every command family's
module: most of a ``--help``'s start-up time.  The text it printed is kept under a key
of everything it depends on -- the command line, the help width, the locale
variables, whether the output is a terminal, the Python (the cache's own key) -- and
with the size and modification time of every elfkit source file imported while it
was rendered; the next ``--help`` of the same line prints the kept text when none of
those files changed, and renders (and keeps) it again otherwise.
"""
from __future__ import annotations

import os
import sys

from .._support import codecache
from .cli_spec import terminal_width

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .cli_spec import Command

__all__ = ["cached_help"]

_LOCALE = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def _key(root: Command, argv: Sequence[str]) -> bytes | None:
    """The cache key of ``argv`` if it asks for help (words that are not options,
    then ``-h`` or ``--help``), else None."""
    if not argv or argv[-1] not in ("-h", "--help") or any(
            w[:1] in ("-", "") for w in argv[:-1]):
        return None
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    env = [os.environ.get(k, "") for k in _LOCALE]
    return repr((root.name, list(argv), terminal_width(), env, tty)).encode()


def _stamps(files: Sequence[str]) -> list[tuple[str, int, int]] | None:
    out = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            return None
        out.append((f, st.st_size, st.st_mtime_ns))
    return out


def _sources() -> list[str]:
    """The source files of the elfkit modules imported so far."""
    return sorted(f for name, m in list(sys.modules.items())
                  if (name == "elfkit" or name.startswith("elfkit."))
                  and isinstance(f := getattr(m, "__file__", None), str))


def cached_help(root: Command, argv: Sequence[str], render: Callable[[], object]) -> None:
    """For an ``argv`` that asks for help: print the kept help and exit (SystemExit(0),
    as argparse does), or call ``render()`` (argparse printing it and exiting), keep
    what it printed if it exited with 0, and exit as it did.  Returns (doing nothing)
    when ``argv`` does not ask for help, or when ``render()`` returns."""
    key = _key(root, argv)
    if key is None:
        return
    where = codecache.cache_dir("elfkit")
    name = f"help-{codecache.checksum(key):023x}.bin"
    kept = codecache.load(where, name, key)
    if (type(kept) is tuple and len(kept) == 2 and type(kept[1]) is str
            and type(kept[0]) is list and _stamps([s[0] for s in kept[0]]) == kept[0]):
        sys.stdout.write(kept[1])
        raise SystemExit(0)
    import io
    real, sys.stdout = sys.stdout, io.StringIO()
    try:
        render()
    except SystemExit as e:
        text = sys.stdout.getvalue()
        sys.stdout = real
        sys.stdout.write(text)
        if e.code in (0, None):
            stamps = _stamps(_sources())
            if stamps is not None:
                codecache.store(where, name, key, (stamps, text))
        raise
    finally:
        sys.stdout = real
