"""vmrt's own .npy reader and writer (vmrt.tools.npy) against numpy's, and
``vmrt run`` staying free of numpy for the element types it handles."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests.vmrt.vmrt_testutil import vmrt_run
from vmrt.hal.buffer_view import BufferView
from vmrt.tools.npy import npy_bytes, read_npy

REPO = Path(__file__).resolve().parents[3]

PLAIN = [(np.bool_, "i1"), (np.int8, "si8"), (np.uint8, "ui8"), (np.int16, "si16"),
         (np.uint16, "ui16"), (np.int32, "si32"), (np.uint32, "ui32"), (np.int64, "si64"),
         (np.uint64, "ui64"), (np.float16, "f16"), (np.float32, "f32"), (np.float64, "f64")]
SHAPES = [(), (0,), (5,), (2, 3), (1, 28, 28, 1), (3, 0, 2), (12345678901, 0)]


def _sample(dtype, shape) -> np.ndarray:
    rng = np.random.default_rng(sum(shape) + 7)
    n = int(np.prod(shape))
    raw = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8)
    arr = raw.view(dtype).reshape(shape)
    return (arr != 0) if dtype is np.bool_ else arr


@pytest.mark.parametrize("dtype,name", PLAIN, ids=[n for _, n in PLAIN])
def test_reads_what_numpy_writes(dtype, name):
    for shape in SHAPES:
        arr = _sample(dtype, shape)
        fh = io.BytesIO()
        np.save(fh, arr)
        fh.write(b"tail")
        fh.seek(0)
        view = _read(fh)
        assert view is not None and view.element_type == name and view.shape == shape
        assert bytes(view.storage) == arr.tobytes()
        assert view.address is not None and view.address % 64 == 0
        assert fh.read() == b"tail"                 # the stream is left after the array


def _read(fh: io.BytesIO) -> BufferView | None:
    """read_npy over a real file (it checks the data against the file's size)."""
    import tempfile
    with tempfile.TemporaryFile() as f:
        f.write(fh.getvalue())
        f.seek(fh.tell())
        view = read_npy(f)
        fh.seek(f.tell())
    return view


@pytest.mark.parametrize("dtype,name", PLAIN, ids=[n for _, n in PLAIN])
def test_writes_what_numpy_writes(dtype, name):
    for shape in SHAPES:
        arr = _sample(dtype, shape)
        want = io.BytesIO()
        np.save(want, arr.astype(np.uint8) if name == "i1" else arr)   # i1 prints as bytes
        assert npy_bytes(name, shape, arr.tobytes()) == want.getvalue()


def test_leaves_other_files_to_numpy():
    cases = [np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
             np.arange(4, dtype=">i4"), np.arange(3, dtype=np.complex64),
             np.arange(3).astype(ml_dtypes.bfloat16)]
    for arr in cases:
        fh = io.BytesIO()
        np.save(fh, arr)
        fh.seek(0)
        assert _read(fh) is None and fh.tell() == 0
    whole = io.BytesIO()
    np.save(whole, np.arange(100, dtype=np.int32))
    short = io.BytesIO(whole.getvalue()[:-4])        # numpy words the truncation
    assert _read(short) is None and short.tell() == 0
    assert _read(io.BytesIO(b"\x93NUMPY\x01\x00\x10\x00{'descr': 1}    \n")) is None
    assert npy_bytes("bf16", (2,), bytes(4)) is None and npy_bytes("i4", (2,), b"\0") is None


def test_run_reads_and_writes_npy_like_numpy(compile_mlir, tmp_path):
    prog = compile_mlir("""
func.func @f(%a: tensor<?x?xf16>, %b: tensor<?xi1>, %c: tensor<?xbf16>)
    -> (tensor<?x?xf16>, tensor<?xi1>, tensor<?xbf16>) {
  return %a, %b, %c : tensor<?x?xf16>, tensor<?xi1>, tensor<?xbf16>
}""", "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=vmvx",
                        name="npy_f16")
    a = (np.arange(6, dtype=np.float16).reshape(2, 3) - 2.5) / 3
    b = np.array([True, False, True])
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    outs = [tmp_path / f"o{i}.npy" for i in range(3)]
    rc, out, err = vmrt_run(f"--module={prog}", "--function=f", f"--input=@{tmp_path / 'a.npy'}",
                            f"--input=@{tmp_path / 'b.npy'}", "--input=2xbf16=1.00390625 -3",
                            *[f"--output=@{o}" for o in outs])
    assert rc == 0, err
    want = io.BytesIO()
    np.save(want, a)
    assert outs[0].read_bytes() == want.getvalue()
    assert np.load(outs[1]).tolist() == [1, 0, 1]
    want = io.BytesIO()                                 # bf16: numpy writes it
    np.save(want, np.array([1.0, -3.0], ml_dtypes.bfloat16))  # (1 + 2**-8 rounds to even)
    assert outs[2].read_bytes() == want.getvalue()


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_device_run_imports_no_numpy(hal_compile, tmp_path, arch):
    """A --device run (native, or emulated for aarch64) with .npy input and
    output imports numpy nowhere but, for large relocation tables, in
    elfkit's loader."""
    prog = hal_compile("chain.mlir", arch)
    np.save(tmp_path / "a.npy", np.arange(512, dtype=np.float32).reshape(16, 32) / 512)
    np.save(tmp_path / "b.npy", np.ones((32, 16), np.float32))
    probe = ("import builtins, sys, runpy\n"
             "seen = set()\n"
             "real = builtins.__import__\n"
             "def spy(name, g=None, *a, **k):\n"
             "    who = (g or {}).get('__name__', '')\n"
             "    if name.split('.')[0] == 'numpy' and not who.startswith('numpy'):\n"
             "        seen.add(who)\n"
             "    return real(name, g, *a, **k)\n"
             "builtins.__import__ = spy\n"
             "sys.argv = ['vmrt'] + sys.argv[1:]\n"
             "try:\n"
             "    runpy.run_module('vmrt', run_name='__main__')\n"
             "finally:\n"
             "    print('IMPORTERS', *sorted(seen), file=sys.stderr)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", probe, "run", f"--module={prog}",
                           "--device=local-sync", f"--input=@{tmp_path / 'a.npy'}",
                           f"--input=@{tmp_path / 'b.npy'}", f"--output=@{tmp_path / 'o.npy'}"],
                          capture_output=True, text=True, timeout=120, env=env)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("IMPORTERS")][-1]
    importers = line.split()[1:]
    assert proc.returncode == 0, proc.stderr
    # (importlib's own frames import what an importer's from-import names)
    assert all(m.startswith(("elfkit.loader", "importlib")) for m in importers), importers
    got = np.load(tmp_path / "o.npy")
    a = np.arange(512, dtype=np.float64).reshape(16, 32) / 512
    m = a @ np.ones((32, 16))
    np.testing.assert_allclose(got, (m.T @ m).max(axis=1), rtol=1e-5)
