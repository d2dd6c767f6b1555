"""``elfkit run`` and ``elfkit disasm``.

``run`` loads a plugin through the public API (``elfkit.load``) and calls one
export with arguments from the command line; ``disasm`` prints a symbolised
capstone listing of a plugin (or one of its functions) without loading it.
"""
from __future__ import annotations

import sys

from ..errors import CallTimeout, ElfkitError, EmulationFault, SignatureError
from .cli_spec import Arg, Command, Namespace

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


# ------------------------------------------------------------------------ run
def _parse_value(text: str, t: Any) -> Any:
    from ..signature import CType
    s = text.strip()
    try:
        if t is None:
            if s.lower() in ("null", "none"):
                return None
            try:
                return int(s, 0)
            except ValueError:
                return float(s)
        if t is CType.PTR and s.lower() in ("null", "none"):
            return None
        if t.is_float:
            return float(s)
        return int(s, 0)
    except ValueError:
        want = "a number" if t is None else f"a {t.value}"
        raise SignatureError(f"--arg {text!r} is not {want}") from None


#: the young-generation collection threshold while ``run`` runs (Python's
#: default is 700), as vmrt's commands do: the loader and the emulated backend
#: allocate tens of thousands of long-lived objects (modules, classes, the
#: generated callers), and collecting them young again and again cost a run
#: ~3 ms; garbage cycles are still collected, in larger batches (the threshold
#: stays up through the call: put back before it, the first allocation would
#: collect everything the load made at once)
GEN0_THRESHOLD = 50_000


def run(args: Namespace) -> int:
    import gc
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], GEN0_THRESHOLD), *old[1:])
    try:
        return _run(args)
    finally:
        gc.set_threshold(*old)


def _run(args: Namespace) -> int:
    import elfkit

    from ..signature import ctype, parse

    sig = parse(args.sig) if args.sig else None
    if sig is not None and len(sig.params) != len(args.arg):
        raise SignatureError(f"--sig {args.sig} takes {len(sig.params)} argument(s), "
                             f"{len(args.arg)} --arg given")
    if sig is not None and args.restype:
        raise SignatureError("give either --sig or --restype, not both")
    values = [_parse_value(a, sig.params[i] if sig else None) for i, a in enumerate(args.arg)]
    backend = args.backend
    options: dict[str, Any] = {}
    wants_emulation = (args.trace or args.budget is not None or args.gdb is not None
                       or args.profile)
    if args.profile:
        from ..exec.emulated import check_profile_path
        check_profile_path(args.profile)
    if wants_emulation:
        if backend == "native":
            raise ElfkitError("--trace, --budget, --gdb and --profile need the emulated backend")
        backend = "emulated"
    mod = elfkit.load(args.file, arch=args.arch, backend=backend, lazy=True, **options)
    machine: Any = getattr(mod, "machine", None)
    try:
        if args.trace:
            machine.trace(args.trace, mode=args.trace_mode)
        profile = None
        if args.profile:
            from ..exec.emulated import GuestProfile
            profile = GuestProfile(f"{args.call} ({machine.arch.name})")
            machine.profile(profile)
        if args.gdb is not None:
            port = mod.debug(args.gdb)
            print(f"elfkit: waiting for gdb on 127.0.0.1:{port} (in gdb-multiarch: "
                  f"file {args.file}; target remote :{port})", file=sys.stderr, flush=True)
        kw: dict[str, Any] = {}
        if args.timeout is not None:
            kw["timeout"] = args.timeout
        if sig is not None:
            fn = mod.function(args.call, sig)
            if args.budget is not None:
                kw["budget"] = args.budget
            call = lambda: fn(*values, **kw)  # noqa: E731
        else:
            if args.budget is not None:
                machine.set_limits(instruction_budget=args.budget)
            restype = args.restype
            if restype:
                ctype(restype)
            call = lambda: mod.call(args.call, *values, restype=restype, **kw)  # noqa: E731
        result = _run_interruptibly(call, machine)
        if profile is not None:
            machine.profile(None)
            profile.write(args.profile)
    except EmulationFault as e:
        print(f"elfkit: {args.call} faulted under emulation:", file=sys.stderr)
        print(str(e), file=sys.stderr)
        return 1
    except CallTimeout as e:
        print(f"elfkit: error: {e}", file=sys.stderr)
        return 124
    finally:
        mod.close()
    rt = sig.ret.value if sig is not None else (args.restype or "")
    if rt == "void":
        return 0
    if isinstance(result, int) and args.hex:
        print(f"{result} ({result & ((1 << 64) - 1):#x})")
    else:
        print(repr(result) if isinstance(result, float) else result)
    return 0


