"""Static libraries: executables linked into the program's host rather than
embedded in it (IREE's ``static_library_loader``).

``iree-compile --iree-llvmcpu-link-embedded=false --iree-llvmcpu-link-static
--iree-llvmcpu-static-library-output-path=lib.o`` writes the dispatch code as
a relocatable object exporting one ``<name>_library_query`` function per
executable, and a program whose executables have the format ``static``:
their data is only the library's name (NUL-terminated).  IREE's bare-metal
host links the object and hands the query functions to its loader; vmrt
loads each object with :func:`elfkit.load` (natively for this CPU, emulated
otherwise; a FatELF of objects gives the slice executables would get),
calls every query once, and registers the library under the name its
header gives.  ``hal.executable.create`` with format ``static`` then looks
the name up (the first library registered under a name wins) and builds an
:class:`~vmrt.hal.local.elf_executable.ElfExecutable` over the loaded object,
with its own environment, constants and imports.  A library the program
never asks for is ignored, as in IREE; a name nobody registered is
NOT_FOUND when the program creates that executable.

The host linker also brings compiler-rt: the soft-float helpers a static
library's object leaves undefined (riscv32's ``__adddf3``...) come from
:mod:`vmrt.hal.local.soft_float`; the library's own import table is
resolved by the executable plugins, as for any executable."""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

import elfkit

from ...errors import ExecutableError, StatusCode
from ...files import MAX_MODULE_SIZE, read_input
from ...vm.lifecycle import Closeable
from . import library_abi as abi
from .elf_executable import ElfExecutable, library_arch, prefetch_unicorn, runtime_imports
from .guest import GuestMemory
from .library_query import query_library
from .plugins.manager import PluginManager

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

QUERY_SUFFIX = abi.STATIC_QUERY_SUFFIX


class StaticLibrary:
    """One registered library: its name (from its header), the object it
    lives in, its query function (address and symbol) and the object's
    bytes (what a worker machine loads again)."""

    def __init__(self, name: str, module: Any, query: int, symbol: str, source: str,
                 data: bytes):
        self.name = name
        self.module = module
        self.query = query
        self.symbol = symbol
        self.source = source
        self.data = data

    def emulated_copy(self, exe: ElfExecutable) -> ElfExecutable:
        """``exe`` (made from this library) loaded again, object and all,
        into a new emulated machine of its CPU."""
        module = load_object(self.data, self.source, exe.arch.name, "emulated", None)
        try:
            query = module.exports[self.symbol]
        except KeyError:        # (the same bytes loaded before: cannot happen)
            module.close()
            raise ExecutableError(f"static library {self.source}: no '{self.symbol}'") from None
        return ElfExecutable.over(module, query, name=self.name, constants=exe.constants,
                                  processor_data=exe.processor_data, data=self.data,
                                  owns_module=True, copy_hook=self.emulated_copy)

    def __repr__(self) -> str:
        return (f"<static library '{self.name}' {self.module.arch.name} {self.module.backend} "
                f"from {self.source}>")


def load_object(data: bytes, label: str, arch: str, backend: str, machine: Any) -> Any:
    """Load a static library object with :func:`elfkit.load`; the ELF
    symbols it leaves undefined get what the host linker's compiler-rt
    would give under a soft-float ABI (IREE imports go through the
    library's own table)."""
    try:
        return elfkit.load(data, arch=arch, backend=backend, machine=machine,
                           name=os.path.basename(label), imports=runtime_imports(data, arch))
    except elfkit.ElfkitError as e:
        raise ExecutableError(f"loading static library {label}: {e}") from e


_STATIC_TARGET = re.compile(rb'#hal\.executable\.target<"llvm-cpu", "static", \{[^}]{0,4096}?'
                            rb'target_triple = "([A-Za-z0-9_.-]{1,64})"')
_TRIPLE_ARCHES = (("x86_64", "x86_64"), ("amd64", "x86_64"), ("aarch64", "aarch64"),
                  ("arm64", "aarch64"), ("riscv64", "riscv64"), ("riscv32", "riscv32"),
                  ("i386", "i386"), ("i486", "i386"), ("i586", "i386"), ("i686", "i386"),
                  ("arm", "arm"), ("thumb", "arm"))


def triple_arch(triple: str) -> str | None:
    """The elfkit CPU name of an LLVM target triple (``armv7a-...`` ->
    ``arm``), or None."""
    head = triple.split("-", 1)[0]
    for prefix, arch in _TRIPLE_ARCHES:
        if head.startswith(prefix):
            return arch
    return None


def static_target_arches(bytecode: Iterable[Any]) -> set[str]:
    """The CPUs a program's ``static`` executables were compiled for, read
    from the device targets iree-compile spells out in its bytecode (the
    message of ``__init``'s "HAL device not found" failure names each
    ``#hal.executable.target<"llvm-cpu", "static", {... target_triple =
    "..."}>``); empty when the program does not say."""
    arches: set[str] = set()
    for code in bytecode:
        for m in _STATIC_TARGET.finditer(bytes(code)):
            arch = triple_arch(m.group(1).decode("ascii"))
            if arch is not None:
                arches.add(arch)
    return arches


def _label(source: Any, index: int) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return f"<static library {index}>"


