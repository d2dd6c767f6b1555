"""``vmrt executable``: inspect a dispatch library and dispatch one export.

    vmrt executable list FILE [--executable_plugin=SPEC]... [--backend=B]
    vmrt executable dispatch FILE --export=NAME [--workgroup_count=X[,Y[,Z]]]
         [--binding=VALUE]... [--constant=VALUE]... [--executable_plugin=SPEC]...
         [--output=TARGET]... [--threads=N] [--backend=B] [--arch=A] [--timeout=S]

FILE is a dispatch library as written by ``iree-compile ...
--iree-hal-dump-executable-binaries-to=DIR`` (ELF or FatELF, any CPU elfkit
runs: foreign ones are emulated).  Bindings use iree-run-module's input
syntax (``8xf32=2``, ``2x2xi32=[1 2][3 4]``, ``@file.npy``) and are printed
after the dispatch (or written per ``--output``: ``@file.npy`` (all files or
none: a failed dispatch leaves none behind), ``+file.bin`` append, ``-`` print,
empty = skip).  Constants are 32-bit words: ``130``, ``-1``, ``0x10``, ``2.5``
(an f32), ``i64:N`` / ``index:N`` (two words, low first).  ``--timeout``
stops the dispatch with DEADLINE_EXCEEDED (an emulated one inside its
workgroup, a native one between workgroups).
"""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ..errors import ExecutableError, StatusCode, UsageError, VmError
from .files import MAX_MODULE_SIZE, StagedOutputs, check_input, check_plugin_specs
from .flags import FlagSpec, parse_flags, report_error
from .function_io import write_output

if TYPE_CHECKING:
    from ..hal.local.executable import Executable

USAGE = __doc__.split("\n\n", 1)[1] if __doc__ else ""

#: the flags of ``vmrt executable list|dispatch``
EXECUTABLE_FLAGS = FlagSpec(
    lists=frozenset({"executable_plugin", "binding", "constant", "output"}),
    values=frozenset({"export", "workgroup_count", "threads", "backend", "arch", "processor_id",
                      "output_max_element_count", "timeout"}),
    bools=frozenset({"help"}),
    raw=frozenset({"binding"}),
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


def _bindings(specs: Sequence[str]) -> list:
    import numpy as np

    from ..hal.buffer_view import parse_buffer_view
    out = []
    for s in specs:
        try:
            if s.startswith("@"):
                out.append(np.ascontiguousarray(np.load(s[1:], allow_pickle=False)))
            else:
                out.append(np.ascontiguousarray(parse_buffer_view(s).array))
        except VmError as e:
            e.annotate(f"parsing binding `{s}`")
            raise
        except (OSError, ValueError) as e:
            raise UsageError(f"parsing binding `{s}`: {e}") from None
    return out


def run(argv: Sequence[str], stdout: TextIO) -> int:
    from ..hal.local.executable import Executable
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
    if command not in ("list", "dispatch"):
        raise UsageError(f"unknown executable command '{command}' (list or dispatch)")
    if len(positional) != 1:
        raise UsageError("expected exactly one executable file")
    timeout = flags.seconds("timeout")
    # a FIFO or device would hang or never end, a huge file exhaust memory: refuse them
    check_input(positional[0], "executable file", MAX_MODULE_SIZE, ExecutableError)
    check_plugin_specs(lists["executable_plugin"])
    backend = values.get("backend", "auto")
    mgr = register_plugins(lists["executable_plugin"], backend=backend)
    try:
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
    from ..hal.buffer_view import BufferView, format_buffer_view
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
    bindings = _bindings(lists["binding"])
    constants = _constants(lists["constant"])
    exp = exe.export(which)
    stdout.write(f"EXEC @{exp.name}\n")
    stdout.flush()
    deadline = None if timeout is None else time.monotonic() + timeout
    exe.dispatch(exp, wc, bindings, constants, threads=threads, processor_id=pid,
                 deadline=deadline)
    outputs = lists["output"]
    if outputs and len(outputs) != len(bindings):
        raise UsageError(f"{len(outputs)} outputs specified for {len(bindings)} bindings",
                      StatusCode.OUT_OF_RANGE)
    files = StagedOutputs()         # all output files appear, or none
    try:
        for i, b in enumerate(bindings):
            target = outputs[i] if outputs else "+"
            if target in ("", "-", "+"):
                if target:
                    text = format_buffer_view(BufferView(b), max_elements)
                    stdout.write(text + "\n" if target == "-"
                                 else f"binding[{i}]: hal.buffer_view\n{text}\n")
                continue
            write_output(target, BufferView(b), "r", max_elements, stdout, files)
        files.commit()
    finally:
        files.discard()
    stdout.flush()
    return 0


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
