"""Natively loaded plugins in gdb, through GDB's JIT interface.

The symfile each load registers is checked against pyelftools' view of the
plugin plus the load base; real gdb (``gdb --batch --args python …``)
then breaks on plugin functions by name (pending breakpoints resolved at
registration), shows them in backtraces, and reads a ``-g`` plugin's
DWARF (file:line, globals, arguments) at the loaded address.  Without a
debugger watching, a module is registered before its code first runs (or
on ``register_pending()``): a gdb attached after the load still breaks in
it; with one watching, at load.
"""
from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys
import time

import pytest
from elftools.elf.elffile import ELFFile

import elfkit
from elfkit.exec import jit_debug
from elfkit.toolchain import compile_plugin
from tests.elfkit.exec.debug_testutil import host_gdb

pytestmark = pytest.mark.skipif(elfkit.arch.host() is None or elfkit.arch.host().name != "x86_64",
                                reason="native tests run on an x86_64 host")

ARCH = "x86_64"


def _jit() -> jit_debug.JitInterface:
    ok, why = jit_debug.available()
    if not ok:
        pytest.skip(f"gdb JIT registration unavailable: {why}")
    jit = jit_debug.interface()
    assert jit is not None
    return jit


def _symtab(path) -> dict[str, tuple[int, int, str]]:
    """name -> (value, size, type) of the defined .symtab symbols (pyelftools)."""
    with open(path, "rb") as f:
        e = ELFFile(io.BytesIO(f.read()))
    out = {}
    for s in e.get_section_by_name(".symtab").iter_symbols():
        if s.name and s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["type"] in (
                "STT_FUNC", "STT_OBJECT"):
            out[s.name] = (s["st_value"], s["st_size"], s["st_info"]["type"])
    return out


def test_symfile_carries_symbols_at_loaded_addresses(plugins):
    jit = _jit()
    path = plugins.path("kernels", ARCH)
    want = _symtab(path)
    jit_debug.register_pending()        # modules other tests left waiting
    with elfkit.load(path) as m:
        # no debugger watches: registered on demand (or before its code runs)
        before = len(jit.entries())
        assert jit_debug.register_pending() == 1
        assert len(jit.entries()) == before + 1
        symfile = jit.entries()[0]                     # newest first
        e = ELFFile(io.BytesIO(symfile))
        got = {s.name: (s["st_value"], s["st_size"], s["st_info"]["type"])
               for s in e.get_section_by_name(".symtab").iter_symbols() if s.name}
        assert e["e_machine"] == "EM_X86_64"
        for name, (value, size, typ) in want.items():
            assert got[name] == (m.base + value, size, typ), name
        # each symbol sits in a section that covers it, at the loaded address
        text = e.get_section_by_name(".text")
        with open(path, "rb") as f:
            linked = ELFFile(f).get_section_by_name(".text")["sh_addr"]
        assert text["sh_addr"] == m.base + linked
        assert text["sh_addr"] <= m.exports["add_i32"] < text["sh_addr"] + text["sh_size"]
        count = len(jit.entries())
    assert len(jit.entries()) == count - 1              # unregistered on close
    assert symfile not in jit.entries()


def test_reloads_register_symfiles_at_each_load_address(plugins):
    # load, close, load (usually the same base: the symfile may be reused) and
    # two loads open at once (two bases): each entry is at its own module's base
    jit = _jit()
    path = plugins.path("kernels", ARCH)
    with open(path, "rb") as f:
        linked = ELFFile(f).get_section_by_name(".text")["sh_addr"]

    def text_addr(symfile: bytes) -> int:
        return ELFFile(io.BytesIO(symfile)).get_section_by_name(".text")["sh_addr"]

    for _ in range(3):
        with elfkit.load(path) as m:
            jit_debug.register_pending()
            assert text_addr(jit.entries()[0]) == m.base + linked
    with elfkit.load(path) as a, elfkit.load(path) as b:
        a.function("add_i32", "i32(i32,i32)")    # a's code is about to run: registered
        assert text_addr(jit.entries()[0]) == a.base + linked
        jit_debug.register_pending()
        assert a.base != b.base
        assert [text_addr(x) for x in jit.entries()[:2]] == [b.base + linked, a.base + linked]


