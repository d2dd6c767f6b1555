"""Modules written in Python.

Declare exports with the :func:`export` decorator (name + cconv signature,
optionally the expected ref type of each ``r`` argument)::

    class Greeter(vmrt.NativeModule):
        name = "greeter"

        @vmrt.export("hello", "0i_i")
        def hello(self, state, x):
            return x + 1

Each export receives the per-context state and the VM values of its
arguments; it returns None, one value, or a tuple.  The state is typed, like
the state structs of IREE's native modules: a record class derived from
:class:`NativeState` (fields with defaults, declared as annotations) named
by the module's ``state_class``, and ``NativeModule[MyState]`` tells a type
checker what every export's ``state`` is::

    class CounterState(vmrt.NativeState):
        calls: int = 0

    class Counter(vmrt.NativeModule[CounterState]):
        name = "counter"
        state_class = CounterState

        @vmrt.export("tick", "0v_i")
        def tick(self, state: CounterState) -> int:
            state.calls += 1
            return state.calls

:meth:`NativeModule.init_state` fills in what needs the context.  Subclasses
may also declare ``imports`` (an :class:`ImportDecl` list); the context binds
them into ``state.imports`` (None for missing optional ones).
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from elfkit.support import DataRecord, field

from ..errors import ArgumentError, DefinitionError, InvocationError, StatusCode, VmError
from .module import (
    BoundFunction,
    Dependency,
    DependencyFlags,
    ExportDecl,
    Function,
    ImportDecl,
    Linkage,
    Module,
    cconv_fragments,
)
from .types import RefObject, RefType, type_of
from .values import result_converter

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any, Generic, TypeVar

    #: the state record of a native module
    StateT = TypeVar("StateT", bound="NativeState")

    class _Stateful(Generic[StateT]):
        pass
else:
    StateT = None

    class _Stateful:
        """``NativeModule[State]`` at run time, without importing typing: the
        subscript names the state type for type checkers only."""

        def __class_getitem__(cls, item: object) -> type:
            return cls

_EXPORT_ATTR = "_vmrt_export"


def export(name: str, cconv: str, arg_types: Sequence[RefType | None] | None = None
           ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a method as a module export with the given cconv."""
    cconv_fragments(cconv)  # validate early

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        setattr(fn, _EXPORT_ATTR, (name, cconv, tuple(arg_types) if arg_types else None))
        return fn
    return deco


class NativeState(DataRecord):
    """Per-context state of a native module: the base of every module's
    state record.  ``imports`` holds the module's imports as the context
    bound them (None for a missing optional one).  Derive a record with the
    module's own fields (each with a default or ``field(default_factory=...)``)
    and name it in :attr:`NativeModule.state_class`."""

    imports: list[BoundFunction | None] = field(default_factory=list)


class _NativeExport:
    __slots__ = ("decl", "impl", "arg_codes", "n_results", "result_codes", "arg_types",
                 "checks")

    def __init__(self, decl: ExportDecl, impl: Callable[..., Any],
                 arg_types: tuple[RefType | None, ...] | None):
        self.decl = decl
        self.impl = impl
        args, results = cconv_fragments(decl.cconv)
        self.arg_codes = args
        self.n_results = len(results) if "C" not in results else -1
        self.result_codes = results
        self.arg_types = arg_types
        #: (argument index, expected ref type) of each typed ref argument
        self.checks = tuple((i, want) for i, want in enumerate(arg_types or ())
                            if want is not None)

    def bound(self, impl: Callable[..., Any]) -> _NativeExport:
        """This export (a class's declaration) with ``impl`` (an instance's method)."""
        new = _NativeExport.__new__(_NativeExport)
        new.decl, new.impl, new.arg_codes, new.n_results = self.decl, impl, self.arg_codes, \
            self.n_results
        new.result_codes, new.arg_types, new.checks = self.result_codes, self.arg_types, \
            self.checks
        return new


#: class -> the exports its methods declare (see :func:`_declared_exports`)
_DECLARED: weakref.WeakKeyDictionary[type, tuple[tuple[str, _NativeExport], ...]] = \
    weakref.WeakKeyDictionary()


