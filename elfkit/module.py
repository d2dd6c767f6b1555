"""``elfkit.load`` and the ``Module`` it returns."""
from __future__ import annotations

import bisect
import contextlib
import functools
import os
from collections.abc import Callable, Iterable

from . import arch as _arch
from ._support import arguments
from .arch import Arch
from .errors import (
    BackendError,
    ElfkitError,
    InvalidArgumentError,
    ModuleClosedError,
    SignatureError,
    SymbolNotFoundError,
    UnresolvedImportError,
)
from .exec import create_machine
from .exec.base import Machine
from .exec.symfile import PluginSymbol, sized_functions
from .fatelf.files import read_input
from .fatelf.format import MAGIC_BYTES
from .loader import tags as T
from .loader.headers import elf_type
from .loader.image import place
from .loader.imports import Imports, lazy_stub
from .loader.parse import DEFAULT_LIMITS, Limits
from .loader.plan import LoadPlan, exported_symbols, plan_for
from .signature import CType, Signature, ctype
from .signature import parse as parse_signature

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .loader.objlayout import ObjectPlan


class Module:
    """A loaded plugin.  Use it as a context manager, or call ``close()``."""

    def __init__(self, plan: LoadPlan | ObjectPlan, image: Any, machine: Machine,
                 owns_machine: bool, name: str, imports: Imports | None):
        self.elf = plan.elf
        self._image = image
        self.machine = machine
        self._owns_machine = owns_machine
        self.name = name
        self.imports = imports
        self.closed = False
        self._initialised = False
        # modules whose exports this one imports, and the open modules importing
        # from this one: a provider's image stays mapped until its users close
        self._providers: list[Module] = []
        self._users: set[Module] = set()
        self._close_pending = False
        self._word = CType.I64 if plan.elf.arch.bits == 64 else CType.I32   # call()'s int type
        self.exports: dict[str, int] = {}
        self._funcs: list[tuple[int, int, str]] = []   # sorted (addr, size, name)
        self._added: list[PluginSymbol] = []
        self._collect_exports(plan)

    # -- identity ----------------------------------------------------------
    @property
    def arch(self) -> Arch:
        return self.elf.arch

    @property
    def backend(self) -> str:
        return self.machine.backend

    @property
    def base(self) -> int:
        """Runtime address of link-time address 0 (the load bias)."""
        return self._image.bias

    @property
    def size(self) -> int:
        return self._image.size

    @property
    def relocation_counts(self) -> dict[str, int]:
        return dict(self._image.stats.by_type)

    @property
    def address_range(self) -> tuple[int, int]:
        """``[start, end)`` of the guest addresses the image occupies."""
        return self._image.base, self._image.base + self._image.size

    @property
    def unapplied_relocations(self) -> list[str]:
        """IFUNC relocations left unapplied because the machine cannot run
        code (a ``MemoryMachine``): ``"INDEX (IFUNC resolver at 0x...)"``;
        for an object, the relocations of its ``.debug_*`` sections that
        could not be applied (its DWARF then gives no source lines)."""
        return list(self._image.unapplied)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"base={self.base:#x}"
        return f"<elfkit.Module {self.name!r} {self.arch.name} {self.backend} {state}>"

    def __enter__(self) -> Module:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- symbols -------------------------------------------------------------
    def _collect_exports(self, plan: LoadPlan | ObjectPlan) -> None:
        bias = self._image.bias
        self._funcs = [(bias + v, size, name) for v, size, name in plan.funcs]
        if plan.exports is not None:
            self.exports = {n: v if absolute else bias + v
                            for n, (v, absolute) in plan.exports.items()}
            return
        # an IFUNC export: its resolver gives its address, at each load
        assert isinstance(plan, LoadPlan)   # an object's exports are always known
        for s in exported_symbols(plan.elf):
            addr = s.value if s.absolute else bias + s.value
            if s.type == T.STT_GNU_IFUNC:
                addr = self.machine.call(addr, parse_signature("ptr()"), ())
            if s.name not in self.exports or s.bind == T.STB_GLOBAL:
                self.exports[s.name] = addr
            if s.version and not s.version_hidden:
                self.exports.setdefault(f"{s.name}@{s.version}", addr)

    @property
    def added_symbols(self) -> tuple[PluginSymbol, ...]:
        """The symbols ``add_symbols`` gave this module, in order."""
        return tuple(self._added)

    def add_symbols(self, symbols: Iterable[tuple[int, int | None, str]]) -> list[PluginSymbol]:
        """Name functions the file does not (the entry points of a stripped
        library, found through its own tables): ``(address, size, name)``
        each, at loaded addresses.  A size of 0 or None is found (the
        ``.symtab`` or DWARF function there, else up to the next known
        function or the end of its executable segment).  ``symbolize`` then
        names them, and on the native machine so do gdb (the module is
        registered again) and perf's map.  Returns the symbols added (one
        the module already has, same name at the same address, is not)."""
        self._check_open()
        entries = []
        for item in symbols:
            if (not isinstance(item, tuple) or len(item) != 3 or not isinstance(item[0], int)
                    or not isinstance(item[1], (int, type(None))) or not isinstance(item[2], str)):
                raise InvalidArgumentError(f"{self.name}: add_symbols() takes (address, size, "
                                           f"name) tuples of int, int or None, str, not {item!r}")
            address, size, name = item
            if self.arch.func_mode_bit:        # arm: bit 0 marks Thumb code, not an address
                address &= ~1
            if not name or "\0" in name or (size or 0) < 0:
                raise InvalidArgumentError(f"{self.name}: add_symbols(): bad symbol {item!r} "
                                           "(a non-empty name without NUL, a size >= 0)")
            if not self._image.contains(address, max(size or 0, 1)):
                start, end = self.address_range
                raise InvalidArgumentError(f"{self.name}: add_symbols(): {name!r} at "
                                           f"{address:#x}+{size or 0:#x} is outside the module "
                                           f"image [{start:#x}, {end:#x})")
            entries.append((address, size or 0, name))
        added = sized_functions(self, entries)
        for sym in added:
            if not sym.size:
                raise InvalidArgumentError(f"{self.name}: add_symbols(): {sym.name!r} at "
                                           f"{sym.address:#x} is in no executable segment; "
                                           "give its size")
        if not added:
            return added
        self._added += added
        for sym in added:
            bisect.insort(self._funcs, (sym.address, sym.size, sym.name))
        self.machine.symbols_added(self, added)
        return added

    def symbol(self, name: str) -> int:
        """Address of an exported symbol, found through the ELF hash table."""
        if not isinstance(name, str):
            raise InvalidArgumentError(f"symbol(): name must be a str, not {type(name).__name__}")
        self._check_open()
        s = self.elf.lookup(name)
        if s is None or s.visibility not in (T.STV_DEFAULT, T.STV_PROTECTED):
            raise SymbolNotFoundError(f"{self.name}: no exported symbol {name!r}")
        return self.exports.get(s.name, self._image.bias + s.value)

    def symbolize(self, addr: int) -> str:
        """``function+0xoff`` (or ``module+0xoff``) for an address inside this
        module's image, ``""`` for any other address."""
        if self.closed or not self._image.contains(addr):
            return ""
        i = bisect.bisect_right(self._funcs, (addr, 1 << 64, "")) - 1
        if i >= 0:
            a, size, name = self._funcs[i]
            if addr < a + max(size, 1) or size <= 1:
                return f"{name}+{addr - a:#x}" if addr != a else name
        return f"{self.name}+{addr - self._image.bias:#x}"

    # -- calls -----------------------------------------------------------------
    def _address(self, name_or_address: str | int) -> int:
        if isinstance(name_or_address, str):
            a = self.exports.get(name_or_address)
            return a if a is not None else self.symbol(name_or_address)
        if isinstance(name_or_address, int):
            if not self._image.contains(name_or_address):
                raise ElfkitError(f"{self.name}: address {name_or_address:#x} is outside the "
                                  "module "
                                  f"image [{self._image.base:#x}, "
                                  f"{self._image.base + self._image.size:#x})")
            return name_or_address
        raise SignatureError(f"call target must be a symbol name or an address, not "
                             f"{type(name_or_address).__name__}")

    def call(self, name_or_address: str | int, *args: Any, restype: str | None = None,
             timeout: float | None = None) -> Any:
        """Call an export.  Argument types are inferred: int -> a pointer-sized
        signed integer, float -> f64, numpy array / bytearray / None -> ptr.
        ``restype`` defaults to a pointer-sized signed integer (``i64`` on
        64-bit targets).  Use ``function()`` for exact C types."""
        if timeout is not None:
            timeout = arguments.timeout(timeout, "call()")
        if restype is not None and not isinstance(restype, (str, CType)):
            raise InvalidArgumentError(f"call(): restype must be a C type name like 'i32', not "
                                       f"{type(restype).__name__}")
        self._check_open()
        addr = self._address(name_or_address)
        word = self._word
        params = tuple([_infer(a, word) for a in args])
        return self.machine.call(addr, _call_signature(word if restype is None else restype,
                                                       params), args, timeout)

    def function(self, name: str | int, signature: str | Signature) -> Callable[..., Any]:
        """A fast typed callable, e.g. ``m.function("dot", "f64(ptr,ptr,i64)")``."""
        self._check_open()
        return self.machine.function(self._address(name), parse_signature(signature))

    def debug(self, port: int | None, *, accept_timeout: float | None = None) -> int | None:
        """Serve gdb (the GDB remote protocol) on 127.0.0.1:``port`` (0: any
        free port): the next call stops before its first guest instruction
        until gdb attaches (``file plugin.so`` then ``target remote :PORT``;
        symbols appear at this module's loaded address) and resumes.  Returns
        the port; ``debug(None)`` ends the session.  Emulated backend only
        (``BackendError`` otherwise); ``ExecutionError`` if the port is taken."""
        self._check_open()
        start = getattr(self.machine, "debug", None)
        if start is None:
            raise BackendError(f"module {self.name!r} runs natively; gdb can debug emulated "
                               f"modules only (load with backend='emulated')")
        if port is not None:
            port = arguments.integer(port, "port", "debug()", minimum=0)
        stub = start(port, offset=self.base, accept_timeout=accept_timeout)
        return None if stub is None else int(stub.port)

    # -- memory ---------------------------------------------------------------
    def alloc(self, size: int, align: int = 16) -> int:
        size = arguments.integer(size, "size", "alloc()", minimum=0)
        align = arguments.integer(align, "align", "alloc()", minimum=1)
        self._check_open()
        return self.machine.alloc(size, align)

    def free(self, address: int) -> None:
        address = arguments.integer(address, "address", "free()")
        self._check_open()
        self.machine.free(address)

    def read(self, address: int, size: int) -> bytes:
        address = arguments.integer(address, "address", "read()")
        size = arguments.integer(size, "size", "read()", minimum=0)
        self._check_open()
        return self.machine.read(address, size)

    def write(self, address: int, data: bytes | bytearray | memoryview) -> None:
        address = arguments.integer(address, "address", "write()")
        data = arguments.buffer(data, "data", "write()")
        self._check_open()
        self.machine.write(address, data)

    # -- lifetime -------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise ModuleClosedError(f"module {self.name!r} is closed")

    def close(self) -> None:
        """Run FINI_ARRAY (reverse order) and DT_FINI, then unmap.

        A call running in another thread is waited for (native) or cancelled
        (emulated, when the module owns its machine; it raises
        ``CallTimeout``).  A module whose exports other open modules import
        is closed for its own callers at once, but its image stays mapped
        (and its finalisers wait) until the last of those modules closes."""
        if self.closed:
            return
        if self.machine.in_call():
            raise ElfkitError(f"cannot close module {self.name!r} from inside a call of its "
                              "machine (a host callback)")
        self.closed = True
        if self._users:
            self._close_pending = True
            return
        self._finish_close()

    def _finish_close(self) -> None:
        self._close_pending = False
        # an owned machine is quiesced for the whole teardown: no other
        # thread's call runs or starts while fini runs and the image goes
        quiet = self.machine.quiesced() if self._owns_machine else contextlib.nullcontext()
        with quiet:
            self._teardown()

    def _teardown(self) -> None:
        try:
            if self._initialised:
                self._image.run_fini()
        finally:
            try:
                self._image.release()
                self.machine.detach(self)
                if self._owns_machine:
                    self.machine.close()
            finally:
                providers, self._providers = self._providers, []
                for p in providers:
                    p._users.discard(self)
                    if p._close_pending and not p._users:
                        p._finish_close()


