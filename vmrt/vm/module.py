"""The module interface shared by bytecode and native (Python) modules.

A module is immutable code + metadata; everything mutable lives in the
per-context *state* object that :meth:`Module.alloc_state` returns.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from elfkit.support import DataRecord, IntEnumBody, IntFlagBody, quick_enum

from ..errors import DefinitionError, StatusCode

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)

if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .context import Context


@quick_enum(enum.IntEnum)      # (cheaper to create than the class statement's enum)
class Linkage(IntEnumBody):
    INTERNAL = 0
    IMPORT = 1
    EXPORT = 2
    IMPORT_OPTIONAL = 3
    EXPORT_OPTIONAL = 4


@quick_enum(enum.IntFlag)
class DependencyFlags(IntFlagBody):
    REQUIRED = 1
    OPTIONAL = 2


class Dependency(DataRecord, frozen=True, slots=True):
    name: str
    minimum_version: int = 0
    flags: int = DependencyFlags.REQUIRED


class ImportDecl(DataRecord, frozen=True, slots=True):
    full_name: str          # "module.function"
    cconv: str = ""         # "" = unchecked
    optional: bool = False
    minimum_version: int = 0


class ExportDecl(DataRecord, frozen=True, slots=True):
    name: str
    cconv: str
    ordinal: int = 0        # module-defined (e.g. internal function ordinal)


class Function(DataRecord, frozen=True, slots=True):
    """A handle to one function of one module."""
    module: Module
    linkage: Linkage
    ordinal: int
    name: str
    cconv: str

    @property
    def full_name(self) -> str:
        return f"{self.module.name}.{self.name}"


# ---------------------------------------------------------------- cconv ----
_CCONV_CODES = frozenset("iIfFrCD")


def cconv_fragments(cconv: str) -> tuple[str, str]:
    """Split ``0<args>_<results>`` into (args, results) with IREE's rules."""
    got = _FRAGMENTS.get(cconv)
    if got is not None:
        return got
    got = _split_cconv(cconv)
    if len(_FRAGMENTS) < 4096:
        _FRAGMENTS[cconv] = got
    return got


#: cconv -> its (args, results) (every call of a function splits its cconv)
_FRAGMENTS: dict[str, tuple[str, str]] = {}


def _split_cconv(cconv: str) -> tuple[str, str]:
    if not cconv:
        return "", ""
    if cconv[0] != "0":
        raise DefinitionError(f"unsupported cconv version {cconv[0]}", StatusCode.UNIMPLEMENTED)
    body = cconv[1:]
    args, sep, results = body.partition("_")
    if args == "v":
        args = ""
    if results == "v":
        results = ""
    for ch in args + results:
        if ch not in _CCONV_CODES:
            raise DefinitionError(f"unsupported cconv fragment char '{ch}' in '{cconv}'",
                          StatusCode.INVALID_ARGUMENT)
    return args, results


def make_cconv(args: str, results: str) -> str:
    return f"0{args or 'v'}_{results or 'v'}"


# ------------------------------------------------------------- module ------
class Module:
    """Abstract module.  Subclasses: :class:`vmrt.NativeModule`, BytecodeModule."""

    name: str = ""
    version: int = 0

    # metadata ------------------------------------------------------------
    def dependencies(self) -> Sequence[Dependency]:
        return ()

    @property
    def imports(self) -> Sequence[ImportDecl]:
        return ()

    @property
    def exports(self) -> Sequence[ExportDecl]:
        return ()

    def lookup_function(self, name: str, linkage: Linkage = Linkage.EXPORT) -> Function | None:
        """The export called ``name`` or None."""
        for i, e in enumerate(self.exports):
            if e.name == name:
                return Function(self, Linkage.EXPORT, i, e.name, e.cconv)
        return None

    def function_attrs(self, name: str) -> dict[str, Any]:
        """Reflection attributes of export ``name`` (key -> value strings)."""
        return {}

    def export_function(self, ordinal: int) -> Function:
        e = self.exports[ordinal]
        return Function(self, Linkage.EXPORT, ordinal, e.name, e.cconv)

    # state and calls -----------------------------------------------------
    def alloc_state(self, context: Context) -> Any:
        return None

    def free_state(self, state: Any) -> None:
        pass

    def resolve_import(self, state: Any, ordinal: int, target: BoundFunction | None) -> None:
        raise DefinitionError("module does not support imports", StatusCode.UNIMPLEMENTED)

    def notify(self, state: Any, signal: int) -> None:
        pass

    def call(self, state: Any, function: Function, args: list[Any]) -> list[Any]:
        raise NotImplementedError

    def caller(self, state: Any, function: Function) -> Callable[[list[Any]], list[Any]]:
        """A callable equivalent to ``call(state, function, args)`` for one
        bound function, made once when an import is linked (subclasses
        may precompute per-call work)."""
        call = self.call

        def bound(args: list[Any]) -> list[Any]:
            return call(state, function, args)
        return bound

    def converting_caller(self, state: Any, function: Function, result_codes: str,
                          note: str) -> Callable[..., tuple[Any, ...]] | None:
        """Optionally, one callable doing what an import call does with
        :meth:`caller`, taking the arguments as positional arguments (not
        one list): call, annotate every ``VmError`` with ``note`` too, and
        convert the results to VM values of ``result_codes``
        (:func:`vmrt.vm.values.convert_results`).  None (the default): the
        linker composes those steps itself."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} v{self.version}>"


class BoundFunction:
    """A function bound to the module state of one context; call it with a list."""

    __slots__ = ("function", "state", "_call")

    def __init__(self, function: Function, state: Any):
        self.function = function
        self.state = state
        self._call: Callable[[Any, Function, list[Any]], list[Any]] = function.module.call

    def __call__(self, args: list[Any]) -> list[Any]:
        return self._call(self.state, self.function, args)

    def caller(self) -> Callable[[list[Any]], list[Any]]:
        """A callable ``f(args) -> results`` equivalent to calling this."""
        return self.function.module.caller(self.state, self.function)

    def converting_caller(self, result_codes: str,
                          note: str) -> Callable[..., tuple[Any, ...]] | None:
        """See :meth:`Module.converting_caller`."""
        return self.function.module.converting_caller(self.state, self.function, result_codes,
                                                      note)

    @property
    def cconv(self) -> str:
        return self.function.cconv

    @property
    def name(self) -> str:
        return self.function.full_name

    def __repr__(self) -> str:
        return f"<BoundFunction {self.function.full_name} {self.function.cconv}>"
