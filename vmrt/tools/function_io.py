"""Function I/O for ``vmrt run`` in iree-run-module's formats: ``--input``
parsing (C ``strtol``/``strtod`` scalars, tensors, ``.npy`` files), result
printing, ``--output`` files and ``--expected_output`` comparison."""
from __future__ import annotations

import math
import os
import re
import struct
from collections.abc import Sequence

from ..errors import StatusCode, UsageError, VmError
from ..hal.buffer_view import BufferView, format_buffer_view, is_float_type, parse_buffer_view
from ..hal.element_types import FLOAT8, is_binary_hex, is_packed
from ..vm.buffer import Buffer
from ..vm.list import VmList
from ..vm.module import cconv_fragments
from ..vm.types import type_of
from ..vm.values import round_f32, wrap_i32, wrap_i64
from .files import StagedOutputs, open_input

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

# ------------------------------------------------------------------ inputs ---
# patterns as text: compiled (and kept by re) when first used, not at every start-up
_INT_PREFIX = r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)"
_FLOAT_PREFIX = r"(?i)\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)"


def strtol(text: str) -> int | None:
    """C ``strtol(base 0)``: the leading integer, trailing junk ignored,
    saturating at the 64-bit range; None if nothing parses."""
    m = re.match(_INT_PREFIX, text)
    if not m:
        return None
    digits = m.group(2)
    if digits[:2] in ("0x", "0X"):
        v = int(digits, 16)
    elif len(digits) > 1 and digits[0] == "0":
        v = int(digits, 8)
    else:
        v = int(digits)
    if m.group(1) == "-":
        v = -v
    return max(-(1 << 63), min((1 << 63) - 1, v))


#: iree-run-module parses a scalar integer input from a fixed-size copy: an
#: i32 value of 16 characters or more, an i64 one of 32 or more, fails
_SCALAR_TEXT_LIMIT = {"i": 16, "I": 32}


def scalar_int(text: str, code: str) -> int | None:
    """A scalar ``--input`` for an ``i`` (i32) or ``I`` (i64) argument as
    iree-run-module reads it: C ``strtoll`` that fails on overflow of the
    64-bit range, and on text as long as IREE's scratch copy; None when it
    fails (the caller reports ``parsing value `TEXT` as i32``)."""
    if len(text) >= _SCALAR_TEXT_LIMIT[code]:
        return None
    v = _unsaturated(text)
    if v is None or not -(1 << 63) <= v < 1 << 63:
        return None
    return v


def _unsaturated(text: str) -> int | None:
    m = re.match(_INT_PREFIX, text)
    if not m:
        return None
    digits = m.group(2)
    base = 16 if digits[:2] in ("0x", "0X") else 8 if len(digits) > 1 and digits[0] == "0" else 10
    v = int(digits, base)
    return -v if m.group(1) == "-" else v


