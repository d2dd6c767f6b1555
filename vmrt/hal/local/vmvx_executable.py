"""vmvx executables (IREE format ``vmvx-bytecode-fb``): dispatch code that is
itself a VM bytecode module, run by vmrt's own VM — no native code and no
emulator, on any host.

Loading one (IREE's ``vmvx_module_loader``) is: parse the ``.vmfb`` the
compiler embedded (a :class:`~vmrt.bytecode.module.BytecodeModule`), link it
in a private :class:`~vmrt.vm.context.Context` after the ``vmvx`` module
(:class:`~vmrt.hal.local.vmvx.VmvxModule`, the numpy microkernels it may
import), check every entry point's cconv, and hand executable-level
constants to its ``__set_constants`` export if it has one.

Each export is an entry point with IREE's vmvx dispatch ABI, cconv
``0rrriiiiiiiii_v``::

    entry(local_memory: vm.buffer,        # the export's "local_memory" attr bytes
          constants: vm.buffer,           # the dispatch's u32 push constants (read-only)
          bindings: vm.list<vm.buffer>,   # one mutable buffer per binding range
          workgroup_id_x, _y, _z,
          workgroup_size_x, _y, _z,       # 1, 1, 1 (vmvx exports declare none)
          workgroup_count_x, _y, _z)

:meth:`VmvxExecutable.dispatch` calls it once per workgroup, x fastest, with
binding buffers that are zero-copy views of the HAL buffers' bytes.
"""
from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Any

from ...bytecode.module import BytecodeModule
from ...errors import BudgetExceeded, DispatchError, ExecutableError, StatusCode, VmError
from ...vm.buffer import Buffer
from ...vm.context import Context
from ...vm.instance import Instance
from ...vm.lifecycle import Closeable
from ...vm.list import VmList
from ...vm.types import BUFFER_TYPE
from ..dispatch_observer import current_probe
from . import fpu_state
from .dispatch_args import host_view, host_writable, workgroup_order
from .exports import ExportInfo, find_export
from .local_executable import VMVX_FORMAT
from .vmvx import VmvxModule

FORMAT = VMVX_FORMAT
ENTRY_CCONV = "0rrriiiiiiiii_v"
SET_CONSTANTS = "__set_constants"


def buffer_over(array: Any) -> Buffer:
    """A ``vm.buffer`` sharing the bytes of a C-contiguous numpy array or a
    ``HostBytes`` range (what IREE does with a binding pointer + length):
    writes land in the array."""
    buf = Buffer.__new__(Buffer)
    buf.data = host_view(array)
    buf.readonly = not host_writable(array)
    return buf


def _attr_int(attrs: dict[str, Any], key: str, default: int = 0) -> int:
    try:
        return int(attrs.get(key, default))
    except (TypeError, ValueError):
        return default


