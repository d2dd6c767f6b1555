"""elfkit.toolchain, the one plugin builder, and the CMake modules that read
their flags from the same place (elfkit/arch/).

* the flags CMake uses are the ``Arch`` fields: a tiny CMake project prints
  what ``elfkit_arch_cflags()`` returns for every arch and flavor;
* ``compile_plugin`` and ``elfkit_add_plugin`` build byte-identical plugins;
* ``compile_plugin`` reuses its output until a source, a header it includes
  or a flag changes, and names the failing command;
* ``elfkit_add_plugin`` per-arch targets do not clash with a user's
  ``<name>_<arch>`` target.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import elfkit.arch as A
from elfkit.errors import ToolchainError
from elfkit.toolchain import cflags, compile_plugin, ldflags
from tests.plugins import ARCHES, CMAKE_DIR, INCLUDE_DIR, REPO

CMAKE_MODULES = CMAKE_DIR


def _cmake() -> tuple[str, str]:
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if not (cmake and ninja):
        pytest.skip("cmake/ninja not on PATH")
    return cmake, ninja


def _configure(src: Path, bdir: Path, *defs: str, toolchain: str = "multiarch.cmake"):
    cmake, ninja = _cmake()
    return subprocess.run(
        [cmake, "-G", "Ninja", "-S", str(src), "-B", str(bdir), f"-DCMAKE_MAKE_PROGRAM={ninja}",
         f"-DCMAKE_TOOLCHAIN_FILE={CMAKE_MODULES / toolchain}",
         f"-DELFKIT_PYTHON={sys.executable}", "-DELFKIT_PACK=OFF", *defs],
        capture_output=True, text=True)


# --------------------------------------------------------------------------
# One source of flags


def test_flags_command_prints_the_arch_fields():
    for a in A.ARCHES.values():
        for flavor in A.FLAVORS:
            r = subprocess.run([sys.executable, "-m", "elfkit", "toolchain", "flags",
                                "--arch", a.name, "--flavor", flavor],
                               capture_output=True, text=True, check=True)
            target = (("-target", f"{a.zig_target}-freestanding-none", *a.zig_cflags)
                      if flavor == "zig" else (f"--target={a.clang_target}", *a.clang_cflags))
            assert r.stdout.strip().split(";") == [*target, *A.PLUGIN_CFLAGS]
            assert tuple(r.stdout.strip().split(";")) == cflags(a.name, flavor)
    r = subprocess.run([sys.executable, "-m", "elfkit", "toolchain", "flags", "--link",
                        "--hash-style", "gnu", "--format", "lines"],
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == [*A.PLUGIN_LDFLAGS, "--hash-style=gnu"] == list(ldflags("gnu"))
    r = subprocess.run([sys.executable, "-m", "elfkit", "toolchain", "flags", "--arch", "mips"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "mips" in r.stderr


def test_arm_turns_unwind_tables_off_in_both_flavors():
    # without them clang references __aeabi_unwind_cpp_pr0, which no host provides
    for flavor in A.FLAVORS:
        assert {"-fno-unwind-tables", "-fno-asynchronous-unwind-tables"} <= set(
            cflags("arm", flavor))


def test_cmake_reads_the_same_flags(tmp_path):
    """ElfkitArchs.cmake's elfkit_arch_cflags() returns Arch.plugin_cflags()
    for every arch and flavor, and the per-arch toolchain file compiles with
    them."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(f"""\
cmake_minimum_required(VERSION 3.20)
project(flags LANGUAGES NONE)
set(ELFKIT_PYTHON "{sys.executable}")
include("{CMAKE_MODULES.as_posix()}/ElfkitArchs.cmake")
elfkit_all_archs(archs)
set(out "{{}}")
string(JSON out SET "${{out}}" "archs" "\\"${{archs}}\\"")
foreach(arch IN LISTS archs)
  foreach(flavor zig clang)
    elfkit_arch_cflags(${{arch}} f FLAVOR ${{flavor}})
    string(JSON out SET "${{out}}" "${{flavor}}_${{arch}}" "\\"${{f}}\\"")
  endforeach()
  elfkit_arch_lld_emulation(${{arch}} m)
  string(JSON out SET "${{out}}" "lld_${{arch}}" "\\"${{m}}\\"")
