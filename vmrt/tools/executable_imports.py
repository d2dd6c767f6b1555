"""``vmrt executable imports FILE``: import resolution explained.

For every executable library in FILE (a dispatch library, ELF or FatELF,
or a ``.vmfb`` program: the ELF/FatELF executables embedded in its
rodata), each import is listed with the plugin that answers it (plugins
are searched newest first, the last ``--executable_plugin`` first), the
older plugins whose answer it shadows, and, for one nobody answers, why:
no plugin has it, a plugin was skipped (a host library cannot serve
emulated code, a plugin has no code for this CPU), or it is optional and
left NULL.  Missing required imports end the command with NOT_FOUND after
the report.
"""
from __future__ import annotations

from collections.abc import Sequence

from elfkit import fatelf

from ..errors import ImportResolutionError
from .files import MAX_MODULE_SIZE, read_input

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, TextIO


def executables_in(path: str) -> list[tuple[str, bytes]]:
    """(label, bytes) of the executable libraries in ``path``: the file
    itself when it is an ELF or FatELF, else those a ``.vmfb`` embeds."""
    from ..bytecode.format import parse_module
    from ..errors import ExecutableError

    data = read_input(path, "executable file", MAX_MODULE_SIZE, ExecutableError)
    if data[:4] in (b"\x7fELF", fatelf.MAGIC_BYTES):
        return [(path, data)]
    found = []
    for i, seg in enumerate(parse_module(data).rodata):
        if bytes(seg[:4]) in (b"\x7fELF", fatelf.MAGIC_BYTES):
            found.append((f"{path} rodata #{i}", bytes(seg)))
    if not found:
        raise ExecutableError(f"'{path}' embeds no ELF or FatELF executable (a program "
                              f"compiled for vmvx or host-only has no plugin imports)")
    return found


def report_imports(path: str, manager: Any, values: dict[str, str], stdout: TextIO) -> int:
    """Print the resolution report of every executable in ``path``; raise
    NOT_FOUND (one line) when a required import is missing."""
    from ..hal.local.elf_executable import Executable

    missing: list[str] = []
    for label, data in executables_in(path):
        try:
            exe = Executable.load(data, plugins=manager, arch=values.get("arch"),
                                  backend=values.get("backend", "auto"), name=label)
        except ImportResolutionError as e:
            if e.report is None:
                raise
            report = e.report
        else:
            try:
                report = manager.explain([i.name for i in exe.imports], exe.machine,
                                         subject=f"executable '{exe.name}'")
            finally:
                exe.close()
        stdout.write(f"{label}:\n{report.format()}\n")
        missing += report.missing
    stdout.flush()
    if missing:
        raise ImportResolutionError(f"{len(missing)} required import(s) missing: "
                                    f"{', '.join(_unique(missing))}", missing, [])
    return 0


def _unique(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(names))
