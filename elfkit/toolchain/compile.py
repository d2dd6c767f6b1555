"""``compile_plugin``: one bare-metal plugin from C or assembly sources, with
zig's clang and ld.lld and the flags of ``elfkit.arch``.

Compiling and linking are separate steps (zig cc cannot link a freestanding
shared object).  A build is skipped when ``out`` was made by the same
commands from the same inputs: a small record next to it,
``<out>.inputs.json``, holds the commands and a hash of every input the
compiler read (sources and headers, from its dependency files).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import arch as arch_mod
from .._support.files import replace_file
from ..arch import Arch
from .flags import ldflags as base_ldflags
from .tools import run, version, zig


def compile_plugin(sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                   arch: str | Arch,
                   out: str | os.PathLike[str], *, cflags: Iterable[str] = (),
                   ldflags: Iterable[str] = (), include_dirs: Iterable[str | os.PathLike[str]] = (),
                   defines: Mapping[str, object] | None = None, hash_style: str = "sysv",
                   python: str | None = None) -> Path:
    """Build the plugin ``out`` (a shared object) for ``arch`` from ``sources``.

    Each source (``.c``, ``.s``, ``.S``) is compiled with
    ``Arch.plugin_cflags("zig")``, ``-I`` for ``include_dirs``, ``-D`` for
    ``defines`` (``{"N": 3}`` -> ``-DN=3``; ``None`` -> ``-DN``), then
    ``cflags`` (later flags win, so ``cflags`` can override a default such
    as ``-mcpu=`` or ``-fvisibility=``; a ``-g`` option replaces the default
    ``-g0``, which zig would otherwise apply wherever it stands); the objects are linked with
    ``PLUGIN_LDFLAGS --hash-style=<hash_style>`` and ``ldflags``.  Returns
    ``out`` as a Path; reuses it when nothing changed.  Raises
    ``ToolchainError`` with the failing command and its output."""
    a = arch_mod.get(arch)
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    srcs = [Path(s).resolve() for s in sources]
    if not srcs:
        raise ValueError("compile_plugin: no sources")
    out = Path(out).resolve()
    cflags = list(cflags)
    base = list(a.plugin_cflags("zig"))
    if any(f.startswith("-g") and f != "-g0" for f in cflags):
        base.remove("-g0")    # zig cc strips on any -g0, wherever it stands
    flags = [*base, *(f"-I{Path(d).resolve()}" for d in include_dirs)]
    for k, v in (defines or {}).items():
        flags.append(f"-D{k}" if v is None else f"-D{k}={v}")
    flags += cflags
    cc = [*zig("cc", python=python), *flags]
    ld = [*zig("ld.lld", python=python), *base_ldflags(hash_style), *ldflags]

    def compile_cmd(i: int, obj: str, dep: str) -> list[str]:
        return [*cc, "-MD", "-MF", dep, "-c", str(srcs[i]), "-o", obj]

    # the key: every command, with placeholders for the temporary paths
    placeholders = [compile_cmd(i, f"<obj{i}>", f"<dep{i}>") for i in range(len(srcs))]
    key = _digest(json.dumps([placeholders, ld, version("ziglang")]))
    record = out.with_name(out.name + ".inputs.json")
    if _up_to_date(out, record, key):
        return out

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        inputs: set[Path] = set(srcs)
        objs = []
        for i, src in enumerate(srcs):
            obj, dep = tmp / f"{i}.o", tmp / f"{i}.d"
            run(compile_cmd(i, str(obj), str(dep)), f"compiling {src.name} for {a.name}")
            inputs.update(_depfile(dep))
            objs.append(str(obj))
        so = tmp / out.name
        run([*ld, *objs, "-o", str(so)], f"linking {out.name} for {a.name}")
        replace_file(str(so), str(out))
        _write_record(record, key, inputs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return _digest(path.read_bytes())
    except OSError:
        return None


def _depfile(path: Path) -> list[Path]:
    """The prerequisites of a make-style dependency file (none when missing:
    plain assembly has no preprocessor, hence no headers)."""
    try:
        text = path.read_text()
    except OSError:
        return []
    text = text.replace("\\\n", " ").replace("\\ ", "\0")
    _, _, deps = text.partition(": ")
    return [Path(d.replace("\0", " ")).resolve() for d in deps.split() if d]


def _up_to_date(out: Path, record: Path, key: str) -> bool:
    try:
        rec = json.loads(record.read_text())
    except (OSError, ValueError):
        return False
    if rec.get("key") != key or not out.is_file() or rec.get("out") != _file_digest(out):
        return False
    return all(_file_digest(Path(p)) == h for p, h in rec.get("inputs", {}).items())


def _write_record(record: Path, key: str, inputs: Iterable[Path]) -> None:
    rec = {"key": key, "out": _file_digest(record.with_name(record.name[:-len(".inputs.json")])),
           "inputs": {str(p): _file_digest(p) for p in sorted(inputs)},
           "python": sys.executable}
    tmp = record.with_name(f".{record.name}.{os.getpid()}")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    replace_file(str(tmp), str(record))