endforeach()
file(WRITE "${{CMAKE_BINARY_DIR}}/flags.json" "${{out}}")
""")
    cmake, _ = _cmake()
    r = subprocess.run([cmake, "-S", str(src), "-B", str(tmp_path / "b")],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads((tmp_path / "b" / "flags.json").read_text())
    assert got["archs"].split(";") == list(A.ARCHES) == list(ARCHES)
    for a in A.ARCHES.values():
        for flavor in A.FLAVORS:
            assert tuple(got[f"{flavor}_{a.name}"].split(";")) == a.plugin_cflags(flavor)
        assert got[f"lld_{a.name}"] == a.lld_emulation

    # a per-arch toolchain file puts the same flags into CMAKE_C_FLAGS
    r = _configure(REPO / "plugin_src", tmp_path / "arm", toolchain="arm.cmake")
    assert r.returncode == 0, r.stdout + r.stderr
    cache = (tmp_path / "arm" / "CMakeCache.txt").read_text()
    line = next(ln for ln in cache.splitlines() if ln.startswith("CMAKE_C_FLAGS:"))
    assert line.split("=", 1)[1].split() == list(cflags("arm"))


@pytest.mark.parametrize("arch", ARCHES)
def test_compile_plugin_matches_the_cmake_build(plugins, tmp_path, arch):
    """The Python builder and elfkit_add_plugin() produce the same bytes."""
    out = compile_plugin(REPO / "plugin_src" / "standalone_plugin.c", arch,
                         tmp_path / arch / "standalone.so",
                         include_dirs=[INCLUDE_DIR], ldflags=["--no-undefined"])
    assert out.read_bytes() == plugins.path("standalone", arch).read_bytes()


# --------------------------------------------------------------------------
# compile_plugin


def test_compile_plugin_reuses_and_rebuilds(tmp_path):
    (tmp_path / "v.h").write_text("#define VALUE 1\n")
    src = tmp_path / "p.c"
    src.write_text('#include "v.h"\n__attribute__((visibility("default"))) int value(void) '
                   "{ return VALUE + OFFSET; }\n")
    out = tmp_path / "out" / "p.so"

    def build(**kw):
        return compile_plugin(src, "aarch64", out, include_dirs=[tmp_path],
                              ldflags=["--no-undefined"], **kw)

    def value_insns() -> bytes:
        with open(out, "rb") as f:
            elf = ELFFile(f)
            sym = elf.get_section_by_name(".dynsym").get_symbol_by_name("value")[0]
            text = elf.get_section_by_name(".text")
            off = sym["st_value"] - text["sh_addr"]
            return text.data()[off:off + 8]

    build(defines={"OFFSET": 0})
    first = out.stat().st_mtime_ns, value_insns()
    build(defines={"OFFSET": 0})
    assert (out.stat().st_mtime_ns, value_insns()) == first        # reused
    (tmp_path / "v.h").write_text("#define VALUE 2\n")                # a header changes
    build(defines={"OFFSET": 0})
    second = value_insns()
    assert second != first[1]
    build(defines={"OFFSET": 5})                                     # a flag changes
    assert value_insns() not in (first[1], second)
    with open(out, "rb") as f:
        elf = ELFFile(f)
        assert elf["e_machine"] == "EM_AARCH64"
        assert elf.get_section_by_name(".hash") is not None          # sysv by default
        assert not any(s.name.startswith(".debug") for s in elf.iter_sections())


def test_compile_plugin_names_the_failure(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int broken(void) { return }\n")
    with pytest.raises(ToolchainError) as e:
        compile_plugin(src, "riscv32", tmp_path / "bad.so")
    msg = str(e.value)
    assert "compiling bad.c for riscv32 failed" in msg and "error" in msg
    assert not (tmp_path / "bad.so").exists()
    src.write_text("int needs(void);\nint f(void) { return needs(); }\n")
    with pytest.raises(ToolchainError, match=r"linking bad\.so for riscv32 failed(.|\n)*needs"):
        compile_plugin(src, "riscv32", tmp_path / "bad.so", ldflags=["--no-undefined"])
    with pytest.raises(ToolchainError, match="hash style"):
        compile_plugin(src, "riscv32", tmp_path / "bad.so", hash_style="fast")


# --------------------------------------------------------------------------
# elfkit_add_plugin target names


def _clash_project(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "foo.c").write_text('__attribute__((visibility("default"))) int foo(void) '
                               "{ return 7; }\n")
    (src / "CMakeLists.txt").write_text(f"""\
