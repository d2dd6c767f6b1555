"""BytecodeModule: a ``.vmfb`` loaded, verified and translated to Python."""
from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence

from ..errors import LoadError, StatusCode, VerifyError, VmError
from ..files import MAX_MODULE_SIZE, read_input
from ..vm.buffer import Buffer
from ..vm.instance import Instance
from ..vm.module import (
    BoundFunction,
    Dependency,
    ExportDecl,
    Function,
    ImportDecl,
    Linkage,
    Module,
    cconv_fragments,
)
from ..vm.types import LIST_TYPE, OPAQUE_TYPE, VALUE_TYPES
from ..vm.values import wrap_i32
from . import transcache
from .format import ModuleDef, flatbuffer_end, module_from_record, module_record, parse_module
from .translate.calls import Caller, import_caller, unresolved
from .translate.namespace import function_code, functions_of, lazy_functions

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .translate.disasm import TraceNames

IMPORT_OPTIONAL_FLAG = 2


class BytecodeState:
    """Per-context state: globals, the import table, the owning context."""

    __slots__ = ("module", "ctx", "rw", "grefs", "imports", "calls", "trace", "fns")

    def __init__(self, module: BytecodeModule, ctx: Any):
        d = module.definition
        self.module = module
        self.ctx = ctx
        #: the context's trace stream's ``write`` (None: not tracing) and the
        #: translated functions to run (the trace-mode translation when tracing)
        stream = getattr(ctx, "trace", None)
        self.trace = None if stream is None else stream.write
        self.fns = module.translated(self.trace is not None)
        self.rw = bytearray(d.global_bytes)
        self.grefs: list[Any] = [None] * d.global_refs
        self.imports: list[BoundFunction | None] = [None] * len(d.imports)
        #: what generated code calls for each import (see vmrt.bytecode.translate.calls)
        self.calls: list[Caller] = [unresolved(imp.full_name, k)
                                    for k, imp in enumerate(module.imports)]


