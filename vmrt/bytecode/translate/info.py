"""What the translator needs to know about a module besides its functions'
code: table sizes, signatures, import calling conventions, and the constant
table the generated code reads (``K``)."""
from __future__ import annotations

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ..format import ModuleDef

__all__ = ["ModuleInfo"]


class ModuleInfo:
    """The module facts the translator reads, and the constants it collects."""

    def __init__(self, d: ModuleDef, consts: list[Any] | None = None):
        self.n_rodata = len(d.rodata)
        self.n_types = len(d.types)
        self.n_imports = len(d.imports)
        self.n_functions = len(d.functions)
        self.global_bytes = d.global_bytes
        self.global_refs = d.global_refs
        self._d = d
        #: the constant table (strings, floats) the generated code reads as ``K[i]``
        #: (``consts``: a table made before, which this one extends in place)
        self.consts: list[Any] = [] if consts is None else consts
        self._const_idx: dict[tuple[type, str], int] = {
            (type(v), repr(v)): i for i, v in enumerate(self.consts)}

    def function(self, k: int) -> Any:
        """Function ``k``'s descriptor."""
        return self._d.functions[k]

    def signature(self, k: int) -> str:
        return self._d.signatures[k]

    def import_cconv(self, k: int) -> str:
        return self._d.imports[k].cconv

    def const(self, value: Any) -> str:
        """The expression reading ``value`` from the constant table (added once)."""
        key = (type(value), repr(value))
        idx = self._const_idx.get(key)
        if idx is None:
            idx = len(self.consts)
            self.consts.append(value)
            self._const_idx[key] = idx
        return f"K[{idx}]"
