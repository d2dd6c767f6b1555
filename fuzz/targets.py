"""Fuzz targets: each takes bytes and must either succeed or raise the
package's own error.  Anything else (IndexError, struct.error, MemoryError,
a crash, a hang) is a bug.  Used by tests/integration/test_fuzz.py (bounded) and by
fuzz/run.py (for hours)."""
from __future__ import annotations

import elfkit
from elfkit import fatelf
from elfkit.exec.memory import MemoryMachine


def elf_load(data: bytes) -> None:
    """Parse, lay out and relocate into a memory-only machine (any architecture)."""
    try:
        elf = elfkit.loader.parse(data)
    except elfkit.ElfkitError:
        return
    imports = {s.name: 0x1000 for s in elf.symbols[1:] if not s.defined and s.name}
    try:
        m = elfkit.load(data, machine=MemoryMachine(elf.arch), init=False, imports=imports)
    except elfkit.ElfkitError:
        return
    m.close()


def elf_load_emulated(data: bytes) -> None:
    """Parse and place into a real emulator (init code runs under a budget)."""
    try:
        m = elfkit.load(data, backend="emulated", lazy=True)
    except elfkit.ElfkitError:
        return
    try:
        m.close()          # runs the (mutated) finalisers: they may fault too
    except elfkit.ElfkitError:
        pass


#: bounds on the emulated code a mutated object runs (initialisers, queries)
OBJ_MACHINE = {"instruction_budget": 1_000_000, "timeout": 2.0}


def obj_load(data: bytes) -> None:
    """A relocatable object (an IREE static library, say): laid out,
    relocated and bound natively when it is for this CPU (no code runs
    there: a mutated initialiser would be a real crash), then emulated,
    where its initialisers and each ``*_library_query`` function run under
    a budget and the header pointer a query returns is read."""
    try:
        m = elfkit.load(data, backend="native", init=False, lazy=True)
    except elfkit.ElfkitError:
        pass
    else:
        m.close()
    try:
        m = elfkit.load(data, backend="emulated", lazy=True, **OBJ_MACHINE)
    except elfkit.ElfkitError:
        return
    try:
        for name in [n for n in m.exports if n.endswith("_library_query")]:
            try:
                lib = m.function(name, "ptr(u32,ptr)")(6, None)
                if lib:
                    m.read(int(lib), m.arch.word)
            except elfkit.ElfkitError:
                pass
    finally:
        try:
            m.close()
        except elfkit.ElfkitError:
            pass


def fatelf_read(data: bytes) -> None:
    try:
        fat = fatelf.read(data, strict=False)
    except elfkit.ElfkitError:
        return
    for p in fatelf.verify(data):
        assert str(p)
    for rec in fat.records:
        try:
            fat.slice(rec)
        except elfkit.ElfkitError:
            pass
    try:
        fatelf.select(fat, fallback=True)
    except elfkit.ElfkitError:
        pass


def vmfb_run(data: bytes) -> None:
    """Load a .vmfb, link it, and call each export with zero arguments under a
    small instruction budget."""
    import vmrt
    inst = vmrt.Instance()
    try:
        mod = vmrt.BytecodeModule.load(inst, data)
        ctx = vmrt.Context(inst, [mod], budget=100_000, timeout=2.0)
    except vmrt.VmError:
        return
    try:
        for fn in mod.exports:
            name = getattr(fn, "name", fn)
            try:
                ctx.invoke(f"{mod.name}.{name}", [0] * _arity(getattr(fn, "cconv", "")),
                           budget=100_000, timeout=2.0)
            except vmrt.VmError:
                pass
    finally:
        ctx.close()


def _arity(cconv: str) -> int:
    args = cconv[1:].split("_", 1)[0] if cconv.startswith("0") else ""
    return 0 if args in ("", "v") or "r" in args or "C" in args else len(args)


def plugin_emulated(data: bytes) -> None:
    """Hostile guest code and arguments under emulation (fuzz/plugin_emulated.py)."""
    from fuzz.plugin_emulated import plugin_emulated as target
    target(data)


def cli(data: bytes) -> None:
    """Random command lines on a mutated file, one process each (fuzz/cli.py)."""
    from fuzz.cli import cli as target
    target(data)


def _plugin_seeds() -> list[bytes]:
    from fuzz.plugin_emulated import default_seeds
    return default_seeds()


def _cli_seeds() -> list[bytes]:
    from fuzz.cli import default_seeds
    return default_seeds()


TARGETS = {"elf": elf_load, "elf-emulated": elf_load_emulated, "obj": obj_load,
           "fatelf": fatelf_read,
           "vmfb": vmfb_run, "plugin-emulated": plugin_emulated, "cli": cli}
#: targets that can build their own seeds from the test catalogue
DEFAULT_SEEDS = {"plugin-emulated": _plugin_seeds, "cli": _cli_seeds}
#: share of inputs that are a seed plus an 8-byte nonce at its end (harmless
#: to an ELF), not a byte-mutated seed: the target derives its own edits and
#: calls from the input's hash, so these reach the code instead of ending in
#: a ParseError
INTACT_SHARE = {"plugin-emulated": 0.75, "cli": 0.5}
#: targets that run guest code in the fuzzing process: a watchdog process by default
WATCHDOG = frozenset({"plugin-emulated", "elf-emulated", "obj"})
