"""Finding and running the build tools: zig's clang and ld.lld from the
``ziglang`` wheel, and the ``cmake`` and ``ninja`` wheels."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from ..errors import ToolchainError

#: Host compiler flags from the environment must not leak into cross builds.
HOST_FLAG_VARIABLES = ("CFLAGS", "CPPFLAGS", "LDFLAGS", "ASMFLAGS")


def zig(*args: str, python: str | None = None) -> list[str]:
    """``<python> -m ziglang <args>``: zig's clang (``cc``) or lld (``ld.lld``)."""
    return [python or sys.executable, "-m", "ziglang", *args]


def find_tool(name: str) -> str:
    """``cmake`` or ``ninja``: from PATH, else next to the running interpreter
    (where the pip wheels install them), else from the wheels' modules."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if not found:
        try:
            if name == "cmake":
                import cmake
                found = str(Path(cmake.CMAKE_BIN_DIR) / "cmake")
            elif name == "ninja":
                import ninja
                found = str(Path(ninja.BIN_DIR) / "ninja")
        except (ImportError, AttributeError):
            found = None
    if not found:
        raise ToolchainError(f"{name} not found; install the test extras: pip install -e '.[test]'")
    return found


def version(dist: str) -> str:
    """The installed version of a distribution (``"?"`` when not installed)."""
    try:
        from importlib.metadata import version as v
        return v(dist)
    except Exception:  # noqa: BLE001 - a version string for a report only
        return "?"


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in HOST_FLAG_VARIABLES}


def run(cmd: Sequence[str], what: str, *, log: IO[bytes] | None = None,
        cwd: Path | None = None, timeout: float | None = 900) -> None:
    """Run ``cmd``; raise ToolchainError naming ``what`` and the command, with
    the end of its output, when it fails.  With ``log``, the command and its
    output are appended there."""
    cmd = [str(c) for c in cmd]
    if log is not None:
        log.write(("$ " + " ".join(cmd) + "\n").encode())
        log.flush()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout)
    except FileNotFoundError as e:
        raise ToolchainError(f"{what}: {cmd[0]} not found ({e})") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what}: timed out after {timeout} s: {' '.join(cmd)}") from None
    if log is not None:
        log.write(proc.stdout + f"[exit {proc.returncode}]\n".encode())
        log.flush()
    if proc.returncode != 0:
        out = proc.stdout.decode(errors="replace")
        raise ToolchainError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                             f"{out[-4000:]}")
