"""ONNX's backend node tests as a conformance corpus for vmrt.

The ``onnx`` wheel ships the node tests' generators (``onnx.backend.test.
case.node``), not their data, so :func:`node_dir` writes them once, seeded,
in the layout of ONNX's repository (``<test>/model.onnx``,
``<test>/test_data_set_0/input_<i>.pb`` / ``output_<i>.pb``) under
``build/onnx_conformance/node-<onnx version>/``.  Each case then goes the
way users take it: ``iree-import-onnx model.onnx -o m.mlir``, ``iree-compile``
for a CPU (IREE_TARGET_FLAGS), and runs with ``vmrt.load``; on x86_64 the same
``.vmfb`` runs on ``iree.runtime`` too.  Every stage's result, failures
included, is cached under ``build/onnx_conformance/`` keyed by its input, the
flags and the tool's version, so reruns are cheap and runs in parallel share
the work (files are written aside and renamed into place).

``python -m tests.vmrt.onnx.corpus`` runs the whole corpus (see
:mod:`tests.vmrt.onnx.run_corpus`); tests/vmrt/onnx/test_onnx_nodes.py runs a
fixed sample."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, cache_key
from tests.vmrt.onnx.foreign_iree import ForeignIree, ForeignIreeError, foreign_iree

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / "build" / "onnx_conformance"
ARCHES = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")
#: iree-compile's flags besides the CPU's: f64 stays f64 (by default IREE
#: demotes f64 to f32 storage, and a model with an f64 result then fails
#: in IREE's own runtime: "buffer view byte length 96 exceeds backing buffer
#: byte length 48")
FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-input-demote-f64-to-f32=false"]
#: ONNX's backend-test tolerances (onnx.backend.test.case.node.expect)
RTOL, ATOL = 1e-3, 1e-7


class StageError(Exception):
    """A case stopped before vmrt ran it: ``stage`` is ``unsupported``,
    ``import`` or ``compile``; the message says why."""

    def __init__(self, stage: str, reason: str):
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    tmp.replace(path)


@cache
def onnx_version() -> str:
    import onnx
    return str(onnx.__version__)


@cache
def compiler_version() -> str:
    return subprocess.run(["iree-compile", "--version"], capture_output=True, text=True,
                          timeout=60).stdout


@cache
def importer_version() -> str:
    from importlib.metadata import version
    return version("iree-base-compiler")


# -- the node tests ------------------------------------------------------------
_GENERATE = """
import json, os, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
np.random.seed(0)
from onnx import numpy_helper, TensorProto
from onnx.backend.test.case import node
out = sys.argv[1]
index = {}
for case in node.collect_testcases():
    d = os.path.join(out, case.name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    g = case.model.graph
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    base = case.name.split("_expanded")[0]
    index[case.name] = {"ops": sorted({n.op_type for n in g.node}), "base": base,
                        "expanded": base != case.name, "rtol": case.rtol, "atol": case.atol}
    ins, outs = case.data_sets[0]
    bad = [v.name for v in list(g.input) + list(g.output) if not v.type.HasField("tensor_type")]
    if bad:
        index[case.name]["unsupported"] = "non-tensor value(s) " + ", ".join(bad) + " (sequence, optional or map)"
        continue
    for kind, vals, infos in (("input", ins, g.input), ("output", outs, g.output)):
        for j, (v, info) in enumerate(zip(vals, infos)):
            t = v if isinstance(v, TensorProto) else numpy_helper.from_array(v, info.name)
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{j}.pb"), "wb") as f:
                f.write(t.SerializeToString())
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump(index, f, indent=0, sort_keys=True)
"""


def node_dir() -> Path:
    """The folder of ONNX's node tests (generated on first use, ~20 s)."""
    root = CACHE / f"node-{onnx_version()}"
    if (root / "index.json").is_file():
        return root
    tmp = root.with_name(f"{root.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-c", _GENERATE, str(tmp)], capture_output=True,
                          text=True, timeout=900)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"generating ONNX's node tests failed:\n{proc.stderr[-3000:]}")
    try:
        os.rename(tmp, root)
    except OSError:             # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return root


@cache
def index() -> dict[str, dict[str, Any]]:
    """test name -> ops, base test, tolerances, and why it is unsupported (if it is)."""
    data: dict[str, dict[str, Any]] = json.loads((node_dir() / "index.json").read_text())
    return data


def family(name: str) -> str:
    """The op a test is about: the node of the base (unexpanded) test."""
    info = index()[name]
    base = index().get(info["base"], info)
    return "+".join(base["ops"])


