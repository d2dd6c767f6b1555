"""Which modules an ``elfkit`` or ``vmrt`` command imports (tests of start-up cost
that assert module sets, never times).

The command runs in a fresh interpreter started as a plain Python install starts:
``-S``, so no site-packages ``.pth`` file runs (a sandbox's or CI's ``.pth`` that
imports typing, pathlib or re at every start-up would otherwise hide the command's
own imports); this checkout and the site-packages directories are on ``PYTHONPATH``
as plain directories, so every dependency is still importable."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_RUN = ("import sys\n"
        "before = set(sys.modules)\n"
        "from {module} import main\n"
        "try:\n"
        "    rc = main(sys.argv[1:])\n"
        "except SystemExit as e:\n"
        "    rc = e.code\n"
        "sys.stdout.flush()\n"
        "print('\\nIMPORTED', *sorted(set(sys.modules) - before))\n"
        "sys.exit(rc)\n")

_MAIN = {"elfkit": "elfkit.tools", "vmrt": "vmrt.tools.main"}


def imports_of(tool: str, *args: str, env: dict[str, str] | None = None,
               code: int = 0) -> tuple[str, set[str]]:
    """(standard output, modules imported) of ``tool args`` (``main(args)`` in a
    fresh interpreter), which must exit with ``code``."""
    paths = [str(REPO), *dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))]
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(paths)}
    proc = subprocess.run([sys.executable, "-S", "-c", _RUN.format(module=_MAIN[tool]), *args],
                          capture_output=True, text=True, timeout=300, env=full_env)
    assert proc.returncode == code, proc.stderr
    out, _, imported = proc.stdout.rpartition("\nIMPORTED")
    return out, set(imported.split())


def heavy(imported: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules of ``imported`` that are one of ``names`` or inside one of them."""
    return sorted(m for m in imported if any(m == n or m.startswith(n + ".") for n in names))
