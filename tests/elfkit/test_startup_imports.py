"""What ``elfkit`` commands import (their start-up cost; bench row 20 times it):
``inspect`` of a shared object loads nothing, so no ctypes, import resolution,
machine code, json or typing; ``--help`` printed again comes from elfkit's cache
without argparse or the command families; ``toolchain`` needs no pathlib or
shlex, and prints again from elfkit's cache; an emulated ``run`` does not import the guest profiler's writers (xml.sax,
which imports urllib.request, http.client, email and ssl), json or tempfile, nor
socket, signal or importlib.util, nor the host's architecture description.
Asserts module sets (tests/startup_imports.py), never times."""
from __future__ import annotations

from elfkit.tools import ROOT
from tests.startup_imports import heavy, imports_of

#: never imported by a command that does not need them
LIBRARIES = ("numpy", "unicorn", "capstone", "lief", "elftools", "dataclasses", "typing",
             "argparse", "pathlib")


def test_inspect_of_a_shared_object_loads_nothing(plugins):
    so = str(plugins.path("kernels", "x86_64"))
    out, imported = imports_of("elfkit", "inspect", so)
    assert out.startswith(f"{so}: x86_64 ELF64")
    assert heavy(imported, LIBRARIES + (
        "ctypes", "json", "weakref", "elfkit.exec", "elfkit.signature", "elfkit.loader.imports",
        "elfkit.loader.import_report", "elfkit.loader.objlayout", "elfkit.loader.objparse",
        "elfkit.module")) == []
    _, imported = imports_of("elfkit", "inspect", "--json", so)
    assert "json" in imported and "ctypes" not in imported


def test_help_printed_again_comes_from_the_cache(tmp_path):
    env = {"ELFKIT_CACHE_DIR": str(tmp_path), "COLUMNS": "100"}
    families = [f"{c.module}" for c in ROOT.commands]         # Lazy: module names
    for words in ([], ["fatelf"], ["fatelf", "list"], ["run"], ["toolchain", "flags"]):
        first, imported = imports_of("elfkit", *words, "--help", env=env)
        assert "argparse" in imported and first.startswith(
            "usage: elfkit" + "".join(f" {w}" for w in words))
        again, imported = imports_of("elfkit", *words, "--help", env=env)
        assert again == first
        assert heavy(imported, ("argparse", "gettext", "locale", *families)) == []
        assert heavy(imported, LIBRARIES) == []
    # another width is another text: rendered by argparse again
    narrow, imported = imports_of("elfkit", "--help", env={**env, "COLUMNS": "50"})
    assert "argparse" in imported and narrow != imports_of("elfkit", "--help", env=env)[0]
    # an unknown command's help is an error, as before, and is not kept
    for _ in range(2):
        _, imported = imports_of("elfkit", "bogus", "--help", env=env, code=2)
        assert "argparse" in imported


def test_toolchain_imports_no_pathlib_or_shlex(tmp_path):
    env = {"ELFKIT_CACHE_DIR": str(tmp_path)}
    for words in (("flags", "--arch", "riscv64"), ("flags", "--arch", "rv64", "--format",
                                                   "lines"), ("cmake",)):
        out, imported = imports_of("elfkit", "toolchain", *words, env=env)
        assert "riscv64" in out
        assert heavy(imported, LIBRARIES + ("shlex", "urllib")) == []
        assert "elfkit.arch" in imported
        # printed again: kept in elfkit's cache with the elfkit sources it came from
        again, imported = imports_of("elfkit", "toolchain", *words, env=env)
        assert again == out and heavy(imported, ("elfkit.arch", "elfkit.toolchain")) == []
        assert imports_of("elfkit", "toolchain", *words,
                          env={**env, "ELFKIT_NO_CACHE": "1"})[0] == out


def test_emulated_run_imports_no_profile_writers(plugins):
    so = str(plugins.path("kernels", "riscv64"))
    out, imported = imports_of("elfkit", "run", "--arch", "riscv64", so, "--call", "add_i32",
                               "--arg", "2", "--arg", "3", "--sig", "i32(i32,i32)")
    assert out.split() == ["5"]
    assert "elfkit.exec.emulated" in imported
    assert heavy(imported, ("xml", "urllib", "http", "email", "ssl", "json", "tempfile",
                            "typing", "dataclasses", "numpy", "argparse", "pathlib")) == []
    # the watchdog's signal channel and the library's lookup use the C modules
    # (_socket, _signal) and sys.meta_path: none of their Python wrappers
    assert heavy(imported, ("socket", "selectors", "signal", "importlib", "queue",
                            "warnings")) == []
    # the guest profiler and the FatELF reader load only for a profile or a .sos
    assert [m for m in imported if m in ("elfkit.exec.emulated._profiler", "elfkit.exec.disasm",
                                         "elfkit.fatelf.reader")] == []
    # a foreign plugin is told from the host's by name: the host's architecture
    # description (x86_64's records and tables) is not imported for it
    assert "elfkit.arch.riscv64" in imported
    assert [m for m in imported if m.startswith("elfkit.arch.")
            and m not in ("elfkit.arch.riscv64", "elfkit.arch._riscv", "elfkit.arch._base")] == []


