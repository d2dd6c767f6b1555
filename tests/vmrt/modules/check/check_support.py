"""Helpers of the ``check`` module / ``vmrt test`` tests: compile MLIR with
the pip ``iree-compile`` into build/vmrt_check/<hash>/ (per arch), run
``vmrt test`` as a subprocess, and the oracle: the same program run by the
pip ``iree.runtime`` with a recording ``check`` module written with its
``PyModuleInterface`` (the pip packages do not ship iree-check-module), so
the values the expectations see under IREE are known."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.vmrt.iree_tools import IREE_TARGET_FLAGS

ROOT = Path(__file__).resolve().parents[4]
PROGRAMS = Path(__file__).resolve().parent / "programs"
CACHE = ROOT / "build" / "vmrt_check"

DEVICE_FLAGS = ["--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu"]


def compile_program(name: str, arch: str = "x86_64", extra: tuple[str, ...] = ()) -> Path:
    """programs/<name>.mlir compiled for ``arch`` (cached by source + flags)."""
    exe = shutil.which("iree-compile")
    if exe is None:
        pytest.skip("iree-compile is not installed (pip install iree-base-compiler)")
    source = (PROGRAMS / f"{name}.mlir").read_bytes()
    flags = [*DEVICE_FLAGS, *IREE_TARGET_FLAGS[arch], *extra]
    key = hashlib.sha256(source + "\0".join(flags).encode()).hexdigest()[:16]
    out = CACHE / key / f"{name}-{arch}.vmfb"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        proc = subprocess.run([exe, *flags, str(PROGRAMS / f"{name}.mlir"), "-o", str(tmp)],
                              capture_output=True, text=True)
        if proc.returncode:
            pytest.fail(f"iree-compile failed on {name}.mlir:\n{proc.stderr[-3000:]}")
        tmp.replace(out)
    return out


def vmrt_test(*args: str) -> subprocess.CompletedProcess:
    """``python -m vmrt test ARGS`` with this checkout on PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "vmrt", "test", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def normalize_times(text: str) -> str:
    return re.sub(r"\((\d+) ms( total)?\)", r"(N ms\2)", text)


_ORACLE = r'''
import base64, json, os, sys
import numpy as np
import iree.runtime as rt
path, names = sys.argv[1], sys.argv[2:]
calls = []
def view(ref):
    v = ref.deref(rt.HalBufferView)
    n = v.byte_length
    data = v.map().asarray([n], np.dtype("uint8")).tobytes() if n else b""
    return {"type": int(v.element_type), "shape": list(v.shape),
            "data": base64.b64encode(data).decode()}
class Check:
    def __init__(self, iface): pass
    def expect_true(self, x): calls.append(["expect_true", x])
    def expect_false(self, x): calls.append(["expect_false", x])
    def expect_all_true(self, dev, a): calls.append(["expect_all_true", view(a)])
    def expect_eq(self, dev, a, b): calls.append(["expect_eq", view(a), view(b)])
    def expect_almost_eq(self, dev, a, b, atol, rtol):
        calls.append(["expect_almost_eq", view(a), view(b), atol, rtol])
iface = rt.PyModuleInterface("check", Check)
for n, c in [("expect_true", "0i_v"), ("expect_false", "0i_v"), ("expect_all_true", "0rr_v"),
             ("expect_eq", "0rrr_v"), ("expect_almost_eq", "0rrrff_v")]:
    iface.export(n, c, getattr(Check, n))
cfg = rt.Config("local-sync")
main = rt.VmModule.mmap(cfg.vm_instance, path)
check = iface.create()
out = {}
for name in names:
    calls = []
    ctx = rt.VmContext(cfg.vm_instance, [cfg.default_vm_modules[0], check, main])
    rt.FunctionInvoker(ctx, cfg.device, main.lookup_function(name))()
    out[name] = calls
sys.stdout.write(json.dumps(out))
sys.stdout.flush()
os._exit(0)     # the pip bindings report leaks at exit
'''


def oracle_calls(vmfb: Path, names: list[str]) -> dict[str, list]:
    """function -> the check calls IREE's runtime makes, in order, with the
    buffer views as ``{"type", "shape", "data"}``."""
    try:
        import iree.runtime  # noqa: F401
    except ImportError:
        pytest.skip("iree.runtime is not installed (pip install iree-base-runtime)")
    proc = subprocess.run([sys.executable, "-c", _ORACLE, str(vmfb), *names],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, \
        f"IREE's runtime exited with {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def to_view(spec: dict):
    """An oracle buffer view as a vmrt BufferView."""
    import numpy as np

    from vmrt.hal.buffer_view import BufferView
    from vmrt.hal.element_types import dtype_of, element_type_name
    name = element_type_name(spec["type"])
    arr = np.frombuffer(base64.b64decode(spec["data"]), dtype_of(name)).reshape(spec["shape"])
    return BufferView(arr.copy(), name)


def expected_outcome(calls: list) -> tuple[list[tuple[str, str]], str | None]:
    """What IREE's check module makes of the recorded calls: the failures
    (function, message) and the error that stops the function (or None)."""
    from vmrt.errors import VmError
    from vmrt.modules.check import compare
    failures = []
    for call in calls:
        name, args = call[0], call[1:]
        try:
            if name in ("expect_true", "expect_false"):
                x = args[0] - (1 << 32) if args[0] >= 1 << 31 else args[0]
                msg = compare.expect_true_message(x, name == "expect_true")
            elif name == "expect_all_true":
                msg = compare.expect_all_true_message(to_view(args[0]))
            elif name == "expect_eq":
                msg = compare.expect_eq_message(to_view(args[0]), to_view(args[1]))
            else:
                msg = compare.expect_almost_eq_message(to_view(args[0]), to_view(args[1]),
                                                       args[2], args[3])
        except VmError as e:
            return failures, f"{e.code.name}; {e.message}"
        if msg is not None:
            failures.append((name, msg))
    return failures, None