def _declared_exports(cls: type) -> tuple[tuple[str, _NativeExport], ...] | None:
    """``(attribute, export without its method)`` of each export method of
    ``cls`` (its own and its bases', the most derived first), the export's
    ordinal its position: found once per class (a module made per load, as
    hal is, pays only for binding its methods).  None when two methods
    declare one name (``add_export`` then says which)."""
    table = _DECLARED.get(cls)
    if table is not None:
        return table
    out: list[tuple[str, _NativeExport]] = []
    seen: set[str] = set()
    for klass in cls.__mro__:
        for attr, fn in vars(klass).items():
            meta = getattr(fn, _EXPORT_ATTR, None)
            if meta is None or attr in seen:
                continue
            seen.add(attr)
            if hasattr(Module, attr):
                raise DefinitionError(f"export method '{attr}' of {cls.__name__} shadows "
                                      "a vmrt.Module method; rename it",
                                      StatusCode.INVALID_ARGUMENT)
            ename, cconv, arg_types = meta
            out.append((attr, _NativeExport(ExportDecl(ename, cconv, len(out)), _unbound,
                                            tuple(arg_types) if arg_types else None)))
    if len({e.decl.name for _a, e in out}) < len(out):
        return None
    table = _DECLARED[cls] = tuple(out)
    return table


def _unbound(*_args: Any) -> Any:      # pragma: no cover - replaced by each instance's method
    raise AssertionError("a declared export called without its instance")


