"""The dispatch functions of a natively loaded program, named for gdb and perf.

``elementwise.mlir`` is compiled for x86_64 twice, with IREE's default
debug symbols and with ``--iree-llvmcpu-debug-symbols=false`` (the library
then has no DWARF: only ``iree_hal_executable_library_query`` is named),
dumping the dispatch libraries; they are checked to be the very bytes the
``.vmfb`` embeds.  The names expected are the DWARF subprograms of the
debug build (pyelftools), each also listed by ``iree-dump-module``; the
perf map of a child running the program must hold exactly those, at the
DWARF addresses and sizes (debug build) or tiling the code segment (no
DWARF).  Real gdb then breaks in a dispatch function by name in the build
without DWARF, where nothing else names it.
"""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit.exec import jit_debug
from tests.elfkit.exec.debug_testutil import dwarf_functions, host_gdb
from tests.vmrt.hal.hal_testutil import PROGRAMS
from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, require_tool

pytestmark = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                                reason="native dispatch runs on an x86_64 host")

QUERY = "iree_hal_executable_library_query"
HOST = """\
import os, sys
import numpy as np
import vmrt
prog = vmrt.load(sys.argv[1])
a = np.arange(8, dtype=np.float32)
print("ADD", prog.add(a, np.full(8, 2, np.float32)).tolist(), flush=True)
m = np.arange(16, dtype=np.int32).reshape(4, 4)
prod, diff = prog.iops(m, np.full((4, 4), 3, np.int32))
print("IOPS", int(prod.sum()), int(diff.sum()), flush=True)
print("PID", os.getpid(), flush=True)
prog.close()
"""


