"""The load corpus of measure 16: every x86_64 file the tests load natively.

Gathered (and built when missing, cached like the tests' own builds) from:

* the sample/test plugins of ``plugin_src/`` (the CMake project the tests'
  ``plugins`` fixture builds), x86_64, and ``system_plugin.so`` (host
  compiler, libc imports);
* the tests' other plugins, built by ``elfkit.toolchain.compile_plugin``
  with the tests' options: ``hostile.so`` and ``provider.so``
  (tests/elfkit/exec/hostile), the gdb debuggees (``-g``: DWARF), and
  vmrt's variant executable plugin with a few of the settings its tests use;
* relocatable objects (``.o``) of the catalogue sources and of the object
  loader tests' own sources, compiled by the tests' builder
  (``tests/elfkit/loader/objects``), position independent or not;
* the bench's synthetic shared objects with 1k and 10k RELATIVE and
  symbolic relocations;
* IREE dispatch libraries: the ELF executables embedded in the
  conformance programs compiled for x86_64 (``tests/vmrt/conformance``;
  cached ``.vmfb`` files under ``build/vmrt_conformance``) and in the
  bench's loop program.

Files are deduplicated by content.  Imports are bound to one stub (a host
function that returns 0), so that every file loads natively whatever it
imports; an import a file's initialisers call gets that 0.
"""
from __future__ import annotations

import ctypes
import hashlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import _build
from ._timing import REPO

ARCH = "x86_64"

#: (name, defines) of the variant plugin builds, as vmrt's plugin tests use them
_VARIANTS: tuple[tuple[str, dict[str, str]], ...] = (
    ("variant", {}),
    ("variant_x10", {"VARIANT_FACTOR": "10.0f", "VARIANT_NAME": '"x10"'}),
    ("variant_provides2", {"VARIANT_NAME": '"echoes"', "VARIANT_PROVIDES": "2"}),
)


@dataclass
class Entry:
    """One corpus file: a label, its bytes, and what it is made of."""

    label: str
    data: bytes
    kind: str                               # "so", "o" or "iree"
    traits: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)


_STUB_TYPE = ctypes.CFUNCTYPE(ctypes.c_long)
_stub_keep: list[object] = []


def stub_address() -> int:
    """The address of one host function that takes anything and returns 0."""
    if not _stub_keep:
        _stub_keep.append(_STUB_TYPE(lambda: 0))
    return ctypes.cast(_stub_keep[0], ctypes.c_void_p).value or 0


def stub_imports(entry: Entry) -> dict[str, int] | None:
    """Every import of ``entry`` bound to the stub (None: it has none)."""
    if not entry.imports:
        return None
    a = stub_address()
    return {n: a for n in entry.imports}


def _traits(data: bytes) -> tuple[list[str], list[str]]:
    """(traits, imports) of an ELF file, read with pyelftools (independent
    of the loader under test)."""
    import io

    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection
    from elftools.elf.sections import SymbolTableSection

    elf = ELFFile(io.BytesIO(data))
    traits: list[str] = []
    nrel = 0
    imports: list[str] = []
    is_obj = elf["e_type"] == "ET_REL"
    for sec in elf.iter_sections():
        name = sec.name
        if name == ".bss" or name.startswith(".bss."):
            if sec["sh_size"] and "bss" not in traits:
                traits.append("bss")
        elif name.startswith(".debug_info") and "dwarf" not in traits:
            traits.append("dwarf")
        elif name in (".init_array", ".ctors") or name.startswith(".init_array."):
            if "init_array" not in traits:
                traits.append("init_array")
        elif name == ".relr.dyn" and "relr" not in traits:
            traits.append("relr")
        if isinstance(sec, RelocationSection):
            nrel += sec.num_relocations()
        if isinstance(sec, DynamicSection):
            for t in sec.iter_tags():
                if t.entry.d_tag in ("DT_RELR", "DT_RELRSZ") and "relr" not in traits:
                    traits.append("relr")
                if t.entry.d_tag in ("DT_INIT_ARRAY", "DT_INIT") and "init_array" not in traits:
                    traits.append("init_array")
        if isinstance(sec, SymbolTableSection) and (sec.name == ".dynsym" or (
                is_obj and sec.name == ".symtab")):
            for s in sec.iter_symbols():
                if (s.name and s["st_shndx"] == "SHN_UNDEF"
                        and s["st_info"]["bind"] != "STB_LOCAL"):
                    imports.append(s.name)
    traits.append(f"{nrel} relocs")
    if imports:
        traits.append(f"{len(imports)} imports")
    return traits, sorted(set(imports))


