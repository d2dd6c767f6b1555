"""The CPU executable loader: what a HAL device needs to turn the bytes
``hal.executable.create`` passes into a dispatchable
:class:`~vmrt.hal.local.elf_executable.ElfExecutable` (IREE's
``executable_loader`` with the embedded-ELF and system-ELF formats),
with one plugin manager resolving every executable's imports, or into a
:class:`~vmrt.hal.local.vmvx_executable.VmvxExecutable` (format
``vmvx-bytecode-fb``: VM bytecode run by vmrt's VM, IREE's vmvx loader), or,
given static libraries, into one of theirs (format ``static``: IREE's
static library loader, :mod:`vmrt.hal.local.static_library`)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from elfkit import FatElfError, fatelf

from ...errors import ExecutableError, StatusCode
from ...vm.lifecycle import Closeable
from .elf_executable import ElfExecutable
from .formats import VMVX_FORMAT
from .plugins.manager import PluginManager, register_plugins

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .local_executable import LocalExecutable
    from .static_library import StaticLibraryLoader

#: IREE's executable format of a static library (the data is its name)
STATIC_FORMAT = "static"

#: elfkit arch name -> the suffix of IREE's ``embedded-elf-<suffix>`` format
FORMAT_SUFFIXES = {"x86_64": "x86_64", "aarch64": "arm_64", "riscv64": "riscv_64",
                  "arm": "arm_32", "i386": "x86_32", "riscv32": "riscv_32"}


def infer_format(data: bytes) -> str:
    """IREE's executable format string for library bytes:
    ``embedded-fatelf`` for a FatELF, ``embedded-elf-<arch>`` for an ELF
    (``x86_64``, ``arm_64``, ``riscv_64``, ``arm_32``, ``x86_32``,
    ``riscv_32``, or ``unknown``)."""
    try:
        ident = fatelf.identify(data)
    except FatElfError as e:
        raise ExecutableError(f"not an ELF or FatELF executable: {e}",
                              StatusCode.INVALID_ARGUMENT) from None
    if ident.kind == "fatelf":
        return "embedded-fatelf"
    return "embedded-elf-" + FORMAT_SUFFIXES.get(ident.arches[0] or "", "unknown")


def executable_arches(segments: Iterable[Any]) -> set[str]:
    """The CPUs of the ELF and FatELF executables among ``segments`` (a
    program's rodata: llvm-cpu embeds each executable library as one)."""
    arches: set[str] = set()
    for seg in segments:
        head = bytes(memoryview(seg)[:4])
        if head not in (b"\x7fELF", fatelf.MAGIC_BYTES):
            continue
        try:
            arches.update(a for a in fatelf.identify(seg).arches if a)
        except FatElfError:
            continue            # rodata that merely starts like an ELF
    return arches


def supports_format(fmt: str) -> bool:
    """Whether vmrt's CPU loader takes executables of IREE format ``fmt``
    (``embedded-elf-<arch>``, ``embedded-fatelf``, ``system-elf-<arch>``,
    ``vmvx-bytecode-fb``)."""
    if fmt == VMVX_FORMAT:
        return True
    for prefix in ("embedded-elf-", "system-elf-"):
        if fmt.startswith(prefix):
            return fmt[len(prefix):] in FORMAT_SUFFIXES.values()
    return fmt == "embedded-fatelf"


class ExecutableLoader(Closeable):
    """What a HAL module needs to run ``hal.executable.create`` and
    ``hal.command_buffer.dispatch`` on CPUs: one plugin manager built from
    the ``--executable_plugin`` values (flag order = registration order), and
    executables loaded from the bytes the compiler embedded in the module.

        loader = ExecutableLoader(options.executable_plugins)
        exe = loader.load(executable_data, constants)       # hal.executable.create
        exe.dispatch(ordinal, (x, y, z), [views...], push_constants)
        loader.close()                                     # at context teardown
    """

    closed = False  # Closeable: an attribute here, set by close()

    FORMATS = ("embedded-elf-", "embedded-fatelf", "system-elf-", VMVX_FORMAT)

    def __init__(self, plugin_specs: Sequence[str] = (), *, backend: str = "auto",
                 manager: PluginManager | None = None, call_timeout: float | None = None,
                 static_libraries: Sequence[Any] = (), static_arches: Iterable[str] = ()):
        self.plugins = manager or register_plugins(list(plugin_specs), backend=backend,
                                                   call_timeout=call_timeout)
        self._own = manager is None
        self.executables: list[LocalExecutable] = []
        #: the ``--static_library`` objects' libraries (None: no static loader)
        self.static: StaticLibraryLoader | None = None
        if static_libraries:
            from .static_library import StaticLibraryLoader
            try:
                self.static = StaticLibraryLoader(static_libraries, plugins=self.plugins,
                                                  backend=backend, program_arches=static_arches)
            except BaseException:
                if self._own:
                    self.plugins.close()
                raise

    def can_load(self, executable_format: str) -> bool:
        if executable_format == STATIC_FORMAT:
            return self.static is not None
        return executable_format.startswith(self.FORMATS)

    def load(self, data: Any, constants: Sequence[int] | None = None,
             name: str | None = None, executable_format: str | None = None
             ) -> LocalExecutable:
        """Load executable bytes; ``executable_format`` ``vmvx-bytecode-fb``
        selects the vmvx loader, ``system-elf-<arch>`` a system library (a
        shared library whose libc/libm imports the host's C libraries serve),
        anything else an embedded ELF or FatELF."""
        exe: LocalExecutable      # (mypy checks that both kinds satisfy the protocol)
        if executable_format == STATIC_FORMAT:
            if self.static is None:
                raise ExecutableError("executable format 'static' needs static libraries "
                                      "(--static_library=lib.o)", StatusCode.NOT_FOUND)
            exe = self.static.load(data, constants)
        elif executable_format == VMVX_FORMAT:
            from .vmvx_executable import VmvxExecutable  # the vmvx kernels: only for vmvx
            exe = VmvxExecutable.load(bytes(data), constants, name=name)
        else:
            exe = ElfExecutable.load(bytes(data), plugins=self.plugins, constants=constants,
                                     name=name, system=(executable_format or "").startswith(
                                         "system-elf-"), defer_names=True)
        self.executables.append(exe)
        return exe

    def _close(self) -> None:
        self.closed = True
        for exe in reversed(self.executables):
            exe.close()
        self.executables.clear()
        if self.static is not None:
            self.static.close()
            self.static = None
        if self._own:
            self.plugins.close()


def load_executable(source: Any, plugins: PluginManager | Mapping[str, Any] | None = None,
                    **kwargs: Any) -> ElfExecutable:
    """Shorthand for :meth:`ElfExecutable.load`."""
    return ElfExecutable.load(source, plugins=plugins, **kwargs)  # type: ignore[arg-type]


__all__ = ["ExecutableLoader", "FORMAT_SUFFIXES", "STATIC_FORMAT", "VMVX_FORMAT", "infer_format",
           "load_executable", "supports_format"]
