"""Machines that run loaded code: native (host CPU) and emulated (unicorn).

Nothing outside this package calls through ctypes function pointers or
touches unicorn.
"""
from __future__ import annotations

from ..arch import Arch, host
from ..errors import BackendError
from .base import Machine

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

BACKENDS = ("auto", "native", "emulated")


def choose_backend(arch: Arch, backend: str) -> str:
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "native" if arch is host() else "emulated"
    if backend == "native" and arch is not host():
        h = host()
        raise BackendError(f"cannot run a {arch.name} plugin natively on this "
                           f"{h.name if h else 'unsupported'} host; use backend='emulated' or "
                           "'auto'")
    return backend


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


__all__ = ["Machine", "BACKENDS", "choose_backend", "create_machine"]
