"""``build_plugin_project``: a CMake project of plugins (``elfkit_add_plugin``)
configured with elfkit's multiarch toolchain file and built with ninja, once
per content hash.

The output directory is ``<build_root>/<hash>/``, where the hash covers the
project's sources, elfkit's CMake package (``elfkit/share/cmake/elfkit/``)
and plugin ABI header (``elfkit/include/``), the flags' source
(``elfkit/arch/``, ``elfkit/toolchain/``), the tool versions and the
configure options, so an unchanged tree reuses the previous build, also
across sessions and processes (a file lock serialises builders; old builds
are pruned).  The CMake files ship inside the package (``paths.py``), so this
works from an installed elfkit too.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from ..errors import ToolchainError
from .paths import PACKAGE_DIR, cmake_dir, include_dir
from .tools import find_tool, run, version


def project_hash(source_dir: Path, definitions: Mapping[str, str], python: str) -> str:
    """Hash of everything that determines what the project builds."""
    h = hashlib.sha256()
    roots = (source_dir, cmake_dir(), include_dir(), PACKAGE_DIR / "arch",
             PACKAGE_DIR / "toolchain")
    for root in roots:
        for p in sorted(q for q in root.rglob("*") if q.is_file()):
            if "__pycache__" in p.parts:
                continue
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    for extra in (python, version("ziglang"), version("cmake"), version("ninja"),
                  *(f"{k}={v}" for k, v in sorted(definitions.items()))):
        h.update(str(extra).encode() + b"\0")
    return h.hexdigest()[:16]


def build_plugin_project(source_dir: str | os.PathLike[str], build_root: str | os.PathLike[str], *,
                         definitions: Mapping[str, str] | None = None,
                         expect: Iterable[str] = (), pack: bool = False,
                         python: str | None = None, keep: int = 4) -> Path:
    """Configure and build ``source_dir`` (or reuse an identical earlier
    build); returns the plugin output directory, which holds
    ``<arch>/<name>.so`` (and ``<name>.sos`` with ``pack``) and ``build.log``.

    ``definitions`` are extra ``-D`` cache entries; ``expect`` lists paths
    relative to the output directory that must exist afterwards (the error
    then names every missing one and quotes the compiler's messages).
    Raises ToolchainError."""
    source_dir = Path(source_dir).resolve()
    build_root = Path(build_root).resolve()
    python = python or sys.executable
    definitions = {str(k): str(v) for k, v in (definitions or {}).items()}
    key = project_hash(source_dir, {**definitions, "ELFKIT_PACK": "ON" if pack else "OFF"},
                       python)
    root = build_root / key
    stamp = root / "complete"
    build_root.mkdir(parents=True, exist_ok=True)
    with open(build_root / f"{key}.lock", "wb") as lockf:
        _lock(lockf)
        try:
            if not stamp.is_file():
                _build_into(root, source_dir, definitions, pack, python, list(expect))
                stamp.write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
            else:
                os.utime(stamp)  # most recently used
        finally:
            _unlock(lockf)
    prune(build_root, key, keep=keep)
    return root


def prune(build_root: Path, current: str, keep: int = 4, min_age: float = 3600.0) -> None:
    """Remove old builds: all but the ``keep`` most recently used, and only
    those unused for ``min_age`` seconds (another session may still use them)."""
    now = time.time()
    done = []
    for d in build_root.iterdir():
        stamp = d / "complete"
        if d.is_dir() and d.name != current and stamp.is_file():
            done.append((stamp.stat().st_mtime, d))
    done.sort(reverse=True)
    for mtime, d in done[max(keep - 1, 0):]:
        if now - mtime >= min_age:
            shutil.rmtree(d, ignore_errors=True)
            (build_root / f"{d.name}.lock").unlink(missing_ok=True)


def _build_into(root: Path, source_dir: Path, definitions: dict[str, str], pack: bool,
                python: str, expect: list[str]) -> None:
    if root.exists():
        shutil.rmtree(root)  # a previous build that did not finish
    (root / "cmake").mkdir(parents=True)
    cmake, ninja = find_tool("cmake"), find_tool("ninja")
    cmd = [cmake, "-G", "Ninja", "-S", str(source_dir), "-B", str(root / "cmake"),
           f"-DCMAKE_MAKE_PROGRAM={ninja}",
           f"-DCMAKE_TOOLCHAIN_FILE={cmake_dir() / 'multiarch.cmake'}",
           f"-DELFKIT_PYTHON={python}", f"-DELFKIT_PLUGIN_OUTPUT_DIR={root}",
           f"-DELFKIT_PACK={'ON' if pack else 'OFF'}",
           *(f"-D{k}={v}" for k, v in sorted(definitions.items()))]
    log_path = root / "build.log"
    with open(log_path, "wb") as log:
        try:
            run(cmd, f"configuring {source_dir}", log=log)
        except ToolchainError:
            raise ToolchainError(f"configuring {source_dir} failed (log: {log_path}):\n"
                                 f"{_tail(log_path)}") from None
        try:
            run([cmake, "--build", str(root / "cmake"), "--", "-k", "0"],
                f"building {source_dir}", log=log)
            failed = False
        except ToolchainError:
            failed = True
    missing = [p for p in expect if not (root / p).is_file()]
    if failed or missing:
        raise ToolchainError(
            f"building {source_dir} failed; not built: {', '.join(missing) or '(none)'}"
            f" (log: {log_path}):\n{_failures(log_path)}")


def _tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _failures(path: Path, limit: int = 80) -> str:
    """The FAILED: blocks of a ninja log (the compiler/linker messages), or
    the log's tail when there are none."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    out: list[str] = []
    inside = False
    for line in text:
        if line.startswith("FAILED:"):
            inside = True
        elif line.startswith("[") and "/" in line.split("]")[0] or line.startswith("ninja:"):
            inside = False
        if inside:
            out.append(line)
    return "\n".join(out[:limit]) if out else _tail(path)


def _lock(f: IO[Any]) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: no concurrent sessions supported
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)


def _unlock(f: IO[Any]) -> None:
    try:
        import fcntl
    except ImportError:
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