class NativeModule(Module, _Stateful[StateT]):
    """Base class for Python modules (also the base of HAL-style modules),
    generic over its per-context state record (:class:`NativeState` or a
    record derived from it, :attr:`state_class`)."""

    name = ""
    version = 0
    #: imports declared by the module, resolved per context
    import_decls: Sequence[ImportDecl] = ()
    #: the record each context gets as this module's state
    state_class: type[NativeState] = NativeState

    def __init__(self, name: str | None = None, version: int | None = None):
        if name is not None:
            self.name = name
        if version is not None:
            self.version = version
        if not self.name:
            raise DefinitionError("native module needs a name", StatusCode.INVALID_ARGUMENT)
        self._exports: list[_NativeExport] = []
        self._by_name: dict[str, int] = {}
        table = _declared_exports(type(self))
        if table is not None:
            self._exports = [e.bound(getattr(self, attr)) for attr, e in table]
            self._by_name = {e.decl.name: i for i, (_attr, e) in enumerate(table)}
            return
        seen: set[str] = set()
        for klass in type(self).__mro__:        # a name declared twice: add_export says so
            for attr, fn in vars(klass).items():
                meta = getattr(fn, _EXPORT_ATTR, None)
                if meta is not None and attr not in seen:
                    seen.add(attr)
                    self.add_export(meta[0], meta[1], getattr(self, attr), meta[2])

    # -- declaration ----------------------------------------------------
    def add_export(self, name: str, cconv: str, impl: Callable[..., Any],
                   arg_types: Sequence[RefType | None] | None = None) -> None:
        """Add an export at runtime; ``impl(state, *args)``."""
        if name in self._by_name:
            raise DefinitionError(f"duplicate export '{name}' in module '{self.name}'",
                          StatusCode.ALREADY_EXISTS)
        decl = ExportDecl(name, cconv, len(self._exports))
        self._by_name[name] = len(self._exports)
        self._exports.append(_NativeExport(decl, impl, tuple(arg_types) if arg_types else None))

    def remove_export(self, name: str) -> None:
        idx = self._by_name.pop(name, None)
        if idx is None:
            return
        del self._exports[idx]
        self._by_name = {e.decl.name: i for i, e in enumerate(self._exports)}
        self._exports = [_NativeExport(ExportDecl(e.decl.name, e.decl.cconv, i), e.impl,
                                       e.arg_types)
                         for i, e in enumerate(self._exports)]

    @property
    def exports(self) -> Sequence[ExportDecl]:
        return [e.decl for e in self._exports]

    @property
    def imports(self) -> Sequence[ImportDecl]:
        return tuple(self.import_decls)

    def dependencies(self) -> Sequence[Dependency]:
        deps: dict[str, list[Any]] = {}
        for imp in self.import_decls:
            mod = imp.full_name.split(".", 1)[0]
            d = deps.setdefault(mod, [False, 0])
            if not imp.optional:
                d[0] = True
                d[1] = max(d[1], imp.minimum_version)
        return [Dependency(n, v, DependencyFlags.REQUIRED if req else DependencyFlags.OPTIONAL)
                for n, (req, v) in deps.items()]

    def lookup_function(self, name: str, linkage: Linkage = Linkage.EXPORT) -> Function | None:
        idx = self._by_name.get(name)
        if idx is None:
            return None
        d = self._exports[idx].decl
        return Function(self, Linkage.EXPORT, idx, d.name, d.cconv)

    # -- state ----------------------------------------------------------
    def alloc_state(self, context: Any) -> StateT:
        state: Any = self.state_class(imports=[None] * len(self.import_decls))
        self.init_state(state, context)
        return state

    def init_state(self, state: StateT, context: Any) -> None:
        """Hook: fill in what the state needs from ``context``."""

    def resolve_import(self, state: StateT, ordinal: int, target: BoundFunction | None) -> None:
        state.imports[ordinal] = target

    # -- calls ----------------------------------------------------------
    def call(self, state: Any, function: Function, args: list[Any]) -> list[Any]:
        return self._make_caller(state, function, None, None)(*args)

    def caller(self, state: Any, function: Function) -> Callable[[list[Any]], list[Any]]:
        """The export's call with its ref checks and result packing decided
        once (what the context links imports to)."""
        if type(self).call is not NativeModule.call:      # a subclass's own call()
            return super().caller(state, function)
        call = self._make_caller(state, function, None, None)

        def bound(args: list[Any]) -> list[Any]:
            return call(*args)
        return bound

    def converting_caller(self, state: Any, function: Function, result_codes: str,
                          note: str) -> Callable[..., tuple[Any, ...]] | None:
        """The export's call (positional arguments), ``note`` annotation and
        result conversion in one frame (the hot path of every ``hal`` call a
        program makes); None for a subclass's own ``call()`` or other result
        codes."""
        ex = self._exports[function.ordinal]
        if type(self).call is not NativeModule.call or ex.result_codes != result_codes \
                or ex.n_results < 0:
            return None
        return self._make_caller(state, function, result_converter(
            result_codes, function.full_name), note)

    def _make_caller(self, state: Any, function: Function,
                     convert: Callable[[Any], tuple[Any, ...]] | None, note: str | None) -> Any:
        """``call(*args)``: without ``convert``, results as a list; with it,
        VM values of the export's result codes, errors also annotated
        ``note``."""
        ex = self._exports[function.ordinal]
        impl, n, checks = ex.impl, ex.n_results, ex.checks
        where = f"while invoking native function {self.name}.{ex.decl.name}"
        ref, i32 = ex.result_codes == "r", ex.result_codes == "i"

        def call(*args: Any) -> Any:
            try:
                if checks:
                    _check_refs(checks, args, where)
                try:
                    result = impl(state, *args)
                except Exception as e:  # noqa: BLE001 - see native_error
                    raise native_error(e, where)  # noqa: B904 - chained there
            except VmError as e:
                if note is not None:
                    e.annotate(note)
                raise
            if convert is None:
                if n == 1:
                    return [result]
                return [] if n == 0 or result is None else list(result)
            if n == 0:
                return ()
            if n == 1:
                if ref and (result is None or isinstance(result, RefObject)):
                    return (result,)
                if i32 and type(result) is int and -0x80000000 <= result <= 0x7FFFFFFF:
                    return (result,)
                return convert([result])
            return convert(() if result is None else list(result))
        return call


def native_error(e: Exception, where: str) -> Exception:
    """What an exception raised by a native export becomes for its caller: a
    ``VmError`` annotated ``where``; a ``RecursionError`` itself; any other
    (a bug in the Python module: reported, not a crash of the VM) an
    ``INTERNAL`` ``InvocationError`` naming it, chained to it."""
    if isinstance(e, VmError):
        return e.annotate(where)
    if isinstance(e, RecursionError):
        return e
    err = InvocationError(f"{type(e).__name__}: {e}", StatusCode.INTERNAL).annotate(where)
    err.__cause__ = e
    return err


def _check_refs(checks: tuple[tuple[int, RefType], ...], args: Sequence[Any], where: str) -> None:
    """Each ref argument ``i`` with an expected type is null or of that type."""
    for i, want in checks:
        value = args[i] if i < len(args) else None
        if value is None:
            continue
        have = type_of(value)
        if have is not want:
            raise ArgumentError(
                "parameter contains a reference to the wrong type; have "
                f"{have.name if have else type(value).__name__} but expected {want.name}",
                StatusCode.INVALID_ARGUMENT).annotate(where)