_HEXFLOAT_PREFIX = (r"\s*[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                    r"(?:[pP][+-]?\d+)?")


def strtod(text: str) -> float | None:
    """C ``strtod``: the leading decimal or hex float, trailing junk ignored."""
    m = re.match(_HEXFLOAT_PREFIX, text)
    if m:
        body = m.group(0).strip()
        if "p" not in body.lower():
            body += "p0"
        return float.fromhex(body)
    m = re.match(_FLOAT_PREFIX, text)
    if not m:
        return None
    try:
        return float(m.group(0))
    except OverflowError:  # pragma: no cover - float() returns inf instead
        return None


class _NpyStreams:
    def __init__(self) -> None:
        self.files: dict[str, Any] = {}

    def read(self, path: str, fresh: bool) -> BufferView:
        if not path.endswith(".npy"):
            raise UsageError(f"unsupported input file type '{path}' (only .npy)",
                          StatusCode.UNIMPLEMENTED)
        fh = self.files.get(path)
        if fresh or fh is None:
            if fh is not None:
                fh.close()
            if os.path.exists(path) and not os.path.isfile(path):   # a FIFO, device, directory
                open_input(path, "input file")   # raises, saying what it is
            try:
                fh = open(path, "rb")  # noqa: SIM115 - kept in self.files, closed by close()
            except OSError as e:
                raise UsageError(f"failed to open file '{path}': {e.strerror}",
                              StatusCode.NOT_FOUND) from None
            self.files[path] = fh
        from .npy import read_npy  # .npy inputs only (start-up time)
        view = read_npy(fh)
        if view is not None:
            return view
        import numpy as np
        try:
            return BufferView(np.load(fh, allow_pickle=False))
        except MemoryError:
            raise UsageError(f"failed to read numpy array from '{path}': its header asks for "
                             f"more memory than there is", StatusCode.RESOURCE_EXHAUSTED) from None
        except (ValueError, OSError, EOFError) as e:
            raise UsageError(f"failed to read numpy array from '{path}': {e}",
                          StatusCode.INVALID_ARGUMENT) from None

    def read_all(self, path: str) -> list[Any]:
        arrays = [self.read(path, True)]
        fh = self.files[path]
        while True:
            pos = fh.tell()
            if not fh.read(1):
                break
            fh.seek(pos)
            arrays.append(self.read(path, False))
        return arrays

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()


def parse_inputs(specs: Sequence[str], cconv: str) -> list[Any]:
    """Turn ``--input`` values into VM values following the argument cconv."""
    arg_codes, _ = cconv_fragments(cconv)
    values: list[Any] = []
    streams = _NpyStreams()
    i = 0
    try:
        for spec in specs:
            try:
                s = spec.strip()
                if not s:
                    raise UsageError("no value specified for input")
                if i >= len(arg_codes):
                    raise UsageError("function expected fewer input values")
                code = arg_codes[i]
                if s in ("(null)", "(ignored)"):
                    values.append(None if code == "r" else (0.0 if code in "fF" else 0))
                    i += 1
                    continue
                if s[0] in "@+*":
                    arrays = (streams.read_all(s[1:]) if s[0] == "*"
                              else [streams.read(s[1:], s[0] == "@")])
                    for arr in arrays:
                        if i >= len(arg_codes):
                            raise UsageError("function expected fewer input values")
                        if arg_codes[i] != "r":
                            raise UsageError("function signature mismatch: expected cconv type "
                                             f"`{arg_codes[i]}` but provided type `r`")
                        values.append(arr)
                        i += 1
                    continue
                if s[0] == "&":
                    raise UsageError("output storage inputs (&) are not supported",
                                  StatusCode.UNIMPLEMENTED)
                if code in "iI":
                    v = scalar_int(s, code)
                    if v is None:
                        raise UsageError(f"parsing value `{s}` as "
                                         f"{'i32' if code == 'i' else 'i64'}")
                    values.append(wrap_i32(v) if code == "i" else wrap_i64(v))
                elif code in "fF":
                    fv = strtod(s)
                    if fv is None:
                        raise UsageError(f"parsing value `{s}` as "
                                         f"{'f32' if code == 'f' else 'f64'}")
                    values.append(round_f32(fv) if code == "f" else fv)
                elif code == "r":
                    if "=" not in s and "x" not in s:
                        raise UsageError("invalid tensor specification, requires at least a "
                                         "shape/type (`4x2xf32=...`)")
                    values.append(parse_buffer_view(s))
                else:
                    raise UsageError(f"unsupported argument cconv type `{code}`")
                i += 1
            except VmError as e:
                e.annotate(f"parsing input `{spec}`")
                raise
    except VmError as e:
        e.annotate("parsing function inputs")
        raise
    finally:
        streams.close()
    return values


# ----------------------------------------------------------------- outputs ---
def format_g(v: float, upper: bool = False) -> str:
    """C's ``%g`` / ``%G``, including the sign of NaN (``-nan``)."""
    if v != v:
        text = "-nan" if math.copysign(1.0, v) < 0 else "nan"
        return text.upper() if upper else text
    return ("%G" if upper else "%g") % v


def _value_text(kind: str, v: Any) -> str:
    if kind in ("f32", "f64"):
        return f"{kind}=" + format_g(v)
    return f"{kind}={int(v)}"


def format_variant(v: Any, max_elements: int = 1024) -> str:
    """The text iree-run-module prints after ``result[i]: ``."""
    if v is None:
        return "(null)"
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
        return _value_text(v[0], v[1])
    t = type_of(v)
    if t is None:
        raise UsageError(f"cannot format {type(v).__name__}", StatusCode.INTERNAL)
    if isinstance(v, BufferView):
        return f"{t.name}\n{format_buffer_view(v, max_elements)}"
    if isinstance(v, VmList):
        lines = [t.name]
        et = v.element_type
        for j, item in enumerate(v.items):
            if isinstance(et, str):
                item = (et, item)
            lines.append(f"child_list[{j}]: {format_variant(item, max_elements)}")
        return "\n".join(lines) + "\n"
    return f"{t.name}\n(no printer)"


def format_results(results: Sequence[Any], cconv: str, max_elements: int = 1024) -> str:
    _, codes = cconv_fragments(cconv)
    out = []
    for i, (v, c) in enumerate(zip(results, codes)):
        out.append(f"result[{i}]: {format_result(v, c, max_elements)}\n")
    return "".join(out)


def format_result(v: Any, code: str, max_elements: int = 1024) -> str:
    kind = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}.get(code)
    if kind is not None:
        return _value_text(kind, v)
    return format_variant(v, max_elements)


