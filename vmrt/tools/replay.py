"""``vmrt replay``: re-run an IREE device replay capture (``.ireereplay``).

Usage: :data:`vmrt.tools.usage.REPLAY` (``USAGE``)."""
from __future__ import annotations

import os
from collections.abc import Sequence

from elfkit.support import DataRecord

from ..errors import ReplayError, StatusCode, UsageError
from . import usage
from .flags import FlagSpec, parse_bool, parse_flags, report_error
from .replay_exec import Output, Substitution

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO

USAGE = usage.REPLAY

REPLAY_FLAGS = FlagSpec(
    lists=frozenset({"replay_executable_substitution", "executable_plugin", "expected_output",
                     "replay_file_remap"}),
    values=frozenset({"device", "backend", "expected_f16_threshold", "expected_f32_threshold",
                      "expected_f64_threshold", "dispatch_element_type"}),
    bools=frozenset({"help"}),
    raw=frozenset({"expected_output"}),
    optional=frozenset({"expected"}),
    positional=True)


class ReplayResult(DataRecord):
    """What :func:`replay` did: the outputs (ranges read back, with their
    bytes and the capture's), the dispatches run, the executables (id ->
    backend) and the failed checks (empty: all passed)."""
    source: str
    outputs: list[Output]
    dispatches: int
    executables: dict[int, str]
    failures: list[str]

    @property
    def ok(self) -> bool:
        return not self.failures


def parse_substitution(text: str) -> Substitution:
    """``ID=PATH``, ``ID@FORMAT=PATH``, ``all=PATH`` or ``all@FORMAT=PATH``."""
    selector, eq, path = text.partition("=")
    target, _at, fmt = selector.partition("@")
    if not eq or not path or not target:
        raise UsageError(f"--replay_executable_substitution expects EXECUTABLE_ID=PATH, "
                         f"EXECUTABLE_ID@FORMAT=PATH or all=PATH, got '{text}'")
    if target == "all":
        return Substitution(None, fmt, path)
    try:
        ident = int(target, 0)
    except ValueError:
        ident = -1
    if ident <= 0:
        raise UsageError(f"--replay_executable_substitution: '{target}' is not an executable "
                         "id (a positive integer) or 'all'")
    return Substitution(ident, fmt, path)


def parse_remap(text: str) -> tuple[str, str]:
    """``CAPTURED_PREFIX=REPLAY_PREFIX`` of ``--replay_file_remap``."""
    old, eq, new = text.partition("=")
    if not eq or not old:
        raise UsageError(f"--replay_file_remap expects CAPTURED_PREFIX=REPLAY_PREFIX, got "
                         f"'{text}'")
    return old, new


def replay(path: str | os.PathLike[str], *, device: str = "local-sync",
           substitutions: Sequence[str | Substitution] = (),
           executable_plugins: Sequence[str] = (), expected: bool = True,
           backend: str = "auto", file_remaps: Sequence[str] = (),
           element_type: str | None = None,
           thresholds: dict[str, float] | None = None) -> ReplayResult:
    """Re-run the capture at ``path`` (``vmrt replay``); returns a
    :class:`ReplayResult` whose ``failures`` lists the outputs that differ
    from the bytes the capture recorded (``expected``).  A corrupt capture,
    one of another kind of device or with operations vmrt does not replay
    raises :class:`~vmrt.errors.ReplayError`.  ``backend`` ("auto", "native",
    "emulated") is how the ELF executables run (auto: natively when built
    for the host); ``element_type`` (``f32`` ...) is how recorded outputs
    are compared (default: the type the name of the last dispatch that wrote
    them ends in, as ``--compare_with`` reads them, else bytes), within
    ``thresholds`` for floats;
    ``file_remaps`` are ``--replay_file_remap`` values."""
    from ..hal.local.loader import ExecutableLoader
    from .binding_diff import DEFAULT_THRESHOLDS
    from .files import check_plugin_specs
    from .replay_exec import Replayer
    from .replay_format import read_capture
    source = os.fspath(path)
    subs = [s if isinstance(s, Substitution) else parse_substitution(s) for s in substitutions]
    threads = _threads(device)
    check_plugin_specs(list(executable_plugins))
    capture = read_capture(source)
    if backend not in ("auto", "native", "emulated"):
        raise UsageError(f"backend must be auto, native or emulated, not '{backend}'")
    with ExecutableLoader(executable_plugins, backend=backend) as loader:
        rep = Replayer(capture, loader, threads=threads, substitutions=subs, backend=backend,
                       remaps=[parse_remap(r) for r in file_remaps])
        outputs = rep.run()
        backends = {i: str(rep.executables[i].exe.backend) for i in rep.executable_ids}
    unknown = [s.target for s in subs if s.target is not None and s.target not in backends]
    if unknown:
        raise ReplayError(f"'{source}': --replay_executable_substitution names executable "
                          f"{unknown[0]}, which the capture does not prepare (its executables: "
                          f"{', '.join(map(str, backends)) or 'none'})", StatusCode.NOT_FOUND)
    failures = []
    limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    for i, o in enumerate(outputs):
        if not expected or o.recorded is None or o.raw == o.recorded:
            continue        # (the same bytes: no element differs, whatever its type)
        if len(o.recorded) != len(o.raw):
            failures.append(f"output[{i}] ({_where(o)}): the capture recorded "
                            f"{len(o.recorded)} bytes for it")
            continue
        import numpy as np

        from .binding_diff import diff_bytes
        d = diff_bytes(o.data, np.frombuffer(o.recorded, np.uint8),
                       element_type or o.element_type, limits)
        if d is not None:
            failures.append(f"output[{i}] ({_where(o)}) differs from the capture: "
                            f"{d.describe('replay', 'capture')}")
    return ReplayResult(source, outputs, rep.dispatches, backends, failures)


