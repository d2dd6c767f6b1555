"""IREE static libraries (``--iree-llvmcpu-link-static``) run by ``vmrt run
--static_library`` and ``vmrt.load(static_libraries=...)``: natively on
x86_64, emulated on the five other CPUs.  The oracle is iree-run-module
running the same MLIR compiled with embedded ELF for this host: its stdout,
byte for byte."""
from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import vmrt
from elfkit import fatelf
from tests.vmrt.hal.static_testutil import compile_embedded, compile_static
from tests.vmrt.iree_tools import require_tool
from tests.vmrt.vmrt_testutil import vmrt_subprocess

ARCHES = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32"]
SIMPLE_MUL = ["--function=simple_mul", "--input=4xf32=4", "--input=4xf32=2"]


def _oracle(name: str, args: list[str], *extra: str) -> str:
    exe = require_tool("iree-run-module", "iree-base-runtime")
    proc = subprocess.run([exe, f"--module={compile_embedded(name, *extra)}", *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _vmrt(vmfb, libs, args: list[str]) -> tuple[int, str, str]:
    return vmrt_subprocess("run", f"--module={vmfb}", *(f"--static_library={p}" for p in libs),
                           *args)


@pytest.mark.parametrize("arch", ARCHES)
def test_simple_mul_sample_on_every_cpu(arch, emulation):
    """IREE's samples/static_library/simple_mul.mlir with the sample's flags:
    4 * 2 = 8, as iree-run-module prints it for the embedded-ELF build."""
    vmfb, obj = compile_static("simple_mul.mlir", arch)
    rc, out, err = _vmrt(vmfb, [obj], SIMPLE_MUL)
    assert rc == 0, err
    assert out == _oracle("simple_mul.mlir", SIMPLE_MUL)
    assert "4xf32=8 8 8 8" in out


def test_without_static_library_the_device_is_unavailable():
    """No --static_library: no device takes 'static' executables (IREE's
    iree-run-module has no static loader either)."""
    vmfb, _obj = compile_static("simple_mul.mlir", "x86_64")
    rc, out, err = _vmrt(vmfb, [], SIMPLE_MUL)
    assert rc != 0 and out == ""
    assert err.startswith("INCOMPATIBLE; HAL device `__device_0` not found or unavailable")
    assert "link_static = true" in err


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_multi_dispatch_program(arch, emulation, tmp_path):
    """chain.mlir (three dispatches in one linked library, ``chain_linked``)
    on local-task (an emulated dispatch spreads over worker machines, each
    loading the object again)."""
    rng = np.random.default_rng(7)
    a = (rng.integers(-8, 8, (16, 32)) / 4).astype(np.float32)
    b = (rng.integers(-8, 8, (32, 16)) / 4).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    args = ["--function=chain", f"--input=@{tmp_path / 'a.npy'}",
            f"--input=@{tmp_path / 'b.npy'}", "--device=local-task"]
    vmfb, obj = compile_static("chain.mlir", arch)
    rc, out, err = _vmrt(vmfb, [obj], args)
    assert rc == 0, err
    assert out == _oracle("chain.mlir", args)
    # the API: the same, against numpy (exact: small integers / 4)
    m = a @ b
    with vmrt.load(vmfb, device="local-task", static_libraries=[obj]) as prog:
        np.testing.assert_array_equal(prog.chain(a, b), (m.T @ m).max(axis=1))


def test_riscv32_soft_float_helpers(emulation):
    """f64 arithmetic on riscv32 ilp32 calls compiler-rt's helpers, which the
    object leaves undefined: vmrt provides them (IEEE binary64, rounded to
    nearest even)."""
    extra = ("--iree-input-demote-f64-to-f32=false",)
    vmfb, obj = compile_static("soft_float.mlir", "riscv32", *extra)
    from elftools.elf.elffile import ELFFile
    with open(obj, "rb") as f:
        undefined = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()
                     if s["st_shndx"] == "SHN_UNDEF" and s.name}
    assert {"__muldf3", "__adddf3", "__divdf3", "__subdf3", "__extendsfdf2",
            "__truncdfsf2"} <= undefined
    args = ["--function=mix", "--input=8xf32=1.5,-2,1e-30,3e38,0.3,2.5,nan,-0.75",
            "--input=8xf64=3,0.1,1e-300,1e300,7e-5,5,2,123456.789"]
    rc, out, err = _vmrt(vmfb, [obj], args)
    assert rc == 0, err
    assert out == _oracle("soft_float.mlir", args, *extra)


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def test_soft_float_edge_cases():
    """Where compiler-rt and x86 differ: an invalid operation gives the
    positive quiet NaN, a NaN operand comes back quietened, denormals are
    not flushed; f64 -> f32 overflows to infinity."""
    from vmrt.hal.local.soft_float import soft_float_imports
    t = {k: f for k, (f, _sig) in soft_float_imports().items()}
    inf = _bits(float("inf"))
    assert t["__subdf3"](inf, inf) == 0x7FF8_0000_0000_0000
    assert t["__muldf3"](inf, 0) == 0x7FF8_0000_0000_0000
    assert t["__divdf3"](0, 0) == 0x7FF8_0000_0000_0000
    assert t["__adddf3"](0xFFF0_0000_0000_0001, _bits(1.0)) == 0xFFF8_0000_0000_0001
    assert t["__adddf3"](_bits(1.0), 0x7FF0_0000_0000_0002) == 0x7FF8_0000_0000_0002
    assert t["__muldf3"](1, _bits(0.5)) == 0 and t["__muldf3"](2, _bits(0.5)) == 1
    assert t["__muldf3"](3, _bits(0.5)) == 2            # 1.5 ulp: to even
    assert t["__adddf3"](_bits(0.1), _bits(0.2)) == _bits(0.30000000000000004)
    assert t["__truncdfsf2"](_bits(1e300)) == 0x7F80_0000
    assert t["__truncdfsf2"](_bits(1.0 + 2.0 ** -24)) == 0x3F80_0000     # a tie: to even
    assert t["__truncdfsf2"](_bits(2.0 ** -149)) == 1                    # the least denormal
    assert t["__extendsfdf2"](1) == _bits(2.0 ** -149)
    assert t["__extendsfdf2"](0xFFC0_0001) == 0xFFF8_0000_2000_0000
    assert t["__truncdfsf2"](0x7FF0_0000_2000_0000) == 0x7FC0_0001
    assert [t["__ltdf2"](_bits(1.0), _bits(2.0)), t["__gedf2"](_bits(2.0), _bits(2.0)),
            t["__gtdf2"](_bits(3.0), _bits(2.0))] == [-1, 0, 1]
    nan = _bits(float("nan"))
    assert (t["__ledf2"](nan, 0), t["__gedf2"](nan, 0), t["__unorddf2"](0, nan)) == (1, -1, 1)


def test_fatelf_of_objects_gives_the_programs_slice(emulation, tmp_path):
    """A FatELF of the x86_64 and aarch64 objects runs the program of either
    CPU (its slice), and names the CPUs for a riscv64 program."""
    objs = {a: compile_static("simple_mul.mlir", a) for a in ("x86_64", "aarch64", "riscv64")}
    sos = tmp_path / "simple_mul.sos"
    sos.write_bytes(fatelf.pack([str(objs["aarch64"][1]), str(objs["x86_64"][1])]))
    expected = _oracle("simple_mul.mlir", SIMPLE_MUL)
    for arch in ("x86_64", "aarch64"):
        rc, out, err = _vmrt(objs[arch][0], [sos], SIMPLE_MUL)
        assert (rc, out) == (0, expected), err
    rc, out, err = _vmrt(objs["riscv64"][0], [sos], SIMPLE_MUL)
    assert rc != 0 and out == ""
    assert err.count("\n") == 1 and "simple_mul.sos holds x86_64 code" in err
    assert "compiled for riscv64" in err


@pytest.mark.parametrize("program_arch, object_arch", [("aarch64", "x86_64"),
                                                        ("x86_64", "aarch64")])
def test_object_for_another_cpu_is_refused(program_arch, object_arch):
    """The tile sizes, and with them the workgroup counts the program
    computes, depend on the CPU: another CPU's object would write out of
    bounds, so it is refused when the device is created."""
    vmfb = compile_static("chain.mlir", program_arch)[0]
    obj = compile_static("chain.mlir", object_arch)[1]
    rc, out, err = _vmrt(vmfb, [obj], ["--function=chain", "--input=16x32xf32=1",
                                       "--input=32x16xf32=1"])
    assert rc != 0 and out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"INVALID_ARGUMENT; static library {obj} holds {object_arch} code "
                          f"but the program's static executables were compiled for "
                          f"{program_arch}")


