"""Elementwise transcendental math (exp, log, tanh, sigmoid, sin, cos, pow,
erf, fma) in dispatches compiled for every CPU, run by vmrt (foreign CPUs
emulated) and compared with the pip ``iree-run-module`` on the x86_64 build.

Issue 14 item 8: the arm and i386 builds "fault under emulation".  The cause
is the compiled code, not elfkit or vmrt: IREE expands these ops into
polynomials that use ``math.fma``; on a CPU without a fused multiply-add
instruction (armv7-a ``generic`` = VFPv3, i686 ``generic``) LLVM lowers
``llvm.fma.f32`` to a call to ``fmaf``, and iree-compile 3.13.0 resolves
that from the musl bitcode it links into 32-bit targets
(``libmusl_wasm32_generic.bc``), whose ``fmaf`` body is ``unreachable``.
The linked .so has a zero-byte ``fmaf``: every call runs into whatever
follows it (the zero padding after .text, or the next function: wrong
results without a fault).  64-bit targets link ``libmusl_wasm64_generic.bc``,
whose ``fmaf`` is real; aarch64, riscv64 (+d) and riscv32 (+f) have an FMA
instruction.  An armv7-a with VFPv4 (``+vfp4``: vfma) needs no ``fmaf`` and
runs correctly; i386 has no such option under unicorn (FMA3 needs AVX).

Builds are cached under build/vmrt_archmath/<hash>/.
"""
from __future__ import annotations

import hashlib
import io
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.vmrt.iree_tools import IREE_TARGET_FLAGS

ROOT = Path(__file__).resolve().parents[3]
CACHE = ROOT / "build" / "vmrt_archmath"

#: Builds: name -> (elfkit arch, iree-compile target flags).
BUILDS = {a: (a, f) for a, f in IREE_TARGET_FLAGS.items()}
BUILDS["arm+vfp4"] = ("arm", IREE_TARGET_FLAGS["arm"]
                      + ["--iree-llvmcpu-target-cpu-features=+vfp4"])

PROGRAM = """
func.func @math(%a: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %one = arith.constant dense<1.0> : tensor<8xf32>
  %exp = math.exp %a : tensor<8xf32>
  %log = math.log %a : tensor<8xf32>
  %tanh = math.tanh %a : tensor<8xf32>
  %neg = arith.negf %a : tensor<8xf32>
  %en = math.exp %neg : tensor<8xf32>
  %den = arith.addf %one, %en : tensor<8xf32>
  %sigmoid = arith.divf %one, %den : tensor<8xf32>
  %sin = math.sin %a : tensor<8xf32>
  %cos = math.cos %a : tensor<8xf32>
  %pow = math.powf %a, %a : tensor<8xf32>
  %erf = math.erf %a : tensor<8xf32>
  %fma = math.fma %a, %a, %one : tensor<8xf32>
  return %exp, %log, %tanh, %sigmoid, %sin, %cos, %pow, %erf, %fma : tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>
}
"""
INPUT = "--input=8xf32=0.1,0.5,1,1.5,2,3,-1,4"

needs_iree = pytest.mark.skipif(
    shutil.which("iree-compile") is None or shutil.which("iree-run-module") is None,
    reason="the pip IREE tools (iree-base-compiler/runtime) are not installed")


