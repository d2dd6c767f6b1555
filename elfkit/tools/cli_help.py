"""``elfkit ... --help`` from elfkit's cache (elfkit/_support/codecache.py).

Help is argparse's rendering of the command line's description
(elfkit/tools/cli_argparse.py), which needs argparse, gettext and every command family's
module: most of a ``--help``'s start-up time.  The text it printed is kept under a key
of everything it depends on -- the command line, the help width, the locale
variables, whether the output is a terminal, elfkit's location, the Python (the
cache's own key) -- and
with the size and modification time of every elfkit source file imported while it
was rendered; the next ``--help`` of the same line prints the kept text when none of
those files changed, and renders (and keeps) it again otherwise.  ``elfkit toolchain``'s
output (flags from elfkit.arch) is kept the same way (:func:`cached_output`).
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

__all__ = ["cached_help", "cached_output"]

_LOCALE = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
#: this elfkit's directory: part of every key (checkouts and installs side by side
#: share the cache directory; the stamps alone would let one print another's text)
_HERE = os.path.dirname(__file__)


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
    return repr((root.name, list(argv), terminal_width(), env, tty, _HERE)).encode()


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


def _kept(where: str | None, name: str, key: bytes) -> str | None:
    """The text kept under ``key`` if no source file it was made from changed."""
    kept = codecache.load(where, name, key)
    if (type(kept) is tuple and len(kept) == 2 and type(kept[1]) is str
            and type(kept[0]) is list and _stamps([s[0] for s in kept[0]]) == kept[0]):
        return kept[1]
    return None


def _keep(where: str | None, name: str, key: bytes, text: str) -> None:
    stamps = _stamps(_sources())
    if stamps is not None:
        codecache.store(where, name, key, (stamps, text))


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
    kept = _kept(where, name, key)
    if kept is not None:
        sys.stdout.write(kept)
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
            _keep(where, name, key, text)
        raise
    finally:
        sys.stdout = real


def cached_output(words: Sequence[object], run: Callable[[], int]) -> int:
    """For a command whose output depends only on its words and elfkit's
    source (``elfkit toolchain``): print the output kept for ``words`` and
    return 0, or call ``run()``, keep what it printed if it returned 0, and
    return what it returned.  Kept as help is (``output-*.bin``)."""
    key = repr(("output", list(words), _HERE)).encode()
    where = codecache.cache_dir("elfkit")
    name = f"output-{codecache.checksum(key):023x}.bin"
    kept = _kept(where, name, key)
    if kept is not None:
        sys.stdout.write(kept)
        return 0
    import io
    real, sys.stdout = sys.stdout, io.StringIO()
    try:
        rc = run()
    finally:
        text = sys.stdout.getvalue()
        sys.stdout = real
        sys.stdout.write(text)
    if rc == 0:
        _keep(where, name, key, text)
    return rc
