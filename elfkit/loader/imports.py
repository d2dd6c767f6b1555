"""Import providers, searched newest registration first.

A provider is one of:

* a mapping ``name -> (python_callable, "signature")`` (or ``name -> int``,
  an address already valid in the target machine);
* another loaded ``Module`` (its exports; it must live in the same machine,
  or both must be native);
* a ``SystemLibrary`` (or a ``ctypes.CDLL``): a host shared library, native only.

Registering a later provider overrides earlier ones for the names it has,
which is how IREE-style fallbacks work: register the reference first and
the specialised provider after it.
"""
from __future__ import annotations

import ctypes
import os
import stat
import weakref
from collections.abc import Mapping, Sequence

from ..errors import BackendError, ElfkitError, LazyImportError
from ..fatelf.files import file_kind
from ..signature import parse as parse_signature
from .import_report import ImportReport, ProviderNote

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: why a host library answers no import of emulated code
HOST_LIBRARY_REFUSAL = "a host library cannot serve emulated code"


class SystemLibrary:
    """A host shared library as an import provider (native backend only)."""

    def __init__(self, name_or_cdll: str | ctypes.CDLL, *, mode: int = ctypes.DEFAULT_MODE):
        if isinstance(name_or_cdll, ctypes.CDLL):
            self.cdll = name_or_cdll
        else:
            _refuse_special(name_or_cdll)
            try:
                self.cdll = ctypes.CDLL(name_or_cdll, mode=mode)
            except OSError as e:
                raise ElfkitError(f"cannot open system library {name_or_cdll!r}: {e}") from None
        self.name = getattr(self.cdll, "_name", str(name_or_cdll))

    def address(self, name: str) -> int | None:
        try:
            fn = getattr(self.cdll, name)
        except AttributeError:
            return None
        return ctypes.cast(fn, ctypes.c_void_p).value

    def __repr__(self) -> str:
        return f"SystemLibrary({self.name!r})"


class Exports(dict[str, int]):
    """``name -> address`` with a label: another plugin's exports as the
    report names them (``elfkit inspect --imports-from``)."""

    def __init__(self, label: str, table: Mapping[str, int]):
        super().__init__(table)
        self.label = label


def _refuse_special(name: str) -> None:
    """dlopen() of a FIFO blocks for ever and of a device reads without end:
    a path (a name with a '/') must be a regular file."""
    if "/" not in name:
        return
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return                    # dlopen reports it
    if not stat.S_ISREG(mode):
        raise ElfkitError(f"cannot open system library {name!r}: it is {file_kind(mode)}, "
                          f"not a regular file")


