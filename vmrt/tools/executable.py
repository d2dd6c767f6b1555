"""``vmrt executable``: inspect a dispatch library and dispatch one export.

Usage: :data:`vmrt.tools.usage.EXECUTABLE` (``USAGE``)."""
from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Sequence

from ..errors import ExecutableError, StatusCode, UsageError, VmError
from . import usage
from .files import (
    MAX_MODULE_SIZE,
    StagedOutputs,
    check_input,
    check_plugin_specs,
    open_input,
)
from .flags import FlagSpec, parse_flags, report_error

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

    from ..hal.buffer_view import BufferView
    from ..hal.local.elf_executable import Executable

# The buffer views, element types and output files of ``dispatch`` and the import
# report of ``imports`` are imported by the command that needs them (start-up of
# ``vmrt executable list``).

USAGE = usage.EXECUTABLE

#: the flags of ``vmrt executable list|dispatch``
EXECUTABLE_FLAGS = FlagSpec(
    lists=frozenset({"executable_plugin", "binding", "constant", "output", "expected_output"}),
    values=frozenset({"export", "workgroup_count", "threads", "backend", "arch", "processor_id",
                      "output_max_element_count", "expected_f16_threshold",
                      "expected_f32_threshold", "expected_f64_threshold", "timeout"}),
    bools=frozenset({"help"}),
    raw=frozenset({"binding", "expected_output"}),
    positional=True)


def _constants(specs: Sequence[str]) -> list[int | float]:
    out: list[int | float] = []
    for s in specs:
        t = s.strip()
        kind, colon, rest = t.partition(":")
        wide = colon and kind in ("i64", "index", "u64")
        text = rest.strip() if wide else t
        try:
            v = int(text, 0)
        except ValueError:
            if wide:
                raise UsageError(f"parsing constant `{s}`: not an integer") from None
            try:
                out.append(float(text))
            except ValueError:
                raise UsageError(f"parsing constant `{s}`: not a number") from None
            continue
        if wide:
            v &= (1 << 64) - 1
            out += [v & 0xFFFFFFFF, v >> 32]
        else:
            out.append(v)
    return out


#: ``FILE.npy[START:END]`` (compiled when first used: start-up time)
_BYTE_RANGE = r"^(.*)\[(\d+):(\d+)\]$"


def _load_npy(path: str) -> Any:
    """The array of a ``.npy`` binding file: a regular file (a FIFO would
    hang the read) whose header's shape fits in the bytes it has (a header
    claiming 2^40 elements would be allocated before the short read fails)."""
    import numpy as np
    fh, size = open_input(path, "binding file")
    with fh:
        try:
            version = np.lib.format.read_magic(fh)
            shape, _fortran, dtype = _npy_header(np, fh, version)
        except (ValueError, EOFError) as e:
            raise UsageError(f"'{path}' is not a .npy file: {e or 'empty'}") from None
        count = 1
        for n in shape:
            count *= n
        need = count * dtype.itemsize
        if dtype.hasobject or need > size - fh.tell():
            raise UsageError(f"'{path}': its header claims {shape} {dtype} elements "
                             f"({need} bytes), more than the file's {size - fh.tell()} bytes "
                             "of data", StatusCode.OUT_OF_RANGE)
        fh.seek(0)
        try:
            return np.load(fh, allow_pickle=False)
        except (ValueError, EOFError) as e:
            raise UsageError(f"'{path}' is not a .npy file: {e or 'truncated'}") from None


def _npy_header(np: Any, fh: Any, version: tuple[int, int]) -> tuple[Any, bool, Any]:
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(fh)
    if version in ((2, 0), (3, 0)):
        return np.lib.format.read_array_header_2_0(fh)
    raise ValueError(f"unsupported .npy version {version[0]}.{version[1]}")


#: numpy dtype kinds (vmrt.hal.element_types.dtype_name) -> the element type prefix a
#: numpy array of that kind is printed with (numpy's integers are signed: ``siN``)
_NUMPY_PREFIX = {"int": "si", "uint": "ui", "float": "f", "complex": "cf"}


def _numpy_name(elem: str) -> str | None:
    """The element type a parsed tensor of ``elem`` is printed with (the name of
    the numpy array that holds it: ``i32`` -> ``si32``, ``i1`` -> ``ui8``), found
    without numpy; None for the types whose values need numpy (the f8 types, the
    packed sub-byte integers)."""
    from ..hal.element_types import FLOAT8, dtype_name, is_packed
    if elem in FLOAT8 or is_packed(elem):
        return None
    name = dtype_name(elem)
    if name == "bfloat16":
        return "bf16"
    kind = name.rstrip("0123456789")
    bits = name[len(kind):]
    return f"{_NUMPY_PREFIX[kind]}{bits}"