def test_registration_can_be_turned_off(plugins, monkeypatch):
    jit = _jit()
    monkeypatch.setenv("ELFKIT_GDB_JIT", "0")
    before = len(jit.entries())
    with elfkit.load(plugins.path("kernels", ARCH)) as m:
        assert m.call("add_i32", 1, 2, restype="i32") == 3
        assert jit_debug.register_pending() == 0
        assert len(jit.entries()) == before
    assert jit_debug.available() == (False, "ELFKIT_GDB_JIT turns registration off")


def test_eager_registration_at_load(plugins, monkeypatch):
    """``ELFKIT_GDB_JIT=eager``: every load registers at once, debugger or not."""
    jit = _jit()
    monkeypatch.setenv("ELFKIT_GDB_JIT", "eager")
    before = len(jit.entries())
    with elfkit.load(plugins.path("kernels", ARCH)) as m:
        assert len(jit.entries()) == before + 1
        assert jit_debug.register_pending() == 0
        text = ELFFile(io.BytesIO(jit.entries()[0])).get_section_by_name(".text")
        assert text["sh_addr"] <= m.exports["add_i32"] < text["sh_addr"] + text["sh_size"]
    assert len(jit.entries()) == before


def test_attaching_a_module_again_keeps_the_list_sound(plugins):
    """A module attached to its machine a second time replaces its entry in
    gdb's list: the first one is unlinked, not left pointing at a freed
    buffer (run in a child: a dangling entry crashes the process)."""
    _jit()
    code = ("import gc, sys, elfkit\n"
            "from elfkit.exec import jit_debug\n"
            "m = elfkit.load(sys.argv[1]); jit = jit_debug.interface()\n"
            "jit_debug.register_pending()\n"
            "for _ in range(300):\n"
            "    m.machine.attach(m); gc.collect(); jit.entries()\n"
            "print(len(jit.entries())); m.close(); print(len(jit.entries()))\n")
    r = subprocess.run([sys.executable, "-c", code, str(plugins.path("standalone", ARCH))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "0"]


# -- real gdb -------------------------------------------------------------------

SCRIPT = """\
import sys, elfkit
m = elfkit.load(sys.argv[1])
print("BASE", hex(m.base), flush=True)
print("RESULT", m.call(sys.argv[2], *map(int, sys.argv[3:]), restype="i64"), flush=True)
m.close()
"""


def _run_gdb(tmp_path, commands: list[str], plugin, function: str, *args: int) -> str:
    gdb = host_gdb()
    _jit()                                              # the helper library is built before
    script = tmp_path / "host.py"
    script.write_text(SCRIPT)
    cmd = [gdb, "--batch", "-nx", "-ex", "set breakpoint pending on"]
    for c in commands:
        cmd += ["-ex", c]
    cmd += ["--args", sys.executable, str(script), str(plugin), function, *map(str, args)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert "exited normally" in proc.stdout, proc.stdout + proc.stderr
    return proc.stdout


def test_gdb_breaks_on_a_plugin_function_by_name(plugins, tmp_path):
    path = plugins.path("kernels", ARCH)
    out = _run_gdb(tmp_path, ["break add_i64", "run", "bt 2", "info symbol $pc", "continue"],
                   path, "add_i64", 40, 2)
    base = int(re.search(r"BASE (0x[0-9a-f]+)", out).group(1), 16)
    value = _symtab(path)["add_i64"][0]
    hit = re.search(r"Breakpoint 1, (0x[0-9a-f]+) in add_i64 \(\)", out)
    assert hit, out
    assert base + value <= int(hit.group(1), 16) < base + value + _symtab(path)["add_i64"][1]
    assert re.search(r"#0 .* in add_i64 \(\)", out)
    assert "add_i64 + " in out or "add_i64 in section" in out   # info symbol
    assert "RESULT 42" in out                                     # continue: the call returns


def test_gdb_backtrace_through_plugin_frames(plugins, tmp_path):
    # recurse(3) -> recurse_impl(3) -> (2) -> (1) -> (0): a static function,
    # found through .symtab; the unwinder walks the plugin's .eh_frame
    out = _run_gdb(tmp_path, ["break recurse_impl", "run", "continue 3", "bt 8", "delete",
                              "continue"], plugins.path("kernels", ARCH), "recurse", 3)
    frames = re.findall(r"^#(\d+) .* in (\w+) ", out, re.M)
    names = [n for _i, n in frames]
    assert names[:4] == ["recurse_impl"] * 4, out
    assert "RESULT 9" in out


DWARF_SOURCE = """\
#include <stdint.h>
#define EXPORT __attribute__((visibility("default")))
int32_t g_total = 5;
static __attribute__((noinline)) int32_t helper(int32_t x) {
  int32_t y = x * 3;
  g_total += y;
  return y;
}
EXPORT int32_t outer(int32_t n) {
  int32_t acc = 0;
  for (int32_t i = 0; i < n; i++) acc += helper(i);   /* the call */
  return acc;
}
"""


@pytest.mark.parametrize("dwarf", ["-gdwarf-4", "-gdwarf-5"])
def test_gdb_reads_the_plugins_dwarf_at_the_load_address(tmp_path, dwarf):
    src = tmp_path / "dwarfy.c"
    src.write_text(DWARF_SOURCE)
    so = compile_plugin(src, ARCH, tmp_path / "dwarfy.so", cflags=[dwarf])
    call_line = next(i for i, line in enumerate(DWARF_SOURCE.splitlines(), 1)
                     if "/* the call */" in line)
    out = _run_gdb(tmp_path, ["break helper", "run", "continue 2", "bt 2", "print g_total",
                              "print &g_total", "print x", "delete", "continue"],
                   so, "outer", 4)
    base = int(re.search(r"BASE (0x[0-9a-f]+)", out).group(1), 16)
    g_total = _symtab(so)["g_total"][0]
    assert re.search(rf"#1 .* in outer \(n=4\) at .*dwarfy\.c:{call_line}", out), out
    assert re.search(r"#0 +helper \(x=(x@entry=)?2\) at .*dwarfy\.c:\d+", out), out
    assert f"$1 = {5 + sum(3 * i for i in range(2))}" in out   # helper(0), helper(1) ran
    assert re.search(rf"\$2 = \(int32_t \*\) {base + g_total:#x} <g_total>", out), out
    assert "$3 = 2" in out
    assert "RESULT 18" in out                        # 0 + 3 + 6 + 9


def _low_pcs(elf_bytes: bytes) -> dict[str, int]:
    """name -> DW_AT_low_pc of the functions in a file's DWARF (pyelftools)."""
    out = {}
    for cu in ELFFile(io.BytesIO(elf_bytes)).get_dwarf_info().iter_CUs():
        for die in cu.iter_DIEs():
            if die.tag == "DW_TAG_subprogram" and "DW_AT_low_pc" in die.attributes:
                out[die.attributes["DW_AT_name"].value.decode()] = \
                    die.attributes["DW_AT_low_pc"].value
    return out


def test_dwarf_addresses_are_moved_for_each_base(tmp_path, monkeypatch):
    # where the DWARF holds addresses is found by walking .debug_info
    # directly (faster than a cache entry: none is written; pyelftools and
    # the cache serve only DWARF that walk does not understand, see
    # test_dwarf_sites_cache.py); each load moves them to its own base
    jit = _jit()
    cache = tmp_path / "cache"
    monkeypatch.setenv("ELFKIT_CACHE_DIR", str(cache))
    src = tmp_path / "dwarfy.c"
    src.write_text(DWARF_SOURCE)
    so = compile_plugin(src, ARCH, tmp_path / "dwarfy.so", cflags=["-gdwarf-4"])
    linked = _low_pcs(so.read_bytes())
    assert {"helper", "outer"} <= set(linked)
    with elfkit.load(so) as a:
        jit_debug.register_pending()
        first = jit.entries()[0]
        assert not list(cache.glob("dwarf-sites-*"))
        with elfkit.load(so) as b:
            jit_debug.register_pending()
            second = jit.entries()[0]
            assert a.base != b.base
            for symfile, m in ((first, a), (second, b)):
                assert _low_pcs(symfile) == {n: m.base + v for n, v in linked.items()}


def test_damaged_debug_info_never_fails_a_load(tmp_path):
    """Registration is a debugging aid: damaged DWARF or section headers
    leave the symbols (or the dynamic symbols) and the load works."""
    jit = _jit()
    src = tmp_path / "dwarfy.c"
    src.write_text(DWARF_SOURCE)
    so = compile_plugin(src, ARCH, tmp_path / "dwarfy.so", cflags=["-gdwarf-5"])
    data = so.read_bytes()
    with open(so, "rb") as f:
        e = ELFFile(f)
        spans = [(s["sh_offset"], s["sh_size"]) for s in e.iter_sections()
                 if s.name.startswith(".debug_") and s["sh_size"]]
    rng = random.Random(17)
    for off, size in spans:
        for _ in range(10):
            bad = bytearray(data)
            for _ in range(8):
                bad[off + rng.randrange(size)] = rng.randrange(256)
            with elfkit.load(bytes(bad)) as m:
                assert m.call("outer", 4, restype="i32") == 18
                syms = ELFFile(io.BytesIO(jit.entries()[0])).get_section_by_name(".symtab")
                assert syms.get_symbol_by_name("outer")[0]["st_value"] == m.exports["outer"]
    bad = bytearray(data)
    bad[0x28:0x30] = (len(bad) - 8).to_bytes(8, "little")     # e_shoff past the end
    with elfkit.load(bytes(bad)) as m:
        jit_debug.register_pending()
        syms = ELFFile(io.BytesIO(jit.entries()[0])).get_section_by_name(".symtab")
        assert syms.get_symbol_by_name("outer")[0]["st_value"] == m.exports["outer"]


JIT_DROP_CHILD = r"""
import gc
from elfkit.exec import jit_debug
iface = jit_debug.interface()
if iface is None:
    print("unavailable")
    raise SystemExit(0)
first = iface.add(b"first symfile " * 100)
del first                      # dropped while linked (a module collected without close())
gc.collect()
junk = [bytes(1500) for _ in range(20000)]      # reuse the freed memory if it was freed
second = iface.add(b"second symfile")
names = sorted(e[:6] for e in iface.entries())
print(names)
"""


def test_a_registration_dropped_while_linked_stays_valid():
    """inline-HAL helper's finding: a native module collected without close()
    freed its linked gdb JIT entry; the next registration wrote into freed
    memory and the process crashed.  Linked entries are kept alive."""
    proc = subprocess.run([sys.executable, "-c", JIT_DROP_CHILD], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if proc.stdout.strip() == "unavailable":
        pytest.skip("the gdb JIT helper cannot be built here")
    assert proc.stdout.strip() == "[b'first ', b'second']"


# -- when the symfile is built: a debugger at load, or before the code runs ----

STOP_SCRIPT = """\
import os, signal, sys, elfkit
m = elfkit.load(sys.argv[1])
print("BASE", hex(m.base), flush=True)
os.kill(os.getpid(), signal.SIGTRAP)     # gdb stops here: none of the plugin's code ran
m.close()
"""


def test_a_debugger_at_load_gets_the_symfile_at_once(plugins, tmp_path):
    """Under gdb (its breakpoint is on __jit_debug_register_code) a load
    registers its module at once: gdb knows the plugin's functions before
    any of its code runs."""
    gdb = host_gdb()
    _jit()
    path = plugins.path("kernels", ARCH)
    script = tmp_path / "host.py"
    script.write_text(STOP_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("ELFKIT_GDB_JIT", None)
    proc = subprocess.run([gdb, "--batch", "-nx", "-ex", "run", "-ex", "info address add_i64",
                           "-ex", "continue", "--args", sys.executable, str(script), str(path)],
                          capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout
    assert "SIGTRAP" in out and "exited normally" in out, out + proc.stderr
    base = int(re.search(r"BASE (0x[0-9a-f]+)", out).group(1), 16)
    at = re.search(r'Symbol "add_i64" is at (0x[0-9a-f]+)', out)
    assert at, out
    assert int(at.group(1), 16) == base + _symtab(path)["add_i64"][0]


ATTACH_SCRIPT = """\
import sys, elfkit
m = elfkit.load(sys.argv[1])
print("BASE", hex(m.base), flush=True)
sys.stdin.readline()                      # the test attaches gdb meanwhile
print("RESULT", m.call("add_i64", 40, 2, restype="i64"), flush=True)
m.close()
"""


def _attach_gdb(tmp_path, script_text: str, args: list[str], setup: list[str],
                after: list[str]) -> tuple[int, str, str]:
    """Run ``script_text`` (it prints ``BASE 0x...``, then reads a line),
    attach gdb to it, run ``setup``, let the script go on (``continue``)
    and run ``after`` at the next stop: (the base it printed, gdb's output,
    the rest of the script's output)."""
    gdb = host_gdb()
    _jit()
    script = tmp_path / "host.py"
    script.write_text(script_text)
    ready = tmp_path / "gdb-ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("ELFKIT_GDB_JIT", None)
    host = subprocess.Popen([sys.executable, str(script), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert host.stdout is not None and host.stdin is not None
        base = int(host.stdout.readline().split()[1], 16)
        cmd = [gdb, "--batch", "-nx", "-p", str(host.pid), "-ex", "set breakpoint pending on"]
        for c in [*setup, f"shell touch {ready}", "continue", *after]:
            cmd += ["-ex", c]
        dbg = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # the line waits in the pipe until gdb lets the process go on
            deadline = time.monotonic() + 300
            while not ready.exists() and dbg.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            host.stdin.write("go\n")
            host.stdin.flush()
            out, err = dbg.communicate(timeout=300)
        finally:
            if dbg.poll() is None:
                dbg.kill()
        rest = host.stdout.read()
        assert host.wait(timeout=60) == 0
    finally:
        if host.poll() is None:
            host.kill()
    if "ptrace" in err and "Operation not permitted" in err:
        pytest.skip(f"gdb cannot attach here: {err.strip()[-200:]}")
    return base, out + err, rest


def test_gdb_attached_after_the_load_sees_the_plugin_before_its_code_runs(plugins, tmp_path):
    """No debugger at load: the symfile waits.  gdb attaches later with a
    pending breakpoint; the module's first call registers it (gdb is told,
    the breakpoint resolves) before its code runs, so the breakpoint hits."""
    path = plugins.path("kernels", ARCH)
    base, out, rest = _attach_gdb(tmp_path, ATTACH_SCRIPT, [str(path)],
                                  ["break add_i64"], ["bt 1", "continue"])
    value, size = _symtab(path)["add_i64"][:2]
    hit = re.search(r"Breakpoint 1, (0x[0-9a-f]+) in add_i64 \(\)", out)
    assert hit, out
    assert base + value <= int(hit.group(1), 16) < base + value + size
    assert "RESULT 42" in rest


LATER_LOAD_SCRIPT = """\
import os, signal, sys, elfkit
m = elfkit.load(sys.argv[1])
print("BASE", hex(m.base), flush=True)
sys.stdin.readline()                      # the test attaches gdb meanwhile
n = elfkit.load(sys.argv[2])              # a debugger watches now: m is registered too
os.kill(os.getpid(), signal.SIGTRAP)      # gdb stops here: none of m's code ran
m.close(); n.close()
"""


def test_a_load_under_gdb_registers_the_modules_waiting(plugins, tmp_path):
    """gdb attaches after a load; the next load sees it watching and
    registers every module still waiting: gdb knows the first plugin's
    functions though none of its code ran."""
    path = plugins.path("kernels", ARCH)
    base, out, _rest = _attach_gdb(tmp_path, LATER_LOAD_SCRIPT,
                                   [str(path), str(plugins.path("standalone", ARCH))],
                                   [], ["info address add_i64", "continue"])
    assert "SIGTRAP" in out, out
    at = re.search(r'Symbol "add_i64" is at (0x[0-9a-f]+)', out)
    assert at, out
    assert int(at.group(1), 16) == base + _symtab(path)["add_i64"][0]
