"""vmrt: a small VM runtime modelled on IREE's.

An :class:`Instance` holds ref types; :class:`Module` s (bytecode ``.vmfb``
files via :class:`BytecodeModule`, or Python :class:`NativeModule` s) are
registered in a :class:`Context`, which links imports to exports newest
module first; functions are invoked with Python/numpy values.

    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, "prog.vmfb")
    with vmrt.Context(inst, [mod]) as ctx:
        print(ctx.invoke("module.main", [5]))
"""
from __future__ import annotations

from .vm.buffer import Buffer
from .vm.context import Context, ExecutionLimits
from .errors import (BudgetExceeded, ExecutionError, LinkError, LoadError, StatusCode,
                     TypeRegistryError, UsageError, VerifyError, VmError)
from .vm.instance import Instance
from .vm.module import (BoundFunction, Dependency, DependencyFlags, ExportDecl, Function,
                     ImportDecl, Linkage, Module, cconv_fragments, make_cconv)
from .vm.native_module import NativeModule, NativeState, export
from .vm.types import BUFFER_TYPE, LIST_TYPE, RefObject, RefType, type_of
from .vm.list import VmList

__all__ = [
    "Buffer", "BudgetExceeded", "BoundFunction", "BytecodeModule", "BufferView", "Context",
    "Dependency", "DependencyFlags", "ExecutionError", "ExecutionLimits", "ExportDecl",
    "Function", "ImportDecl", "Instance", "LinkError", "Linkage", "LoadError", "Module",
    "NativeModule", "NativeState", "RefObject", "RefType", "StatusCode", "TypeRegistryError",
    "UsageError", "VerifyError", "VmError", "VmList", "BUFFER_TYPE", "LIST_TYPE",
    "cconv_fragments", "export", "load_module", "make_cconv", "type_of", "__version__",
]


_PLUGIN_NAMES = ("ExecutablePlugin", "StaticPlugin", "ImportCall", "PluginError",
                 "ImportResolutionError")
_EXECUTABLE_NAMES = ("Executable", "ExecutableLoader", "ExecutableError", "DispatchError")
__all__ += ["PluginManager", *_PLUGIN_NAMES, *_EXECUTABLE_NAMES]


def __getattr__(name: str):
    # heavier pieces are imported on first use to keep ``import vmrt`` cheap
    if name == "BytecodeModule":
        from .bytecode.module import BytecodeModule
        return BytecodeModule
    if name == "BufferView":
        from .hal.buffer_view import BufferView
        return BufferView
    if name == "PluginManager":
        from .hal.local.plugins.manager import PluginManager
        return PluginManager
    if name in _PLUGIN_NAMES:
        from .hal.local.plugins import plugin as plugins
        return getattr(plugins, name)
    if name in _EXECUTABLE_NAMES:
        from .hal.local import executable as executables
        return getattr(executables, name)
    if name == "__version__":
        from elfkit._version import __version__
        return __version__
    raise AttributeError(f"module 'vmrt' has no attribute {name!r}")


def load_module(instance: Instance, source) -> Module:
    """Load a ``.vmfb`` from a path or bytes."""
    from .bytecode.module import BytecodeModule
    return BytecodeModule.load(instance, source)