class BytecodeModule(Module):
    """A VM bytecode module.  ``BytecodeModule.load(instance, path_or_bytes)``."""

    def __init__(self, instance: Instance, data: bytes | bytearray | memoryview,
                 source: str = "<memory>"):
        self.source = source
        self._data = bytes(data)
        end = flatbuffer_end(self._data)
        #: the module cache's key (None: cache off, or data too damaged to be
        #: a module, which parse_module then says); a hit skips the parser
        self._key = transcache.cache_key(self._data, "plain", end) \
            if end is not None and transcache.cache_dir() is not None else None
        hit = transcache.load(self._key) if self._key is not None else None
        d = _from_entry(hit, self._data)
        if d is None:
            hit = None
            d = parse_module(self._data)
        self.definition: ModuleDef = d
        self.name = d.name
        self.version = d.version
        self.types = [self._resolve_type(instance, t) for t in d.types]
        self._imports = [ImportDecl(i.full_name, i.cconv, bool(i.flags & IMPORT_OPTIONAL_FLAG))
                         for i in d.imports]
        self._import_results: list[str] = []
        for i in d.imports:
            try:
                self._import_results.append(cconv_fragments(i.cconv)[1])
            except VmError as e:
                raise LoadError(f"import {i.full_name}: {e.message}") from None
        self._exports = [ExportDecl(e.local_name, d.signatures[e.internal_ordinal],
                                    e.internal_ordinal) for e in d.exports]
        self._export_index = {e.name: i for i, e in enumerate(self._exports)}
        self.rodata = [Buffer(seg, readonly=True) for seg in d.rodata]
        self.function_names = {e.internal_ordinal: e.local_name for e in d.exports}
        self._lazy: _Translation
        self._functions = self._translate(hit)
        self._traced: list[Any] | None = None
        # one parse per distinct signature (a program's functions share a few)
        results = {s: cconv_fragments(s)[1] for s in dict.fromkeys(d.signatures)}
        self._function_results = [results[s] for s in d.signatures]

    @classmethod
    def load(cls, instance: Instance, source: str | os.PathLike[str] | bytes) -> BytecodeModule:
        if isinstance(source, (bytes, bytearray, memoryview)):
            return cls(instance, source)
        path = os.fspath(source)
        data = read_input(path, "module", MAX_MODULE_SIZE, LoadError)
        return cls(instance, data, source=path)

    # -- loading -------------------------------------------------------------
    @staticmethod
    def _resolve_type(instance: Instance, name: str) -> Any:
        if name in VALUE_TYPES:
            return name
        if name == "!vm.opaque":
            return OPAQUE_TYPE
        if name.startswith("!vm.list<"):
            return LIST_TYPE
        t = instance.lookup_type(name)
        if t is None:
            raise LoadError(f"no type registered with name '{name}'", StatusCode.NOT_FOUND)
        return t

    def function_label(self, k: int) -> str:
        return _label(self.name, self.function_names, k)

    def translated(self, trace: bool) -> list[Any]:
        """The translated functions; ``trace``: the trace-mode translation
        (made on first use, kept apart so untraced code pays nothing)."""
        if not trace:
            return self._functions
        if self._traced is None:
            from .translate.disasm import TraceNames  # trace mode only (start-up time)
            d = self.definition
            names = TraceNames(self.name, self.function_names,
                               [i.full_name for i in d.imports], list(d.types))
            self._traced = self._traced_functions(names)
        return self._traced

    def _translate(self, hit: Any) -> list[Any]:
        """The module's functions, each translated and compiled on its first
        call (the module cache may hold its source and code).  Unless the
        module cache's entry ``hit`` holds this module, every function is
        verified now, as IREE's verifier does at load: a function whose
        encoding, registers, branch targets, calling convention or ordinals
        (of rodata, types, globals, imports, functions) are wrong, or whose
        calls do not match their callees' cconv, is refused at load."""
        d = self.definition
        n = len(d.functions)
        sources: list[str | None] | None
        if hit is not None:
            _, consts, tid = hit
            sources = None          # read when a function's code is not kept
            verified: dict[int, Any] = {}
        else:
            from .translate.codegen import verify_function  # only when not cached (start-up)
            from .translate.info import ModuleInfo
            info = ModuleInfo(d)
            verified = {k: verify_function(d, k, self.function_label(k), info)
                        for k in range(n)}
            consts, sources, tid = [], [None] * n, b""
        lazy = self._lazy = _Translation(d, self.name, self.function_names, consts, sources,
                                         verified, self._key, tid, fresh=hit is None)
        if self._key is not None:
            weakref.finalize(self, lazy.flush)        # (also at exit)
        return lazy_functions(n, {"RO": self.rodata, "TY": self.types, "K": consts},
                              f"<vmfb {self.name!r}>", lazy.source, lazy.codes.get,
                              lazy.compiled)

    def _traced_functions(self, trace: TraceNames) -> list[Any]:
        """The trace-mode translation (never cached), compiled at once."""
        from .translate.codegen import translate_module
        from .translate.disasm import list_value, ref_text
        # what trace lines call (untraced code never does)
        ns: dict[str, Any] = {"RO": self.rodata, "TY": self.types, "TREF": ref_text,
                              "TLIST": list_value}
        sources, consts = translate_module(self.definition, self.function_label, trace)
        try:
            code = function_code(sources, f"<vmfb {self.name!r}>")
        except (SyntaxError, RecursionError, MemoryError) as e:  # pragma: no cover
            raise LoadError(f"failed to translate module: {e}") from None
        return functions_of(code, {**ns, "K": consts}, len(sources))

    # -- Module interface --------------------------------------------------------
    @property
    def imports(self) -> Sequence[ImportDecl]:
        return self._imports

    @property
    def exports(self) -> Sequence[ExportDecl]:
        return self._exports

    def dependencies(self) -> Sequence[Dependency]:
        return [Dependency(x.name, x.minimum_version, x.flags)
                for x in self.definition.dependencies]

    def lookup_function(self, name: str, linkage: Linkage = Linkage.EXPORT) -> Function | None:
        i = self._export_index.get(name)
        if i is None:
            return None
        e = self._exports[i]
        return Function(self, Linkage.EXPORT, i, e.name, e.cconv)

    def alloc_state(self, context: Any) -> BytecodeState:
        return BytecodeState(self, context)

    def resolve_import(self, state: BytecodeState, ordinal: int,
                       target: BoundFunction | None) -> None:
        state.imports[ordinal] = target
        call = import_caller(target, self._import_results[ordinal],
                             self._imports[ordinal].full_name, ordinal)
        if state.trace is not None and target is not None \
                and not isinstance(target.function.module, BytecodeModule):
            call = _traced_native(call, target.name, state.trace)
        state.calls[ordinal] = call

    def call(self, state: BytecodeState, function: Function, args: list[Any]) -> list[Any]:
        k = self._exports[function.ordinal].ordinal
        try:
            res = state.fns[k](state, *args)
            codes = self._function_results[k]
            if "i" in codes:
                res = [wrap_i32(_int_bits(v)) if c == "i" else v for v, c in zip(res, codes)]
            return list(res)
        except (TypeError, ValueError, OverflowError, IndexError, KeyError, AttributeError) as e:
            # Only a malformed module gets here (e.g. a register written as f32 and read as an
            # integer, which the register model allows but our typed locals do not).
            raise VerifyError(f"malformed bytecode in {self.name}.{function.name}: "
                          f"{type(e).__name__}: {e}", StatusCode.INTERNAL) from None

    @property
    def rodata_segments(self) -> list[memoryview]:
        """The module's read-only data segments (embedded executables among them)."""
        return [memoryview(b.data) for b in self.rodata]

    def import_result_codes(self, ordinal: int) -> str:
        """The cconv result codes (``"i"``, ``"f"``, ``"r"`` ...) of import ``ordinal``."""
        return self._import_results[ordinal]

    def function_attrs(self, name: str) -> dict[str, Any]:
        """Reflection attributes of an export (e.g. ``iree.abi.declaration``)."""
        i = self._export_index.get(name)
        if i is None:
            return {}
        return dict(self.definition.signature_attrs[self._exports[i].ordinal])

    def disassemble_source(self, k: int) -> str:
        """The Python source vmrt translated function ``k`` into (for debugging)."""
        return self._lazy.source(k)


