"""`elfkit inspect`: what the loader sees, checked against pyelftools."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]


def _run(*args):
    return subprocess.run([sys.executable, "-m", "elfkit", *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("arch", ARCHES)
def test_inspect_json_matches_pyelftools(plugins, arch):
    path = plugins.path("imports", arch)
    r = _run("inspect", "--json", str(path))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    assert info["arch"] == arch
    dynsym = elf.get_section_by_name(".dynsym")
    want_imports = {s.name: s["st_info"]["bind"] == "STB_WEAK" for s in dynsym.iter_symbols()
                    if s.name and s["st_shndx"] == "SHN_UNDEF"}
    assert {i["name"]: i["weak"] for i in info["imports"]} == want_imports
    want_exports = {s.name for s in dynsym.iter_symbols()
                    if s.name and s["st_shndx"] != "SHN_UNDEF"
                    and s["st_other"]["visibility"] in ("STV_DEFAULT", "STV_PROTECTED")}
    assert {e["name"] for e in info["exports"]} == want_exports
    n_relocs = sum(sec.num_relocations() for sec in elf.iter_sections()
                   if sec["sh_type"] in ("SHT_RELA", "SHT_REL") and sec["sh_flags"] & 2)
    assert sum(info["relocations"].values()) == n_relocs
    assert len([s for s in info["segments"] if s["type"] == "LOAD"]) == \
        len([s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"])
    assert info["loadable"]


def test_inspect_text_and_errors(plugins, tmp_path):
    r = _run("inspect", str(plugins.path("relocs", "x86_64")))
    assert r.returncode == 0
    assert "R_X86_64_RELATIVE" in r.stdout and "loadable: yes" in r.stdout
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF" + b"\x00" * 10)
    r = _run("inspect", str(bad))
    assert r.returncode == 1 and "cannot be loaded" in r.stdout
    r = _run("inspect", str(tmp_path / "missing.so"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_inspect_fatelf_slice(plugins, tmp_path):
    sos = tmp_path / "k.sos"
    r = _run("fatelf", "pack", "-o", str(sos), str(plugins.path("kernels", "x86_64")),
             str(plugins.path("kernels", "riscv32")))
    assert r.returncode == 0, r.stderr
    r = _run("inspect", "--json", "--arch", "riscv32", str(sos))
    assert json.loads(r.stdout)["arch"] == "riscv32"
    r = _run("inspect", "--json", str(sos))
    assert json.loads(r.stdout)["arch"] == "x86_64"


def test_import_elfkit_is_cheap():
    code = "import sys, elfkit; print(sorted(m for m in ('lief','unicorn','capstone','numpy') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "[]"


def test_help_and_version():
    for prog in ("elfkit", "vmrt"):
        r = subprocess.run([sys.executable, "-m", prog, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "usage" in r.stdout.lower()
        r = subprocess.run([sys.executable, "-m", prog, "--version"], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip()


@pytest.mark.parametrize("arch", ["x86_64", "arm", "riscv32"])
def test_inspect_sections_match_pyelftools(plugins, arch):
    path = plugins.path("relocs", arch)
    r = _run("inspect", "--json", "--sections", str(path))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    elf = ELFFile(io.BytesIO(path.read_bytes()))
    want = {s.name: (s["sh_addr"], s["sh_size"]) for s in elf.iter_sections() if s.name}
    got = {s["name"]: (s["address"], s["size"]) for s in info["sections"] if s["name"]}
    assert got == want
    symtab = elf.get_section_by_name(".symtab")
    if symtab is not None:
        want_syms = {s.name for s in symtab.iter_symbols() if s.name}
        assert {s["name"] for s in info["symtab"]} == want_syms


def test_inspect_sections_with_names_that_are_not_text(plugins, tmp_path):
    """cli fuzzer finding (2026-11-24): a section name that is not UTF-8
    (LIEF returns bytes) crashed `inspect --sections` with a TypeError; names
    are shown escaped, never as control characters."""
    data = bytearray(plugins.data("relocs", "x86_64"))
    elf = ELFFile(io.BytesIO(bytes(data)))
    shstr = elf.get_section(elf["e_shstrndx"])["sh_offset"]
    names = {s.name: s["sh_name"] for s in elf.iter_sections()}
    data[shstr + names[".text"] + 1] = 0xFF              # ".\xffext"
    data[shstr + names[".data"] + 1] = 0x1B              # ".\x1bata"
    bad = tmp_path / "names.so"
    bad.write_bytes(bytes(data))
    r = _run("inspect", "--sections", str(bad))
    assert r.returncode == 0, r.stderr
    assert ".\\xffext" in r.stdout and ".\\x1bata" in r.stdout and "\x1b" not in r.stdout
    r = _run("inspect", "--sections", "--json", str(bad))
    assert r.returncode == 0, r.stderr
    shown = {s["name"] for s in json.loads(r.stdout)["sections"]}
    assert {".\\xffext", ".\\x1bata"} <= shown
