"""The pieces of elfkit's infrastructure that other packages built on elfkit share.

vmrt (and a harness of your own) uses these rather than writing its own copies:

- :class:`DataRecord`, :func:`field`, :func:`replace`: slots records that behave like
  frozen or mutable dataclasses but cost no ``dataclasses``/``inspect`` import and whose
  generated methods are cached (``elfkit._support.records``);
- :func:`lazy_names`: a PEP 562 module ``__getattr__`` that imports a package's names
  on first use;
- :mod:`codecache <elfkit._support.codecache>`: values kept under a key in private,
  checked cache files (``cache_dir``, ``load``, ``store``);
- :func:`open_regular`, :func:`replace_file`, :func:`replace_dir`: open an input only if
  it is a regular file; put an output in place atomically (no partial file on error);
- :func:`quick_enum` and the bodies :data:`EnumBody`, :data:`IntEnumBody`,
  :data:`IntFlagBody`: enum classes made at a fraction of the class statement's cost
  (``elfkit._support.enums``).

Only :func:`lazy_names` is imported with this module; the others on first use, so
``import elfkit.support`` costs what ``import elfkit`` does.
"""
from __future__ import annotations

import sys

from ._support import lazy_names

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ._support import codecache
    from ._support.enums import EnumBody, IntEnumBody, IntFlagBody, quick_enum
    from ._support.files import open_regular, replace_dir, replace_file
    from ._support.records import DataRecord, field, replace

_WHERE = {"DataRecord": "_support.records", "field": "_support.records",
          "replace": "_support.records", "open_regular": "_support.files",
          "replace_file": "_support.files", "replace_dir": "_support.files",
          **dict.fromkeys(("quick_enum", "EnumBody", "IntEnumBody", "IntFlagBody"),
                          "_support.enums")}

_lazy = lazy_names("elfkit", _WHERE, globals())


def __getattr__(name: str) -> Any:
    if name == "codecache":     # the module itself
        __import__("elfkit._support.codecache")
        module = globals()["codecache"] = sys.modules["elfkit._support.codecache"]
        return module
    return _lazy(name)


__all__ = ["DataRecord", "EnumBody", "IntEnumBody", "IntFlagBody", "codecache", "field",
           "lazy_names", "open_regular", "quick_enum", "replace", "replace_dir",
           "replace_file"]
