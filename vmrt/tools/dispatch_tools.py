"""The dispatch observers of ``vmrt run`` (``--dump_dispatches``,
``--check_races``, ``--device_replay_output``) set up from its flags: :func:`dispatch_observer`.
``--compare_with`` has its own runner (:mod:`vmrt.tools.compare`)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)

if TYPE_CHECKING:
    from typing import Any

    from ..hal.local.races import RaceChecker
    from .dump import DispatchDumper
    from .replay_capture import CaptureRecorder


class RunObserver:
    """What watches the dispatches of one ``vmrt run`` (maybe nothing)."""

    def __init__(self, dumper: DispatchDumper | None, races: RaceChecker | None,
                 capture: CaptureRecorder | None = None):
        self.dumper = dumper
        self.races = races
        #: ``--device_replay_output``: records the device work as a replay capture
        self.capture = capture

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        observer: Any = self.dumper or self.races or self.capture
        if observer is None:
            yield
            return
        from ..hal.dispatch_observer import observe_dispatches  # only when watching
        with observe_dispatches(observer):
            yield

    def finish(self, results: Any) -> None:
        """The run succeeded with ``results``: write the replay capture."""
        if self.capture is not None:
            self.capture.finish(results)

    def report(self) -> str:
        """``[RACE]`` lines, if races were found."""
        if self.races is None:
            return ""
        from ..hal.local.races import race_report
        return race_report(self.races.races, self.races.checked)

    def exit_code(self) -> int:
        return 1 if self.races is not None and self.races.races else 0


def dispatch_observer(flags: Any) -> RunObserver:
    """The observer ``--dump_dispatches`` and ``--check_races`` ask for (the
    dumper records what the race checker computed when both are given).
    The tools are imported only when asked for (start-up of a plain run)."""
    spec = flags.values.get("dump_dispatches")
    replay = flags.values.get("device_replay_output")
    if replay is not None:
        from ..errors import UsageError
        from .replay_capture import CaptureRecorder, check_output_path
        for other in ("dump_dispatches", "compare_with", "check_races"):
            if other in flags.values or other in flags.bools:
                raise UsageError(f"--device_replay_output cannot be combined with --{other}")
        check_output_path(replay)
        return RunObserver(None, None, CaptureRecorder(replay))
    if spec is None and "check_races" not in flags.bools:
        return RunObserver(None, None)
    from ..hal.local.races import RaceChecker
    from .binding_diff import dispatch_element_type
    from .dump import DispatchDumper, parse_dump_spec
    etype = dispatch_element_type(flags)
    races = RaceChecker(element_type=etype) if "check_races" in flags.bools else None
    dumper = None
    if spec is not None:
        directory, pattern = parse_dump_spec(spec)
        dumper = DispatchDumper(directory, pattern, races, etype)
    return RunObserver(dumper, races)