def test_unregistered_library_is_not_found_and_extra_ones_are_ignored():
    """As IREE's static_library_loader: the program asks by name; a library
    nobody registered is NOT_FOUND, one the program never asks for is
    ignored."""
    mul_vmfb, mul_obj = compile_static("simple_mul.mlir", "x86_64")
    chain_vmfb, chain_obj = compile_static("chain.mlir", "x86_64")
    rc, out, err = _vmrt(chain_vmfb, [mul_obj], ["--function=chain", "--input=16x32xf32=1",
                                                 "--input=32x16xf32=1"])
    assert rc != 0 and out == ""
    assert err.startswith("NOT_FOUND; no static library with the name 'chain_linked' "
                          "registered (registered: 'simple_mul_dispatch_0')")
    rc, out, err = _vmrt(mul_vmfb, [chain_obj, mul_obj], SIMPLE_MUL)
    assert (rc, out) == (0, _oracle("simple_mul.mlir", SIMPLE_MUL)), err


def test_bad_objects_end_in_one_line(tmp_path):
    """Truncated, foreign and hostile objects: vmrt's own one-line error
    naming the file, never a crash."""
    vmfb, obj = compile_static("simple_mul.mlir", "x86_64")
    data = obj.read_bytes()
    cases = {"truncated.o": data[:len(data) // 3], "text.o": b"// not an object\n" * 4,
             "empty.o": b""}
    # an object without any *_library_query: the name of the symbol changed
    cases["renamed.o"] = data.replace(b"_library_query", b"_library_qu3ry")
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        rc, out, err = _vmrt(vmfb, [tmp_path / name], SIMPLE_MUL)
        assert rc != 0 and out == "", name
        assert err.count("\n") == 1 and "Traceback" not in err, (name, err)
        assert f"static library {tmp_path / name}" in err, (name, err)
    rc, _out, err = _vmrt(vmfb, [tmp_path / "renamed.o"], SIMPLE_MUL)
    assert "exports no '*_library_query' function" in err
    rc, _out, err = _vmrt(vmfb, [tmp_path / "missing.o"], SIMPLE_MUL)
    assert rc != 0 and err.startswith("NOT_FOUND; failed to open file") and "missing.o" in err


def test_api_errors_are_vm_errors(tmp_path):
    vmfb, obj = compile_static("simple_mul.mlir", "x86_64")
    with pytest.raises(vmrt.VmError, match="loading static library <static library 0>"):
        vmrt.load(vmfb, static_libraries=[obj.read_bytes()[:4000]])
    with pytest.raises(vmrt.VmError, match="expected paths or bytes"):
        vmrt.load(vmfb, static_libraries=[42])
    with vmrt.load(vmfb, static_libraries=obj.read_bytes()) as prog:
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(prog.simple_mul(x, x), x * x)


def test_vmrt_test_takes_static_libraries():
    vmfb, obj = compile_static("static_check.mlir", "aarch64")
    rc, out, err = vmrt_subprocess("test", f"--module={vmfb}", f"--static_library={obj}")
    assert rc == 0, out + err
    assert "[  PASSED  ] 1 test." in out
    from vmrt.tools.test import run_tests
    assert run_tests(vmfb, static_libraries=[obj]).passed


@pytest.mark.parametrize("arch", ["x86_64", "riscv32"])
def test_dumped_dispatch_of_a_static_library_replays(arch, emulation, tmp_path):
    """--dump_dispatches writes the object as the executable; `vmrt
    executable` takes an object with one ``*_library_query`` (riscv32's
    needs the soft-float helpers there too)."""
    vmfb, obj = compile_static("simple_mul.mlir", arch)
    rc, _out, err = _vmrt(vmfb, [obj], [*SIMPLE_MUL, f"--dump_dispatches={tmp_path}"])
    assert rc == 0, err
    (case,) = tmp_path.iterdir()
    assert (case / "executable.so").read_bytes() == obj.read_bytes()
    proc = subprocess.run(["sh", str(case / "replay.sh")], capture_output=True, text=True,
                          env={**os.environ, "VMRT": f"{sys.executable} -m vmrt"}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("[SUCCESS]") == 3
    rc, out, err = vmrt_subprocess("executable", "list", str(obj))
    assert rc == 0, err
    assert out.startswith(f"executable 'simple_mul_dispatch_0' ({arch},")


def test_executable_load_of_an_object_without_a_query():
    from vmrt.hal.local.elf_executable import ElfExecutable
    data = compile_static("simple_mul.mlir", "x86_64")[1].read_bytes()
    with pytest.raises(vmrt.VmError, match="does not export 'iree_hal_executable_library_query'"):
        ElfExecutable.load(data.replace(b"_library_query", b"_library_qu3ry"))


def test_mutated_objects_end_in_vm_errors(emulation):
    """400 byte-mutated static libraries (fixed seed; aarch64, riscv32, arm),
    registered and made into executables emulated: each either works or
    ends in a VmError, never anything else.  The elfkit-level fuzz target is
    fuzz/targets.py ``obj``."""
    import random

    from fuzz.run import mutate
    from vmrt.hal.local.plugins.manager import PluginManager
    from vmrt.hal.local.static_library import StaticLibraryLoader
    seeds = [compile_static("simple_mul.mlir", a)[1].read_bytes()
             for a in ("aarch64", "riscv32", "arm")]
    rng = random.Random(11)
    loaded = 0
    with PluginManager(backend="emulated") as mgr:
        for _ in range(400):
            try:
                static = StaticLibraryLoader([mutate(rng, rng.choice(seeds))], plugins=mgr,
                                             backend="emulated")
            except vmrt.VmError as e:
                assert "<static library 0>" in str(e) or "executable '" in str(e), str(e)
                continue
            try:
                for name in list(static.libraries):
                    static.load(name.encode() + b"\0").close()
                loaded += 1
            except vmrt.VmError:
                pass
            finally:
                static.close()
    assert loaded > 10          # the mutations reach the queries, not only the parser
