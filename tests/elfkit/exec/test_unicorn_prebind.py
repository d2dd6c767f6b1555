"""The pre-bound copy of libunicorn (elfkit/exec/unicorn_prebind.py,
``unicorn_lib.prebound_path``): each symbol relocation of ``.rela.dyn`` that
deep binding resolves to the library itself is made relative, computed here
independently from pyelftools' view of the original; every other byte is the
original's.  The copy lives in elfkit's cache directory, only used when
private to the user, and never with ``LD_PRELOAD`` (interposition wanted)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from elfkit.exec import unicorn_lib
from elfkit.exec.unicorn_prebind import prebind

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine != "x86_64"
    or not hasattr(os, "RTLD_DEEPBIND"), reason="pre-binding is for x86_64 glibc hosts")


def _library() -> Path:
    path, _dirs = unicorn_lib.library_path()
    assert path is not None
    return Path(path)


def _expected(data: bytes) -> tuple[dict[int, tuple[int, int, int]], int]:
    """offset in the file of each .rela.dyn entry -> (r_offset, type, addend)
    as pre-binding leaves it, and how many change (pyelftools)."""
    elf = ELFFile(io.BytesIO(data))
    dynsym = elf.get_section_by_name(".dynsym")
    rela = elf.get_section_by_name(".rela.dyn")
    out, changed = {}, 0
    for i, r in enumerate(rela.iter_relocations()):
        kind, index, addend = r["r_info_type"], r["r_info_sym"], r["r_addend"]
        if kind in (1, 6) and index:                    # R_X86_64_64, GLOB_DAT
            sym = dynsym.get_symbol(index)
            shndx = sym["st_shndx"]
            if shndx not in ("SHN_UNDEF", "SHN_ABS", "SHN_COMMON") and \
                    sym["st_info"]["type"] not in ("STT_TLS", "STT_LOOS", "STT_GNU_IFUNC"):
                value = sym["st_value"]
                kind, addend = 8, value + addend if kind == 1 else value
                changed += 1
        out[rela["sh_offset"] + i * 24] = (r["r_offset"], kind, addend)
    return out, changed


def test_prebind_makes_the_libraries_own_symbol_relocations_relative():
    data = _library().read_bytes()
    made = prebind(data)
    assert made is not None
    copy, count = made
    want, changed = _expected(data)
    assert count == changed > 10_000
    got, _ = _expected(copy)       # (its relative entries are left alone by _expected)
    assert got == want
    rela = ELFFile(io.BytesIO(data)).get_section_by_name(".rela.dyn")
    lo, hi = rela["sh_offset"], rela["sh_offset"] + rela["sh_size"]
    assert len(copy) == len(data) and copy[:lo] == data[:lo] and copy[hi:] == data[hi:]


def test_prebind_refuses_what_is_not_an_x86_64_shared_library():
    data = _library().read_bytes()
    assert prebind(b"not an ELF file") is None
    assert prebind(data[:20000]) is None                   # tables beyond the end
    aarch64 = bytearray(data)
    aarch64[18:20] = (183).to_bytes(2, "little")           # EM_AARCH64
    assert prebind(bytes(aarch64)) is None


_CHILD = textwrap.dedent("""
    import os, sys
    from elfkit.exec import unicorn_lib
    from elfkit.arch import get
    from elfkit.exec.emulated import EmulatedMachine
    m = EmulatedMachine(get("riscv64"))
    addr = m.alloc(16)
    m.write(addr, b"0123456789abcdef")
    assert m.read(addr, 16) == b"0123456789abcdef"
    m.close()
    maps = open("/proc/self/maps").read()
    print(sorted({line.split()[-1] for line in maps.splitlines() if "libunicorn" in line}))
""")


def _run(env: dict[str, str]) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_BIND_NOW")}
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         env={**base, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    return eval(out.stdout)


def test_a_process_maps_the_cached_copy_made_once(tmp_path):
    cache = tmp_path / "cache"
    env = {"ELFKIT_CACHE_DIR": str(cache)}
    (mapped,) = _run(env)
    (copy,) = cache.glob("libunicorn-*-prebound*.so")
    assert mapped == str(copy)
    assert copy.read_bytes() == prebind(_library().read_bytes())[0]
    assert copy.stat().st_mode & 0o777 == 0o600
    made = copy.stat().st_mtime_ns
    assert _run(env) == [str(copy)] and copy.stat().st_mtime_ns == made


def test_the_original_is_mapped_when_the_copy_would_differ_or_is_not_trusted(tmp_path):
    original = os.path.realpath(_library())
    # preloaded: interposition wanted (no deep binding), so nothing is pre-bound
    preload = {"ELFKIT_CACHE_DIR": str(tmp_path / "a"),
               "LD_PRELOAD": "libm.so.6"}
    assert _run(preload) == [original]
    assert not (tmp_path / "a").exists() or not list((tmp_path / "a").glob("libunicorn-*"))
    # a cache directory others may write to: its files are never loaded
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    assert _run({"ELFKIT_CACHE_DIR": str(shared)}) == [original]
    assert list(shared.glob("libunicorn-*")) == []          # nor is a copy written there
    # caches turned off: nothing made, the original opened
    off = {"ELFKIT_CACHE_DIR": str(tmp_path / "off"), "ELFKIT_NO_CACHE": "1"}
    assert _run(off) == [original]
    assert not (tmp_path / "off").exists() or not list((tmp_path / "off").glob("libunicorn-*"))


def test_a_planted_copy_that_is_not_private_is_made_again(tmp_path):
    cache = tmp_path / "cache"
    _run({"ELFKIT_CACHE_DIR": str(cache)})
    (copy,) = cache.glob("libunicorn-*-prebound*.so")
    good = copy.read_bytes()
    copy.write_bytes(b"\0" * len(good))
    copy.chmod(0o666)                   # anyone may have written it
    assert _run({"ELFKIT_CACHE_DIR": str(cache)}) == [str(copy)]
    assert copy.read_bytes() == good and copy.stat().st_mode & 0o777 == 0o600


def test_a_reinstalled_library_replaces_its_stale_copy(tmp_path):
    cache = tmp_path / "cache"
    _run({"ELFKIT_CACHE_DIR": str(cache)})
    (copy,) = cache.glob("libunicorn-*-prebound*.so")
    prefix = copy.name.split("-")[:2]
    stale = cache / "-".join([*prefix, "1-2-3-prebound1.so"])     # an older install's
    other = cache / "libunicorn-00000000-1-2-3-prebound1.so"        # another path's
    for f in (stale, other):
        f.write_bytes(b"old")
        f.chmod(0o600)
    copy.unlink()
    assert _run({"ELFKIT_CACHE_DIR": str(cache)}) == [str(copy)]
    assert copy.is_file() and not stale.exists() and other.read_bytes() == b"old"