@functools.lru_cache(maxsize=256)
def _call_signature(ret: str | CType, params: tuple[CType, ...]) -> Signature:
    """The Signature ``call()`` infers, made once per shape of call."""
    return Signature(ctype(ret), params)


def _infer(a: Any, word: CType) -> CType:
    if isinstance(a, (bool, int)):
        return word
    if isinstance(a, float):
        return CType.F64
    if a is None or hasattr(a, "__array_interface__") or isinstance(a, (bytearray, memoryview)):
        return CType.PTR
    raise SignatureError(f"cannot infer a C type for {type(a).__name__}; use function() with a "
                         f"signature")


# ---------------------------------------------------------------------------

def _read_source(source: Any) -> tuple[memoryview, str]:
    if isinstance(source, (bytes, bytearray)):
        return memoryview(source), "<bytes>"
    if isinstance(source, memoryview):
        return source.cast("B") if source.format != "B" else source, "<memory>"
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:   # bounded; a FIFO or device is refused, not waited on or read forever
            return read_input(path), os.path.basename(path)
        except OSError as e:
            raise ElfkitError(f"cannot read {path!r}: {e.strerror or e}") from None
    raise ElfkitError(f"cannot load from {type(source).__name__}: expected a path, bytes or "
                      f"memoryview")


