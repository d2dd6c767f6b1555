"""Relocatable objects (``.o``) for the object-loader tests: the catalogue's
plugin sources (``plugin_src/``) and the small sources here, compiled with
``python -m ziglang cc -c`` for one CPU (or by the host's gcc for the
host's), position independent or not, at one optimisation level.  Cached
under ``build/objects/<hash>/`` keyed by the source, the compiler, the flags
and its version, so a rerun does not recompile."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import elfkit
from elfkit.arch import PLUGIN_CFLAGS

REPO = Path(__file__).resolve().parents[4]
PLUGIN_SRC = REPO / "plugin_src"
HERE = Path(__file__).resolve().parent
CACHE = REPO / "build" / "objects"

#: (-f option, -O level) of the variants every catalogue object is built in
VARIANTS = (("-fPIC", "-O2"), ("-fPIC", "-O0"), ("-fno-PIC", "-O2"), ("-fno-PIC", "-O0"))


def source(name: str) -> Path:
    """A source of plugin_src/ or of this directory."""
    p = PLUGIN_SRC / name
    return p if p.exists() else HERE / name


def build_object(src: str, arch: str, pic: str = "-fPIC", opt: str = "-O2",
                 extra: tuple[str, ...] = ()) -> Path:
    """``src`` compiled with ``-c`` for ``arch`` (its plugin flags, with
    ``pic`` and ``opt`` instead of -fPIC -O2, then ``extra``)."""
    a = elfkit.arch.get(arch)
    base = [f for f in a.plugin_cflags("zig") if f not in ("-O2", "-fPIC")]
    assert len(base) == len(a.plugin_cflags("zig")) - 2 and "-O2" in PLUGIN_CFLAGS
    if "-g" in extra:       # zig cc keeps no DWARF when -g0 is anywhere on the line
        base.remove("-g0")
    flags = [*base, pic, opt, *extra, f"-I{PLUGIN_SRC}", f"-I{REPO / 'elfkit' / 'include'}"]
    return _cached([sys.executable, "-m", "ziglang", "cc"], flags, src, arch,
                   version("ziglang"))


def gcc_arch() -> str | None:
    """The CPU the host's gcc builds for (one of elfkit's), or None without gcc."""
    if shutil.which("gcc") is None:
        return None
    triple = subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True,
                            check=True, timeout=60).stdout.strip()
    try:
        return elfkit.arch.get(triple.split("-")[0]).name
    except elfkit.ElfkitError:
        return None


def build_gcc_object(src: str, pic: str = "-fPIC", opt: str = "-O2",
                     extra: tuple[str, ...] = ()) -> Path:
    """``src`` compiled with ``-c`` by the host's gcc (freestanding, hidden
    visibility, no stack protector: gcc's defaults on distributions that
    enable it would import ``__stack_chk_fail``)."""
    arch = gcc_arch()
    assert arch is not None, "no host gcc"
    flags = ["-ffreestanding", "-fvisibility=hidden", "-fno-stack-protector", pic, opt, *extra,
             f"-I{PLUGIN_SRC}", f"-I{REPO / 'elfkit' / 'include'}"]
    ver = subprocess.run(["gcc", "--version"], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return _cached(["gcc"], flags, src, f"{arch}.gcc", ver)


def _cached(cc: list[str], flags: list[str], src: str, tag: str, ver: str) -> Path:
    path = source(src)
    key = hashlib.sha256("\0".join([path.read_text(), *flags, ver])
                         .encode()).hexdigest()[:16]
    out = CACHE / key / f"{path.stem}.{tag}.o"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
        subprocess.run([*cc, *flags, "-c", str(path), "-o", str(tmp)], check=True,
                       capture_output=True, timeout=600)
        tmp.replace(out)        # concurrent sessions never see half a file
    return out


def backend(arch: str) -> str:
    """native for the host's CPU, else emulated."""
    host = elfkit.arch.host()
    return "native" if host is not None and host.name == arch else "emulated"