def write_output(target: str, v: Any, code: str, max_elements: int, stdout: TextIO,
                 files: StagedOutputs | None = None) -> None:
    """``--output=`` handling: '' discards, '-' prints, @/+file.npy|.bin writes/appends
    (through ``files`` when given, so that a failed run leaves no file behind)."""
    if target == "":
        return
    if target == "-":
        stdout.write(format_result(v, code, max_elements) + "\n")
        return
    mode = {"@": "wb", "+": "ab"}.get(target[0])
    if mode is None:
        raise UsageError(f"unsupported output mode `{target}`")
    path = target[1:]
    data = output_bytes(v, code, path, path.endswith(".npy"))
    try:
        with (files.open(path, mode == "ab") if files is not None else open(path, mode)) as fh:
            fh.write(data)
    except OSError as e:
        raise UsageError(f"failed to write '{path}': {e.strerror}", StatusCode.PERMISSION_DENIED) \
            from None


_SCALARS = {"i": ("i32", "i"), "I": ("i64", "q"), "f": ("f32", "f"), "F": ("f64", "d")}


def output_bytes(v: Any, code: str, path: str, npy: bool) -> bytes:
    """What ``--output=@path`` writes for ``v``: a .npy file as ``numpy.save``
    writes it, else the raw elements (numpy only for the exotic types)."""
    if isinstance(v, BufferView):
        elem, shape = v.element_type, v.shape
        raw = None if is_packed(elem) else bytes(v.storage)
    elif isinstance(v, Buffer):
        elem, shape, raw = "ui8", (len(v.data),), bytes(v.data)
    elif code in _SCALARS:
        elem, fmt = _SCALARS[code]
        shape, raw = (), struct.pack("<" + fmt, v)
    else:
        raise UsageError(f"cannot write a {type(v).__name__} to '{path}'", StatusCode.UNIMPLEMENTED)
    if raw is not None:
        if not npy:
            return raw
        from .npy import npy_bytes  # .npy outputs only (start-up time)
        data = npy_bytes(elem, shape, raw)
        if data is not None:
            return data
    import io

    import numpy as np
    arr = v.array if isinstance(v, BufferView) else np.frombuffer(raw or b"", np.uint8)
    if not npy:
        return np.ascontiguousarray(arr).tobytes()
    out = io.BytesIO()
    np.save(out, arr, allow_pickle=False)
    return out.getvalue()


# --------------------------------------------------------- expected outputs ---
def _meta(bv: BufferView) -> str:
    return "x".join([str(d) for d in bv.shape] + [bv.element_type])