class _Translation:
    """A module's functions translated and compiled on first call, and kept
    in the module cache: its entry (the parsed module, the constant table,
    each function's source or None when not yet translated, under a fresh
    translation id each time it is written) and beside it the compiled code
    of the functions compiled so far (under that id).  Written when the
    number of functions compiled doubles (1, 2, 4 ...: every byte written at
    most about twice), and the rest when the module is collected or at exit."""

    def __init__(self, d: ModuleDef, name: str, names: dict[int, str], consts: list[Any],
                 sources: list[str | None] | None, verified: dict[int, Any], key: bytes | None,
                 tid: bytes, fresh: bool):
        self.d, self.name, self.names = d, name, names
        #: None until a function's source is first needed (the cache's are read then)
        self.consts, self.sources, self.verified = consts, sources, verified
        self.info: Any = None
        self.lock = threading.Lock()
        self.key, self.tid = key, tid
        #: where the entry is written (at exit too, whatever the environment is then)
        self.where = transcache.cache_dir() if key is not None else None
        self.codes = transcache.load_code(key, tid) if key is not None and tid else {}
        self.written = len(self.codes)
        #: functions translated since the entry was written
        self.translated = fresh

    def source(self, k: int) -> str:
        """Function ``k``'s Python source (translated now if it is not yet)."""
        sources = self.sources
        if sources is None:
            sources = self._read_sources()
        src = sources[k]
        if src is not None:
            return src
        from .translate.codegen import translate_function, verify_function
        from .translate.info import ModuleInfo
        with self.lock:
            src = sources[k]
            if src is None:
                if self.info is None:
                    self.info = ModuleInfo(self.d, self.consts)
                where = _label(self.name, self.names, k)
                ver = self.verified.pop(k, None) or verify_function(self.d, k, where, self.info)
                src = sources[k] = translate_function(self.info, k, where, ver)
                self.translated = True
        return src

    def _read_sources(self) -> list[str | None]:
        """The sources the module cache keeps for this translation (all None
        when it keeps none: each function needed is translated again)."""
        with self.lock:
            if self.sources is None:
                n = len(self.d.functions)
                kept = transcache.load_sources(self.key, self.tid, n) \
                    if self.key is not None else None
                self.sources = kept if kept is not None else [None] * n
            return self.sources

    def compiled(self, k: int, code: Any) -> None:
        self.codes[k] = code
        if len(self.codes) >= 2 * self.written:
            self.flush()

    def flush(self) -> None:
        if self.key is None:
            return
        with self.lock:
            if self.translated and self.sources is not None:
                # the constant table may have grown: a new entry, a new id, all the code
                self.tid = transcache.store(self.key, module_record(self.d), self.consts,
                                            self.sources, self.where)
                self.translated = False
                self.written = 0
            if len(self.codes) > self.written:
                self.written = len(self.codes)
                transcache.store_code(self.key, self.tid, dict(self.codes), self.where)


def _label(module: str, names: dict[int, str], k: int) -> str:
    """How errors name function ``k`` (``names``: the exported ones' names)."""
    n = names.get(k)
    return f"{module}.{n}" if n else f"{module}@{k}"


def _from_entry(hit: Any, data: bytes) -> ModuleDef | None:
    """The definition the module cache's entry ``hit`` holds, or None (no
    entry, or one that does not fit: the module is parsed again)."""
    if hit is None:
        return None
    try:
        return module_from_record(hit[0], data)
    except (TypeError, ValueError, IndexError):
        return None


def _traced_native(call: Caller, name: str, write: Any) -> Caller:
    """``call`` writing a trace line with the results when a native module's
    function returns (the caller's ``vm.call`` line shows the arguments)."""
    from .translate.disasm import list_value

    def traced(*args: Any) -> tuple[Any, ...]:
        res = call(*args)
        write(f"[{name}]    <native> returned ({', '.join(map(list_value, res))})\n")
        return res
    return traced


def _int_bits(v: Any) -> Any:
    """An i32 result register may hold an f32 written by a float op (registers are
    untyped 32-bit slots in IREE's model): return its bit pattern."""
    if isinstance(v, float):
        import struct
        try:
            return struct.unpack("<i", struct.pack("<f", v))[0]
        except OverflowError:
            inf = float("inf") if v > 0 else float("-inf")
            return struct.unpack("<i", struct.pack("<f", inf))[0]
    return v
