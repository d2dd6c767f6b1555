"""``elfkit inspect FILE``: what the loader sees, and whether it can load it."""
from __future__ import annotations

import sys

from ..errors import ElfkitError
from ..fatelf.files import MAX_ELF_SIZE, read_input
from ..loader import tags as T
from ..loader.headers import elf_type
from ..loader.objinspect import describe_object, format_object, format_object_tail, import_lines
from .cli_spec import Arg, Command, Namespace

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

    from ..loader.import_report import ImportReport


def explain_imports(info: dict[str, Any], specs: list[str], backend: str) -> ImportReport:
    """The resolution report of a described plugin (``describe()``) against
    provider specs (oldest first)."""
    from .. import arch as _arch
    from ..exec import choose_backend
    from ..loader.imports import Exports, Imports, SystemLibrary

    backend = choose_backend(_arch.get(info["arch"]), backend)
    imports = Imports()
    for spec in specs:
        if spec.startswith("system:"):
            imports.register(SystemLibrary(spec[len("system:"):]))
            continue
        try:
            data = read_input(spec)
        except OSError as e:
            raise ElfkitError(f"--imports-from {spec}: cannot read it: {e.strerror or e}") \
                from None
        try:
            exports = describe(data, info["arch"])["exports"]
        except ElfkitError as e:
            raise ElfkitError(f"--imports-from {spec}: {e}") from None
        imports.register(Exports(f"plugin {spec}", {x["name"]: x["value"] for x in exports}))
    wanted = [(i["name"], i["weak"]) for i in info["imports"]]
    return imports.explain(wanted, backend, subject=f"imports of the {info['arch']} plugin "
                                                    f"({backend})")


def sections(data: Any) -> dict[str, Any]:
    """Section headers and .symtab symbols of one ELF, read with LIEF.

    The loader works from program headers and PT_DYNAMIC only; sections and
    the static symbol table are for people (and debuggers), and LIEF reads
    them well, including stripped and odd files."""
    import lief  # only for this view

    lief.logging.disable()
    if len(data) > MAX_ELF_SIZE:
        raise ElfkitError(f"the ELF is {len(data)} bytes, more than the {MAX_ELF_SIZE >> 30} GiB "
                          f"elfkit reads")
    # lief.parse is typed as returning any format's Binary: this is an ELF one
    binary: Any = lief.parse(bytes(data))
    if binary is None:
        raise ElfkitError("LIEF could not read the section headers of this file")
    secs = [{"name": _shown(sec.name), "type": str(sec.type).split(".")[-1].rstrip("_"),
             "address": sec.virtual_address, "offset": sec.offset, "size": sec.size,
             "flags": [str(f).split(".")[-1] for f in sec.flags_list],
             "align": sec.alignment} for sec in binary.sections if sec.name or sec.size]
    syms = [{"name": _shown(sym.name), "value": sym.value, "size": sym.size,
             "type": str(sym.type).split(".")[-1], "bind": str(sym.binding).split(".")[-1]}
            for sym in binary.symtab_symbols if sym.name]
    return {"sections": secs, "symtab": syms}


