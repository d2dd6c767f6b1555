"""The parameter file parsers against IREE's own reader: every entry of an
.irpa (made by iree.runtime and by iree-create-parameters), .gguf and
.safetensors file is where ``iree-dump-parameters`` says it is, with the
same length; files are mapped in ``file`` mode; linked archive headers,
splats at any offset, GGUF alignment and version 2, shape checks."""
from __future__ import annotations

import mmap
import re
import struct
import subprocess

import numpy as np
import pytest

import vmrt
from tests.vmrt.iree_tools import require_tool
from tests.vmrt.modules.io_parameters.conftest import VALUES
from tests.vmrt.modules.io_parameters.param_files import write_gguf, write_irpa, write_safetensors
from vmrt.modules.io_parameters import ParameterIndex
from vmrt.modules.io_parameters.entries import splat_bytes

ROW = re.compile(r"^\s+(\d+|-)\s+\|\s+(\d+|-)\s+\|\s+(\d+)\s+\|\s+`(.*)`$")


def iree_dump(path) -> dict[str, tuple[int, int]]:
    """key -> (file offset or -1 for a splat, length) per iree-dump-parameters."""
    exe = require_tool("iree-dump-parameters", "iree-base-runtime")
    out = subprocess.run([exe, f"--parameters={path}"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(4)] = (-1 if m.group(1) == "-" else int(m.group(1)), int(m.group(3)))
    return rows


def ours(path) -> dict[str, tuple[int, int]]:
    return {e.key: (e.offset, e.length) for e in ParameterIndex().load(path).entries.values()}


ARRAYS = {**VALUES["model"], "q": VALUES["quant"]["q"], "big": np.arange(3000, dtype=np.float32)}


@pytest.mark.parametrize("fmt", ["irpa", "gguf", "gguf64", "gguf_v2", "safetensors"])
def test_entries_match_iree_dump_parameters(tmp_path, fmt):
    path = tmp_path / f"p.{fmt.partition('6')[0].partition('_')[0]}"
    if fmt == "irpa":
        pytest.importorskip("iree.runtime")
        write_irpa(path, ARRAYS, {"splat": (40, b"\x01\x02\x03\x04")})
    elif fmt.startswith("gguf"):
        write_gguf(path, ARRAYS, alignment=64 if fmt == "gguf64" else 32,
                   version=2 if fmt == "gguf_v2" else 3)
    else:
        write_safetensors(path, ARRAYS, pad=3)
    assert ours(path) == iree_dump(path)
    for mode in ("file", "preload"):
        idx = ParameterIndex().load(path, mode)
        for key, arr in ARRAYS.items():
            assert bytes(idx.lookup(key).read(0, arr.nbytes)) == arr.tobytes()
        _addresses_are_the_datas(idx)


def _addresses_are_the_datas(idx) -> None:
    """The host address a parser gives an entry (which io_parameters.load
    imports as a buffer's memory) is that of the entry's own bytes, as numpy
    finds it."""
    for e in idx.entries.values():
        if e.data is not None and e.length:
            assert e.address == np.frombuffer(e.data, np.uint8).ctypes.data, e.key


def test_iree_create_parameters_archive(tmp_path):
    exe = require_tool("iree-create-parameters", "iree-base-runtime")
    path = tmp_path / "c.irpa"
    # (3.13's tool fails writing data entries with a fill pattern: zeroed data here)
    subprocess.run([exe, "--data=a=16xf32", "--data=b=3x5xi16", "--splat=c=8xf32=1.25",
                    f"--output={path}"], check=True, capture_output=True, timeout=60)
    assert ours(path) == iree_dump(path)
    idx = ParameterIndex("x").load(path)
    assert bytes(idx.lookup("b").read(0, 30)) == bytes(30)
    c = idx.lookup("c")
    assert c.is_splat and np.frombuffer(c.read(0, 32), np.float32).tolist() == [1.25] * 8


def test_file_mode_maps_preload_reads(tmp_path):
    path = write_safetensors(tmp_path / "m.safetensors", ARRAYS)
    mapped = ParameterIndex().load(path).lookup("big").data
    assert isinstance(mapped.obj, mmap.mmap) and mapped.readonly
    read = ParameterIndex().load(path, "preload").lookup("big").data
    assert not isinstance(read.obj, mmap.mmap) and read.readonly
    with pytest.raises(vmrt.ParameterError, match="parameter_mode= value 'mmap'"):
        ParameterIndex().load(path, "mmap")


def test_linked_archive_headers(tmp_path):
    """Two archives in one file, the first header linking to the second (the
    format's concatenation; IREE 3.13's parser rereads the first header
    there, so this is checked against the values written)."""
    pytest.importorskip("iree.runtime")
    a = write_irpa(tmp_path / "a.irpa", {"x": np.arange(4, dtype=np.float32)}).read_bytes()
    b = write_irpa(tmp_path / "b.irpa", {"y": np.arange(3, dtype=np.int32)},
                   {"z": (7, b"\x05")}).read_bytes()
    head = bytearray(a)
    struct.pack_into("<Q", head, 16, len(a))
    path = tmp_path / "ab.irpa"
    path.write_bytes(bytes(head) + b)
    idx = ParameterIndex().load(path)
    assert sorted(idx.entries) == ["x", "y", "z"]
    assert bytes(idx.lookup("y").read(0, 12)) == np.arange(3, dtype=np.int32).tobytes()
    assert idx.lookup("y").offset == len(a) + ours(tmp_path / "b.irpa")["y"][0]
    assert idx.lookup("z").read(0, 7) == b"\x05" * 7
    _addresses_are_the_datas(idx)
    struct.pack_into("<Q", head, 16, 0)             # a loop back to itself is refused
    path.write_bytes(bytes(head[:16]) + struct.pack("<Q", 0x10000) + bytes(head[24:]) + b)
    with pytest.raises(vmrt.ParameterError, match="linked IRPA header"):
        ParameterIndex().load(path)


def test_splat_reads_at_any_offset():
    pattern = bytes(range(1, 9))
    assert splat_bytes(pattern, 0, 10) == pattern + pattern[:2]
    assert splat_bytes(pattern, 5, 6) == bytes([6, 7, 8, 1, 2, 3])
    assert splat_bytes(pattern, 13, 3) == bytes([6, 7, 8])
    idx = ParameterIndex()
    idx.add_splat("s", 64, pattern)
    assert idx.lookup("s").read(60, 4) == bytes([5, 6, 7, 8])
    with pytest.raises(vmrt.ParameterError, match="range out of bounds"):
        idx.lookup("s").read(60, 5)
    with pytest.raises(vmrt.ParameterError, match="pattern of 3 bytes"):
        idx.add_splat("t", 9, b"abc")


def test_safetensors_shape_must_match_size(tmp_path):
    path = write_safetensors(tmp_path / "s.safetensors", {"a": np.zeros(4, np.float32)})
    raw = path.read_bytes().replace(b'"shape": [4]', b'"shape": [5]')
    path.write_bytes(raw)
    with pytest.raises(vmrt.ParameterError, match=r"tensor `a` is F32 of shape \[5\] \(20 bytes\)"
                       r" but its data_offsets span 16 bytes"):
        ParameterIndex().load(path)


def test_gguf_unknown_type_and_bad_alignment(tmp_path):
    path = write_gguf(tmp_path / "g.gguf", {"a": np.zeros(4, np.float32)})
    raw = bytearray(path.read_bytes())
    at = raw.index(b"general.alignment") + len(b"general.alignment")
    bad = bytes(raw[:at + 4]) + struct.pack("<I", 0) + bytes(raw[at + 8:])
    (tmp_path / "z.gguf").write_bytes(bad)
    with pytest.raises(vmrt.ParameterError, match="general.alignment"):
        ParameterIndex().load(tmp_path / "z.gguf")
    at = raw.rindex(b"\x01\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00") + 12
    struct.pack_into("<I", raw, at, 99)              # the tensor's ggml type
    path.write_bytes(bytes(raw))
    with pytest.raises(vmrt.ParameterError, match="GGML type 99") as e:
        ParameterIndex().load(path)
    assert e.value.code == vmrt.StatusCode.UNIMPLEMENTED


@pytest.mark.parametrize("fmt", ["irpa", "gguf", "safetensors"])
def test_damaged_files_fail_cleanly(tmp_path, fmt):
    """Every truncation and many single-byte changes of a file either parse
    or raise ParameterError: never IndexError, struct.error, a hang."""
    path = tmp_path / f"p.{fmt}"
    if fmt == "irpa":
        pytest.importorskip("iree.runtime")
        write_irpa(path, VALUES["model"], {"splat": (40, b"\x01\x02\x03\x04")})
    elif fmt == "gguf":
        write_gguf(path, VALUES["model"])
    else:
        write_safetensors(path, VALUES["model"])
    good = path.read_bytes()
    rng = np.random.default_rng(7)
    variants = [good[:n] for n in range(0, len(good), 7)]
    header_end = min(len(good), 512)
    for _ in range(200):
        raw = bytearray(good)
        at = int(rng.integers(0, header_end))
        raw[at] = int(rng.choice([0, 0xFF, raw[at] ^ 0x80, raw[at] + 1 & 0xFF]))
        variants.append(bytes(raw))
    variants.append(good[:8] + b"[" * 300000 + good[8:] if fmt == "safetensors" else good)
    for data in variants:
        path.write_bytes(data)
        try:
            idx = ParameterIndex().load(path)
        except vmrt.ParameterError:
            continue
        for entry in idx.entries.values():      # what parsed is readable
            n = min(entry.length, 1 << 16)
            assert len(entry.read(entry.length - n, n)) == n