class Build:
    def __init__(self, vmfb: Path, library: Path):
        self.vmfb, self.library = vmfb, library


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Build]:
    exe = require_tool("iree-compile", "iree-base-compiler")
    out = {}
    for name, extra in (("debug", []), ("bare", ["--iree-llvmcpu-debug-symbols=false"])):
        d = tmp_path_factory.mktemp(name)
        proc = subprocess.run(
            [exe, str(PROGRAMS / "elementwise.mlir"), "--iree-hal-target-device=local",
             "--iree-hal-local-target-device-backends=llvm-cpu", *IREE_TARGET_FLAGS["x86_64"],
             *extra, f"--iree-hal-dump-executable-binaries-to={d / 'bin'}",
             "-o", str(d / "elementwise.vmfb")], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        (lib,) = sorted((d / "bin").glob("*_embedded_elf_x86_64.so"))
        assert lib.read_bytes() in (d / "elementwise.vmfb").read_bytes()
        out[name] = Build(d / "elementwise.vmfb", lib)
    return out


def _elf(path: Path) -> ELFFile:
    return ELFFile(io.BytesIO(path.read_bytes()))


def _query_value(lib: Path) -> int:
    dynsym = _elf(lib).get_section_by_name(".dynsym")
    return dynsym.get_symbol_by_name(QUERY)[0]["st_value"]


def _perf_map(vmfb: Path) -> tuple[str, list[tuple[int, int, str]]]:
    env = {**os.environ, "ELFKIT_PERF_MAP": "1",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-c", HOST, str(vmfb)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    pid = int(re.search(r"PID (\d+)", proc.stdout).group(1))
    mapfile = Path(f"/tmp/perf-{pid}.map")
    try:
        text = mapfile.read_text()
    finally:
        mapfile.unlink(missing_ok=True)
    lines = [(int(a, 16), int(s, 16), n) for a, s, n in (ln.split(" ", 2)
                                                        for ln in text.splitlines())]
    return proc.stdout, lines


def test_dispatch_names_are_the_programs(builds):
    names = dwarf_functions(builds["debug"].library)
    assert {n.split("_dispatch_")[0] for n in names} == {"add", "mul_add", "iops", "with_const"}
    dump = subprocess.run([require_tool("iree-dump-module", "iree-base-compiler"),
                           str(builds["debug"].vmfb)], capture_output=True, text=True,
                          timeout=120).stdout
    for n in names:                     # the listing cuts strings at 32 characters
        assert f"`{n[:32]}" in dump, n


def test_perf_map_names_dispatch_functions_with_dwarf_sizes(builds):
    lib = builds["debug"].library
    out, lines = _perf_map(builds["debug"].vmfb)
    assert "ADD [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]" in out
    query = [a for a, _s, n in lines if n == QUERY]
    assert len(query) == 1, lines
    base = query[0] - _query_value(lib)
    want = {(base + lo, size, n) for n, (lo, size) in dwarf_functions(lib).items()}
    assert {t for t in lines if t[2] != QUERY} == want


def test_perf_map_without_dwarf_tiles_the_code(builds):
    lib = builds["bare"].library
    assert _elf(lib).get_section_by_name(".debug_info") is None
    _out, lines = _perf_map(builds["bare"].vmfb)
    assert {n for _a, _s, n in lines} == set(dwarf_functions(builds["debug"].library)) | {
        QUERY}
    base = next(a for a, _s, n in lines if n == QUERY) - _query_value(lib)
    text = next(s for s in _elf(lib).iter_segments()
                if s["p_type"] == "PT_LOAD" and s["p_flags"] & 1)
    spans = sorted((a - base, s) for a, s, n in lines if n != QUERY)
    # each function reaches the next one, or the query, or the end of the code
    starts = sorted([a for a, _s in spans] + [_query_value(lib)])
    code_end = text["p_vaddr"] + text["p_memsz"]
    for a, s in spans:
        assert text["p_vaddr"] <= a
        assert a + s == min([x for x in starts if x > a] + [code_end])


def _gdb_with_jit() -> str:
    gdb = host_gdb()
    ok, why = jit_debug.available()     # also builds the helper library before gdb runs
    if not ok:
        pytest.skip(f"gdb JIT registration unavailable: {why}")
    return gdb


def test_gdb_breaks_in_a_dispatch_function_by_name(builds, tmp_path):
    gdb = _gdb_with_jit()
    names = dwarf_functions(builds["debug"].library)
    add = next(n for n in names if n.startswith("add_dispatch_"))
    iops = sorted(n for n in names if n.startswith("iops_dispatch_"))[-1]
    script = tmp_path / "host.py"
    script.write_text(HOST)
    cmd = [gdb, "--batch", "-nx", "-ex", "set breakpoint pending on",
           "-ex", f"break {add}", "-ex", f"break {iops}", "-ex", "run", "-ex", "bt 1",
           "-ex", "info symbol $pc", "-ex", "continue", "-ex", "bt 1", "-ex", "delete",
           "-ex", "continue",
           "--args", sys.executable, str(script), str(builds["bare"].vmfb)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("ELFKIT_GDB_JIT", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout
    assert "exited normally" in out, out + proc.stderr
    assert re.search(rf"Breakpoint 1, 0x[0-9a-f]+ in {add} \(\)", out), out
    assert re.search(rf"#0 +0x[0-9a-f]+ in {add} \(\)", out), out
    assert re.search(rf"{add} \+ \d+ in section \.text", out), out       # info symbol
    assert re.search(rf"Breakpoint 2, 0x[0-9a-f]+ in {iops} \(\)", out), out
    # the program runs on to its normal results
    assert "ADD [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]" in out
    m = [[4 * r + c for c in range(4)] for r in range(4)]
    assert f"IOPS {sum(3 * v for row in m for v in row)} {sum(v - 3 for row in m for v in row)}" \
        in out


def test_an_export_pointing_into_data_does_not_fail_the_load(builds):
    """Naming is a debugging aid: a damaged library whose export table
    points one function into data still loads, with its other exports named."""
    import vmrt

    lib = builds["debug"].library
    funcs = dwarf_functions(lib)
    victim = sorted(funcs)[0]
    e = _elf(lib)
    data = bytearray(lib.read_bytes())
    rodata = e.get_section_by_name(".rodata")["sh_addr"]
    rela = e.get_section_by_name(".rela.dyn")
    patched = 0
    for i, r in enumerate(rela.iter_relocations()):
        if r["r_info_type"] == 8 and r["r_addend"] == funcs[victim][0]:   # R_X86_64_RELATIVE
            off = rela["sh_offset"] + i * rela["sh_entsize"] + 16
            data[off:off + 8] = rodata.to_bytes(8, "little")
            patched += 1
    assert patched == 1
    with vmrt.Executable.load(bytes(data)) as exe:
        assert victim in [x.name for x in exe.exports]
        named = {s.name: s.address - exe.module.base for s in exe.module.added_symbols}
        assert named == {n: lo for n, (lo, _s) in funcs.items() if n != victim}


def test_a_programs_libraries_are_named_before_their_first_dispatch(builds):
    """A HAL device's loads (ExecutableLoader: what hal.executable.create
    runs) name the exports just before the first dispatch, not at load (the
    module is registered with gdb once at load); a direct load names them at
    once."""
    import vmrt
    from vmrt.hal.local.loader import ExecutableLoader

    lib = builds["debug"].library
    want = {n: lo for n, (lo, _s) in dwarf_functions(lib).items()}
    with ExecutableLoader() as loader:
        exe = loader.load(lib.read_bytes())
        assert list(exe.module.added_symbols) == []
        exe.entry(exe.exports[0])
        assert {s.name: s.address - exe.module.base for s in exe.module.added_symbols} == want
        exe.entry(exe.exports[1])               # once
        assert len(exe.module.added_symbols) == len(want)
    with vmrt.Executable.load(lib.read_bytes()) as exe:
        assert {s.name: s.address - exe.module.base for s in exe.module.added_symbols} == want


def _symfile_names(symfile: bytes) -> set[str]:
    symtab = ELFFile(io.BytesIO(symfile)).get_section_by_name(".symtab")
    return {s.name for s in symtab.iter_symbols() if s.name}


def test_a_programs_library_is_registered_with_gdb_once_before_its_first_dispatch(
        builds, monkeypatch):
    """A program's load runs its libraries' queries without registering them
    with gdb (nothing watches: no debugger, not ELFKIT_GDB_JIT=eager); the
    first dispatch registers each once, its exports named.  A direct load
    registers at once."""
    import numpy as np

    import vmrt
    monkeypatch.delenv("ELFKIT_GDB_JIT", raising=False)
    ok, why = jit_debug.available()
    if not ok:
        pytest.skip(f"gdb JIT registration unavailable: {why}")
    jit = jit_debug.interface()
    assert jit is not None
    if jit.watched():
        pytest.skip("a debugger watches this process")
    names = set(dwarf_functions(builds["debug"].library))
    before = len(jit.entries())
    with vmrt.load(builds["debug"].vmfb) as prog:
        assert len(jit.entries()) == before
        a = np.arange(8, dtype=np.float32)
        assert prog.add(a, np.full(8, 2, np.float32)).tolist() == (a + 2).tolist()
        entries = jit.entries()
        assert len(entries) == before + 1
        assert names <= _symfile_names(entries[0])          # newest first
        prog.iops(np.ones((4, 4), np.int32), np.ones((4, 4), np.int32))
        assert len(jit.entries()) == before + 1
    assert len(jit.entries()) == before
    with vmrt.Executable.load(builds["debug"].library.read_bytes()):
        entries = jit.entries()
        assert len(entries) == before + 1 and names <= _symfile_names(entries[0])


def test_an_export_over_the_binding_limit_is_refused_at_load(builds):
    """Each export's dispatch attributes are checked at load (IREE's limits on
    bindings and constants): one patched past the binding limit is refused,
    naming the export."""
    import struct

    import vmrt
    from vmrt.hal.local import library_abi as abi
    lib = builds["debug"].library.read_bytes()
    with vmrt.Executable.load(lib) as exe:
        first = exe.exports[0]
        row = struct.pack(abi.layout(8).attrs_fmt, first.flags,
                          first.local_memory_size // abi.LOCAL_MEMORY_PAGE_SIZE,
                          first.constant_count, first.binding_count, *first.workgroup_size,
                          first.parameter_count)
    at = lib.find(row)
    assert at > 0
    bad = bytearray(lib)
    bad[at + 11] = abi.MAX_BINDING_COUNT + 1     # binding_count: the u8 after flags (u64),
    #                                              local_memory_pages (u16), constant_count (u8)
    with pytest.raises(vmrt.VmError, match=rf"export 0 \({first.name}\): "
                       rf"{abi.MAX_BINDING_COUNT + 1} bindings / {first.constant_count} "
                       "constants exceed the limits"):
        vmrt.Executable.load(bytes(bad))