def _plugins(out: list[tuple[str, str, Path]]) -> None:
    d = _build.plugins(REPO / "build" / "bench")
    for p in sorted((d / ARCH).glob("*.so")):
        out.append((f"plugin_src/{p.name}", "so", p))
    sysp = d / "host" / "system_plugin.so"
    if sysp.is_file():
        out.append(("plugin_src/system_plugin.so", "so", sysp))


def _test_plugins(out: list[tuple[str, str, Path]], work: Path) -> None:
    from elfkit.toolchain import compile_plugin
    tests = REPO / "tests"
    hostile = tests / "elfkit" / "exec" / "hostile"
    for name in ("hostile", "provider"):
        p = compile_plugin(hostile / f"{name}.c", ARCH, work / f"{name}.so",
                           cflags=["-fvisibility=default"])
        out.append((f"tests/hostile/{name}.so", "so", p))
    gdb = tests / "elfkit" / "exec" / "emulated" / "gdb_src"
    for name in ("debuggee", "fpdebuggee"):
        p = compile_plugin(gdb / f"{name}.c", ARCH, work / f"{name}.so",
                           cflags=["-g", "-O1", "-fno-omit-frame-pointer"])
        out.append((f"tests/gdb/{name}.so", "so", p))
    src = tests / "vmrt" / "hal" / "local" / "plugins" / "data" / "variant_plugin.c"
    for name, defines in _VARIANTS:
        p = compile_plugin(src, ARCH, work / f"{name}.so",
                           include_dirs=[REPO / "elfkit" / "include"], defines=defines,
                           cflags=["-fno-builtin"], ldflags=["--no-undefined"])
        out.append((f"tests/vmrt_plugins/{name}.so", "so", p))


def _objects(out: list[tuple[str, str, Path]]) -> None:
    from tests.elfkit.loader.objects import build_object
    # left out: relocs.c (an IFUNC, which objects cannot have) and -fno-PIC
    # builds (R_X86_64_32S needs the image in the low 2 GiB; emulated only)
    for src in ("standalone_plugin.c", "kernels.c", "imports.c"):
        for pic, opt in (("-fPIC", "-O2"), ("-fPIC", "-O0")):
            p = build_object(src, ARCH, pic, opt)
            out.append((f"objects/{Path(src).stem}{pic}{opt}.o", "o", p))
    for src in ("common_init.c", "far_provider.c"):
        out.append((f"objects/{Path(src).stem}.o", "o", build_object(src, ARCH)))


def _synthetic(out: list[tuple[str, str, Path]], work: Path) -> None:
    for n in (1000, 10000):
        for kind in ("relative", "symbolic"):
            out.append((f"bench/relocs_{kind}_{n}.so", "so", _build.reloc_object(work, n, kind)))


def _iree(found: list[tuple[str, str, bytes]], work: Path) -> None:
    from tests.vmrt.conformance.harness import arches_of, compile_for, programs
    from vmrt.bytecode.format import parse_module
    vmfbs = [(f"{p.parent.name}/{p.stem}", compile_for(p, ARCH)) for p in programs()
             if ARCH in arches_of(p)]
    vmfbs.append(("bench/loop", _build.loop_vmfb(work)))
    for label, vmfb in vmfbs:
        k = 0
        for seg in parse_module(vmfb.read_bytes()).rodata:
            if bytes(seg[:4]) == b"\x7fELF":
                found.append((f"iree/{label}#{k}", "iree", bytes(seg)))
                k += 1


def gather(work: Path, log: bool = False) -> list[Entry]:
    """The corpus (built when missing), deduplicated by content."""
    paths: list[tuple[str, str, Path]] = []
    sub = work / "corpus"
    sub.mkdir(parents=True, exist_ok=True)
    _plugins(paths)
    _test_plugins(paths, sub)
    _objects(paths)
    _synthetic(paths, work)
    blobs = [(label, kind, p.read_bytes()) for label, kind, p in paths]
    _iree(blobs, work)
    seen: set[str] = set()
    entries: list[Entry] = []
    for label, kind, data in blobs:
        h = hashlib.sha256(data).hexdigest()
        if h in seen:
            continue
        seen.add(h)
        traits, imports = _traits(data)
        entries.append(Entry(label, data, kind, traits, imports))
        if log:
            print(f"  {label}: {len(data)} B, {', '.join(traits)}", file=sys.stderr)
    return entries
