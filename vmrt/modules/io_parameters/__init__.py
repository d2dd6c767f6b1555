"""The ``io_parameters`` module (IREE's ``iree/modules/io/parameters``) and
the parameter files it reads: ``.irpa``, ``.gguf`` and ``.safetensors``
(``vmrt run --parameters=[SCOPE=]FILE``, ``vmrt.load(..., parameters=...)``).
The module and the parsers are imported on first use: every run registers
the provider, few programs have parameters."""
from elfkit.support import lazy_names

from .provider import PROVIDER, ParametersProvider

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from .entries import ParameterEntry
    from .index import PARAMETER_MODES, ParameterIndex, build_indexes
    from .module import ParametersModule

__all__ = ["PARAMETER_MODES", "PROVIDER", "ParameterEntry", "ParameterIndex",
           "ParametersModule", "ParametersProvider", "build_indexes"]

__getattr__ = lazy_names(__name__, {"ParameterEntry": "entries", "PARAMETER_MODES": "index",
                                    "ParameterIndex": "index", "build_indexes": "index",
                                    "ParametersModule": "module"}, globals())
