"""The built-in ``hal_inline`` provider of ``vmrt run``, ``vmrt test`` and
:func:`vmrt.load`: programs compiled with ``--iree-execution-model=inline-static``
or ``inline-dynamic`` depend on the module.  It is registered on every run,
so it lives apart from the module it makes (module.py, imported when a
program needs it)."""
from __future__ import annotations

from ...hal.buffer import HAL_BUFFER_TYPE
from ...hal.buffer_view import BUFFER_VIEW_TYPE
from ...vm.instance import Instance

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .module import HalInlineModule


class HalInlineProvider:
    """Static-module provider of ``hal_inline`` (``hal.buffer_view.trace``'s
    sink, ``options.extra["debug_sink"]``, is the module's too)."""

    name = "hal_inline"

    def register_types(self, instance: Instance) -> None:
        instance.register_type(HAL_BUFFER_TYPE)
        instance.register_type(BUFFER_VIEW_TYPE)

    def create(self, instance: Instance, options: Any = None) -> HalInlineModule:
        from .module import HalInlineModule
        extra = getattr(options, "extra", None) or {}
        return HalInlineModule(instance, extra.get("debug_sink"))


PROVIDER = HalInlineProvider()

__all__ = ["PROVIDER", "HalInlineProvider"]