def _where(o: Output) -> str:
    return f"buffer {o.buffer_id} [{o.offset}, +{o.length})"


def _threads(device: str) -> int:
    if device in ("local-sync", "local"):
        return 1
    if device == "local-task":
        from ..modules.hal.task import TaskTopology
        return TaskTopology().workers()
    raise UsageError(f"vmrt replay runs on local-sync or local-task, not '{device}'",
                     StatusCode.UNIMPLEMENTED)


def run(flags: Any, stdout: TextIO) -> int:
    """Execute ``vmrt replay``; returns the exit code."""
    if len(flags.positional) != 1:
        raise UsageError("expected one replay capture (vmrt replay FILE.ireereplay)")
    from .binding_diff import dispatch_element_type
    thresholds = {}
    for kind in ("f16", "f32", "f64"):
        value = flags.float(f"expected_{kind}_threshold", None)
        if value is not None:
            thresholds[kind] = value
    expected = parse_bool(flags.values.get("expected"), "flag --expected", default=True)
    result = replay(flags.positional[0], device=flags.values.get("device", "local-sync"),
                    substitutions=flags.lists["replay_executable_substitution"],
                    executable_plugins=flags.lists["executable_plugin"], expected=expected,
                    backend=flags.values.get("backend", "auto"),
                    file_remaps=flags.lists["replay_file_remap"],
                    element_type=dispatch_element_type(flags), thresholds=thresholds)
    kinds = sorted(set(result.executables.values()))
    stdout.write(f"REPLAY {result.source}: {result.dispatches} dispatch(es) of "
                 f"{len(result.executables)} executable(s) ({', '.join(kinds) or 'none'}), "
                 f"{len(result.outputs)} output(s)\n")
    for i, o in enumerate(result.outputs):
        state = "recorded in the capture" if o.recorded is not None else \
            "not recorded in the capture"
        kind = f", {o.element_type} (from its last dispatch)" if o.element_type else ""
        stdout.write(f"output[{i}]: {_where(o)}, {o.length} bytes{kind} ({state})\n")
    for line in result.failures:
        stdout.write(f"[FAILED] {line}\n")
    rc = 1 if result.failures else 0
    specs = flags.lists["expected_output"]
    if specs:
        from .executable import check_bindings
        rc |= check_bindings([o.data for o in result.outputs], specs, flags.values, stdout,
                             "output", prefix=True)
    elif expected and not result.failures and any(o.recorded is not None
                                                  for o in result.outputs):
        stdout.write("[SUCCESS] every recorded output matches the capture\n")
    stdout.flush()
    return rc


def main(argv: Sequence[str], *, stdout: TextIO, stderr: TextIO) -> int:
    """``vmrt replay FLAGS FILE``."""
    try:
        flags = parse_flags(argv, REPLAY_FLAGS)
        if "help" in flags.bools:
            stdout.write(USAGE)
            return 0
        return run(flags, stdout)
    except BaseException as e:  # noqa: BLE001 - the CLI reports every failure as a status
        return report_error(e, stdout, stderr)


__all__ = ["REPLAY_FLAGS", "ReplayResult", "USAGE", "main", "parse_remap", "parse_substitution",
           "replay"]