def _bindings(specs: Sequence[str]) -> tuple[list[Any], list[BufferView]]:
    """The dispatch bindings of binding specs, and a buffer view of each (what
    is printed or written).  A tensor spec of a plain element type is parsed
    into 64-byte aligned host memory, bound as :class:`HostBytes` (no numpy);
    ``.npy`` files, f8 and sub-byte types are numpy arrays.  ``@FILE.npy[START:END]``
    is bytes [START, END) of the file's array, and every binding of one file
    shares its memory (bindings that alias)."""
    from ..hal.buffer import HostBytes, aligned_bytes
    from ..hal.buffer_view import BufferView, parse_buffer_view
    out: list[Any] = []
    views: list[BufferView] = []
    files: dict[str, Any] = {}
    dtypes: dict[str, Any] = {}
    for s in specs:
        try:
            if not s.startswith("@"):
                parsed = parse_buffer_view(s)
                name = _numpy_name(parsed.element_type)
                if name is not None and parsed.address is not None:
                    # a rank-0 tensor binds one element (as np.ascontiguousarray makes it)
                    out.append(HostBytes(parsed.storage, parsed.address))
                    views.append(BufferView.over(parsed.storage, name, parsed.shape or (1,),
                                                 parsed.address))
                    continue
            import numpy as np
            ranged = re.match(_BYTE_RANGE, s[1:]) if s.startswith("@") else None
            if ranged and not os.path.exists(s[1:]):
                path, start, end = ranged.group(1), int(ranged.group(2)), int(ranged.group(3))
                if path not in files:       # one aligned copy, as a HAL buffer
                    data = np.ascontiguousarray(_load_npy(path))
                    files[path] = aligned_bytes(data.nbytes, "binding")
                    files[path][:] = data.reshape(-1).view(np.uint8)
                    dtypes[path] = data.dtype
                whole = files[path]
                if not start <= end <= whole.size:
                    raise UsageError(f"byte range [{start}, {end}) is outside the file's "
                                     f"{whole.size} bytes")
                part = whole[start:end]
                dt = dtypes[path]
                array = part.view(dt) if part.size % dt.itemsize == 0 else part
            elif s.startswith("@"):
                array = np.ascontiguousarray(_load_npy(s[1:]))
            else:
                array = np.ascontiguousarray(parsed.array)
            out.append(array)
            views.append(BufferView(array))
        except VmError as e:
            e.annotate(f"parsing binding `{s}`")
            raise
        except (OSError, ValueError) as e:
            raise UsageError(f"parsing binding `{s}`: {e}") from None
    return out, views


def run(argv: Sequence[str], stdout: TextIO) -> int:
    from ..hal.local.elf_executable import Executable
    from ..hal.local.plugins.manager import register_plugins
    if not argv or argv[0] in ("--help", "-h", "help"):
        stdout.write(USAGE)
        return 0
    command = argv[0]
    flags = parse_flags(argv[1:], EXECUTABLE_FLAGS)
    positional, lists, values = flags.positional, flags.lists, flags.values
    if "help" in flags.bools:
        stdout.write(USAGE)
        return 0
    if command not in ("list", "dispatch", "imports"):
        raise UsageError(f"unknown executable command '{command}' (list, dispatch or imports)")
    if len(positional) != 1:
        raise UsageError("expected exactly one executable file")
    timeout = flags.seconds("timeout")
    # a FIFO or device would hang or never end, a huge file exhaust memory: refuse them
    check_input(positional[0], "executable file", MAX_MODULE_SIZE, ExecutableError)
    check_plugin_specs(lists["executable_plugin"])
    backend = values.get("backend", "auto")
    mgr = register_plugins(lists["executable_plugin"], backend=backend)
    try:
        if command == "imports":
            from .executable_imports import report_imports
            return report_imports(positional[0], mgr, values, stdout)
        exe = Executable.load(positional[0], plugins=mgr, arch=values.get("arch"),
                              backend=backend)
        try:
            if command == "list":
                stdout.write(exe.describe() + "\n")
                return 0
            return _dispatch(exe, lists, values, stdout, timeout)
        finally:
            exe.close()
    finally:
        mgr.close()