def test_fatelf_by_arch_name_needs_no_arch_descriptions(standalone_sos, tmp_path):
    out = tmp_path / "two.sos"
    _, imported = imports_of("elfkit", "fatelf", "remove", str(standalone_sos), "--arch",
                             "riscv64", "-o", str(out))
    assert heavy(imported, LIBRARIES + ("elfkit.arch", "elfkit.loader", "elfkit.exec")) == []
    assert "contextlib" not in imported     # the writer closes its inputs itself
    # headers by int.to_bytes, small slices copied (no reflink attempt), annotations unevaluated
    assert heavy(imported, ("struct", "_struct", "fcntl", "errno", "collections.abc",
                            "elfkit.fatelf.files")) == []
    listing, _ = imports_of("elfkit", "fatelf", "list", str(out))
    assert "riscv64" not in listing and "aarch64" in listing
    # the host's slice: its name and machine from elfkit._support.machines
    _, imported = imports_of("elfkit", "fatelf", "select", str(standalone_sos), "-o",
                             str(tmp_path / "host.so"))
    assert heavy(imported, LIBRARIES + ("elfkit.arch", "elfkit.loader", "elfkit.exec")) == []
    assert heavy(imported, ("struct", "_struct", "fcntl", "errno", "collections.abc",
                            "elfkit.fatelf.files")) == []
    # a small output written over an existing one: os.replace, no ctypes for the swap
    _, imported = imports_of("elfkit", "fatelf", "select", str(standalone_sos), "-o",
                             str(tmp_path / "host.so"))
    assert "ctypes" not in imported
    # an alias still resolves (through elfkit.arch)
    _, imported = imports_of("elfkit", "fatelf", "extract", str(standalone_sos), "--arch",
                             "arm64", "-o", str(tmp_path / "a.so"))
    assert "elfkit.arch" in imported


def _record_threshold(monkeypatch, owner, name: str, seen: list) -> None:
    """Wrap ``owner.name``: each call appends the collector's thresholds to ``seen``."""
    import gc
    real = getattr(owner, name)

    def watching(*args, **kwargs):
        seen.append(gc.get_threshold())
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, watching)


def test_run_collects_young_objects_less_often_while_it_runs(plugins, capsys, monkeypatch):
    """``run`` raises the young-generation threshold while it loads and calls
    (start-up allocates many long-lived objects), as vmrt's commands do, and
    puts it back after."""
    import gc

    import elfkit
    from elfkit.tools import main
    from elfkit.tools import run as run_tool
    seen: list[tuple[int, ...]] = []
    _record_threshold(monkeypatch, run_tool, "_run_interruptibly", seen)
    _record_threshold(monkeypatch, elfkit, "load", seen)
    before = gc.get_threshold()
    so = str(plugins.path("kernels", "riscv64"))
    assert main(["run", "--arch", "riscv64", so, "--call", "add_i32", "--arg", "2", "--arg", "3",
                 "--sig", "i32(i32,i32)"]) == 0
    assert capsys.readouterr().out.split() == ["5"]
    raised = (max(before[0], run_tool.GEN0_THRESHOLD), *before[1:])
    assert seen == [raised, raised]
    assert gc.get_threshold() == before


def test_every_command_collects_young_objects_less_often_while_it_runs(monkeypatch, capsys):
    """The ``elfkit`` command line raises the young-generation threshold while
    any command runs (as ``run`` and vmrt's commands do) and puts it back after."""
    import gc

    import elfkit.tools as tools
    seen: list[tuple[int, ...]] = []
    _record_threshold(monkeypatch, tools, "parse", seen)
    before = gc.get_threshold()
    assert tools.main(["toolchain", "flags", "--arch", "riscv64"]) == 0
    assert "riscv64" in capsys.readouterr().out
    assert seen == [(max(before[0], tools.GEN0_THRESHOLD), *before[1:])]
    assert gc.get_threshold() == before