class Imports:
    """Providers of import symbols; ``register`` later = searched earlier."""

    def __init__(self, *providers: Any):
        self._providers: list[Any] = []
        # callbacks made per machine, so one Python function gets one stub per
        # machine; held weakly, so a closed machine's stubs go with it (an
        # id() could be reused by a later machine); made at the first stub
        # (a provider of addresses alone never needs it)
        self._stubs: weakref.WeakKeyDictionary[Any, dict[tuple[int, str], int]] | None = None
        for p in providers:
            self.register(p)

    def register(self, provider: Any) -> Any:
        if isinstance(provider, (ctypes.CDLL, str)):
            provider = SystemLibrary(provider)
        elif not (isinstance(provider, (Mapping, SystemLibrary)) or _is_module(provider)):
            raise ElfkitError(f"cannot use {type(provider).__name__} as an import provider: "
                              "expected a mapping of name -> (callable, signature), a Module or "
                              "a SystemLibrary")
        if isinstance(provider, Mapping):
            for name, v in provider.items():
                _check_entry(name, v)
        self._providers.append(provider)
        return provider

    @property
    def providers(self) -> list[Any]:
        """Registered providers, oldest first."""
        return list(self._providers)

    def describe(self) -> str:
        if not self._providers:
            return "no providers registered"
        return "providers searched: " + ", ".join(_describe(p) for p in reversed(self._providers))

    def resolve(self, name: str, machine: Any, used: list[Any] | None = None) -> int | None:
        """Address of ``name`` for code running in ``machine``, or None.
        ``used``: the provider that had it is appended (the loader keeps
        a module that provides imports loaded while its users are)."""
        base = name.split("@", 1)[0]
        for p in reversed(self._providers):
            addr = self._lookup(p, base, machine)
            if addr is not None:
                if used is not None:
                    used.append(p)
                return addr
        return None

    def explain(self, imports: Sequence[tuple[str, bool]], backend: str, machine: Any = None,
                subject: str = "imports") -> ImportReport:
        """Which provider answers each of ``imports`` ((name, weak) pairs)
        for code of ``backend`` (in ``machine``, when known), which older
        providers are shadowed, and why a missing one is missing.  Looks
        only: no callback is made, nothing is bound."""
        notes, has = [], {}
        for i, p in enumerate(reversed(self._providers)):
            notes.append(ProviderNote(_describe(p), _refusal(p, backend, machine)))
            has[i] = {n for n, _weak in imports if _has(p, n.split("@", 1)[0])}
        return ImportReport.build(subject, notes, imports, has)

    def _lookup(self, p: Any, name: str, machine: Any) -> int | None:
        if isinstance(p, Mapping):
            if name not in p:
                return None
            v = p[name]
            if isinstance(v, int):
                return v
            fn, sig = v
            if self._stubs is None:
                self._stubs = weakref.WeakKeyDictionary()
            try:
                stubs = self._stubs.get(machine)
                if stubs is None:
                    stubs = self._stubs[machine] = {}
            except TypeError:                 # a machine that cannot be weakly referenced
                stubs = {}
            key = (id(p), name)               # providers live as long as this Imports
            addr = stubs.get(key)
            if addr is None:
                addr = stubs[key] = machine.callback(fn, parse_signature(sig), name)
            return addr
        if isinstance(p, SystemLibrary):
            if machine.backend != "native":
                raise BackendError(f"import {name!r}: a system library ({p.name}) can only provide "
                                   f"imports to native modules ({HOST_LIBRARY_REFUSAL})")
            return p.address(name)
        # a Module
        if p.closed:
            return None
        addr = p.exports.get(name)
        if addr is None:
            return None
        if p.machine is not machine and not (p.backend == "native" and machine.backend == "native"):
            raise BackendError(f"import {name!r}: module {p.name!r} lives in another emulated "
                               f"machine; load both into the same machine (machine=...)")
        return addr


def lazy_stub(machine: Any, name: str) -> int:
    """A guest address that raises ``LazyImportError`` naming ``name`` when called."""

    def missing(*_args: Any) -> int:
        raise LazyImportError(f"import {name!r} was called but no provider had it "
                              f"(it was bound lazily)")

    return machine.callback(missing, parse_signature("i64()"), name)


def _is_module(p: Any) -> bool:
    return hasattr(p, "exports") and hasattr(p, "machine") and hasattr(p, "backend")


def _check_entry(name: Any, v: Any) -> None:
    if isinstance(v, int):
        return
    if not (isinstance(v, tuple) and len(v) == 2 and callable(v[0])):
        raise ElfkitError(f"import provider entry {name!r} must be (callable, 'signature') or an "
                          f"address, not {v!r}")
    parse_signature(v[1])


def _has(p: Any, name: str) -> bool:
    if isinstance(p, Mapping):
        return name in p
    if isinstance(p, SystemLibrary):
        return p.address(name) is not None
    return not p.closed and name in p.exports


def _refusal(p: Any, backend: str, machine: Any) -> str:
    """Why provider ``p`` cannot serve code of ``backend`` in ``machine`` ("" if it can)."""
    if isinstance(p, SystemLibrary):
        return HOST_LIBRARY_REFUSAL if backend != "native" else ""
    if isinstance(p, Mapping):
        return ""
    if p.closed:
        return "it is closed"
    same = machine is not None and p.machine is machine
    if not same and not (p.backend == "native" and backend == "native"):
        return "it lives in another emulated machine (load both into the same machine)"
    return ""


def _describe(p: Any) -> str:
    label = getattr(p, "label", None)
    if isinstance(label, str):
        return label
    if isinstance(p, Mapping):
        names = list(p)
        return "{" + ", ".join(names[:5]) + (", ..." if len(names) > 5 else "") + "}"
    if isinstance(p, SystemLibrary):
        return repr(p)
    return f"module {getattr(p, 'name', '?')!r}"