def _compare_view(actual: BufferView, expected: BufferView, thresholds: dict[str, float],
                  max_elements: int, rtol: float = 0.0, exact: bool = False) -> str | None:
    """None if equal, else IREE's failure text (without the ``[FAILED]`` prefix).
    Floats match when equal, when both are NaN, or when both are finite and
    ``|actual - expected| <= atol + rtol * |expected|`` (atol: the type's threshold);
    ``exact`` compares each element's bytes."""
    import numpy as np
    exp_meta = _meta(expected)
    tail = (f"expected that the view is equal to contents of a view of {exp_meta}\n"
            f"  expected:\n{format_buffer_view(expected, max_elements)}\n"
            f"  actual:\n{format_buffer_view(actual, max_elements)}")
    if _meta(actual) != exp_meta:
        return f"metadata is {_meta(actual)}; expected that the view matches {exp_meta}; {tail}"
    floats = is_float_type(actual.element_type)
    if is_binary_hex(actual.element_type):       # raw bytes compare as raw bytes
        a, e = np.frombuffer(actual.storage, np.uint8), np.frombuffer(expected.storage, np.uint8)
    else:
        a = actual.array.reshape(-1)
        e = expected.array.reshape(-1)
    if floats and (exact or actual.element_type in FLOAT8):   # each element's bytes
        # (iree-run-module 3.13 compares the f8 types exactly in both modes)
        width = a.dtype.itemsize
        bad = (np.frombuffer(actual.storage, np.uint8).reshape(-1, width) !=
               np.frombuffer(expected.storage, np.uint8).reshape(-1, width)).any(axis=1)
    elif floats:
        atol = thresholds.get(actual.element_type, 0.0)
        af, ef = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore"):
            near = np.isfinite(af) & np.isfinite(ef) & \
                (np.abs(af - ef) <= atol + rtol * np.abs(ef))
            bad = ~(af == ef) & ~(np.isnan(af) & np.isnan(ef)) & ~near
    else:
        bad = a != e
    idx = np.flatnonzero(bad)
    if idx.size == 0:
        return None
    i = int(idx[0])
    fa = format_g(float(a[i]), True) if floats else str(int(a[i]))
    fe = format_g(float(e[i]), True) if floats else str(int(e[i]))
    return f"element at index {i} ({fa}) does not match the expected ({fe}); {tail}"


def _same_scalar(got: Any, want: Any, code: str, atol: float, rtol: float, exact: bool) -> bool:
    if code not in "fF":
        return bool(got == want)
    if exact:
        fmt = "<f" if code == "f" else "<d"
        return struct.pack(fmt, got) == struct.pack(fmt, want)
    return got == want or (got != got and want != want) or \
        (math.isfinite(got) and math.isfinite(want) and abs(got - want) <= atol + rtol * abs(want))


def check_expected(results: Sequence[Any], cconv: str, specs: Sequence[str],
                   thresholds: dict[str, float], max_elements: int, rtol: float = 0.0,
                   exact: bool = False) -> tuple[bool, str]:
    """``--expected_output``: returns (all matched, text to print).
    ``thresholds``: absolute tolerance per float type; ``rtol``:
    ``--expected_rtol``; ``exact``: ``--equality_mode=exact``."""
    _, codes = cconv_fragments(cconv)
    try:
        try:
            expected = parse_inputs(list(specs), "0" + codes + "_v")
        except VmError as e:
            e.annotate("parsing expected function outputs")
            raise
    except VmError as e:
        e.annotate("processing function outputs")
        raise
    lines = []
    ok = True
    for i, (spec, want, got, code) in enumerate(zip(specs, expected, results, codes)):
        if spec.strip() in ("(ignored)", "(null)") and code == "r":
            continue
        if code != "r":
            kind = {"i": "i32", "I": "i64", "f": "f32", "F": "f64"}[code]
            if not _same_scalar(got, want, code, thresholds.get(kind, 0.0), rtol, exact):
                ok = False
                lines.append(f"[FAILED] result[{i}]: value {_value_text(kind, got)} does not "
                             f"match the expected {_value_text(kind, want)}")
            continue
        if not isinstance(got, BufferView) or not isinstance(want, BufferView):
            ok = False
            got_type = type_of(got)
            lines.append(f"[FAILED] result[{i}]: cannot compare "
                         f"{got_type.name if got_type else '(null)'} with the expected "
                         "buffer view")
            continue
        msg = _compare_view(got, want, thresholds, max_elements, rtol, exact)
        if msg is not None:
            ok = False
            lines.append(f"[FAILED] result[{i}]: {msg}")
    if ok:
        lines.append("[SUCCESS] all function outputs matched their expected values.")
    return ok, "".join(line + "\n" for line in lines)
