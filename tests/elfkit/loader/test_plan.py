"""Load plans: a plugin loaded again reuses its parsed file and what placing
it worked out, keyed by the file's content; results stay those of a fresh
load, and bad input is refused the same way every time."""
from __future__ import annotations

import subprocess
import sys

import pytest

import elfkit
from elfkit.exec.memory import MemoryMachine
from elfkit.loader.plan import plan_for
from tests.elfkit.loader.reloc_oracle import check_native_reloads, relative_words

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]


@pytest.mark.parametrize("arch", ARCHES)
def test_reloads_relocate_for_their_own_base(plugins, arch):
    """Three loads of one file into one machine (three bases; the second and
    third through the plan the first made): every RELATIVE word is base + addend."""
    data = plugins.path("standalone", arch).read_bytes()
    words = relative_words(data)
    assert words
    mm = MemoryMachine(elfkit.arch.get(arch))
    mods = [elfkit.load(data, machine=mm, init=False) for _ in range(3)]
    assert len({m.base for m in mods}) == 3
    for m in mods:
        for place, add, w in words:
            got = int.from_bytes(m.read(m.base + place, w), "little")
            assert got == (m.base + add) & ((1 << (8 * w)) - 1)
    assert mods[0].relocation_counts == mods[2].relocation_counts
    assert sum(mods[0].relocation_counts.values()) == len(words)
    for m in mods:
        m.close()


def test_native_reloads_at_the_same_and_other_bases(plugins):
    """Load, close, load again (the closed range is reused: same base, the
    image the plan kept), and a load beside an open one (another base): the
    RELATIVE words and the relocation counts are right each time."""
    data = plugins.path("standalone", plugins.host_arch).read_bytes()
    check_native_reloads(data, relative_words(data))


def test_same_content_shares_the_parsed_file(plugins):
    data = plugins.path("relocs", "x86_64").read_bytes()
    a = plan_for(memoryview(data))
    assert plan_for(memoryview(bytes(data))) is a            # equal bytes, another object
    assert plan_for(memoryview(bytearray(data))) is a        # a mutable copy
    assert plan_for(memoryview(data), expect_arch=elfkit.arch.get("x86_64")) is not a
    assert plan_for(memoryview(data), elfkit.Limits(max_symbols=1000)) is not a


def test_a_changed_buffer_is_loaded_as_it_now_is(plugins):
    """The plan keys on content: a bytearray changed after a load is a new file."""
    data = bytearray(plugins.path("standalone", "x86_64").read_bytes())
    mm = MemoryMachine(elfkit.arch.get("x86_64"))
    m1 = elfkit.load(data, machine=mm, init=False)
    off = data.index(b"iree_hal_executable_plugin_query")
    data[off:off + 4] = b"IREE"                      # rename the export in .dynstr
    m2 = elfkit.load(data, machine=mm, init=False)
    assert "iree_hal_executable_plugin_query" in m1.exports
    assert "IREE_hal_executable_plugin_query" in m2.exports
    assert bytes(m2.elf.data) == bytes(data)
    assert bytes(m1.elf.data) != bytes(data)         # the first load kept its own copy
    m1.close()
    m2.close()


def test_bad_input_fails_the_same_way_every_time(plugins):
    data = bytearray(plugins.path("standalone", "x86_64").read_bytes())
    data[0x10] = 9                                      # e_type: not ET_DYN
    errors = []
    for _ in range(3):
        with pytest.raises(elfkit.ElfkitError) as e:
            elfkit.load(bytes(data), machine=MemoryMachine(elfkit.arch.get("x86_64")))
        errors.append((type(e.value), str(e.value)))
    assert len(set(errors)) == 1


def test_a_small_plugin_loads_without_numpy(plugins):
    """numpy costs tens of milliseconds to import: a small plugin does not need it."""
    path = plugins.path("standalone", "x86_64")
    code = ("import sys, elfkit; m = elfkit.load(sys.argv[1], backend='emulated'); "
            "m.close(); print('numpy' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
