"""``elfkit fatelf``: pack, list, extract, split, select, remove, replace, verify.

Every output file is written atomically (a temporary file next to it, renamed
on success), so an error never leaves a partial file.  ``-o -`` writes to
stdout.  Exit codes: 0 success, 1 ``verify`` found problems, 2 any error
(one line on stderr).
"""
from __future__ import annotations

import sys

from ..errors import FatElfError
from .cli_spec import Arg, Command, OneOf

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_EPILOG_PACK = """\
At the default --align 4096 the output is byte-identical to
`iree-fatelf join` and icculus `fatelf-glue` for the same inputs in the same
order.  --align auto uses the largest PT_LOAD p_align of the inputs (at least
4096), so that e.g. aarch64 slices linked for 64 KiB pages can be mapped in
place.

example: elfkit fatelf pack -o plugin.sos plugin.x86_64.so plugin.aarch64.so
"""

_EPILOG_ARCH = """\
ARCH is an elfkit architecture name or alias: x86_64 (amd64), aarch64 (arm64),
riscv64, arm, i386 (x86), riscv32.  When several records have that arch, the
first one with osabi none/linux/standalone is taken.
"""

_EPILOG_SELECT = """\
Without --arch the record is chosen by IREE's runtime rule: the first record
with the host's machine, word size and byte order and osabi 0 (none),
3 (linux) or 255 (standalone).  With --fallback, when there is no such record
the best slice elfkit can emulate is taken: osabi none/linux/standalone first,
then x86_64, aarch64, riscv64, arm, i386, riscv32, then file order.
A plain ELF is accepted as a one-record file.  The chosen record is reported
on stdout, or on stderr when the slice itself goes to stdout (-o -).
"""


# --------------------------------------------------------------------------

def _err(message: str) -> None:
    print(f"elfkit: error: {message}", file=sys.stderr)


def _align(value: str) -> int | str:
    if value == "auto":
        return "auto"
    try:
        return int(value, 0)
    except ValueError:
        raise FatElfError(f"invalid --align {value!r}: give a power of two or 'auto'") from None


def _out(path: str) -> Any:
    """The library's output argument for -o: a path, or stdout's binary stream."""
    if path == "-":
        if sys.stdout is None or getattr(sys.stdout, "buffer", None) is None:
            raise FatElfError("standard output is closed; use -o FILE")
        stream = sys.stdout.buffer
        if stream.isatty():
            raise FatElfError("refusing to write binary data to a terminal; use -o FILE "
                              "or redirect stdout")
        return stream
    return path


def _say(args: Any, line: str) -> None:
    """Report on stdout, or stderr when stdout carries the data."""
    print(line, file=sys.stderr if getattr(args, "output", None) == "-" else sys.stdout)


def cmd_pack(args: Any) -> int:
    from ..fatelf.write import pack_to
    out = _out(args.output)
    records = pack_to(out, args.inputs, _align(args.align))
    _say(args, f"packed {len(records)} slice(s) into {args.output}: "
               + ", ".join(f"{r.label}@{r.offset}" for r in records))
    return 0


