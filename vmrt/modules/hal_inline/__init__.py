"""The ``hal_inline`` module (IREE's ``iree/modules/hal/inline``): host buffers
and buffer views for programs compiled with ``--iree-execution-model=inline-static``
or ``inline-dynamic`` (the latter also import ``hal_loader``:
:mod:`vmrt.modules.hal_loader`).  The module is imported on first use."""
from elfkit.support import lazy_names

from .provider import PROVIDER, HalInlineProvider

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .module import HalInlineModule, StorageBuffer

__all__ = ["PROVIDER", "HalInlineModule", "HalInlineProvider", "StorageBuffer"]

__getattr__ = lazy_names(__name__, {"HalInlineModule": "module", "StorageBuffer": "module"},
                         globals())