def _shown(name: str | bytes) -> str:
    """A name from the file as text to print: LIEF hands back bytes for
    names that are not UTF-8; control characters become ``\\xNN``."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in name)


def describe(data: Any, arch: str | None = None) -> dict[str, Any]:
    """A JSON-able description of an ELF plugin (or FatELF slice)."""
    from .. import arch as _arch
    from ..fatelf import pick_slice
    from ..loader.parse import parse
    from ..loader.relocate import relative_name, relr_offsets

    want = _arch.get(arch) if arch else None
    view, rec = pick_slice(data, want)
    if elf_type(view) == T.ET_REL:
        return describe_object(view, rec)
    elf = parse(view)
    counts: dict[str, int] = {}
    unknown: list[str] = []
    tls = False
    for t in elf.reloc_tables:
        if t.tag == "DT_RELR":
            n = len(relr_offsets(t.relr_raw, elf.word))
            name = relative_name(elf.arch, elf.word)
            counts[name] = counts.get(name, 0) + n
            continue
        types = t.types.tolist() if hasattr(t.types, "tolist") else t.types
        for i, ty in enumerate(types):
            rt = elf.arch.relocs.get(ty)
            if rt is None:
                unknown.append(f"{t.tag}[{i}] type {ty} at offset {int(t.offsets[i]):#x}")
                key = f"unknown({ty})"
            else:
                key = rt.name
                tls = tls or rt.formula.name == "TLS"
            counts[key] = counts.get(key, 0) + 1
    exports, imports = [], []
    for s in elf.symbols[1:]:
        if not s.name or s.bind == T.STB_LOCAL:
            continue
        if s.defined:
            if s.visibility in (T.STV_DEFAULT, T.STV_PROTECTED):
                exports.append({"name": s.name, "value": s.value, "size": s.size,
                                "type": _STT.get(s.type, str(s.type)),
                                "bind": "weak" if s.weak else "global",
                                **({"version": s.version} if s.version else {})})
        else:
            imports.append({"name": s.name, "weak": s.weak,
                            **({"version": s.version} if s.version else {})})
    problems = []
    if unknown:
        problems.append(f"{len(unknown)} relocation(s) of unknown type: " + "; ".join(unknown[:5]))
    if tls:
        problems.append("TLS is not supported in bare-metal plugins")
    if elf.needed:
        problems.append("DT_NEEDED lists " + ", ".join(elf.needed)
                        + ": these libraries are not loaded; their symbols must come "
                          "from providers")
    return {
        "slice": rec.arch if rec is not None else None,
        "arch": elf.arch.name, "class": f"ELF{elf.arch.bits}", "machine": elf.arch.machine,
        "osabi": elf.osabi, "e_flags": elf.e_flags,
        "segments": [{"type": T.PT_NAMES.get(s.type, hex(s.type)), "offset": s.offset,
                      "vaddr": s.vaddr, "filesz": s.filesz, "memsz": s.memsz, "align": s.align,
                      "flags": s.prot_string} for s in elf.segments],
        "dynamic": [{"tag": "DT_" + T.DT_NAMES.get(tag, hex(tag)), "value": val}
                    for tag, val in elf.dynamic],
        "needed": elf.needed, "soname": elf.soname, "hash": elf.hash_kind,
        "exports": exports, "imports": imports,
        "relocations": dict(sorted(counts.items())),
        "init": {"DT_INIT": bool(elf.init), "INIT_ARRAY": elf.init_array[1],
                 "DT_FINI": bool(elf.fini), "FINI_ARRAY": elf.fini_array[1]},
        "loadable": not problems, "problems": problems,
    }


_STT = {0: "notype", 1: "object", 2: "func", 10: "ifunc"}


def run(args: Namespace) -> int:
    try:   # bounded; a FIFO or device is refused, not waited on or read forever
        data = read_input(args.file)
    except OSError as e:
        raise ElfkitError(f"cannot read {args.file!r}: {e.strerror or e}") from None
    try:
        info = describe(data, args.arch)
        if args.sections:
            from ..fatelf import pick_slice
            view, _ = pick_slice(data, args.arch or None)
            info.update(sections(view))
    except ElfkitError as e:
        if args.json:
            import json
            json.dump({"file": args.file, "loadable": False, "problems": [str(e)]}, sys.stdout,
                      indent=2)
            print()
        else:
            print(f"{args.file}: cannot be loaded: {e}")
        return 1
    report = explain_imports(info, args.imports_from, args.backend) if args.imports_from \
        else None
    if report is not None:
        info["resolution"] = report.as_dict()
        if report.missing:
            info["problems"].append(f"{len(report.missing)} required import(s) not found among "
                                    f"the given providers: {', '.join(report.missing)}")
            info["loadable"] = False
    return _print(args, info, report)


def _print(args: Namespace, info: dict[str, Any], report: ImportReport | None) -> int:
    if args.json:
        import json
        json.dump({"file": args.file, **info}, sys.stdout, indent=2)
        print()
        return 0 if info["loadable"] else 1
    if info.get("kind") == "object":
        out = format_object(args.file, info)
        if report is not None:
            out += report.format().splitlines()
        out += format_object_tail(info)
    else:
        out = _shared_object_lines(args.file, info, report)
    if args.sections:
        out.append(f"sections ({len(info['sections'])}):")
        for sec in info["sections"]:
            out.append(f"  {sec['name']:<20} {sec['type']:<14} {sec['address']:>#10x} "
                       f"{sec['size']:>#8x} {','.join(sec['flags'])}")
        out.append(f"static symbols ({len(info['symtab'])}):")
        for sym in info["symtab"]:
            out.append(f"  {sym['value']:>#12x} {sym['size']:>6} {sym['type']:<8} {sym['bind']:<7} "
                       f"{sym['name']}")
    if info["problems"]:
        out.append("cannot be loaded:")
        out += [f"  {p}" for p in info["problems"]]
    else:
        out.append("loadable: yes")
    print("\n".join(out))
    return 0 if info["loadable"] else 1


def _shared_object_lines(file: str, info: dict[str, Any], report: ImportReport | None
                         ) -> list[str]:
    """The text report of a shared object, up to its initialisers."""
    out = [f"{file}: {info['arch']} {info['class']} little-endian shared object"
           + (f" (FatELF slice {info['slice']})" if info["slice"] else "")]
    out.append(f"  hash: {info['hash']}   soname: {info['soname'] or '-'}   "
               f"needed: {', '.join(info['needed']) or '-'}")
    out.append("segments:")
    out.append(f"  {'type':<16} {'offset':>10} {'vaddr':>12} {'filesz':>10} {'memsz':>10} "
               f"{'align':>8} prot")
    for s in info["segments"]:
        out.append(f"  {s['type']:<16} {s['offset']:>#10x} {s['vaddr']:>#12x} {s['filesz']:>#10x} "
                   f"{s['memsz']:>#10x} {s['align']:>#8x} {s['flags']}")
    out.append("dynamic:")
    for d in info["dynamic"]:
        out.append(f"  {d['tag']:<20} {d['value']:#x}")
    out.append(f"exports ({len(info['exports'])}):")
    for ex in info["exports"]:
        out.append(f"  {ex['value']:>#12x} {ex['size']:>6} {ex['type']:<6} {ex['bind']:<6} "
                   f"{ex['name']}" + (f"@{ex['version']}" if ex.get("version") else ""))
    out.append(f"imports ({len(info['imports'])}):")
    out += import_lines(info["imports"])
    if report is not None:
        out += report.format().splitlines()
    out.append("relocations:")
    for k, v in info["relocations"].items():
        out.append(f"  {k:<28} {v}")
    ini = info["init"]
    out.append(f"init: DT_INIT={'yes' if ini['DT_INIT'] else 'no'} INIT_ARRAY={ini['INIT_ARRAY']}  "
               f"fini: DT_FINI={'yes' if ini['DT_FINI'] else 'no'} FINI_ARRAY={ini['FINI_ARRAY']}")
    return out


#: ``elfkit inspect`` (elfkit/tools/cli_spec.py)
COMMANDS = (
    Command("inspect",
            Arg("file"),
            Arg("--arch", help="FatELF: the slice to inspect (default: the host's, else the "
                               "first)"),
            Arg("--json", action="store_true", help="machine-readable output"),
            Arg("--sections", action="store_true",
                help="also list section headers and the static symbol table (read with "
                     "LIEF; the loader itself never needs sections)"),
            Arg("--imports-from", nargs="+", action="extend", metavar="PROVIDER",
                help="explain import resolution against these providers, registered in "
                     "the order given (so the last is searched first): a plugin file "
                     "(ELF or FatELF; its exports) or system:LIBRARY (a host shared "
                     "library, dlopen'ed; it serves native code only)"),
            Arg("--backend", choices=("auto", "native", "emulated"), default="auto",
                help="with --imports-from: the backend the plugin would run on (auto: "
                     "native when it is for this host's CPU)"),
            help="show architecture, segments, dynamic tags, exports, imports and "
                 "relocations of a plugin",
            description="Inspect a bare-metal ELF plugin (or a FatELF slice) the way the "
                        "loader sees it, and say why it cannot be loaded if it cannot.",
            run=run),
)