def _check_load_arguments(limits: Any, machine: Any, machine_options: dict[str, Any]) -> None:
    """load()'s checks of ``limits``, ``machine`` and the machine options."""
    if not isinstance(limits, Limits):
        raise InvalidArgumentError(f"load(): limits must be an elfkit.Limits, not "
                                   f"{type(limits).__name__}")
    if machine is not None and not isinstance(machine, Machine):
        raise InvalidArgumentError(f"load(): machine must be an elfkit machine (e.g. another "
                                   f"module's .machine), not {type(machine).__name__}")
    if machine is not None and machine_options:
        raise InvalidArgumentError(f"load(): {', '.join(sorted(machine_options))} cannot be "
                                   f"given with machine= (they configure a new machine)")
    if machine_options:
        arguments.machine_options(machine_options, "load()")


def load(source: Any, *, arch: str | Arch | None = None, backend: str = "auto",
         imports: Imports | dict[Any, Any] | None = None, lazy: bool = False,
         machine: Machine | None = None, limits: Limits = DEFAULT_LIMITS,
         name: str | None = None, init: bool = True, **machine_options: Any) -> Module:
    """Load a bare-metal ELF plugin (or pick a FatELF slice) and return a Module.

    ``backend``: "native", "emulated" or "auto" (native when the plugin's
    architecture is the host's).  ``imports``: an ``Imports`` (or one provider)
    that binds undefined symbols, newest registration first.  ``lazy``: bind
    missing required imports to stubs that raise when called instead of
    failing the load.  ``machine``: load into an existing machine (several
    modules can share one, so that they can call each other directly).
    ``init=False`` skips DT_INIT/INIT_ARRAY (and so FINI at close), e.g. to
    examine an image in a ``MemoryMachine`` that cannot run code.
    """
    _check_load_arguments(limits, machine, machine_options)
    want = _arch.get(arch) if arch is not None else None
    data, label = _read_source(source)
    if machine is not None:
        backend = machine.backend
    rec = None
    if bytes(data[:4]) == MAGIC_BYTES:      # a FatELF (its reader is imported only then)
        from .fatelf import pick_slice
        data, rec = pick_slice(data, want, fallback=backend != "native")
    slice_label = f"[{rec.arch}]" if rec is not None else ""
    # a relocatable object (``.o``) is laid out section by section (that
    # loader is imported only then); a shared object by its segments
    is_object = elf_type(data) == T.ET_REL
    if is_object:
        from .loader.objimage import object_plan, place_object
    plan: LoadPlan | ObjectPlan = object_plan(data, limits, want) if is_object \
        else plan_for(data, limits, want)
    elf = plan.elf
    if machine is None:
        machine = create_machine(elf.arch, backend, **machine_options)
        owns = True
    else:
        if machine.arch is not elf.arch:
            raise ElfkitError(f"cannot load a {elf.arch.name} plugin into a {machine.arch.name} "
                              f"machine")
        owns = False
    try:
        if imports is not None and not isinstance(imports, Imports):
            imports = Imports(imports)
        used: list[Any] = []
        name = name or (elf.soname or label) + slice_label
        bound = _bind_imports(plan, machine, imports, lazy, used, name)

        def symbol_address(i: int, bias: int) -> int:
            s = elf.symbols[i]
            if s.defined:
                if s.absolute:
                    return s.value
                if s.type == T.STT_GNU_IFUNC:
                    return -1 - (bias + s.value)
                return bias + s.value
            return bound.get(i, 0)

        image = place_object(plan, machine, bound) if not isinstance(plan, LoadPlan) \
            else place(plan, machine, symbol_address, tuple(bound.values()))
        mod = Module(plan, image, machine, owns, name, imports)
        for p in used:
            if isinstance(p, Module) and p not in mod._providers:
                mod._providers.append(p)
                p._users.add(mod)
        machine.attach(mod)
        mod._initialised = init
        try:
            if init:
                image.run_init()
        except BaseException:
            machine.detach(mod)
            image.release()
            for p in mod._providers:
                p._users.discard(mod)
            raise
        return mod
    except BaseException:
        if owns:
            machine.close()
        raise


def _bind_imports(plan: LoadPlan | ObjectPlan, machine: Machine, imports: Imports | None,
                  lazy: bool, used: list[Any], name: str) -> dict[int, int]:
    bound: dict[int, int] = {}
    if not plan.undefined:
        return bound
    elf = plan.elf
    missing: list[str] = []
    for s in plan.undefined:
        addr = imports.resolve(s.name, machine, used) if imports is not None else None
        if addr is None:
            if s.weak:
                addr = 0
            elif lazy:
                addr = lazy_stub(machine, s.name)
            else:
                missing.append(s.name)
                continue
        bound[s.index] = addr
    if missing:
        wanted = [(s.name, s.weak) for s in plan.undefined]
        report = (imports or Imports()).explain(wanted, machine.backend, machine,
                                                f"{name} ({elf.arch.name}, {machine.backend})")
        raise UnresolvedImportError(
            f"{len(missing)} required import(s) not found: {', '.join(missing)}\n"
            + report.format(), missing, report)
    return bound