def _read_tensors(folder: Path, kind: str) -> list[Any]:
    import onnx
    from onnx import numpy_helper
    out = []
    j = 0
    while (folder / f"{kind}_{j}.pb").is_file():
        t = onnx.TensorProto()
        t.ParseFromString((folder / f"{kind}_{j}.pb").read_bytes())
        out.append(numpy_helper.to_array(t))
        j += 1
    return out


@dataclass
class Case:
    name: str
    model: Path
    inputs: list[Any]
    expected: list[Any]
    rtol: float
    atol: float


def load_case(name: str) -> Case:
    info = index()[name]
    if "unsupported" in info:
        raise StageError("unsupported", info["unsupported"])
    d = node_dir() / name
    data = d / "test_data_set_0"
    inputs, expected = _read_tensors(data, "input"), _read_tensors(data, "output")
    for v in inputs + expected:
        if v.dtype == object:
            raise StageError("unsupported", "string tensors (IREE has no string type)")
    return Case(name, d / "model.onnx", inputs, expected, info["rtol"], info["atol"])


# -- import and compile (cached, failures too) -------------------------------------
def _cached_step(out: Path, err: Path, stage: str, cmd: list[str]) -> Path:
    if out.is_file():
        return out
    if err.is_file():
        raise StageError(stage, err.read_text())
    tmp = out.with_name(f"{out.stem}.tmp-{os.getpid()}{out.suffix}")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run([*cmd, "-o", str(tmp)], capture_output=True, text=True,
                              timeout=900)
    except subprocess.TimeoutExpired:
        proc = subprocess.CompletedProcess(cmd, 1, "", "timed out after 900 s")
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        reason = first_error(proc.stderr)
        write_atomic(err, reason.encode())
        raise StageError(stage, reason)
    tmp.replace(out)
    return out


def first_error(stderr: str) -> str:
    """The line of a tool's stderr that says what failed (its last Python
    exception line, or its first ``error:``)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln[:400]
    return (lines[-1] if lines else "failed without a message")[:400]


def import_model(case: Case) -> Path:
    """``iree-import-onnx model.onnx -o m.mlir``, cached."""
    key = cache_key(case.model.read_bytes(), importer_version())
    base = CACHE / "mlir" / key / case.name
    return _cached_step(base.with_suffix(".mlir"), base.with_suffix(".err"), "import",
                        ["iree-import-onnx", str(case.model)])


def compile_case(case: Case, arch: str) -> Path:
    """The case's program compiled by iree-compile for ``arch``, cached."""
    mlir = import_model(case)
    flags = FLAGS + IREE_TARGET_FLAGS[arch]
    key = cache_key(mlir.read_bytes(), *flags, compiler_version())
    base = CACHE / "vmfb" / key / f"{case.name}-{arch}"
    return _cached_step(base.with_suffix(".vmfb"), base.with_suffix(".err"), "compile",
                        ["iree-compile", *flags, str(mlir)])


