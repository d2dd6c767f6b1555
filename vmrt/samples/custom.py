"""The ``custom`` module of the basic custom-module sample, in Python.

It defines the ref type ``custom.string`` and exports (in this order)
``string.create`` (0r_r), ``string.length`` (0r_I), ``string.print`` (0r_v)
and, in debug mode only, ``string.dprint`` (0r_v) — so a compiled program's
``vm.fallback`` for dprint runs in release mode.

Ways to get it:

* static: ``vmrt run`` creates it when a program depends on module
  ``custom`` and nothing else provides one (provider :data:`PROVIDER`, a
  built-in with the lowest priority: a ``custom`` provider published by an
  installed package through the ``vmrt.modules`` entry-point group wins);
  debug mode via ``VMRT_CUSTOM_DEBUG=1``;
* dynamic: ``--module=vmrt/samples/custom.py@create_module?debug=1``;
* from Python: ``CustomModule(instance, debug=True)``.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from vmrt.errors import StatusCode, VmError
from vmrt.hal.buffer_view import BUFFER_VIEW_TYPE, BufferView, format_buffer_view
from vmrt.tools.flags import parse_bool
from vmrt.vm.buffer import Buffer
from vmrt.vm.instance import Instance
from vmrt.vm.native_module import NativeModule, NativeState, export
from vmrt.vm.types import BUFFER_TYPE, RefObject, RefType

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

STRING_TYPE = RefType("custom.string")


class CustomString(RefObject):
    __slots__ = ("value",)
    vm_type = STRING_TYPE

    def __init__(self, value: str):
        self.value = value

    def __repr__(self) -> str:
        return f"CustomString({self.value!r})"


def _emit(line: str) -> None:
    out = sys.stdout
    out.write(line + "\n")
    out.flush()


def register_types(instance: Instance) -> None:
    instance.register_type(STRING_TYPE)


class CustomModule(NativeModule[NativeState]):
    """``custom`` of the basic sample."""

    name = "custom"
    version = 0

    def __init__(self, instance: Instance | None = None, debug: bool = False):
        if instance is not None:
            register_types(instance)
        super().__init__()
        self.debug = debug
        if not debug:
            self.remove_export("string.dprint")

    @export("string.create", "0r_r", arg_types=(BUFFER_TYPE,))
    def string_create(self, state: NativeState, buf: Buffer | None) -> CustomString:
        text = bytes(buf.data).decode("utf-8", "replace") if buf is not None else ""
        s = CustomString(text)
        _emit(f"CREATE {s.value}")
        return s

    @export("string.length", "0r_I", arg_types=(STRING_TYPE,))
    def string_length(self, state: NativeState, s: CustomString | None) -> int:
        if s is None:
            raise VmError("null string arg", StatusCode.INVALID_ARGUMENT)
        n = len(s.value.encode("utf-8"))
        _emit(f"LENGTH {s.value} = {n}")
        return n

    @export("string.print", "0r_v", arg_types=(STRING_TYPE,))
    def string_print(self, state: NativeState, s: CustomString | None) -> None:
        if s is not None:
            _emit(f"PRINT {s.value}")

    @export("string.dprint", "0r_v", arg_types=(STRING_TYPE,))
    def string_dprint(self, state: NativeState, s: CustomString | None) -> None:
        if s is not None:
            _emit(f"PRINT {s.value}")


class TensorStringModule(NativeModule[NativeState]):
    """``custom`` of the dynamic/static samples: strings made from buffer views."""

    name = "custom"
    version = 0

    def __init__(self, instance: Instance | None = None, with_error: bool = True):
        if instance is not None:
            register_types(instance)
            instance.register_type(BUFFER_VIEW_TYPE)
        super().__init__()
        if not with_error:
            self.remove_export("error")

    @export("string.from_tensor", "0r_r", arg_types=(BUFFER_VIEW_TYPE,))
    def from_tensor(self, state: NativeState, bv: BufferView | None) -> CustomString:
        if bv is None:
            raise VmError("null buffer view", StatusCode.INVALID_ARGUMENT)
        s = CustomString(format_buffer_view(bv, 128)[:511])
        _emit(f"CREATE {s.value}")
        return s

    @export("string.print", "0r_v", arg_types=(STRING_TYPE,))
    def string_print(self, state: NativeState, s: CustomString | None) -> None:
        if s is not None:
            _emit(f"PRINT {s.value}")

    @export("error", "0v_v")
    def error(self, state: NativeState) -> None:
        raise VmError("Forced failure", StatusCode.UNKNOWN)


def create_module(instance: Instance, params: Mapping[str, str] | None = None) -> CustomModule:
    """Dynamic-module entry point: ``--module=custom.py@create_module?debug=1``."""
    params = dict(params or {})
    return CustomModule(instance, debug=parse_bool(params.get("debug"), "parameter debug"))


class _StaticProvider:
    """Static-module provider for ``vmrt run`` (see vmrt.tools.module_specs)."""

    name = "custom"

    def register_types(self, instance: Instance) -> None:
        register_types(instance)

    def create(self, instance: Instance, options: Any = None) -> CustomModule:
        return CustomModule(instance, debug=parse_bool(os.environ.get("VMRT_CUSTOM_DEBUG"),
                                                          "VMRT_CUSTOM_DEBUG"))


PROVIDER = _StaticProvider()


def create_tensor_module(instance: Instance, params: Mapping[str, str] | None = None
                         ) -> TensorStringModule:
    """Dynamic-module entry point for the dynamic/static samples' ``custom``
    (``string.from_tensor``, ``string.print``, ``error``)."""
    params = dict(params or {})
    return TensorStringModule(instance, with_error=not parse_bool(params.get("static"),
                                                                  "parameter static"))