class StaticLibraryLoader(Closeable):
    """The libraries of the ``--static_library`` objects, by name.

        static = StaticLibraryLoader(["simple_mul.o"], plugins=manager)
        exe = static.load(b"simple_mul_dispatch_0\\0", constants=[])
        ...
        static.close()        # after the executables it made are closed
    """

    closed = False  # Closeable: an attribute here, set by close()

    def __init__(self, sources: Sequence[Any], *, plugins: PluginManager, backend: str = "auto",
                 program_arches: Iterable[str] = ()):
        self.plugins = plugins
        self.backend = backend
        #: the CPUs the program's static executables are for (empty: unknown)
        self.program_arches = set(program_arches)
        self.modules: list[Any] = []
        self.libraries: dict[str, StaticLibrary] = {}
        try:
            for i, source in enumerate(sources):
                self._add(source, _label(source, i))
        except BaseException:
            self.close()
            raise

    def _add(self, source: Any, label: str) -> None:
        if isinstance(source, (str, os.PathLike)):
            data = read_input(label, "static library", MAX_MODULE_SIZE, ExecutableError)
        else:
            data = bytes(source)
        arch = self._pick_arch(data, label)
        prefetch_unicorn(arch, self.backend)
        machine = self.plugins.machine(arch)
        module = load_object(data, label, arch, self.backend, machine)
        self.modules.append(module)
        queries = sorted((addr, sym) for sym, addr in module.exports.items()
                         if sym.endswith(QUERY_SUFFIX) and "@" not in sym)
        if not queries:
            raise ExecutableError(f"static library {label} exports no '*{QUERY_SUFFIX}' "
                                  "function", StatusCode.NOT_FOUND)
        mem = GuestMemory(machine)
        try:
            for addr, sym in queries:
                lib_name = self._query_name(mem, addr, f"{label} ({sym})")
                if lib_name not in self.libraries:
                    self.libraries[lib_name] = StaticLibrary(lib_name, module, addr, sym, label,
                                                             data)
        finally:
            mem.free_all()

    def _pick_arch(self, data: bytes, label: str) -> str:
        """The CPU of ``data`` (of its slice the program wants, for a
        FatELF): one of the program's, when the program says."""
        from elfkit.arch import host
        wanted = self.program_arches
        here = host()
        for arch in sorted(wanted, key=lambda a: (here is None or a != here.name, a)):
            try:
                return library_arch(data, arch, self.backend)
            except ExecutableError:
                continue
        try:
            arch = library_arch(data, None, self.backend)
        except ExecutableError as e:
            raise ExecutableError(f"static library {label}: {e.message}", e.code) from None
        if wanted and arch not in wanted:
            raise ExecutableError(
                f"static library {label} holds {arch} code but the program's static "
                f"executables were compiled for {', '.join(sorted(wanted))}: compile the "
                f"object and the program with the same --iree-llvmcpu-target-triple",
                StatusCode.INVALID_ARGUMENT)
        return arch

    @staticmethod
    def _query_name(mem: GuestMemory, query: int, where: str) -> str:
        """Call one query with a default environment (as IREE does when its
        loader is created): the library's name; its version must be ours."""
        lay = mem.layout
        env = mem.alloc(lay.env_size, 16)
        try:
            _lib, hdr = query_library(mem, query, env, where)
            if hdr.version != abi.LIBRARY_VERSION:
                raise ExecutableError(f"static library {where}: library version {hdr.version}, "
                                      f"expected {abi.LIBRARY_VERSION}",
                                      StatusCode.FAILED_PRECONDITION)
            name = mem.cstr(hdr.name_ptr) if hdr.name_ptr else ""
        except elfkit.ElfkitError as e:
            raise ExecutableError(f"static library {where}: {e}", StatusCode.INTERNAL) from e
        if not name:
            raise ExecutableError(f"static library {where}: the library header has no name")
        return name

    @staticmethod
    def library_name(data: Any) -> str:
        """The library name a ``static`` executable's data holds (up to its
        NUL)."""
        raw = bytes(data).split(b"\0", 1)[0]
        return raw.decode("utf-8", "replace")

    def load(self, data: Any, constants: Sequence[int] | None = None) -> ElfExecutable:
        """The executable of format ``static`` whose data is ``data``."""
        name = self.library_name(data)
        lib = self.libraries.get(name)
        if lib is None:
            have = ", ".join(f"'{n}'" for n in self.libraries) or "none"
            raise ExecutableError(f"no static library with the name '{name}' registered "
                                  f"(registered: {have})", StatusCode.NOT_FOUND)
        return ElfExecutable.over(lib.module, lib.query, plugins=self.plugins, name=lib.name,
                                  constants=constants, data=lib.data,
                                  copy_hook=lib.emulated_copy)

    def _close(self) -> None:
        self.closed = True
        errors: list[ExecutableError] = []
        for module in reversed(self.modules):
            try:
                module.close()
            except elfkit.ElfkitError as e:
                errors.append(ExecutableError(f"closing static library {module.name}: {e}"))
        self.modules.clear()
        self.libraries.clear()
        if errors:
            raise errors[0]


__all__ = ["QUERY_SUFFIX", "StaticLibrary", "StaticLibraryLoader", "static_target_arches",
           "triple_arch"]