cmake_minimum_required(VERSION 3.20)
project(clash LANGUAGES C)
list(APPEND CMAKE_MODULE_PATH "{CMAKE_MODULES.as_posix()}")
include(ElfkitPlugin)
# the user's own targets, named like elfkit_add_plugin's old per-arch targets
add_custom_target(foo_x86_64 ALL COMMAND "${{CMAKE_COMMAND}}" -E touch "${{CMAKE_BINARY_DIR}}/mine")
add_custom_target(foo_riscv32_objects)
elfkit_add_plugin(foo SOURCES foo.c ARCHS x86_64 riscv32 LINK_FLAGS --no-undefined)
get_target_property(t foo ELFKIT_PLUGIN_TARGETS)
file(WRITE "${{CMAKE_BINARY_DIR}}/targets.txt" "${{t}}")
""")
    return src


def test_per_arch_targets_do_not_clash_with_user_targets(tmp_path):
    src = _clash_project(tmp_path)
    bdir = tmp_path / "b"
    r = _configure(src, bdir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (bdir / "targets.txt").read_text() == "elfkit_foo_x86_64;elfkit_foo_riscv32"
    cmake, _ = _cmake()
    r = subprocess.run([cmake, "--build", str(bdir)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (bdir / "mine").is_file()
    for arch in ("x86_64", "riscv32"):
        assert (bdir / "plugins" / arch / "foo.so").is_file()
    # one per-arch target builds one arch
    (bdir / "plugins" / "riscv32" / "foo.so").unlink()
    r = subprocess.run([cmake, "--build", str(bdir), "--target", "elfkit_foo_riscv32"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and (bdir / "plugins" / "riscv32" / "foo.so").is_file()

    # the prefix is a cache variable; a name that is taken anyway is a clear error
    r = _configure(src, tmp_path / "b2", "-DELFKIT_PLUGIN_TARGET_PREFIX=")
    assert r.returncode != 0
    assert "per-arch target name 'foo_x86_64' is taken" in r.stderr
    assert "ELFKIT_PLUGIN_TARGET_PREFIX" in r.stderr
    r = _configure(src, tmp_path / "b3", "-DELFKIT_PLUGIN_TARGET_PREFIX=p_")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "b3" / "targets.txt").read_text() == "p_foo_x86_64;p_foo_riscv32"


# --------------------------------------------------------------------------
# find_package(elfkit CONFIG): the package in elfkit/share/cmake/elfkit
# (tests/elfkit/toolchain/test_wheel.py uses it from an installed wheel)

def _package_project(tmp_path: Path, body: str) -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "foo.c").write_text('#include "elfkit_plugin.h"\n'
                               "ELFKIT_PLUGIN_EXPORT int foo(void) { return 7; }\n")
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\n" + body)
    return src


def test_find_package_after_project_needs_the_toolchain_file(tmp_path):
    body = """\
project(after LANGUAGES C)
find_package(elfkit CONFIG REQUIRED)
elfkit_add_plugin(foo SOURCES foo.c ARCHS riscv32)
"""
    src = _package_project(tmp_path, body)
    r = _configure(src, tmp_path / "ok", f"-Delfkit_DIR={CMAKE_DIR}")
    assert r.returncode == 0, r.stdout + r.stderr
    cmake, _ = _cmake()
    r = subprocess.run([cmake, "--build", str(tmp_path / "ok")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "ok" / "plugins" / "riscv32" / "foo.so").is_file()

    # the host compiler cannot build plugins (unless it is a clang): the error says what to do
    host_cc = shutil.which("gcc")
    if host_cc:
        r = subprocess.run([cmake, "-S", str(src), "-B", str(tmp_path / "gcc"),
                            f"-DCMAKE_C_COMPILER={host_cc}", f"-Delfkit_DIR={CMAKE_DIR}"],
                           capture_output=True, text=True)
        assert r.returncode != 0
        assert "plugins need clang" in r.stderr and "before project()" in r.stderr
        assert f"{CMAKE_DIR.as_posix()}/multiarch.cmake" in " ".join(r.stderr.split())


# 0.x: a request naming a minor version wants that one (0.0.1 is not met by 0.1.0)
@pytest.mark.parametrize("request_version,found", [("0.1", True), ("0", True), ("0.1.0", True),
                                                   ("0.0.1", False), ("0.2", False),
                                                   ("1.0", False)])
def test_find_package_version_check(tmp_path, request_version, found):
    from elfkit._version import __version__
    assert __version__.startswith("0.1."), "update the cases for the new version"
    src = _package_project(tmp_path, f"""\
find_package(elfkit {request_version} CONFIG QUIET NO_DEFAULT_PATH PATHS "{CMAKE_DIR.as_posix()}")
project(v LANGUAGES NONE)
file(WRITE "${{CMAKE_BINARY_DIR}}/found.txt" "${{elfkit_FOUND}};${{elfkit_VERSION}}")
""")
    cmake, _ = _cmake()
    r = subprocess.run([cmake, "-S", str(src), "-B", str(tmp_path / "b")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    got = (tmp_path / "b" / "found.txt").read_text().split(";")
    assert (got[0] == "1", got[1]) == (found, __version__ if found else "")
