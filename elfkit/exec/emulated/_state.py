"""What EmulatedMachine's mixins share, declared for type checkers only.

``CallRunner``, ``Callbacks``, ``ArgumentMemory``, ``DebugSupport`` and
``X87Stack`` use attributes and helpers that ``EmulatedMachine.__init__`` sets
up.  Each mixin derives from :class:`MachineState` when ``TYPE_CHECKING`` and
from ``object`` at run time, so this class is never part of a real MRO.
"""
from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

from ...arch import Arch
from ...signature import Signature
from . import _cc
from ._memory import Region

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class MachineState:
    arch: Arch
    float_abi: str
    instruction_budget: int | None
    timeout: float | None

    # unicorn: the Python object, its C handle, a scratch word for register reads
    _uc: Any
    _h: Any
    _word_buf: ctypes.c_uint64
    _word_ref: Any
    _sp_id: int
    _pc_id: int
    _regid: dict[str, int]
    _ctx0: Any
    _ctx_pool: list[Any]
    _x87: Any
    _closed: bool
    _lock: threading.RLock
    _slock: Any
    _gen: int
    _active: list[int]

    # running a call
    _running: bool
    _stop: str | None
    _hook_exc: BaseException | None
    _mem_fault: tuple[int, int, int, int] | None
    _intno: int | None
    _timeout: float | None
    _budget: int | None
    _count_mode: bool
    _call_sp: int
    _stack: Region
    _plans: dict[tuple[Signature, str], _cc.Plan]
    _callers: dict[tuple[Signature, str, bool], Callable[..., Any]]
    _float_abi: str
    _abi_ranges: list[tuple[int, int, str, Any]]
    _mixed_abi: bool

    # callbacks
    _max_callbacks: int
    _stubs: list[dict[str, Callable[[], None]]]
    _stub_defs: list[tuple[Callable[..., Any], Signature, str]]
    _stub_names: list[str]
    _callback_refs: list[Any]

    # modules and debugging
    _modules: list[Any]
    _line_info: list[tuple[int, int, Callable[[int], str | None]]]
    _line_owner: dict[int, Any]
    _tracer: Any
    _trace_hook: int
    _gdb: Any
    _gdb_hooks: list[int]
    _stub_end: int

    def _check_open(self) -> None:
        raise NotImplementedError

    def _reg(self, name: str) -> int:
        raise NotImplementedError

    def _add_hook(self, kind: int, cfn: Any, begin: int, end: int) -> int:
        raise NotImplementedError

    def _del_hook(self, handle: int) -> None:
        raise NotImplementedError

    def _write_raw(self, addr: int, data: Any) -> None:
        raise NotImplementedError

    def _new_region(self, size: int, align: int, kind: str, name: str = "",
                    perms: int = 3) -> Region:
        raise NotImplementedError

    def _abi_at(self, addr: int) -> str:
        raise NotImplementedError

    def plan(self, sig: Signature | str, float_abi: str | None = None) -> _cc.Plan:
        raise NotImplementedError

    def symbolize(self, addr: int) -> str:
        raise NotImplementedError

    def attach(self, module: Any) -> None:
        raise NotImplementedError

    def detach(self, module: Any) -> None:
        raise NotImplementedError
