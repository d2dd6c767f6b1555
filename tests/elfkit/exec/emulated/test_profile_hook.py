"""The native block counter of guest profiles (``elfkit.exec.emulated.blockhook``):
its counts are exactly those of the Python hook, also when its table
spills, the hot function of a plugin gets the counts, it is built once into
the cache, and without a toolchain profiling falls back to the Python hook
with a warning."""
import os
import stat
import subprocess
import sys

import pytest

import elfkit
from elfkit.exec.emulated import GuestProfile, blockhook
from elfkit.toolchain import compile_plugin

# two hot functions of known shares (4:1 loop trips of the same body) and a
# switch whose cases make many distinct blocks (the spill test's table fills)
SOURCE = """\
volatile unsigned sink;

__attribute__((noinline)) void body(unsigned i) { sink = sink * 31u + (i ^ (sink >> 3)); }

__attribute__((noinline)) void hot(unsigned n) {
    for (unsigned i = 0; i < n; i++) body(i);
}

__attribute__((noinline)) void warm(unsigned n) {
    for (unsigned i = 0; i < n; i++) body(i);
}

__attribute__((noinline)) unsigned many(unsigned n) {
    unsigned acc = 0;
    for (unsigned i = 0; i < n; i++) {
        switch ((i * 7u) % 12u) {
        case 0: acc += sink; break;
        case 1: acc ^= i; break;
        case 2: acc -= 3; break;
        case 3: acc *= 5; break;
        case 4: acc += i << 2; break;
        case 5: acc ^= sink >> 1; break;
        case 6: acc += 11; break;
        case 7: acc = (acc << 3) | (acc >> 29); break;
        case 8: acc -= i; break;
        case 9: acc ^= 0x5a5a; break;
        case 10: acc += acc >> 4; break;
        default: sink = acc; break;
        }
    }
    return acc;
}

__attribute__((visibility("default"))) unsigned entry(unsigned n) {
    hot(4 * n);
    warm(n);
    return many(n);
}
"""
ARCHES = ["aarch64", "riscv64", "arm"]


@pytest.fixture(scope="module", params=ARCHES)
def plugin(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"hook-{request.param}")
    src = d / "hook.c"
    src.write_text(SOURCE)
    return compile_plugin(src, request.param, d / "hook.so", cflags=["-g"])


def _profile(plugin, n=300):
    prof = GuestProfile()
    with elfkit.load(plugin, backend="emulated") as mod:
        mod.machine.count_instructions(True)
        mod.machine.profile(prof)
        result = mod.call("entry", n, restype="u32")
        mod.machine.profile(None)
        count = mod.machine.instructions
    return prof, result, count


def test_the_native_counter_is_there():
    """The test environment has the toolchain: profiles count in C."""
    assert blockhook.native_counter() is not None, blockhook.why_not()
    assert blockhook.why_not() is None


def test_native_counts_equal_python_counts(plugin, monkeypatch):
    native, r1, count = _profile(plugin)
    monkeypatch.setenv(blockhook.ENV, "python")
    assert blockhook.native_counter() is None
    python, r2, count2 = _profile(plugin)
    assert r1 == r2 and count == count2
    assert native.counts == python.counts
    assert native.total == count


def test_counts_stay_exact_when_the_table_spills(plugin, monkeypatch):
    whole, _, count = _profile(plugin)
    monkeypatch.setattr(blockhook, "DEFAULT_SLOTS", 4)    # spills every 3 new blocks
    small, _, _ = _profile(plugin)
    assert small.counts == whole.counts and small.total == count


def test_the_hot_functions_get_their_share(plugin):
    prof, _, _ = _profile(plugin)
    fns = prof.functions()
    assert list(fns)[:2] == ["body", "hot"], fns
    loops = fns["body"] + fns["hot"] + fns["warm"]
    assert loops >= 0.7 * prof.total, fns
    # hot runs the same loop four times as often as warm
    assert 3.9 < fns["hot"] / fns["warm"] < 4.1, fns


