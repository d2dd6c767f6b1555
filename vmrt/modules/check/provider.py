"""The built-in ``check`` provider of ``vmrt run`` and ``vmrt test``.  It is
registered on every run, so it lives apart from the module it makes
(module.py, imported when a program imports ``check`` functions)."""
from __future__ import annotations

from ...vm.instance import Instance

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .module import CheckModule


class CheckProvider:
    """The built-in ``check`` provider: a :class:`CheckModule` for programs
    that import ``check`` functions (``options.extra["check_on_failure"]``,
    if set, becomes its ``on_failure`` callback)."""

    name = "check"

    def register_types(self, instance: Instance) -> None:
        """``check`` has no types of its own."""

    def create(self, instance: Instance, options: Any = None) -> CheckModule:
        from .module import CheckModule
        extra = getattr(options, "extra", None) or {}
        return CheckModule(instance, extra.get("check_on_failure"))


PROVIDER = CheckProvider()

__all__ = ["PROVIDER", "CheckProvider"]
