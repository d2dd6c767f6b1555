"""The ``elfkit`` command's help width (elfkit/tools/__init__.py): the same as argparse's
own (``shutil.get_terminal_size()`` less 2), computed without importing shutil;
``elfkit fatelf SUB`` builds only SUB's parser and still reports the others'
names for a wrong one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from elfkit.tools import terminal_width
from tests.vmrt.iree_tools import REPO


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-5", "40", "123"])
def test_terminal_width_is_what_argparse_would_use(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width() == shutil.get_terminal_size().columns - 2


def _elfkit(*args: str, columns: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "elfkit", *args], capture_output=True,
                          text=True, env=env, timeout=60)


@pytest.mark.parametrize("columns", [44, 120])
def test_help_wraps_at_the_terminal_width(columns):
    out = _elfkit("--help", columns=columns).stdout
    lines = out.splitlines()
    assert lines and max(map(len, lines)) <= columns - 2
    if columns > 100:
        assert max(map(len, lines)) > 44


def test_a_wrong_subcommand_lists_them_all():
    proc = _elfkit("fatelf", "lst", "x.sos", columns=200)
    assert proc.returncode == 2
    for name in ("pack", "list", "extract", "split", "select", "remove", "replace", "verify"):
        assert f"'{name}'" in proc.stderr