def test_native_counter_rejects_bad_sizes():
    with pytest.raises(ValueError, match="power of two"):
        blockhook.native_counter(slots=6)


def _run_profiled(plugin, tmp_path, env):
    out = tmp_path / "p.json"
    env = {**os.environ, **env}
    r = subprocess.run([sys.executable, "-m", "elfkit", "run", str(plugin), "--call", "entry",
                        "--arg", "50", "--restype", "u32", "--profile", str(out)],
                       capture_output=True, text=True, timeout=300, env=env)
    return r, out


def test_built_once_into_a_private_cache(plugin, tmp_path):
    cache = tmp_path / "cache"
    r, out = _run_profiled(plugin, tmp_path, {"ELFKIT_CACHE_DIR": str(cache)})
    assert r.returncode == 0 and out.is_file(), r.stderr
    assert "Python hook" not in r.stderr
    (built,) = [p for p in cache.iterdir() if p.name.startswith("blockhook-")]
    assert stat.S_IMODE(built.stat().st_mode) & 0o077 == 0
    mtime = built.stat().st_mtime_ns
    r, _ = _run_profiled(plugin, tmp_path, {"ELFKIT_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    assert built.stat().st_mtime_ns == mtime           # reused, not rebuilt
    good = built.read_bytes()
    built.write_bytes(good[:100])                      # damaged: built again
    r, _ = _run_profiled(plugin, tmp_path, {"ELFKIT_CACHE_DIR": str(cache)})
    assert r.returncode == 0 and "Python hook" not in r.stderr, r.stderr
    assert built.read_bytes() == good


def test_without_toolchain_the_python_hook_counts(plugin, tmp_path):
    """A ``ziglang`` that fails (as a missing one would) earlier on the
    path: the profile is still written, with the same counts, and a warning
    says why it was slow."""
    fake = tmp_path / "fake" / "ziglang"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("import sys\nsys.exit('zig is not installed')\n")
    env = {"ELFKIT_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")])}
    r, out = _run_profiled(plugin, tmp_path, env)
    assert r.returncode == 0, r.stderr
    assert "Python hook" in r.stderr and "could not be built" in r.stderr, r.stderr
    slow = out.read_text()
    (tmp_path / "native").mkdir()
    r, out2 = _run_profiled(plugin, tmp_path / "native", {})
    assert r.returncode == 0, r.stderr
    assert out2.read_text() == slow


@pytest.mark.parametrize("arch,flags", [("aarch64", []), ("riscv64", []), ("riscv32", []),
                                        ("arm", []), ("arm", ["-target", "thumb-freestanding-none"]),
                                        ("x86", []),
                                        ("x86_64", [])])
def test_instruction_addresses_match_the_disassembler(arch, flags, tmp_path):
    """The instruction boundaries counts and profiles use (from the
    encoding where it gives the length) are capstone's on every function
    of a compiled plugin (read with pyelftools)."""
    from elftools.elf.elffile import ELFFile

    from elfkit.exec.disasm import disassemble, instruction_addresses
    src = tmp_path / "hook.c"
    src.write_text(SOURCE)
    so = compile_plugin(src, arch, tmp_path / "hook.so", cflags=["-O1", *flags])
    thumb = bool(flags)
    checked = 0
    with open(so, "rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        base, data = text["sh_addr"], text.data()
        for sym in elf.get_section_by_name(".symtab").iter_symbols():
            if sym["st_info"]["type"] != "STT_FUNC" or not sym["st_size"]:
                continue
            assert sym["st_value"] & 1 == thumb       # (thumb functions are odd)
            start = (sym["st_value"] & ~1) - base
            code = data[start:start + sym["st_size"]]
            want = [i.address for i in disassemble(code, base + start, arch, thumb=thumb)]
            assert instruction_addresses(code, base + start, arch, thumb=thumb) == want
            checked += 1
    assert checked >= 4