# -- running and comparing ----------------------------------------------------------
def run_vmrt(vmfb: Path, inputs: list[Any]) -> list[Any]:
    import numpy as np

    import vmrt
    with vmrt.load(vmfb, device="local-sync") as prog:
        (fn,) = prog.exports
        out = prog[fn](*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [np.asarray(o) for o in outs]


def run_iree(vmfb: Path, inputs: list[Any]) -> list[Any]:
    import iree.runtime as rt
    import numpy as np
    mod = rt.load_vm_flatbuffer_file(str(vmfb), driver="local-sync")
    names = [n for n in mod.vm_module.function_names if not n.startswith("__") and "$" not in n]
    (fn,) = names
    out = mod[fn](*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [np.asarray(o.to_host() if hasattr(o, "to_host") else o) for o in outs]


def mismatch(got: list[Any], expected: list[Any], rtol: float, atol: float) -> str | None:
    """ONNX's comparison (onnx.backend.test.runner's assert_similar_outputs):
    the count, then per output the shape, the dtype and allclose; None if equal."""
    import numpy as np
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        if e.dtype.kind == "u" and g.dtype.kind == "i" and g.dtype.itemsize == e.dtype.itemsize:
            # IREE's ABI types ONNX's uintN results as signless iN, which
            # numpy (iree.runtime and vmrt alike) reads as intN: same bits
            g = g.view(e.dtype)
        if g.shape != e.shape:
            return f"output {i}: shape {g.shape}, expected {e.shape}"
        if g.dtype != e.dtype:
            return f"output {i}: dtype {g.dtype}, expected {e.dtype}"
        r = rtol
        if g.dtype.name == "bfloat16":
            r = max(rtol, 2 ** -6)
        if g.dtype.name in ("bfloat16",) or g.dtype.name.startswith("float8") \
                or g.dtype.name.startswith("float4"):
            g, e = g.astype(np.float32), e.astype(np.float32)
        try:
            np.testing.assert_allclose(g, e, rtol=r, atol=atol)
        except AssertionError as exc:
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            return f"output {i}: " + " ".join(lines[1:4])[:300]
    return None


def same_bits(a: list[Any], b: list[Any]) -> str | None:
    """None when vmrt's outputs equal IREE's bit for bit."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
            return f"output {i} differs from IREE's"
    return None


@dataclass
class Outcome:
    """What happened to one case on one CPU.  ``stage`` is one of
    ``unsupported``, ``import``, ``compile`` (stopped before running),
    ``iree-error`` / ``iree-mismatch`` (IREE's runtime fails it: x86_64 only),
    ``vmrt-error`` / ``vmrt-mismatch`` / ``vmrt-differs`` (vmrt fails it, or
    differs from IREE's bits), ``pass``."""

    name: str
    arch: str
    stage: str
    detail: str = ""

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "arch": self.arch, "stage": self.stage,
                           "detail": self.detail})


def _first_line(e: Exception) -> str:
    """An error's first line and its ``note:`` lines (vmrt's fault reports
    put the register dump and disassembly in between)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines()]
    notes = [ln for ln in lines[1:] if ln.startswith("note:")]
    return " ".join((lines[:1] or [type(e).__name__]) + notes)[:800]


def run_case(name: str, arch: str, with_iree: bool | None = None,
             foreign: ForeignIree | None = None) -> Outcome:
    """Import, compile and run one case on ``arch`` (and on IREE's runtime
    first when ``with_iree``, by default on x86_64; on another CPU, on IREE's
    runtime for it under qemu-user: ``foreign``, by default the one
    :func:`foreign_iree` finds, if any)."""
    if with_iree is None:
        with_iree = arch == "x86_64"
    try:
        case = load_case(name)
        vmfb = compile_case(case, arch)
    except StageError as e:
        return Outcome(name, arch, e.stage, e.reason)
    if foreign is None and not with_iree:
        foreign = foreign_iree(arch)
    if foreign is not None:
        return run_against(case, vmfb, foreign)
    ref = None
    if with_iree:
        try:
            ref = run_iree(vmfb, case.inputs)
        except Exception as e:  # noqa: BLE001 - any failure of IREE's runtime is a result
            return Outcome(name, arch, "iree-error", _first_line(e))
        bad = mismatch(ref, case.expected, case.rtol, case.atol)
        if bad:
            return Outcome(name, arch, "iree-mismatch", bad)
    try:
        got = run_vmrt(vmfb, case.inputs)
    except Exception as e:  # noqa: BLE001 - any failure of vmrt is a result
        return Outcome(name, arch, "vmrt-error", f"{type(e).__name__}: {_first_line(e)}")
    bad = mismatch(got, case.expected, case.rtol, case.atol)
    if bad:
        return Outcome(name, arch, "vmrt-mismatch", bad)
    if ref is not None:
        bad = same_bits(got, ref)
        if bad:
            return Outcome(name, arch, "vmrt-differs", bad)
    return Outcome(name, arch, "pass")


def run_against(case: Case, vmfb: Path, iree: ForeignIree) -> Outcome:
    """One case on an emulated CPU with IREE's runtime for that CPU (under
    qemu) as the oracle.  IREE runs first (``iree-error`` if it fails);
    vmrt then runs whatever IREE's outputs are, and must equal them byte
    for byte (``vmrt-error``, ``vmrt-differs`` otherwise, even where IREE
    disagrees with ONNX: IREE's code for that CPU computes those bytes);
    ``iree-mismatch`` when both agree but differ from ONNX."""
    name, arch = case.name, iree.arch
    try:
        ref = iree.run(vmfb, name, case.inputs, case.expected)
    except ForeignIreeError as e:
        return Outcome(name, arch, "iree-error", str(e))
    iree_bad = mismatch(ref, case.expected, case.rtol, case.atol)
    try:
        got = run_vmrt(vmfb, case.inputs)
    except Exception as e:  # noqa: BLE001 - any failure of vmrt is a result
        return Outcome(name, arch, "vmrt-error", f"{type(e).__name__}: {_first_line(e)} "
                       f"(IREE's {arch} runtime ran it)")
    bad = same_bits(got, ref)
    if bad:
        vs_onnx = mismatch(got, case.expected, case.rtol, case.atol) or "matches"
        return Outcome(name, arch, "vmrt-differs",
                       f"{bad}; vmrt vs ONNX: {vs_onnx}; IREE vs ONNX: {iree_bad or 'matches'}")
    if iree_bad:
        return Outcome(name, arch, "iree-mismatch",
                       f"{iree_bad} (vmrt's outputs equal IREE's {arch} bytes)")
    return Outcome(name, arch, "pass")


if __name__ == "__main__":
    from tests.vmrt.onnx.run_corpus import main
    sys.exit(main())
