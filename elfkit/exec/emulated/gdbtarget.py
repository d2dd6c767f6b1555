"""What the gdb stub tells gdb about the target: the target description
(``target.xml``) and the list of loaded modules.

The target description is the architecture's register file
(``Arch.gdb_regs``, in ``g``-packet order) as gdb's features, with the
composite register types a feature needs.

gdb knows its predefined types (``int``, ``code_ptr``, ``ieee_double``,
``uint128``, ``i387_ext``, ...); a register typed otherwise gets the
definition from :data:`TYPES` placed at the start of its feature.  The one
in use is aarch64's ``aarch64v``: the union over a 128-bit V register that
gdb's own aarch64 description declares, so ``p $v0.d.f[0]`` and the pseudo
registers ``$q0``/``$d0``/``$s0`` work as against a real target.

The module list tells gdb where every module but the one it loaded with
``file`` (reported by ``qOffsets``) lives, so it reads each one's symbols
at its load address -- in both of gdb's formats: ``qXfer:libraries-svr4``
(what gdb asks under its default GNU/Linux OS ABI: each module's load bias
and dynamic section) and ``qXfer:libraries`` (other OS ABIs: the address of
each module's first ``PT_LOAD`` segment).  gdb opens the files named there:
copies of the modules' ELF images written to a temporary directory
(:func:`elf_copy`).
"""
from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from ..._support.files import exclusive_dir, private_temp_dir

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


PT_LOAD, PT_DYNAMIC = 1, 2


def elf_copy(module: Any, taken: dict[str, int] | None = None) -> Path:
    """A copy of ``module``'s ELF image for gdb to read, in
    ``$TMPDIR/elfkit-gdb-PID/``, named after the module.  ``taken``: file
    names already given out to other modules (name -> module base), so two
    modules of the same name get different files.

    The folder is used only when it is a directory of the current user that
    nobody else can enter (else a fresh private one is made, with a
    warning), and the copy is written to a new file renamed into place:
    nothing planted there (a symbolic link, a file) is written through."""
    folder = Path(_folder())
    base = int(module.base)
    stem = re.sub(r"[^\w.-]+", "_", str(module.name)).strip("_.") or f"module_{base:x}"
    stem = stem.removesuffix(".so")
    if taken is not None:
        if taken.setdefault(stem, base) != base:
            stem = f"{stem}-{base:x}"
        taken[stem] = base
    path = folder / (stem + ".so")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{stem}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(bytes(module.elf.data))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


#: this process's folder of ELF copies: ((pid, temporary directory), path)
_folders: list[tuple[tuple[int, str], str]] = []


def _folder() -> str:
    where = (os.getpid(), tempfile.gettempdir())
    if _folders and _folders[-1][0] == where and exclusive_dir(_folders[-1][1]):
        return _folders[-1][1]
    name = f"elfkit-gdb-{where[0]}"
    folder, fresh = private_temp_dir(name)
    if fresh:
        import warnings
        warnings.warn(f"elfkit: gdb: {os.path.join(where[1], name)} is not a private "
                      f"directory of this user (planted by someone?); the ELF copies for gdb "
                      f"go to {folder}", stacklevel=3)
    _folders.append((where, folder))
    return folder


def _segments(module: Any, kind: int) -> list[int]:
    return [s.vaddr for s in module.elf.segments if s.type == kind]


def library_list_svr4(libraries: Sequence[tuple[Any, Path]]) -> str:
    """``qXfer:libraries-svr4``: per (module, file) its load bias
    (``l_addr``), dynamic section (``l_ld``) and a link-map address that
    names it (``lm``: the start of its image)."""
    parts = ['<library-list-svr4 version="1.0">\n']
    for mod, path in libraries:
        bias = int(mod.base)
        dyn = _segments(mod, PT_DYNAMIC)
        ld = bias + dyn[0] if dyn else 0
        parts.append(f'<library name={quoteattr(str(path))} lm="{mod.address_range[0]:#x}" '
                     f'l_addr="{bias:#x}" l_ld="{ld:#x}" lmid="0x0"/>\n')
    parts.append("</library-list-svr4>\n")
    return "".join(parts)


def library_list(libraries: Sequence[tuple[Any, Path]]) -> str:
    """``qXfer:libraries``: per (module, file) the address of its first
    ``PT_LOAD`` segment (gdb moves the others by the same amount)."""
    parts = ['<library-list version="1.0">\n']
    for mod, path in libraries:
        loads = _segments(mod, PT_LOAD)
        first = int(mod.base) + (loads[0] if loads else 0)
        parts.append(f'<library name={quoteattr(str(path))}>'
                     f'<segment address="{first:#x}"/></library>\n')
    parts.append("</library-list>\n")
    return "".join(parts)


__all__ = ["TYPES", "elf_copy", "library_list", "library_list_svr4", "target_xml"]
