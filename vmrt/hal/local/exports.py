"""What an executable offers and needs, whatever its kind (ELF library or
vmvx module): its exports (:class:`ExportInfo`, found by name or ordinal
with :func:`find_export`) and its imports as resolved (:class:`ImportInfo`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from elfkit.support import DataRecord

from ...errors import DispatchError, StatusCode


class ExportInfo(DataRecord, frozen=True):
    """One entry point of an executable."""

    ordinal: int
    name: str
    function: int                      # address of the dispatch function
    flags: int
    binding_count: int
    constant_count: int
    workgroup_size: tuple[int, int, int]
    local_memory_size: int
    parameter_count: int
    has_attrs: bool = True

    def describe(self) -> str:
        x, y, z = self.workgroup_size
        mem = f" local_memory={self.local_memory_size}" if self.local_memory_size else ""
        return (f"@{self.name} ordinal({self.ordinal}) bindings={self.binding_count} "
                f"constants={self.constant_count} workgroup_size={x}x{y}x{z}{mem}")


def find_export(executable: str, exports: Sequence[ExportInfo],
                by_name: Mapping[str, ExportInfo], which: str | int | ExportInfo) -> ExportInfo:
    """An export of any kind of executable by name (a leading '@' allowed)
    or ordinal; DispatchError naming the choices when there is none."""
    if isinstance(which, ExportInfo):
        return which
    if isinstance(which, int):
        if 0 <= which < len(exports):
            return exports[which]
        raise DispatchError(f"executable '{executable}': entry point ordinal {which} out of "
                            f"bounds (it has {len(exports)})")
    e = by_name.get(str(which).lstrip("@"))
    if e is None:
        raise DispatchError(f"executable '{executable}' has no export '{which}' (exports: "
                            f"{', '.join(x.name for x in exports) or 'none'})",
                            StatusCode.NOT_FOUND)
    return e


class ImportInfo(DataRecord, frozen=True):
    """One import of an executable and how it was resolved."""

    name: str                          # as in the library (with '?' when optional)
    optional: bool
    function: int                      # 0: unresolved (optional)
    context: int
    provider: str | None               # the plugin that provided it


__all__ = ["ExportInfo", "ImportInfo", "find_export"]
