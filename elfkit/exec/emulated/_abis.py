"""Which float ABI a call or a host callback of an emulated machine uses,
and the argument plans (``_cc.plan``) per signature and ABI.

Only RISC-V has a choice (``float_abi``: ``"double"``, ``"single"`` or
``"soft"``).  Each attached module's ELF ``e_flags`` name its ABI; the first
one becomes the machine's default.  While the attached modules disagree
(``mixed``), a call uses the ABI of the module holding its entry address
and a callback the ABI of the module holding its return address.
"""
from __future__ import annotations

from ...arch import Arch
from ...signature import Signature
from ...signature import parse as parse_signature
from . import _cc

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class FloatAbis:
    """``current``: the machine's float ABI as given (``"hard"``: the
    architecture's own, ``value`` says which); ``mixed``: attached modules
    disagree, use ``at(address)``."""

    def __init__(self, arch: Arch) -> None:
        self.arch = arch
        self.current = "hard"
        self.mixed = False
        self._ranges: list[tuple[int, int, str, Any]] = []    # (lo, hi, abi, module)
        self._plans: dict[tuple[Signature, str], _cc.Plan] = {}

    @property
    def value(self) -> str:
        """The machine's float ABI by name."""
        return self.current if self.current != "hard" else self.arch.cc.float_abi

    def set(self, value: str) -> bool:
        """Make ``value`` the machine's float ABI; whether it changed."""
        _cc.check_abi(self.arch, value)
        if value == self.current:
            return False
        self.current = value
        return True

    def at(self, addr: int) -> str:
        """The float ABI of the code at ``addr``."""
        for lo, hi, abi, _m in self._ranges:
            if lo <= addr < hi:
                return abi
        return self.current

    def attach(self, module: Any, e_flags: int | None, span: tuple[int, int] | None) -> bool:
        """Note the float ABI of ``module`` (RISC-V); whether the machine's
        own changed (the first module's becomes the default for code outside
        any module)."""
        if e_flags is None or not self.arch.name.startswith("riscv"):
            return False
        abi = _cc.float_abi_from_eflags(self.arch, e_flags)
        changed = not self._ranges and self.set(abi)
        lo, hi = span if span is not None else (0, 0)
        self._ranges.append((lo, hi, abi, module))
        self._update()
        return changed

    def detach(self, module: Any) -> None:
        self._ranges = [r for r in self._ranges if r[3] is not module]
        self._update()

    def _update(self) -> None:
        self.mixed = len({r[2] for r in self._ranges} | {self.value}) > 1

    def plan(self, sig: Signature | str, float_abi: str | None = None) -> _cc.Plan:
        """Where arguments and result of ``sig`` live (see ``_cc``)."""
        sig = parse_signature(sig)
        abi = float_abi or self.current
        p = self._plans.get((sig, abi))
        if p is None:
            p = self._plans[(sig, abi)] = _cc.plan(self.arch, sig, abi)
        return p
