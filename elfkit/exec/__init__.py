"""Machines that run loaded code: native (host CPU) and emulated (unicorn).

This package's public API (``__all__``) is what code outside elfkit (vmrt, a
harness) uses of machines; its submodules are internal.  Nothing outside this
package calls through ctypes function pointers or touches unicorn.

- :func:`create_machine`, :func:`choose_backend`, :data:`BACKENDS`, the :class:`Machine`
  interface and :class:`EmulatedMachine` (the emulated backend's type);
- the page protections :data:`PROT_NONE`, :data:`PROT_READ`, :data:`PROT_WRITE`,
  :data:`PROT_EXEC` for :meth:`Machine.protect`;
- the host's floating-point state: :func:`host_fpu`, :func:`fp_control`,
  :func:`flushing_call_through3`;
- emulator helpers: :func:`prefetch_emulator` (start opening libunicorn early),
  :func:`request_gdb` (the next emulated machine serves gdb), :func:`register_pending`
  (tell gdb now of natively loaded modules whose code has not run yet), :class:`GuestProfile` and
  :func:`check_profile_path` (guest profiles), :func:`page_aligned_empty` (host arrays
  an emulated machine can map without a copy).

Names of the emulated backend, the FPU helpers and the machine interface are
imported on first use, so ``import elfkit.exec`` imports neither unicorn nor
ctypes (nor, for ``elfkit disasm``, the interface and the signatures it uses).
"""
from __future__ import annotations

from .._support import lazy_names
from .._support.machines import host_arch_name
from ..arch import Arch, host
from ..errors import BackendError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .base import PROT_EXEC, PROT_NONE, PROT_READ, PROT_WRITE, Machine
    from .emulated import EmulatedMachine, GuestProfile, check_profile_path, page_aligned_empty
    from .fpu import FpControl, HostFpu, flushing_call_through3, fp_control, host_fpu
    from .jit_debug import register_pending

_LAZY = {"Machine": "base", "PROT_EXEC": "base", "PROT_NONE": "base", "PROT_READ": "base",
         "PROT_WRITE": "base", "EmulatedMachine": "emulated", "GuestProfile": "emulated",
         "check_profile_path": "emulated", "page_aligned_empty": "emulated",
         "FpControl": "fpu", "HostFpu": "fpu", "flushing_call_through3": "fpu",
         "fp_control": "fpu", "host_fpu": "fpu", "register_pending": "jit_debug"}

__getattr__ = lazy_names(__name__, _LAZY, globals())

BACKENDS = ("auto", "native", "emulated")


def choose_backend(arch: Arch, backend: str) -> str:
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "native" if _is_host(arch) else "emulated"
    if backend == "native" and not _is_host(arch):
        h = host()
        raise BackendError(f"cannot run a {arch.name} plugin natively on this "
                           f"{h.name if h else 'unsupported'} host; use backend='emulated' or "
                           "'auto'")
    return backend


def _is_host(arch: Arch) -> bool:
    """Whether ``arch`` is the host's, by name (a foreign plugin's run does
    not import the host's architecture description for the comparison)."""
    if not _host_name:
        _host_name.append(host_arch_name())
    return arch.name == _host_name[0]


_host_name: list[str | None] = []
_classes: dict[str, Any] = {}


def create_machine(arch: Arch, backend: str = "auto", **options: Any) -> Machine:
    """A new machine for ``arch``; ``backend`` is native, emulated or auto."""
    backend = choose_backend(arch, backend)
    if backend == "native":
        if options:
            raise BackendError(f"{', '.join(sorted(options))}: option(s) of the emulated backend; "
                               f"this {arch.name} plugin runs natively (pass backend='emulated')")
        native = _classes.get("native")
        if native is None:      # ctypes and the native machine: imported at first use
            from .native import NativeMachine
            native = _classes["native"] = NativeMachine
        return native(arch)
    try:
        from .emulated import EmulatedMachine
    except ImportError as e:  # pragma: no cover - unicorn is a dependency
        raise BackendError(f"the emulated backend is unavailable: {e}") from None
    return EmulatedMachine(arch, **options)


def prefetch_emulator() -> None:
    """Start opening libunicorn in the background (an emulated machine will be
    made soon); imports nothing of the emulator's Python side."""
    from .unicorn_lib import prefetch
    prefetch()


def request_gdb(port: int, host: str = "127.0.0.1") -> None:
    """Make the next emulated machine created in this process serve gdb on
    ``host:port`` (as ``ELFKIT_GDB`` does): it stops before its first guest
    instruction and announces on stderr what to load into gdb."""
    from .emulated import gdbstub
    gdbstub.request(port, host)


__all__ = ["BACKENDS", "PROT_EXEC", "PROT_NONE", "PROT_READ", "PROT_WRITE", "EmulatedMachine",
           "FpControl", "GuestProfile", "HostFpu", "Machine", "check_profile_path",
           "choose_backend", "create_machine", "flushing_call_through3", "fp_control",
           "host_fpu", "page_aligned_empty", "prefetch_emulator", "register_pending", "request_gdb"]