class VmvxExecutable(Closeable):
    """A loaded vmvx executable.  Use :meth:`load`."""

    closed = False  # Closeable: an attribute here, set by close()

    backend = "vmvx"

    def __init__(self, module: BytecodeModule, context: Context, name: str):
        self.module = module
        self.context = context
        self.name = name
        self.closed = False
        self.exports: list[ExportInfo] = []
        self.local_memory: list[int] = []
        self._entries: list[Any] = []

    # -- loading ----------------------------------------------------------------
    @classmethod
    def load(cls, data: Any, constants: Sequence[int] | None = None,
             name: str | None = None, instance: Instance | None = None) -> VmvxExecutable:
        instance = instance or Instance()
        try:
            module = BytecodeModule(instance, bytes(data), source=name or "<vmvx executable>")
        except VmError as e:
            e.annotate("loading vmvx executable bytecode")
            raise
        context = Context(instance, [VmvxModule(instance), module])
        self = cls(module, context, name or module.name)
        try:
            self._read_exports()
            self._set_constants(constants)
        except BaseException:
            self.close()
            raise
        return self

    def _read_exports(self) -> None:
        for decl in self.module.exports:
            if decl.name == SET_CONSTANTS:
                continue
            if decl.cconv != ENTRY_CCONV:
                raise ExecutableError(
                    "executable entry point does not match the expected calling convention; "
                    f"expected '{ENTRY_CCONV}' but got '{decl.cconv}', possible ABI version "
                    "mismatch", StatusCode.INVALID_ARGUMENT)
            attrs = self.module.function_attrs(decl.name)
            ordinal = len(self.exports)
            self.exports.append(ExportInfo(
                ordinal, decl.name, 0, 0, _attr_int(attrs, "binding_count"),
                _attr_int(attrs, "constant_count"), (1, 1, 1),
                _attr_int(attrs, "local_memory"), 0,
                has_attrs="binding_count" in attrs))
            self.local_memory.append(_attr_int(attrs, "local_memory"))
            self._entries.append(self.context.resolve_function(
                f"{self.module.name}.{decl.name}"))
        self._by_name = {e.name: e for e in self.exports}

    def _set_constants(self, constants: Sequence[int] | None) -> None:
        fn = self.module.lookup_function(SET_CONSTANTS)
        count = len(constants or ())
        if fn is None:
            if count:
                raise ExecutableError(f"executable has no executable-level constants but "
                                      f"{count} constants were provided",
                                      StatusCode.INVALID_ARGUMENT)
            return
        if not count:
            raise ExecutableError("executable requires executable-level constants but none "
                                  "were provided", StatusCode.INVALID_ARGUMENT)
        words = struct.pack(f"<{count}I", *[c & 0xFFFFFFFF for c in constants or ()])
        self.context.invoke(fn, [Buffer(words)])

    # -- queries ----------------------------------------------------------------
    def export(self, which: str | int | ExportInfo) -> ExportInfo:
        return find_export(self.name, self.exports, self._by_name, which)

    def describe(self) -> str:
        lines = [f"executable '{self.name}' ({FORMAT}, VM bytecode)",
                 f"  exports ({len(self.exports)}):"]
        lines += [f"    {e.describe()}" for e in self.exports]
        imports = [i.full_name for i in self.module.imports]
        lines.append(f"  imports ({len(imports)}):")
        lines += [f"    {n} -> vmvx" for n in imports]
        return "\n".join(lines)

    # -- dispatch ---------------------------------------------------------------
    def dispatch(self, export: str | int | ExportInfo, workgroup_count: Any = (1, 1, 1),
                 bindings: Sequence[Any] = (), constants: Sequence[Any] = (), *,
                 workgroup_size: Sequence[int] | None = None, threads: int = 1,
                 processor_id: int = 0, deadline: float | None = None) -> list[Any]:
        """Run every workgroup of ``export`` over ``bindings`` (C-contiguous
        numpy arrays, in binding order) with ``constants`` (u32 words), x
        fastest on the calling thread (``threads``, ``processor_id`` and
        ``workgroup_size`` do not apply: the vmvx ABI passes a workgroup
        size of 1x1x1 and no processor); inside
        :func:`~vmrt.hal.dispatch_observer.workgroup_probe` only the
        probe's workgroups, in its order."""
        if self.closed:
            raise DispatchError(f"executable '{self.name}' is closed",
                                StatusCode.FAILED_PRECONDITION)
        exp = self.export(export)
        where = f"executable '{self.name}' export '{exp.name}'"
        if isinstance(workgroup_count, int):
            workgroup_count = (workgroup_count, 1, 1)
        wx, wy, wz = (list(workgroup_count) + [1, 1])[:3]
        bindings = list(bindings)
        if exp.has_attrs and len(bindings) != exp.binding_count:
            raise DispatchError(f"{where} takes {exp.binding_count} binding(s), "
                                f"{len(bindings)} given")
        words = [int(c) & 0xFFFFFFFF if not isinstance(c, float)
                 else struct.unpack("<I", struct.pack("<f", c))[0] for c in constants]
        const_buf = Buffer(struct.pack(f"<{len(words)}I", *words))
        binding_list = VmList(BUFFER_TYPE, [buffer_over(b) for b in bindings])
        local = Buffer.alloc(self.local_memory[exp.ordinal])
        entry = self._entries[exp.ordinal]
        probe = current_probe()
        total = wx * wy * wz
        order = range(total) if probe is None or probe.order is None \
            else workgroup_order(probe.order, total, where)
        if probe is not None and probe.writes is not None:
            raise DispatchError(f"{where}: only an emulated dispatch can record its writes")
        fpu = fpu_state.push()      # the kernels run on this thread: IREE's FPU state
        try:
            for k in order:
                x, y, z = k % wx, (k // wx) % wy, k // (wx * wy)
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise BudgetExceeded(f"{where}: execution timed out",
                                         StatusCode.DEADLINE_EXCEEDED)
                self.context.invoke(entry, [local, const_buf, binding_list, x, y, z,
                                            1, 1, 1, wx, wy, wz], timeout=left)
        finally:
            fpu_state.pop(fpu)
        return bindings

    def prepare(self, export: str | int | ExportInfo, workgroup_count: Any,
                constants: Sequence[int], binding_count: int, *, threads: int = 1) -> None:
        """None: a vmvx dispatch has no prepared form (dispatch() runs it)."""
        return None

    def _close(self) -> None:
        self.closed = True
        self.context.close()

    def __repr__(self) -> str:
        return f"<VmvxExecutable {self.name!r} exports={len(self.exports)}>"


__all__ = ["ENTRY_CCONV", "FORMAT", "VmvxExecutable", "buffer_over"]
