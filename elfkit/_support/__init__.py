"""elfkit's infrastructure: slots records (records.py), the code cache (codecache.py),
private and regular files (files.py), argument conversion (arguments.py), the light
machine tables (machines.py) and, here, :func:`lazy_names` (package attributes
imported on first use, a PEP 562 module ``__getattr__``), kept in the package itself
because ``import elfkit`` needs it and nothing else of this package.

``import elfkit`` and registering the ``elfkit`` commands stay fast because
their packages name what they export without importing it::

    __getattr__ = lazy_names(__name__, {"compile_plugin": "compile"}, globals())

Not user API: code outside elfkit uses the public re-exports in :mod:`elfkit.support`.
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, where: Mapping[str, str],
               namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps each name to the
    submodule (relative to ``package``) that defines it; the value found is
    stored in ``namespace`` (the package's ``globals()``), so each name is
    looked up once.  Other names raise AttributeError, as for any module."""
    def get(name: str) -> Any:
        sub = where.get(name)
        if sub is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = f"{package}.{sub}"
        __import__(module)  # importlib.import_module's work, without importing importlib
        value = getattr(sys.modules[module], name)
        namespace[name] = value
        return value
    return get
