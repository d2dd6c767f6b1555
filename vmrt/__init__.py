"""vmrt: a small VM runtime modelled on IREE's.

An :class:`Instance` holds ref types; :class:`Module` s (bytecode ``.vmfb``
files via :class:`BytecodeModule`, or Python :class:`NativeModule` s) are
registered in a :class:`Context`, which links imports to exports newest
module first; functions are invoked with Python/numpy values.

    inst = vmrt.Instance()
    mod = vmrt.BytecodeModule.load(inst, "prog.vmfb")
    with vmrt.Context(inst, [mod]) as ctx:
        print(ctx.invoke("module.main", [5]))

:func:`load` does all of that the way ``vmrt run`` does (HAL device,
executable plugins, extra modules) and returns a :class:`Program` whose
exports are called like Python functions, numpy arrays in and out:

    with vmrt.load("prog.vmfb", device="local-sync") as prog:
        print(prog.main(np.ones(4, np.float32)))
"""
from __future__ import annotations

from elfkit.support import lazy_names

from .errors import (
    ArgumentError,
    BudgetExceeded,
    Cancelled,
    DefinitionError,
    DispatchError,
    ExecutableError,
    FunctionNotFoundError,
    HalError,
    ImportResolutionError,
    InvocationError,
    LinkError,
    LoadError,
    ParameterError,
    PluginError,
    ReplayError,
    StatusCode,
    TypeRegistryError,
    UsageError,
    VerifyError,
    VmError,
)

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .vm.buffer import Buffer
    from .vm.context import Context, ExecutionLimits
    from .vm.instance import Instance
    from .vm.list import VmList
    from .vm.module import (
        BoundFunction,
        Dependency,
        DependencyFlags,
        ExportDecl,
        Function,
        ImportDecl,
        Linkage,
        Module,
    )
    from .vm.native_module import NativeModule, NativeState, export
    from .vm.types import BUFFER_TYPE, LIST_TYPE, RefObject, RefType

__all__ = [
    "Buffer", "BudgetExceeded", "BoundFunction", "Cancelled", "Context",
    "Dependency", "DependencyFlags", "InvocationError", "ExecutionLimits", "ExportDecl",
    "Function", "ImportDecl", "Instance", "LinkError", "Linkage", "LoadError", "Module",
    "NativeModule", "NativeState", "RefObject", "RefType", "StatusCode", "TypeRegistryError",
    "UsageError", "VerifyError", "VmError", "VmList", "BUFFER_TYPE", "LIST_TYPE",
    "export", "load_module", "__version__",
]


# heavier pieces are imported on first use to keep ``import vmrt`` cheap:
# public name -> the module that defines it
_LAZY = {
    # the VM core: imported by the first use of any of them (so that ``vmrt run``
    # imports it after its start-up settings, see vmrt/tools/main.py)
    **dict.fromkeys(("Buffer",), "vm.buffer"),
    **dict.fromkeys(("Context", "ExecutionLimits"), "vm.context"),
    **dict.fromkeys(("Instance",), "vm.instance"),
    **dict.fromkeys(("VmList",), "vm.list"),
    **dict.fromkeys(("BoundFunction", "Dependency", "DependencyFlags", "ExportDecl", "Function",
                     "ImportDecl", "Linkage", "Module"),
                    "vm.module"),
    **dict.fromkeys(("NativeModule", "NativeState", "export"), "vm.native_module"),
    **dict.fromkeys(("BUFFER_TYPE", "LIST_TYPE", "RefObject", "RefType"),
                    "vm.types"),
    "BytecodeModule": "bytecode.module",
    "BufferView": "hal.buffer_view",
    "format_buffer_view": "hal.buffer_view",
    **dict.fromkeys(("dtype_of", "element_type_of"), "hal.element_types"),
    "HAL_BUFFER_TYPE": "hal.buffer",
    **dict.fromkeys(("HAL_ALLOCATOR_TYPE", "HAL_BUFFER_VIEW_TYPE", "HAL_CHANNEL_TYPE",
                     "HAL_COMMAND_BUFFER_TYPE", "HAL_DEVICE_TYPE", "HAL_EVENT_TYPE",
                     "HAL_EXECUTABLE_TYPE", "HAL_FENCE_TYPE", "HAL_FILE_TYPE",
                     "HAL_SEMAPHORE_TYPE"), "hal.objects"),
    "Fence": "hal.objects",
    "PluginManager": "hal.local.plugins.manager",
    "ExecutablePlugin": "hal.local.plugins.plugin",
    "ImportCall": "hal.local.plugins.plugin",
    "StaticPlugin": "hal.local.plugins.static",
    **dict.fromkeys(("Executable", "ElfExecutable"), "hal.local.elf_executable"),
    "LocalExecutable": "hal.local.local_executable",
    "ExecutableLoader": "hal.local.loader",
    "ParameterIndex": "modules.io_parameters.index",
    "load": "program",
    "replay": "tools.replay",
    "Program": "program",
}
__all__ += [*(name for name in _LAZY if name not in __all__), "ExecutableError",
            "DispatchError", "PluginError", "ImportResolutionError", "ArgumentError",
            "DefinitionError", "FunctionNotFoundError", "HalError", "ParameterError",
            "ReplayError"]


_lazy = lazy_names(__name__, _LAZY, globals())


def __getattr__(name: str) -> Any:
    if name == "__version__":
        import elfkit
        return elfkit.__version__
    return _lazy(name)


def load_module(instance: Instance, source: Any) -> Module:
    """Load a ``.vmfb`` from a path or bytes."""
    from .bytecode.module import BytecodeModule
    return BytecodeModule.load(instance, source)
