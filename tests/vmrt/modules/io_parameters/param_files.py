"""Writers of parameter files for the io_parameters tests: ``.irpa`` through
iree.runtime (IREE's own archive builder), ``.safetensors`` and ``.gguf``
written here from their specifications (no extra dependency), so the files
the tests feed to vmrt and to IREE come from independent code."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

#: numpy dtype -> safetensors dtype name
SAFETENSORS_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
                      np.dtype(np.int8): "I8", np.dtype(np.int64): "I64",
                      np.dtype(np.int32): "I32", np.dtype(np.float64): "F64"}
#: numpy dtype -> ggml type number (the numbering IREE's GGUF parser uses)
GGML_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int8): 16,
              np.dtype(np.int16): 17, np.dtype(np.int32): 18}


def write_irpa(path: Path, arrays: dict[str, np.ndarray],
               splats: dict[str, tuple[int, bytes]] | None = None) -> Path:
    """An IREE parameter archive made by iree.runtime: ``arrays`` as data
    entries, ``splats`` as ``key -> (length, pattern)`` splat entries."""
    import iree.runtime as rt
    idx = rt.ParameterIndex()
    for key, arr in arrays.items():
        idx.add_buffer(key, np.ascontiguousarray(arr).tobytes())
    for key, (length, pattern) in (splats or {}).items():
        idx.add_splat(key, pattern, length)
    idx.create_archive_file(str(path))
    return path


def write_safetensors(path: Path, arrays: dict[str, np.ndarray], pad: int = 0) -> Path:
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for key, arr in arrays.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[key] = {"dtype": SAFETENSORS_DTYPES[arr.dtype], "shape": list(arr.shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((-len(text) - pad) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return path


def _gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, arrays: dict[str, np.ndarray], alignment: int = 32,
               version: int = 3) -> Path:
    """A GGUF v3 file: a few metadata values (a string, an array, the
    alignment), the tensor infos (dimensions innermost first, as ggml
    stores them), then the aligned tensor data."""
    meta = [_gguf_string("general.name") + struct.pack("<I", 8) + _gguf_string("test"),
            _gguf_string("test.list") + struct.pack("<IIQ", 9, 5, 3) + struct.pack("<3i", 1, 2, 3),
            _gguf_string("general.alignment") + struct.pack("<II", 4, alignment)]
    infos, blobs, offset = [], [], 0
    for key, arr in arrays.items():
        data = np.ascontiguousarray(arr).tobytes()
        dims = list(reversed(arr.shape)) or [1]
        infos.append(_gguf_string(key) + struct.pack(f"<I{len(dims)}Q", len(dims), *dims) +
                     struct.pack("<IQ", GGML_TYPES[arr.dtype], offset))
        pad = (-len(data)) % alignment
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad
    head = struct.pack("<4sIQQ", b"GGUF", version, len(arrays), len(meta))
    body = head + b"".join(meta) + b"".join(infos)
    body += b"\0" * ((-len(body)) % alignment)
    path.write_bytes(body + b"".join(blobs))
    return path