def _run_interruptibly(call: Any, machine: Any) -> Any:
    """Run ``call`` in a worker thread so Ctrl-C reaches us (unicorn's
    emu_start does not return to Python for signals) and cancels the call."""
    import threading  # ``elfkit run`` only (start-up of ``elfkit disasm``)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    th = threading.Thread(target=work, name="elfkit-run", daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(0.1)
    except KeyboardInterrupt:
        cancel = getattr(machine, "cancel", None)
        if cancel is not None:
            cancel()
            th.join(2)
        raise
    if "error" in box:
        raise box["error"]
    return box.get("result")


# --------------------------------------------------------------------- disasm
def disasm(args: Namespace) -> int:
    try:
        return _disasm(args)
    except BrokenPipeError:
        # the reader (e.g. head) went away: not an error; keep Python quiet at exit
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _disasm(args: Namespace) -> int:
    if getattr(args, "symbol_opt", None):
        if args.symbol and args.symbol != args.symbol_opt:
            raise ElfkitError(f"two symbols given: {args.symbol!r} and {args.symbol_opt!r}")
        args.symbol = args.symbol_opt

    from .. import arch as _arch
    from ..exec.disasm import disassemble, format_listing, symbolizer
    from ..fatelf import pick_slice
    from ..fatelf.files import MAX_ELF_SIZE, read_input
    from .elf_sections import ET_REL, BadElf, ElfFile
    data = read_input(args.file)   # bounded; a FIFO or device is refused
    view, rec = pick_slice(data, _arch.get(args.arch) if args.arch else None)
    label = f"[{rec.arch}]" if rec is not None else ""
    if len(view) > MAX_ELF_SIZE:
        raise ElfkitError(f"{args.file}{label}: the ELF is {len(view)} bytes, more than the "
                          f"{MAX_ELF_SIZE >> 30} GiB elfkit reads")
    try:
        ef = ElfFile(bytes(view))
        if ef.type == ET_REL and ef.end == "<":
            # an object's sections all start at 0: list them where a load lays them
            # out (image offsets), as a linker would place them
            from ..loader.objimage import object_plan  # objects only (start-up time)
            ef = ElfFile(bytes(object_plan(view).elf.data))
    except BadElf as e:
        raise ElfkitError(f"{args.file}: not an ELF file ({e})") from None
    arch = _arch.from_machine(ef.machine, ef.bits)
    if args.arch and _arch.get(args.arch) is not arch:
        raise ElfkitError(f"{args.file}{label}: is {arch.name}, not {args.arch}")
    try:
        ef.read_tables()
        funcs, labels = _functions(ef, arch)
        regions = ef.code_regions()
    except BadElf as e:
        raise ElfkitError(f"{args.file}{label}: malformed section headers or symbol table "
                          f"({type(e).__name__}: {e})") from None
    look = symbolizer({a: n for a, n in labels.items()})

    out = sys.stdout
    print(f"{args.file}{label}: {arch.name} ({len(funcs)} functions)", file=out)
    if args.symbol:
        if args.symbol not in funcs:
            # names come from the file: show them escaped (never control characters)
            near = ", ".join(ascii(n)[1:-1] for n in sorted(funcs)[:20])
            raise ElfkitError(f"{args.file}: no function {args.symbol!r}"
                              + (f" (functions: {near}{' ...' if len(funcs) > 20 else ''})"
                                 if funcs else " (no symbol table)"))
        value, size = funcs[args.symbol]
        thumb = arch.name == "arm" and bool(value & 1)
        start = value & ~1 if arch.name == "arm" else value
        for _name, addr, code in regions:
            if addr <= start < addr + len(code):
                size = size or min(256, addr + len(code) - start)
                chunk = code[start - addr:start - addr + size]
                insns = disassemble(chunk, start, arch, look, thumb=thumb)
                print(format_listing(insns, look, show_bytes=not args.no_bytes,
                                     labels={start: args.symbol}, addr_width=arch.bits // 4),
                      file=out)
                return 0
        raise ElfkitError(f"{args.file}: {args.symbol!r} at {value:#x} is not in an executable "
                          f"section")
    for name, addr, code in regions:
        print(f"\nDisassembly of {name}:", file=out)
        insns = disassemble(code, addr, arch, look)
        print(format_listing(insns, look, show_bytes=not args.no_bytes, labels=labels,
                             addr_width=arch.bits // 4), file=out)
    return 0


def _functions(ef: Any, arch: Any) -> tuple[dict[str, tuple[int, int]], dict[int, str]]:
    """Functions of an ELF (name -> (value, size)) and labels (address -> name)
    from .symtab, else .dynsym: STT_FUNC symbols and sized STT_NOTYPE ones
    (not STT_GNU_IFUNC: pyelftools, which this once used, names type 10
    STT_LOOS)."""
    from .elf_sections import STT_FUNC, STT_NOTYPE
    funcs: dict[str, tuple[int, int]] = {}
    labels: dict[int, str] = {}
    for secname in (".symtab", ".dynsym"):
        for name, kind, shndx, value, size in ef.symbols(secname):
            if not name or name.startswith("$") or shndx == 0:
                continue
            if kind != STT_FUNC and not (kind == STT_NOTYPE and size):
                continue
            funcs.setdefault(name, (value, size))
            labels.setdefault(value & ~1 if arch.name == "arm" else value, name)
    return funcs, labels


#: ``elfkit run`` and ``elfkit disasm`` (elfkit/tools/cli_spec.py)
COMMANDS = (
    Command(
        "run",
        Arg("file", help="plugin (.so) or FatELF (.sos)"),
        Arg("--call", required=True, metavar="SYMBOL", help="export to call"),
        Arg("--arg", action="append", default=[], metavar="VALUE",
            help="an argument (repeat in order); ints, 0x..., floats, null"),
        Arg("--sig", metavar="SIG", help="C signature, e.g. 'i64(i64,f64)'"),
        Arg("--restype", metavar="TYPE", help="result type when --sig is not given "
            "(void, i8..i64, u8..u64, f32, f64, ptr)"),
        Arg("--arch", help="architecture (picks a FatELF slice; checked against the ELF)"),
        Arg("--backend", default="auto", choices=("auto", "native", "emulated"),
            help="auto (default): native when the plugin is for this host"),
        Arg("--timeout", type=float, metavar="S", help="wall-clock limit of the call"),
        Arg("--budget", type=int, metavar="N", help="instruction budget of the call (emulated)"),
        Arg("--trace", metavar="FILE",
            help="write an execution trace (basic blocks with disassembly) to FILE "
            "(emulated)"),
        Arg("--trace-mode", default="block", choices=("block", "compact"),
            help="block: every block with its instructions; compact: block addresses"),
        Arg("--profile", metavar="FILE",
            help="profile the guest code by function and source line (emulated) and write "
            "it to FILE: .svg a flame chart, .json speedscope JSON"),
        Arg("--gdb", type=int, metavar="PORT",
            help="debug the call with gdb (emulated): listen on 127.0.0.1:PORT and stop "
            "before the first instruction until gdb attaches with "
            "'file FILE' and 'target remote :PORT'"),
        Arg("--hex", action="store_true", help="print integer results in hex too"),
        help="load a plugin and call one of its exports",
        description="Load a plugin (natively, or under emulation for a foreign architecture) "
        "and call one export.  Arguments are ints (decimal or 0x...), floats, or 'null'; "
        "without --sig an int is passed as a pointer-sized signed integer and a float as f64, "
        "and the result is read as a pointer-sized signed integer (see --restype).",
        epilog="examples:\n  elfkit run k.so --call add_i32 --arg 2 --arg 40 --sig "
        "'i32(i32,i32)'\n"
        "  elfkit run k_aarch64.so --call spin_forever --timeout 0.5\n"
        "  elfkit run k.sos --arch riscv64 --call dot --sig 'f64(f64,f64)' --arg 1.5 --arg 2 "
        "--trace trace.txt",
        raw=True, run=run),
    Command(
        "disasm",
        Arg("file", help="plugin (.so), object (.o) or FatELF (.sos)"),
        Arg("symbol", nargs="?", help="only this function (put it right after FILE)"),
        Arg("-s", "--symbol", dest="symbol_opt", metavar="SYMBOL",
            help="only this function (same as the positional SYMBOL)"),
        Arg("--arch", help="FatELF: the slice to disassemble (default: host's, else first)"),
        Arg("--no-bytes", action="store_true", help="do not print instruction bytes"),
        help="disassemble a plugin or one of its functions (capstone, symbolised)",
        description="Disassemble the executable sections of a plugin, or one function, with "
        "symbol labels and branch targets named.  Does not load or run anything.",
        run=disasm),
)