def _dispatch(exe: Executable, lists: dict[str, list[str]], values: dict[str, str],
              stdout: TextIO, timeout: float | None) -> int:
    from ..hal.buffer_view import format_buffer_view
    if "export" not in values:
        raise UsageError("--export= is required (an export name or ordinal)")
    which: str | int = values["export"]
    if str(which).isdigit():
        which = int(which)
    try:
        wc = tuple(int(x, 0) for x in values.get("workgroup_count", "1").split(","))
        threads = int(values.get("threads", "1"), 0)
        pid = int(values.get("processor_id", "0"), 0)
        max_elements = int(values.get("output_max_element_count", "1024"), 0)
    except ValueError as e:
        raise UsageError(f"bad integer flag: {e}") from None
    bindings, views = _bindings(lists["binding"])
    constants = _constants(lists["constant"])
    exp = exe.export(which)
    stdout.write(f"EXEC @{exp.name}\n")
    stdout.flush()
    deadline = None if timeout is None else time.monotonic() + timeout
    exe.dispatch(exp, wc, bindings, constants, threads=threads, processor_id=pid,
                 deadline=deadline)
    if lists["expected_output"]:
        return check_bindings([v.array for v in views], lists["expected_output"], values,
                              stdout)
    outputs = lists["output"]
    if outputs and len(outputs) != len(bindings):
        raise UsageError(f"{len(outputs)} outputs specified for {len(bindings)} bindings",
                      StatusCode.OUT_OF_RANGE)
    files = StagedOutputs()         # all output files appear, or none
    try:
        for i, view in enumerate(views):
            target = outputs[i] if outputs else "+"
            if target in ("", "-", "+"):
                if target:
                    text = format_buffer_view(view, max_elements)
                    stdout.write(text + "\n" if target == "-"
                                 else f"binding[{i}]: hal.buffer_view\n{text}\n")
                continue
            from .function_io import write_output  # (an output file)
            write_output(target, view, "r", max_elements, stdout, files)
        files.commit()
    finally:
        files.discard()
    stdout.flush()
    return 0


def check_bindings(bindings: list[Any], specs: Sequence[str], values: dict[str, str],
                   stdout: TextIO, label: str = "binding", prefix: bool = False) -> int:
    """``--expected_output``: one [SUCCESS]/[FAILED] line per binding (uint8
    arrays; ``label`` names them: ``binding[i]``); 0 when all matched, else 1.
    ``values`` holds the ``expected_*_threshold`` flags; ``prefix``: a binding
    longer than its expected value is compared over the value's length (a
    buffer read back whole, its tensor at the start)."""
    from ..hal.element_types import element_type_of
    from .binding_diff import DEFAULT_THRESHOLDS, diff
    if len(specs) != len(bindings):
        raise UsageError(f"{len(specs)} expected outputs specified for {len(bindings)} {label}s",
                         StatusCode.OUT_OF_RANGE)
    thresholds = dict(DEFAULT_THRESHOLDS)
    for kind in thresholds:
        text = values.get(f"expected_{kind}_threshold")
        if text is not None:
            try:
                thresholds[kind] = float(text)
            except ValueError:
                raise UsageError(f"flag --expected_{kind}_threshold expects a number, got "
                                 f"'{text}'") from None
    ok = True
    for i, (b, spec) in enumerate(zip(bindings, specs)):
        if spec.strip() == "(ignored)":
            continue
        want = _bindings([spec])[1][0].array
        if prefix and b.nbytes > want.nbytes:
            b = b.reshape(-1)[:want.nbytes]
        got = b.reshape(-1).view(want.dtype) if b.nbytes % want.itemsize == 0 else None
        if got is None or got.size != want.size:
            ok = False
            stdout.write(f"[FAILED] {label}[{i}]: {b.nbytes} bytes, expected {want.nbytes}\n")
            continue
        d = diff(got, want, element_type_of(want.dtype), thresholds)
        if d is None:
            stdout.write(f"[SUCCESS] {label}[{i}]\n")
        else:
            ok = False
            stdout.write(f"[FAILED] {label}[{i}]: {d.describe('got', 'expected')}\n")
    stdout.flush()
    return 0 if ok else 1


def parse_bindings(specs: Sequence[str]) -> list[Any]:
    """The bindings ``--binding`` specs give (``vmrt executable dispatch`` and
    ``vmrt executable benchmark`` bind them alike): :class:`HostBytes` or
    numpy arrays, as :meth:`Executable.dispatch` takes them."""
    return _bindings(specs)[0]


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """``vmrt executable ...`` (``argv`` without the leading 'executable')."""
    argv = list(sys.argv[1:] if argv is None else argv)
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        return run(argv, stdout)
    except BaseException as e:  # noqa: BLE001 - the CLI reports every failure as a status
        return report_error(e, stdout, stderr)


if __name__ == "__main__":  # pragma: no cover - python -m vmrt.tools.executable
    sys.exit(main())
