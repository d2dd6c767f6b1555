"""The ``hal_loader`` module (IREE's ``iree/modules/hal/loader``): embedded ELF
executables loaded and dispatched inline, for programs compiled with
``--iree-execution-model=inline-dynamic`` (their buffers come from
``hal_inline``: :mod:`vmrt.modules.hal_inline`).  The module, and with it
the executable loader, is imported on first use."""
from elfkit.support import lazy_names

from .provider import PROVIDER, HalLoaderProvider

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .module import HalLoaderModule

__all__ = ["PROVIDER", "HalLoaderModule", "HalLoaderProvider"]

__getattr__ = lazy_names(__name__, {"HalLoaderModule": "module"}, globals())
