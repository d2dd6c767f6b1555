"""The target description (``target.xml``) the gdb stub sends: the
architecture's register file (``Arch.gdb_regs``, in ``g``-packet order) as
gdb's features, with the composite register types a feature needs.

gdb knows its predefined types (``int``, ``code_ptr``, ``ieee_double``,
``uint128``, ``i387_ext``, ...); a register typed otherwise gets the
definition from :data:`TYPES` placed at the start of its feature.  The one
in use is aarch64's ``aarch64v``: the union over a 128-bit V register that
gdb's own aarch64 description declares, so ``p $v0.d.f[0]`` and the pseudo
registers ``$q0``/``$d0``/``$s0`` work as against a real target.
"""
from __future__ import annotations

from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...arch import Arch, GdbReg


def _vectors(*specs: str) -> str:
    out = []
    for spec in specs:
        name, elem, count = spec.split()
        out.append(f'<vector id="{name}" type="{elem}" count="{count}"/>\n')
    return "".join(out)


def _union(name: str, *fields: str) -> str:
    body = "".join(f'<field name="{f.split("=")[0]}" type="{f.split("=")[1]}"/>\n'
                   for f in fields)
    return f'<union id="{name}">\n{body}</union>\n'


#: composite gdb types by name: their XML definitions (dependencies first)
TYPES: dict[str, str] = {
    "aarch64v": (
        _vectors("v2d ieee_double 2", "v2u uint64 2", "v2i int64 2",
                 "v4f ieee_single 4", "v4u uint32 4", "v4i int32 4",
                 "v8f ieee_half 8", "v8u uint16 8", "v8i int16 8",
                 "v16u uint8 16", "v16i int8 16", "v1u uint128 1", "v1i int128 1")
        + _union("vnd", "f=v2d", "u=v2u", "s=v2i")
        + _union("vns", "f=v4f", "u=v4u", "s=v4i")
        + _union("vnh", "f=v8f", "u=v8u", "s=v8i")
        + _union("vnb", "u=v16u", "s=v16i")
        + _union("vnq", "u=v1u", "s=v1i")
        + _union("aarch64v", "d=vnd", "s=vns", "h=vnh", "b=vnb", "q=vnq")),
}


def target_xml(arch: Arch, regs: Sequence[GdbReg]) -> str:
    """The target description of ``arch`` with register file ``regs``:
    one ``<feature>`` per run of registers of the same feature, register
    numbers in ``g``-packet order."""
    parts = ['<?xml version="1.0"?>\n<!DOCTYPE target SYSTEM "gdb-target.dtd">\n'
             f'<target version="1.0">\n<architecture>{arch.gdb_arch}</architecture>\n']
    feature = None
    defined: set[str] = set()
    for i, r in enumerate(regs):
        if r.feature != feature:
            if feature is not None:
                parts.append("</feature>\n")
            feature = r.feature
            parts.append(f'<feature name="{feature}">\n')
            defined = set()
        if r.type in TYPES and r.type not in defined:
            defined.add(r.type)
            parts.append(TYPES[r.type])
        parts.append(f'<reg name="{r.name}" bitsize="{r.bits}" type="{r.type}" '
                     f'regnum="{i}"/>\n')
    parts.append("</feature>\n</target>\n")
    return "".join(parts)


__all__ = ["TYPES", "target_xml"]