def _build(name: str) -> Path:
    """Compile PROGRAM for build ``name`` into a cache directory holding
    math.vmfb and the dispatch intermediates (ints/: .linked.ll, .s, ...)."""
    flags = BUILDS[name][1]
    version = subprocess.run(["iree-compile", "--version"], capture_output=True,
                             text=True).stdout
    key = hashlib.sha256("\0".join([PROGRAM, version, *flags]).encode()).hexdigest()[:16]
    out = CACHE / key
    vmfb = out / "math.vmfb"
    if vmfb.exists():
        return out
    tmp = out.with_name(key + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "math.mlir").write_text(PROGRAM)
    proc = subprocess.run(
        ["iree-compile", "--iree-hal-target-backends=llvm-cpu", *flags,
         f"--iree-hal-dump-executable-intermediates-to={tmp / 'ints'}",
         str(tmp / "math.mlir"), "-o", str(tmp / "math.vmfb")],
        capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"iree-compile failed for {name}:\n{proc.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _results(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if re.match(r"\s*\d+xf32=", ln)]


def _vmrt(vmfb: Path) -> tuple[int, str, str]:
    from vmrt.tools.main import main
    out, err = io.StringIO(), io.StringIO()
    rc = main(["run", "--device=local-sync", f"--module={vmfb}", "--function=math", INPUT],
              stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def oracle() -> list[str]:
    vmfb = _build("x86_64") / "math.vmfb"
    proc = subprocess.run(["iree-run-module", "--device=local-sync", f"--module={vmfb}",
                           "--function=math", INPUT], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = _results(proc.stdout)
    assert len(results) == 9
    return results


def _calls_empty_fmaf(build: Path) -> bool:
    """Whether the dispatch code calls ``fmaf`` and the linked-in fmaf is an
    ``unreachable`` body (zero bytes of code): the iree-compile 3.13.0 bug."""
    linked = "".join(p.read_text() for p in (build / "ints").glob("*.linked.ll"))
    asm = "".join(p.read_text() for p in (build / "ints").glob("*.s"))
    empty = re.search(r"define [^\n]*@fmaf\([^\n]*\{\n\s*unreachable\n\}", linked) is not None
    called = re.search(r"^\s*(call\w*|bl|blx|jal|call)\s+fmaf\b", asm, re.M) is not None
    return empty and called


@needs_iree
@pytest.mark.parametrize("name", ["x86_64", "aarch64", "riscv64", "riscv32", "arm+vfp4"])
def test_math_matches_iree_run_module(name, oracle):
    build = _build(name)
    assert not _calls_empty_fmaf(build)
    rc, out, err = _vmrt(build / "math.vmfb")
    assert rc == 0, err
    assert _results(out) == oracle


@needs_iree
@pytest.mark.parametrize("name", ["arm", "i386"])
def test_math_32bit_without_fma(name, oracle):
    """armv7-a generic / i686 generic: correct once iree-compile links a real
    fmaf; while it links the empty one, vmrt must stop with a fault that
    names the slide into zero bytes (never return results)."""
    build = _build(name)
    rc, out, err = _vmrt(build / "math.vmfb")
    if not _calls_empty_fmaf(build):
        assert rc == 0, err
        assert _results(out) == oracle
        return
    assert rc != 0 and not _results(out)
    assert "EmulationFault" in err and "the code at pc is zero bytes" in err, err
    pytest.xfail(f"iree-compile links a zero-byte fmaf (musl wasm32 bitcode) into {name} "
                 f"dispatches that call it; the code itself is broken")


# -- elfkit: a call into zero bytes is named in the fault ------------------------------------

_CALL_0x40 = {  # a call from the start of the page to page+0x40
    "x86_64": b"\xe8" + struct.pack("<i", 0x40 - 5),
    "i386": b"\xe8" + struct.pack("<i", 0x40 - 5),
    "aarch64": struct.pack("<I", 0x94000000 | (0x40 >> 2)),            # bl #0x40
    "arm": struct.pack("<I", 0xEB000000 | ((0x40 - 8) >> 2)),          # bl #0x40
    "riscv64": struct.pack("<I", 0x040000EF),                           # jal ra, 0x40
    "riscv32": struct.pack("<I", 0x040000EF),
}


@pytest.mark.parametrize("arch", list(_CALL_0x40))
def test_fault_names_slide_into_zero_bytes(arch):
    """Code that calls a zero-byte function faults later and elsewhere (a
    zero instruction's memory access, the end of the executable pages): the
    fault says where the zeros the pc is in begin, i.e. the called address."""
    from elfkit import EmulationFault
    from elfkit.exec.base import PROT_EXEC, PROT_READ
    from elfkit.exec.emulated import EmulatedMachine

    with EmulatedMachine(arch) as m:
        base = m.reserve(2 * 4096, 4096)
        trap = m.arch.trap_insn
        code = _CALL_0x40[arch] + m.arch.ret_insn
        code = (code + trap * (0x40 // len(trap)))[:0x40]
        m.write(base, code)
        m.protect(base, 4096, PROT_READ | PROT_EXEC)
        with pytest.raises(EmulationFault) as ei:
            m.call(base, "void()", ())
        assert f"the code at pc is zero bytes, and so is all code back to {base + 0x40:#x}" \
            in str(ei.value)
        # a fault in ordinary code carries no such note
        m.protect(base, 4096, PROT_READ | PROT_EXEC)
        with pytest.raises(EmulationFault) as ei:
            m.call(base + 0x3C - 0x3C % len(trap), "void()", ())
        assert "zero bytes" not in str(ei.value)
