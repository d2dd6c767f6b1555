"""``vmrt executable list|dispatch`` (vmrt.tools.executable)."""
from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest

from vmrt.tools.executable import main


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(map(str, argv)), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def test_list(iree, standalone_sos):
    lib = iree.compile("simple_mul", "x86_64").library
    rc, out, err = run("list", lib, f"--executable_plugin={standalone_sos}")
    assert rc == 0, err
    assert "@tiled_mul ordinal(0) bindings=3 constants=2" in out
    assert "simple_mul_workgroup -> sample_standalone" in out
    assert "?vmrt_optional_probe unresolved (optional)" in out


def test_dispatch_native(iree, standalone_sos):
    lib = iree.compile("simple_mul", "x86_64").library
    rc, out, err = run("dispatch", lib, f"--executable_plugin={standalone_sos}",
                       "--export=tiled_mul", "--workgroup_count=1", "--binding=8xf32=2",
                       "--binding=8xf32=4", "--binding=8xf32", "--constant=index:8")
    assert rc == 0, err
    assert out.splitlines() == [
        "EXEC @tiled_mul", "binding[0]: hal.buffer_view", "8xf32=2 2 2 2 2 2 2 2",
        "binding[1]: hal.buffer_view", "8xf32=4 4 4 4 4 4 4 4",
        "binding[2]: hal.buffer_view", "8xf32=8 8 8 8 8 8 8 8"]


def test_dispatch_emulated_npy(iree, standalone_sos, emulation, tmp_path):
    lib = iree.compile("simple_mul", "riscv64").library
    a = np.arange(70, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    rc, out, err = run("dispatch", lib, f"--executable_plugin={standalone_sos}", "--export=0",
                       "--workgroup_count=2", f"--binding=@{tmp_path / 'a.npy'}",
                       "--binding=70xf32=3", "--binding=70xf32", "--constant=70",
                       "--constant=0", "--output=", "--output=",
                       f"--output=@{tmp_path / 'out.npy'}")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), a * 3)


def test_codegen_float_constant(iree):
    lib = iree.compile("codegen", "x86_64").library
    rc, out, err = run("dispatch", lib, "--export=saxpy", "--binding=4xf32=1 2 3 4",
                       "--binding=4xf32=10", "--binding=4xf32", "--constant=0.5",
                       "--constant=4", "--constant=0", "--output=", "--output=", "--output=-")
    assert rc == 0, err
    assert out.splitlines()[-1] == "4xf32=10.5 11 11.5 12"


def test_errors(iree, tmp_path):
    lib = iree.compile("simple_mul", "x86_64").library
    rc, out, err = run("dispatch", lib, "--export=tiled_mul")
    assert rc == 1 and "simple_mul_workgroup" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    rc, _, err = run("dispatch", iree.compile("codegen", "x86_64").library, "--export=saxpy",
                     "--binding=4xf32")
    assert rc == 1 and "3 binding(s), 1 given" in err
    rc, _, err = run("list", tmp_path / "missing.so")
    assert rc == 1 and "missing.so" in err
    rc, _, err = run("frobnicate", lib)
    assert rc == 1
    rc, _, err = run("list", lib, "--bogus=1")
    assert rc == 1 and "bogus" in err
    rc, out, _ = run("--help")
    assert rc == 0 and "dispatch" in out


def test_module_entry_point(iree):
    lib = iree.compile("codegen", "x86_64").library
    proc = subprocess.run([sys.executable, "-m", "vmrt.tools.executable", "list", str(lib)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "@grid2d" in proc.stdout


def test_a_failed_dispatch_leaves_no_output_file(iree, tmp_path):
    lib = iree.compile("codegen", "x86_64").library
    first, old = tmp_path / "first.npy", tmp_path / "old.npy"
    np.save(old, np.zeros(2, np.float32))
    before = old.read_bytes()
    args = ["dispatch", lib, "--export=saxpy", "--binding=4xf32=1 2 3 4", "--binding=4xf32=10",
            "--binding=4xf32", "--constant=0.5", "--constant=4", "--constant=0"]
    rc, _, err = run(*args, f"--output=@{first}", f"--output=@{old}",
                     f"--output=@{tmp_path / 'no' / 'such' / 'dir.npy'}")
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "dir.npy" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.npy"]   # no partial or temp file
    assert old.read_bytes() == before
    rc, _, err = run(*args, f"--output=@{first}", f"--output=+{old}", "--output=-")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(first), [1, 2, 3, 4])
    assert old.read_bytes().startswith(before) and len(old.read_bytes()) > len(before)


def test_dispatch_timeout(iree, emulation, tmp_path):
    lib = iree.compile("codegen", "riscv64").library
    args = ["dispatch", lib, "--export=saxpy", "--binding=4xf32=1 2 3 4", "--binding=4xf32=10",
            "--binding=4xf32", "--constant=0.5", "--constant=4", "--constant=0",
            "--output=", "--output=", f"--output=@{tmp_path / 'y.npy'}"]
    rc, _, err = run(*args, "--timeout=0")
    assert rc == 1 and err.startswith("DEADLINE_EXCEEDED; ") and "saxpy" in err, err
    assert not list(tmp_path.iterdir())
    rc, _, err = run(*args, "--timeout=nan")
    assert rc == 1 and "--timeout" in err
    rc, _, err = run(*args, "--timeout=60")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [10.5, 11, 11.5, 12])


def _faulting_finaliser(data: bytes) -> bytes:
    """``data`` (an aarch64 ELF) with its .fini_array entry pointing at
    address 0x40: the finaliser faults when the library is closed."""
    import struct

    from elftools.elf.elffile import ELFFile
    elf = ELFFile(io.BytesIO(data))
    fini = elf.get_section_by_name(".fini_array")["sh_addr"]
    rela = elf.get_section_by_name(".rela.dyn")
    out = bytearray(data)
    for i, r in enumerate(rela.iter_relocations()):
        if r["r_offset"] == fini:
            struct.pack_into("<q", out, rela["sh_offset"] + i * rela["sh_entsize"] + 16, 0x40)
            return bytes(out)
    raise AssertionError("no relocation of .fini_array")


def test_a_finaliser_fault_does_not_hide_the_load_error(plugins, emulation, tmp_path):
    """Fuzzer finding (cli, 2026-11-24): a library that is not a dispatch
    library and whose finaliser faults ended in a 25-line `INTERNAL;
    EmulationFault` instead of the load error."""
    import vmrt
    lib = tmp_path / "lib.so"
    lib.write_bytes(_faulting_finaliser(plugins.data("relocs", "aarch64")))
    with pytest.raises(vmrt.ExecutableError) as e:
        vmrt.Executable.load(lib, backend="emulated")
    assert e.value.code == vmrt.StatusCode.NOT_FOUND and "library_query" in str(e.value)
    rc, _, err = run("dispatch", lib, "--export=0", "--backend=emulated")
    assert rc == 1 and err.startswith("NOT_FOUND; ") and len(err.strip().splitlines()) == 1, err
