"""System-library executables (issue 24 item 5): ``iree-compile
--iree-llvmcpu-link-embedded=false`` links each executable as a normal shared
library (format ``system-elf-<arch>``) whose dispatches call the C library
(``fmaf``, ``floorf``, ``fmodf`` on a generic x86_64).  IREE dlopen()s it and
the platform loader binds those calls to the host's libm; vmrt loads it with
elfkit and binds them to the same host libraries.

Checked against IREE itself: ``vmrt run`` prints byte for byte what
``iree-run-module`` prints for every function on awkward f32 values
(denormals, infinities, NaNs, huge numbers, an fma whose rounding differs
from a multiply-add), ``vmrt.load`` returns bit for bit the ``.npy`` files
iree-run-module writes, and the same program compiled embedded gives the
same bits.  A system library whose code would be emulated (an aarch64 one,
linked here with zig's ld.lld, or an x86_64 one on an emulated plugin
manager) cannot have its libc/libm calls served and gets one clear error;
one without such calls runs emulated.  IREE's debug footer is stripped;
truncated libraries end in one ExecutableError.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

import elfkit
import vmrt
from elfkit.arch import host
from tests.vmrt.hal.hal_testutil import CACHE, iree_run, run_args, vmrt_run
from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, require_tool
from vmrt.errors import ExecutableError, StatusCode
from vmrt.hal.local.elf_executable import ElfExecutable
from vmrt.hal.local.loader import ExecutableLoader
from vmrt.hal.local.plugins.manager import PluginManager
from vmrt.hal.local.plugins.system import host_libraries

pytestmark = pytest.mark.skipif(getattr(host(), "name", None) != "x86_64",
                                reason="compares with iree-run-module on an x86_64 host")

PROGRAM = """
func.func @exp(%a: tensor<16xf32>) -> tensor<16xf32> {
  %r = math.exp %a : tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @tanh(%a: tensor<16xf32>) -> tensor<16xf32> {
  %r = math.tanh %a : tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @fma(%a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>) -> tensor<16xf32> {
  %r = math.fma %a, %b, %c : tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @powf(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %r = math.powf %a, %b : tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @erf(%a: tensor<16xf32>) -> tensor<16xf32> {
  %r = math.erf %a : tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @log1p(%a: tensor<16xf32>) -> tensor<16xf32> {
  %r = math.log1p %a : tensor<16xf32>
  return %r : tensor<16xf32>
}
func.func @remf(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %r = arith.remf %a, %b : tensor<16xf32>
  return %r : tensor<16xf32>
}
"""

#: an aarch64 system library that calls libm (``fmodf``)
REMF = """
func.func @remf(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %r = arith.remf %a, %b : tensor<16xf32>
  return %r : tensor<16xf32>
}
"""
#: an aarch64 system library that needs nothing from the C library
EXP = PROGRAM.split("func.func @tanh")[0]

_E = 2.0 ** -12
#: awkward f32 values: signed zeros, denormals, infinities, NaN, overflow and
#: underflow of exp, huge and tiny numbers, and (a*b+c at index 15) an fma
#: whose fused result differs from a rounded multiply and add
A = [0.0, -0.0, 1.0, -1.0, 1e-40, -3e-39, np.inf, -np.inf, np.nan, 88.7, 89.0, -104.0,
     1e30, -1e30, 0.5, 1 + _E]
B = [2.0, 0.5, 3.0, -0.0, 2.0, 1e-40, 1.0, 2.0, -1.0, 0.5, -2.0, 3.0, -0.5, 1e-3, np.inf,
     1 - _E]
C = [1e-38, -1e-38, np.inf, -np.inf, np.nan, 1e-40, 0.0, 1.0, 2.0, -3.0, 1e30, -1e30, 7.0,
     -0.0, 3e38, -1.0]
ARGS = {"exp": "a", "tanh": "a", "fma": "abc", "powf": "ab", "erf": "a", "log1p": "a",
        "remf": "ab"}
VALUES = {"a": A, "b": B, "c": C}

SYSTEM = "--iree-llvmcpu-link-embedded=false"


class Built:
    def __init__(self, out: Path):
        self.vmfb = out / "program.vmfb"
        libs = sorted((out / "bin").glob("*.so"))
        assert len(libs) == 1, libs
        self.library = libs[0]


def _build(src: str, arch: str, extra: list[str], linker: bool = False) -> Built:
    """``src`` compiled for ``arch`` with ``extra`` flags, its dispatch library
    dumped; cached under build/vmrt_hal keyed by the source, the flags and
    the compiler version.  ``linker``: link with zig's ld.lld (the host
    ``ld`` links only host libraries)."""
    exe = require_tool("iree-compile", "iree-base-compiler")
    flags = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             *IREE_TARGET_FLAGS[arch], *extra]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    key = hashlib.sha256("\0".join([src, *flags, version, str(linker)]).encode()).hexdigest()
    out = CACHE / "system_library" / key[:16]
    if (out / "complete").is_file():
        return Built(out)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "bin").mkdir(parents=True)
    (tmp / "program.mlir").write_text(src)
    if linker:
        pytest.importorskip("ziglang")
        ld = tmp / "ld"
        ld.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ziglang ld.lld "$@"\n')
        ld.chmod(0o755)
        flags.append(f"--iree-llvmcpu-system-linker-path={ld}")
    proc = subprocess.run([exe, str(tmp / "program.mlir"), *flags,
                           f"--iree-hal-dump-executable-binaries-to={tmp / 'bin'}",
                           "-o", str(tmp / "program.vmfb")],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"iree-compile for {arch} {extra} failed:\n{proc.stderr}")
    (tmp / "complete").write_text("ok\n")
    try:
        os.rename(tmp, out)
    except OSError:              # another session finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return Built(out)


@pytest.fixture(scope="module")
def system() -> Built:
    return _build(PROGRAM, "x86_64", [SYSTEM])


@pytest.fixture(scope="module")
def embedded() -> Built:
    return _build(PROGRAM, "x86_64", [])


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("syslib_inputs")
    paths = {}
    for k, v in VALUES.items():
        paths[k] = d / f"{k}.npy"
        np.save(paths[k], np.array(v, np.float32))
    return paths


def _arrays(fn: str) -> list[np.ndarray]:
    return [np.array(VALUES[k], np.float32) for k in ARGS[fn]]


def _undefined(path: Path) -> set[str]:
    with open(path, "rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        return {s.name for s in dynsym.iter_symbols()
                if s.name and s["st_shndx"] == "SHN_UNDEF"}


def test_system_library_calls_libm(system, embedded):
    """The premise: a shared library calling libm, where the embedded build
    of the same program calls nothing."""
    assert system.library.name.endswith("_system_elf_x86_64.so")
    assert {"fmaf", "floorf", "fmodf"} <= _undefined(system.library)
    assert _undefined(embedded.library) == set()


@pytest.mark.parametrize("device", ["local-sync", "local-task"])
@pytest.mark.parametrize("fn", sorted(ARGS))
def test_vmrt_run_matches_iree_run_module(system, inputs, fn, device):
    args = run_args(system.vmfb, fn, [f"@{inputs[k]}" for k in ARGS[fn]], device=device)
    ours = vmrt_run(args)
    theirs = iree_run(require_tool("iree-run-module", "iree-base-runtime"), args)
    assert theirs.rc == 0, theirs.stderr
    assert ours.rc == 0, ours.stderr
    assert ours.stdout == theirs.stdout


def _bits(x: np.ndarray) -> list[int]:
    return np.ascontiguousarray(x, np.float32).view(np.uint32).tolist()


def _iree_bits(vmfb: Path, fn: str, inputs: dict[str, Path], out: Path) -> list[int]:
    tool = require_tool("iree-run-module", "iree-base-runtime")
    run = iree_run(tool, [*run_args(vmfb, fn, [f"@{inputs[k]}" for k in ARGS[fn]]),
                          f"--output=@{out}"])
    assert run.rc == 0, run.stderr
    return _bits(np.load(out))


def _differ(x: list[int], y: list[int]) -> list[int]:
    return [i for i, (p, q) in enumerate(zip(x, y)) if p != q]


def test_vmrt_load_bits_match_iree_and_embedded(system, embedded, inputs, tmp_path):
    """Every result bit for bit: vmrt.load of each build = the .npy
    iree-run-module writes for it; and the system build = the embedded one,
    except where IREE's two builds differ too (the host's fmodf of a
    denormal by a denormal under DAZ is NaN, the embedded fmodf's an exact
    remainder)."""
    with vmrt.load(system.vmfb) as sys_prog, vmrt.load(embedded.vmfb) as emb_prog:
        for fn in sorted(ARGS):
            want_sys = _iree_bits(system.vmfb, fn, inputs, tmp_path / f"{fn}-s.npy")
            want_emb = _iree_bits(embedded.vmfb, fn, inputs, tmp_path / f"{fn}-e.npy")
            got_sys = _bits(sys_prog[fn](*_arrays(fn)))
            got_emb = _bits(emb_prog[fn](*_arrays(fn)))
            assert got_sys == want_sys, fn
            assert got_emb == want_emb, fn
            assert _differ(got_sys, got_emb) == _differ(want_sys, want_emb), fn
            assert len(_differ(got_sys, got_emb)) <= 1, fn


def test_fma_is_fused(system):
    """The libm fmaf really is called: (1+e)(1-e) - 1 = -e**2 fused (a
    rounded multiply would give 0)."""
    with vmrt.load(system.vmfb) as prog:
        r = prog["fma"](*_arrays("fma"))
    assert r[15] == np.float32(-(_E * _E))


def test_loader_describes_host_imports(system):
    with ExecutableLoader() as loader:
        exe = loader.load(system.library.read_bytes(), executable_format="system-elf-x86_64")
        assert exe.backend == "native"
        assert {e.name for e in exe.exports} >= {"exp_dispatch_0_elementwise_16_f32"}
        addr = exe.module.symbol("iree_hal_executable_library_query")
        assert exe.module.base <= addr < exe.module.base + exe.module.size
        # the same bytes as an embedded executable: libm is nobody's to give
        with pytest.raises(ExecutableError, match="fmaf"):
            loader.load(system.library.read_bytes(), executable_format="embedded-elf-x86_64")


def _footer(lib_size: int, dbg_off: int, dbg_size: int) -> bytes:
    return struct.pack("<8sIIQQQQ", b"IREEDBG\0", 0, 0, 0, lib_size, dbg_off, dbg_size)


def test_debug_footer(system):
    """IREE's optional footer: the library is the first library_size bytes;
    a footer pointing past the data is OUT_OF_RANGE."""
    lib = system.library.read_bytes()
    debug = b"not a debug database" * 10
    data = lib + b"\0" * 3 + debug + _footer(len(lib), len(lib) + 3, len(debug))
    a = np.array(A, np.float32)
    with ExecutableLoader() as loader:
        exe = loader.load(data, executable_format="system-elf-x86_64")
        assert exe.data == lib
        out = np.zeros(16, np.float32)
        exe.dispatch("exp_dispatch_0_elementwise_16_f32", (1, 1, 1), [a, out])
        with vmrt.load(system.vmfb) as prog:
            assert _bits(out) == _bits(prog["exp"](a))
        bad = lib + _footer(len(lib) + 1, 0, 0)
        with pytest.raises(ExecutableError, match="debug footer") as e:
            loader.load(bad, executable_format="system-elf-x86_64")
        assert e.value.code == StatusCode.OUT_OF_RANGE


@pytest.mark.parametrize("keep", [0, 3, 16, 63, 64, 200, 0x650, 0x1000, 0x3000, -1])
def test_truncated_system_library(system, keep):
    lib = system.library.read_bytes()
    cut = lib[:keep] if keep >= 0 else lib[:len(lib) // 2]
    with ExecutableLoader() as loader, pytest.raises(ExecutableError) as e:
        loader.load(cut, executable_format="system-elf-x86_64")
    msg = str(e.value)
    assert "\n" not in e.value.message.split(":\n")[0]
    assert "Traceback" not in msg


def test_truncated_system_library_in_a_module(system, inputs, tmp_path):
    """``vmrt run`` of a module whose system library lost its tail: one line
    on stderr, no output."""
    vmfb = system.vmfb.read_bytes()
    lib = system.library.read_bytes()
    at = vmfb.find(lib[:4096])
    assert at > 0
    broken = bytearray(vmfb)
    broken[at + 1024:at + len(lib)] = bytes(len(lib) - 1024)
    path = tmp_path / "broken.vmfb"
    path.write_bytes(bytes(broken))
    run = vmrt_run(run_args(path, "exp", [f"@{inputs['a']}"]))
    assert run.rc != 0
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "executable" in run.stderr


@pytest.fixture(scope="module")
def aarch64_remf() -> Built:
    return _build(REMF, "aarch64", [SYSTEM], linker=True)


def test_foreign_system_library_is_refused(aarch64_remf, inputs, emulation):
    """An aarch64 system library calling fmodf: one line naming the library's
    CPU and the libm import, no output."""
    assert "fmodf" in _undefined(aarch64_remf.library)
    with open(aarch64_remf.library, "rb") as f:
        assert ELFFile(f)["e_machine"] == "EM_AARCH64"
    run = vmrt_run(run_args(aarch64_remf.vmfb, "remf", [f"@{inputs['a']}", f"@{inputs['b']}"]))
    assert run.rc != 0
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.status.startswith("UNAVAILABLE; system library")
    assert "aarch64" in run.stderr and "fmodf" in run.stderr
    assert "--iree-llvmcpu-link-embedded=true" in run.stderr


def test_foreign_system_library_without_libc_runs_emulated(emulation):
    """An aarch64 system library that calls nothing from the C library needs
    no host library: it runs emulated, with the embedded build's results."""
    system = _build(EXP, "aarch64", [SYSTEM], linker=True)
    embedded = _build(EXP, "aarch64", [])
    assert _undefined(system.library) == set()
    a = np.array(A, np.float32)
    with vmrt.load(system.vmfb) as s, vmrt.load(embedded.vmfb) as e:
        assert _bits(s["exp"](a)) == _bits(e["exp"](a))
    with ExecutableLoader() as loader:
        exe = loader.load(system.library.read_bytes(), executable_format="system-elf-arm_64")
        assert (exe.arch.name, exe.backend) == ("aarch64", "emulated")


def test_host_system_library_on_an_emulated_manager(system, emulation):
    """The host's own system library emulated (as ``--gdb`` runs code): the
    host libm cannot serve emulated code, so the same clear error."""
    with PluginManager(backend="emulated") as mgr, pytest.raises(ExecutableError) as e:
        ElfExecutable.load(system.library, plugins=mgr, system=True)
    assert e.value.code == StatusCode.UNAVAILABLE
    msg = e.value.message
    assert "\n" not in msg
    assert "x86_64" in msg
    assert all(n in msg for n in ("fmaf", "floorf", "fmodf"))


def test_executable_load_without_a_manager(system):
    """``vmrt.Executable.load(path, system=True)`` alone: native, libm bound."""
    a = np.array(A, np.float32)
    b = np.array(B, np.float32)
    out = np.zeros(16, np.float32)
    with vmrt.Executable.load(system.library, system=True) as exe:
        assert exe.backend == "native"
        exe.dispatch("remf_dispatch_0_elementwise_16_f32", (1, 1, 1), [a, b, out])
    with vmrt.load(system.vmfb) as prog:
        assert _bits(out) == _bits(prog["remf"](a, b))


def test_host_libraries():
    """DT_NEEDED libraries first registered (searched last), the host's libm
    and libc after them; a library that cannot be opened is left out."""
    libs = host_libraries()
    assert libs and all(isinstance(x, elfkit.SystemLibrary) for x in libs)
    assert all(x.address(n) for x in libs[-1:] for n in ("malloc",))
    assert any(x.address("fmodf") for x in libs)
    assert host_libraries(["libvmrt-does-not-exist.so.9"]) == libs
    assert host_libraries(["/usr/lib/x86_64-linux-gnu/libm.so.6"]) == libs   # paths: never
    needed = host_libraries(["libm.so.6"])
    assert needed[0].name == "libm.so.6"
