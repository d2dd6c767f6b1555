"""The built-in ``io_parameters`` provider of ``vmrt run`` and
:func:`vmrt.load`: a :class:`ParametersModule` over the parameters the run
was given (``--parameters`` / ``parameters=``), made when a program depends
on ``io_parameters``.  Like IREE's tools, the files are opened (and bad ones
reported) only then."""
from __future__ import annotations

from ...vm.instance import Instance

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .module import ParametersModule


#: where :meth:`ParametersProvider.create` keeps the indexes in ``options.extra``
_INDEXES = "io_parameters.indexes"


class ParametersProvider:
    """Makes ``io_parameters`` from ``options.parameters`` (flag values
    ``[SCOPE=]FILE`` or the Python forms :func:`build_indexes` takes) and
    ``options.parameter_mode`` (``file`` or ``preload``)."""

    name = "io_parameters"

    def register_types(self, instance: Instance) -> None:
        """``io_parameters`` has no types of its own."""

    def create(self, instance: Instance, options: Any = None) -> ParametersModule:
        """The files are opened and indexed once per ``options``: ``vmrt
        test`` makes a context (and an ``io_parameters`` module) per test."""
        from .index import build_indexes
        from .module import ParametersModule
        extra = getattr(options, "extra", None)
        indexes = extra.get(_INDEXES) if isinstance(extra, dict) else None
        if indexes is None:
            specs = list(getattr(options, "parameters", None) or [])
            mode = getattr(options, "parameter_mode", None) or "file"
            indexes = build_indexes(specs, mode)
            if isinstance(extra, dict):
                extra[_INDEXES] = indexes
        return ParametersModule(instance, indexes)


PROVIDER = ParametersProvider()

__all__ = ["PROVIDER", "ParametersProvider"]
