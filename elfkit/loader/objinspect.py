"""``elfkit inspect`` of a relocatable object (``.o``): its sections (with
the relocations applied to each, by type), the symbols it exports and
imports, and whether the loader can load it."""
from __future__ import annotations

from . import tags as T

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from .objparse import ObjectFile

__all__ = ["describe_object", "format_object", "format_object_tail", "import_lines"]

_STT = {0: "notype", 1: "object", 2: "func", 5: "common", 10: "ifunc"}
_FLAGS = ((1, "W"), (2, "A"), (4, "X"), (0x10, "M"), (0x20, "S"), (0x200, "G"))


def _flags(v: int) -> str:
    return "".join(c for bit, c in _FLAGS if v & bit) or "-"


def describe_object(view: Any, rec: Any) -> dict[str, Any]:
    """A JSON-able description of a relocatable object, shaped like
    ``elfkit.tools.inspect.describe``'s (no segments or dynamic tags; a
    ``sections`` list and relocation counts per section instead)."""
    # the layout module (it imports elfkit.exec) and the object parser only for
    # relocatable objects (``elfkit inspect`` of a shared object needs neither)
    from .objlayout import GOT_SYMBOL, INIT_TYPES
    from .objparse import SHT_NAMES, parse_object
    elf: ObjectFile = parse_object(view)
    arch = elf.arch
    counts: dict[str, int] = {}
    per_section: dict[int, dict[str, int]] = {}
    unknown: list[str] = []
    tls = 0
    used: set[int] = set()
    for rs in elf.relsections:
        if not elf.sections[rs.target].alloc:
            continue
        mine = per_section.setdefault(rs.target, {})
        for i, (rtype, sym) in enumerate(zip(rs.types, rs.syms)):
            rt = arch.obj_relocs.get(rtype)
            if rt is None:
                unknown.append(f"{rs.name}[{i}] type {rtype} at offset {rs.offsets[i]:#x}")
                key = f"unknown({rtype})"
            else:
                key = rt.name
                tls += rt.formula.name == "TLS"
            if rt is None or rt.formula.name != "NONE":
                used.add(sym)
            counts[key] = counts.get(key, 0) + 1
            mine[key] = mine.get(key, 0) + 1
    exports, imports = [], []
    for s in elf.symbols[1:]:
        if s.exported:
            exports.append({"name": s.name, "section": elf.sections[s.shndx].name
                            if s.shndx < len(elf.sections) else ("*COM*" if s.common else
                                                                 "*ABS*"),
                            "value": s.value, "size": s.size, "type": _STT.get(s.type, str(s.type)),
                            "bind": "weak" if s.weak else "global"})
        elif not s.defined and s.name and s.bind != T.STB_LOCAL and s.name != GOT_SYMBOL \
                and s.index in used:
            imports.append({"name": s.name, "weak": s.weak})
    sections = [{"index": s.index, "name": s.name, "type": SHT_NAMES.get(s.type, hex(s.type)),
                 "flags": _flags(s.flags), "size": s.size, "align": s.align,
                 "relocations": dict(sorted(per_section.get(s.index, {}).items()))}
                for s in elf.sections[1:]]
    arrays = {kind: sum(s.size // elf.word for s in elf.sections
                        if s.alloc and INIT_TYPES.get(s.type) == kind)
              for kind in ("preinit", "init", "fini")}
    problems = []
    if unknown:
        problems.append(f"{len(unknown)} relocation(s) of unknown type: " + "; ".join(unknown[:5]))
    if tls:
        problems.append("TLS is not supported in bare-metal plugins")
    return {
        "slice": rec.arch if rec is not None else None, "kind": "object",
        "arch": arch.name, "class": f"ELF{arch.bits}", "machine": arch.machine,
        "osabi": elf.osabi, "e_flags": elf.e_flags,
        "segments": [], "dynamic": [], "needed": [], "soname": "", "hash": "-",
        "sections_loaded": sections,
        "exports": exports, "imports": imports,
        "relocations": dict(sorted(counts.items())),
        "init": {"PREINIT_ARRAY": arrays["preinit"], "INIT_ARRAY": arrays["init"],
                 "FINI_ARRAY": arrays["fini"]},
        "loadable": not problems, "problems": problems,
    }


def format_object(name: str, info: dict[str, Any]) -> list[str]:
    """The text report of ``describe_object`` (before the import report,
    ``--sections`` and the verdict, which ``elfkit inspect`` adds)."""
    out = [f"{name}: {info['arch']} {info['class']} little-endian relocatable object"
           + (f" (FatELF slice {info['slice']})" if info["slice"] else "")]
    out.append("sections:")
    out.append(f"  {'[nr] name':<28} {'type':<14} {'flags':<6} {'size':>8} {'align':>6} "
               "relocations")
    for s in info["sections_loaded"]:
        rel = ", ".join(f"{k} {v}" for k, v in s["relocations"].items())
        out.append(f"  [{s['index']:>2}] {s['name'][:23]:<23} {s['type'][:14]:<14} "
                   f"{s['flags']:<6} {s['size']:>#8x} {s['align']:>6} {rel}".rstrip())
    out.append(f"exports ({len(info['exports'])}):")
    for ex in info["exports"]:
        out.append(f"  {ex['section'] + '+' + hex(ex['value']):>24} {ex['size']:>6} "
                   f"{ex['type']:<6} {ex['bind']:<6} {ex['name']}")
    out.append(f"imports (undefined symbols, {len(info['imports'])}):")
    return out + import_lines(info["imports"])


def import_lines(imports: list[dict[str, Any]]) -> list[str]:
    """One line per import of a description: its name, weak or required."""
    return [f"  {i['name']}" + (" (weak: may be missing)" if i["weak"] else " (required)")
            for i in imports]


def format_object_tail(info: dict[str, Any]) -> list[str]:
    """The relocation totals and initialiser counts of ``describe_object``."""
    out = ["relocations:"]
    out += [f"  {k:<28} {v}" for k, v in info["relocations"].items()]
    ini = info["init"]
    out.append(f"init: PREINIT_ARRAY={ini['PREINIT_ARRAY']} INIT_ARRAY={ini['INIT_ARRAY']}  "
               f"fini: FINI_ARRAY={ini['FINI_ARRAY']}")
    return out