def cmd_list(args: Any) -> int:
    from ..fatelf.reader import read
    with read(args.file) as fat:
        if args.json:
            print(fat.to_json())
            return 0
        if fat.is_plain:
            print(f"{args.file}: plain ELF (not a FatELF), {fat.size} bytes, 1 slice")
        else:
            print(f"{args.file}: FatELF version {fat.version}, {len(fat.records)} record(s), "
                  f"{fat.size} bytes")
        rows = [("#", "ARCH", "MACHINE", "CLASS", "ORDER", "OSABI", "ABIVER", "OFFSET", "SIZE")]
        for r in fat.records:
            rows.append((str(r.index), r.arch or "-", f"{r.machine} {r.machine_name}",
                         f"{r.bits}-bit" if r.bits else f"ws{r.word_size}",
                         {0: "big", 1: "little"}.get(r.byte_order, f"bo{r.byte_order}"),
                         f"{r.osabi} {r.osabi_name}", str(r.osabi_version),
                         str(r.offset), str(r.size)))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        right = {0, 6, 7, 8}
        for row in rows:
            print("  ".join(c.rjust(w) if i in right else c.ljust(w)
                            for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return 0


def cmd_extract(args: Any) -> int:
    from ..fatelf.write import extract_to
    out = _out(args.output)
    r = extract_to(out, args.file, args.arch, index=args.index)
    _say(args, f"wrote record {r.index} ({r.label}, {r.size} bytes) to {args.output}")
    return 0


def cmd_split(args: Any) -> int:
    from ..fatelf.write import split
    plan = split(args.file, args.directory)
    for r, path in plan:
        print(f"wrote record {r.index} ({r.label}, {r.size} bytes) to {path}")
    return 0


def cmd_select(args: Any) -> int:
    from ..fatelf.reader import read, select
    from ..fatelf.write import extract_to
    with read(args.file) as fat:
        r, _view = select(fat, args.arch, fallback=args.fallback)
        del _view
        out = _out(args.output)
        extract_to(out, fat, record=r)
    _say(args, f"selected record {r.index}: {r.describe()}, offset {r.offset}, {r.size} bytes "
               f"-> {args.output}")
    return 0


def cmd_remove(args: Any) -> int:
    from ..fatelf.reader import read
    from ..fatelf.write import remove_to
    with read(args.file) as fat:
        gone = fat.find(args.arch, index=args.index)
        records = remove_to(_out(args.output), fat, index=gone.index, align=_align(args.align))
    _say(args, f"removed record {gone.index} ({gone.label}); wrote {len(records)} record(s) "
               f"to {args.output}")
    return 0


def cmd_replace(args: Any) -> int:
    from ..fatelf.write import replace_to
    old, records = replace_to(_out(args.output), args.file, args.new, align=_align(args.align))
    _say(args, f"replaced record {old.index} ({old.label}) with {args.new}; wrote "
               f"{len(records)} record(s) to {args.output}")
    return 0


def cmd_verify(args: Any) -> int:
    from ..fatelf.format import Severity
    from ..fatelf.reader import verify
    problems = verify(args.file)
    fatal = [p for p in problems if p.severity is Severity.FATAL]
    if args.json:
        import json
        print(json.dumps({"path": args.file,
                          "ok": all(p.severity is Severity.NOTE for p in problems),
                          "problems": [p.to_dict() for p in problems]}, indent=2))
        serious = [p for p in problems if p.severity is not Severity.NOTE]
        return 2 if fatal else (1 if serious else 0)
    if fatal:
        _err(f"{args.file}: {fatal[0].message}")
        return 2
    for p in problems:
        print(f"{args.file}: {p.severity}: {p.message}")
    errors = sum(p.severity is Severity.ERROR for p in problems)
    warnings = sum(p.severity is Severity.WARNING for p in problems)
    if errors or warnings:
        print(f"{args.file}: {errors} error(s), {warnings} warning(s)")
        return 1
    print(f"{args.file}: OK" + (f" ({len(problems)} note(s))" if problems else ""))
    return 0


# ------------------------------------------------------------ the command line

def _output(what: str) -> Arg:
    return Arg("-o", "--output", required=True, metavar="OUT",
               help=f"{what} ('-' for stdout); written atomically")


_ALIGN = Arg("--align", default="4096", metavar="N|auto",
             help="slice alignment: a power of two, or 'auto' for the largest PT_LOAD "
                  "p_align of the slices (default: 4096, as iree-fatelf)")
_FILE = Arg("file", metavar="FILE")


def _which(verb: str) -> OneOf:
    return OneOf(Arg("--arch", metavar="ARCH", help=f"{verb} the first record of this "
                                                    f"architecture"),
                 Arg("--index", type=int, metavar="N", help=f"{verb} record N (see 'list')"),
                 required=True)


_SUBCOMMANDS = (
    Command("pack", _output("the FatELF to write"), _ALIGN,
            Arg("inputs", nargs="+", metavar="IN",
                help="ELF files (at most 255, distinct targets)"),
            help="pack ELF files into a FatELF",
            description="Pack ELF files (one per target) into a FatELF, in the order given.",
            epilog=_EPILOG_PACK, raw=True, run=cmd_pack),
    Command("list", _FILE, Arg("--json", action="store_true",
                               help="print JSON instead of a table"),
            help="list the records of a FatELF",
            description="List the records of a FatELF (a plain ELF shows as one record).",
            raw=True, run=cmd_list),
    Command("extract", _FILE, _which("extract"), _output("the ELF to write"),
            help="write one slice (by arch or index) to a file",
            description="Write the exact bytes of one record's ELF.",
            epilog=_EPILOG_ARCH, raw=True, run=cmd_extract),
    Command("split", _FILE,
            Arg("-d", "--directory", metavar="DIR",
                help="output directory (default: the directory of FILE)"),
            help="write every slice to its own file",
            description="Write every record's ELF to DIR/<stem>.<name>.so, where <stem> is "
                        "FILE's name up to its last dot and <name> is the arch (x86_64, "
                        "aarch64, riscv64, arm, i386, riscv32; other machines as e.g. "
                        "ppc-64bit, big-endian with -be), extended by osabi, abiversion and "
                        "index only when two records would clash.",
            raw=True, run=cmd_split),
    Command("select", _FILE,
            Arg("--arch", metavar="ARCH", help="take this architecture instead of the host's"),
            Arg("--fallback", action="store_true",
                help="if the host has no slice, take the best one elfkit can emulate"),
            _output("the ELF to write"),
            help="write the slice this host would load (or --arch)",
            description="Write the slice IREE's runtime would pick on this host, or the first "
                        "slice of --arch.",
            epilog=_EPILOG_SELECT + "\n" + _EPILOG_ARCH, raw=True, run=cmd_select),
    Command("remove", _FILE, _which("remove"), _output("the FatELF to write"), _ALIGN,
            help="write a FatELF without one record",
            description="Write FILE without one record, repacked (the same bytes as packing "
                        "the remaining slices in order).",
            epilog=_EPILOG_ARCH, raw=True, run=cmd_remove),
    Command("replace", _FILE, Arg("new", metavar="IN", help="the ELF to put in"),
            _output("the FatELF to write"), _ALIGN,
            help="write a FatELF with one slice replaced",
            description="Write FILE with the record whose target (machine, osabi, abiversion, "
                        "class, byte order) matches IN's ELF header replaced by IN, repacked.",
            raw=True, run=cmd_replace),
    Command("verify", _FILE, Arg("--json", action="store_true",
                                 help="print the problems as JSON"),
            help="check a FatELF thoroughly",
            description="Check the header, the record table, bounds, overlaps, alignment, "
                        "duplicate targets and each slice's ELF header against its record; "
                        "print every problem found.",
            epilog="Exit status: 0 clean (notes only), 1 problems found (errors or warnings), "
                   "2 unusable input (not a FatELF/ELF, unknown version, truncated table, "
                   "unreadable file).",
            raw=True, run=cmd_verify),
)

#: ``elfkit fatelf`` and its sub-commands (elfkit/tools/cli_spec.py)
COMMANDS = (
    Command("fatelf",
            help="pack, inspect and select slices of multi-arch FatELF (.sos) files",
            description="Pack ELF plugins for several CPUs into one FatELF (.sos) file, inspect "
                        "it, and take slices out of it.  Compatible with IREE's FatELF support.",
            epilog="Exit status: 0 success, 1 'verify' found problems, 2 error.", raw=True,
            commands=_SUBCOMMANDS, dest="fatelf_command", metavar="SUBCOMMAND"),
)


def main(argv: list[str] | None = None) -> int:
    """``python -m elfkit.tools.fatelf ...`` (same as ``elfkit fatelf ...``)."""
    from . import main as elfkit_main
    return elfkit_main(["fatelf", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
