"""What every executable of the local CPU HAL offers (IREE's
``iree_hal_local_executable_t``): an embedded or system ELF library
(:class:`~vmrt.hal.local.elf_executable.ElfExecutable`), a vmvx module
(:class:`~vmrt.hal.local.vmvx_executable.VmvxExecutable`), and whatever
kind comes next (a static library, an inline executable) satisfy
:class:`LocalExecutable`, so command buffers, the loader and the dispatch
tools handle them alike without asking which class they are.

What a tool needs beyond a dispatch (running chosen workgroups in a chosen
order, recording the stores into the bindings) is not a dispatch parameter:
it goes through :func:`vmrt.hal.dispatch_observer.workgroup_probe`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from .exports import ExportInfo
from .formats import VMVX_FORMAT


class LocalExecutable(Protocol):
    """A loaded executable whose exports a local device dispatches."""

    #: the executable's name (the library's, else the file's)
    name: str
    #: how its code runs: "native", "emulated" (elfkit's emulator) or "vmvx"
    #: (vmrt's VM); only an emulated dispatch can record its stores
    backend: str
    exports: list[ExportInfo]
    closed: bool

    def export(self, which: str | int | ExportInfo) -> ExportInfo:
        """An export by name (a leading '@' allowed) or ordinal."""
        ...

    def describe(self) -> str:
        """A few lines: the executable, its exports and its imports."""
        ...

    def dispatch(self, export: str | int | ExportInfo, workgroup_count: Any = (1, 1, 1),
                 bindings: Sequence[Any] = (), constants: Sequence[Any] = (), *,
                 workgroup_size: Sequence[int] | None = None, threads: int = 1,
                 processor_id: int = 0, deadline: float | None = None) -> list[Any]:
        """Run every workgroup of ``workgroup_count`` over ``bindings``
        (C-contiguous numpy arrays or ``HostBytes`` ranges; what the code
        writes lands in them) with ``constants``; returns ``bindings``.
        Inside :func:`~vmrt.hal.dispatch_observer.workgroup_probe` only the
        probe's workgroups run, in its order."""
        ...

    def prepare(self, export: str | int | ExportInfo, workgroup_count: Any,
                constants: Sequence[int], binding_count: int, *, threads: int = 1) -> Any:
        """A form of one dispatch checked once and run per submission over
        changing binding addresses (``.run(pointers, sizes, deadline)``), or
        None when the executable has none for it (then call dispatch())."""
        ...

    def close(self) -> None:
        ...


__all__ = ["LocalExecutable", "VMVX_FORMAT"]
