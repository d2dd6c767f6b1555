"""Reading a ``.vmfb`` file: framing (plain or polyglot ZIP) and the
``BytecodeModuleDef`` FlatBuffer tables, into plain records."""
from __future__ import annotations

import struct

from elfkit.support import DataRecord

from ..errors import LoadError, StatusCode
from .flatbuf import FlatBuffer, Table
from .isa import BYTECODE_VERSION_MAJOR, BYTECODE_VERSION_MINOR

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

FEATURE_EXT_F32 = 1
FEATURE_EXT_F64 = 2
FEATURE_YIELD = 4
FEATURE_UNWIND = 8
FEATURE_NAMES = {FEATURE_EXT_F32: "EXT_F32", FEATURE_EXT_F64: "EXT_F64",
                 FEATURE_YIELD: "YIELD", FEATURE_UNWIND: "UNWIND"}

_DESC = struct.Struct("<iiIhhhh")   # FunctionDescriptor, 20 bytes
_ZIP_LOCAL = struct.Struct("<IHHHHHIIIHH")


class FunctionDescriptor(DataRecord, frozen=True, slots=True):
    bytecode_offset: int
    bytecode_length: int
    requirements: int
    block_count: int
    i32_register_count: int
    ref_register_count: int


class ImportDef(DataRecord, frozen=True, slots=True):
    full_name: str
    cconv: str
    flags: int


class ExportDef(DataRecord, frozen=True, slots=True):
    local_name: str
    internal_ordinal: int


class DependencyDef(DataRecord, frozen=True, slots=True):
    name: str
    minimum_version: int
    flags: int


class ModuleDef(DataRecord, frozen=True, slots=True):
    name: str
    version: int
    requirements: int
    types: tuple[str, ...]
    dependencies: tuple[DependencyDef, ...]
    imports: tuple[ImportDef, ...]
    exports: tuple[ExportDef, ...]
    signatures: tuple[str, ...]
    signature_attrs: tuple[dict[str, Any], ...]
    rodata: tuple[memoryview | bytes, ...]
    global_bytes: int
    global_refs: int
    functions: tuple[FunctionDescriptor, ...]
    bytecode_version: int
    bytecode: memoryview | bytes
    #: (offset in the module's data, length) of each rodata segment
    rodata_spans: tuple[tuple[int, int], ...] = ()
    #: (offset in the module's data, length) of the bytecode
    bytecode_span: tuple[int, int] = (0, 0)


def _payload_start(data: memoryview) -> int:
    if len(data) >= 4 and bytes(data[:4]) == b"PK\x03\x04":
        if len(data) < _ZIP_LOCAL.size:
            raise LoadError("archive self-reports as a zip but does not have enough data to "
                            "contain a module")
        fields = _ZIP_LOCAL.unpack_from(data, 0)
        name_len, extra_len = fields[9], fields[10]
        start = _ZIP_LOCAL.size + name_len + extra_len
        if start > len(data):
            raise LoadError("archive self-reports as a zip but does not have enough data to "
                            "contain a module")
        return start
    return 0


def _features(bits: int) -> str:
    return "|".join(n for b, n in FEATURE_NAMES.items() if bits & b) or "NONE"


def parse_module(data: bytes | bytearray | memoryview,
                 available_features: int = (FEATURE_EXT_F32 | FEATURE_EXT_F64 | FEATURE_UNWIND
                                            | FEATURE_YIELD)
                 ) -> ModuleDef:
    """Parse and structurally check a module file.  ``YIELD`` is available:
    yieldable calls and ``vm.yield`` run synchronously (a yield resumes at
    once), which is what programs compiled for a HAL device need."""
    data = memoryview(data).cast("B") if not isinstance(data, memoryview) else data.cast("B")
    fb, fb_end = _open_flatbuffer(data)
    root = fb.root()
    name = root.string(0)
    if not name:
        raise LoadError("module missing name field")
    version = root.scalar(1, "u32")
    requirements = root.scalar(2, "u32")
    _check_features(requirements, available_features)
    types = _types(root)
    deps = _dependencies(root)
    imports = _imports(root)
    sigs, sig_attrs = _signatures(root)
    descs = [FunctionDescriptor(o, ln, req, bc, ic, rc)
             for (o, ln, req, _res, bc, ic, rc) in root.vector_structs(12, _DESC)]
    if len(sigs) != len(descs):
        raise LoadError(f"function signature and descriptor table length mismatch "
                        f"({len(sigs)} vs {len(descs)})")
    exports = _exports(root, len(descs))
    rodata, spans = _rodata(root, fb, data, fb_end)
    gbytes, grefs = _state_size(root)
    bv = root.scalar(13, "u32")
    _check_bytecode_version(bv)
    bc = root.vector_bytes(14)
    bc_start, bc_len = bc if bc is not None else (0, 0)
    bytecode = fb.data[bc_start:bc_start + bc_len] if bc is not None else memoryview(b"")
    _check_descriptors(descs, bc_len)
    fb_start = fb_end - fb.size
    return ModuleDef(name, version, requirements, tuple(types), tuple(deps), tuple(imports),
                     tuple(exports), tuple(sigs), tuple(sig_attrs), tuple(rodata), gbytes, grefs,
                     tuple(descs), bv, bytecode, tuple(spans),
                     (fb_start + bc_start, bc_len) if bc is not None else (0, 0))


def flatbuffer_end(data: bytes | memoryview) -> int | None:
    """Where the module's FlatBuffer ends in ``data`` (after it: only the
    external rodata segments), or None when ``data`` is no module: everything
    :func:`parse_module` reads lies before that offset, but for the file's
    length (the external segments' bounds)."""
    try:
        return _open_flatbuffer(memoryview(data).cast("B"))[1]
    except LoadError:
        return None


def module_record(d: ModuleDef) -> tuple[Any, ...]:
    """``d`` as plain values (what :mod:`marshal` writes), its rodata and
    bytecode by where they lie in the module's data; :func:`module_from_record`
    rebuilds it over the same data."""
    return (d.name, d.version, d.requirements, d.types,
            tuple((x.name, x.minimum_version, x.flags) for x in d.dependencies),
            tuple((x.full_name, x.cconv, x.flags) for x in d.imports),
            tuple((x.local_name, x.internal_ordinal) for x in d.exports),
            d.signatures, d.signature_attrs, d.global_bytes, d.global_refs,
            tuple((f.bytecode_offset, f.bytecode_length, f.requirements, f.block_count,
                   f.i32_register_count, f.ref_register_count) for f in d.functions),
            d.bytecode_version, d.rodata_spans, d.bytecode_span)


def module_from_record(rec: tuple[Any, ...], data: bytes) -> ModuleDef:
    """The :class:`ModuleDef` :func:`module_record` made ``rec`` of, over
    ``data`` (the same module's bytes)."""
    (name, version, requirements, types, deps, imports, exports, sigs, attrs, gbytes, grefs,
     funcs, bv, spans, (bc_off, bc_len)) = rec
    view = memoryview(data)
    return ModuleDef(name, version, requirements, tuple(types),
                     tuple(DependencyDef(*x) for x in deps), tuple(ImportDef(*x) for x in imports),
                     tuple(ExportDef(*x) for x in exports), tuple(sigs), tuple(attrs),
                     tuple(view[o:o + n] for o, n in spans), gbytes, grefs,
                     tuple(FunctionDescriptor(*x) for x in funcs), bv,
                     view[bc_off:bc_off + bc_len], tuple(tuple(s) for s in spans),
                     (bc_off, bc_len))


def _open_flatbuffer(data: memoryview) -> tuple[FlatBuffer, int]:
    """The module's FlatBuffer (after any archive header and the length
    prefix) and the offset in ``data`` where it ends."""
    start = _payload_start(data)
    remaining = len(data) - start
    if remaining < 16:
        raise LoadError(f"module data too small ({remaining} bytes) to contain a module")
    (size,) = struct.unpack_from("<I", data, start)
    if size > remaining - 4:
        raise LoadError(f"FlatBuffer length prefix out of bounds (prefix is {size} but only "
                        f"{remaining - 4} bytes available)")
    fb_start = start + 4
    fb = FlatBuffer(data[fb_start:fb_start + size], "module FlatBuffer")
    if fb.identifier() != b"IREE":
        raise LoadError(f"FlatBuffer identifier is {fb.identifier()!r}, expected b'IREE'")
    return fb, fb_start + size


def _check_features(requirements: int, available_features: int) -> None:
    if requirements & ~available_features:
        raise LoadError(
            f"required module features [{_features(requirements)}] are not available in this "
            f"runtime configuration; have [{_features(available_features)}] while module "
            f"requires [{_features(requirements)}]", StatusCode.INVALID_ARGUMENT)


def _types(root: Table) -> list[str]:
    types = []
    for i, t in enumerate(root.vector_tables(4)):
        n = t.string(0)
        if not n:
            raise LoadError(f"types[{i}] missing name")
        types.append(n)
    return types


def _dependencies(root: Table) -> list[DependencyDef]:
    deps = []
    for i, t in enumerate(root.vector_tables(5)):
        n = t.string(0)
        if not n:
            raise LoadError(f"dependencies[{i}] missing name")
        deps.append(DependencyDef(n, t.scalar(1, "u32"), t.scalar(2, "u32", 1)))
    return deps


def _imports(root: Table) -> list[ImportDef]:
    imports = []
    for i, t in enumerate(root.vector_tables(6)):
        n = t.string(0)
        if not n:
            raise LoadError(f"imports[{i}] missing full_name")
        sig = t.table(1)
        cconv = (sig.string(0) or "") if sig is not None else ""
        imports.append(ImportDef(n, cconv, t.scalar(2, "u32", 1)))
    return imports


def _signatures(root: Table) -> tuple[list[str], list[dict[str, str]]]:
    """Each internal function's calling convention and its attributes."""
    sigs = []
    sig_attrs = []
    for t in root.vector_tables(8):
        sigs.append(t.string(0) or "")
        sig_attrs.append({a.string(0) or "": a.string(1) or "" for a in t.vector_tables(1)})
    return sigs, sig_attrs


def _exports(root: Table, nfuncs: int) -> list[ExportDef]:
    exports = []
    for i, t in enumerate(root.vector_tables(7)):
        n = t.string(0)
        if not n:
            raise LoadError(f"exports[{i}] missing local_name")
        ordinal = t.scalar(1, "i32")
        if ordinal < 0 or ordinal >= nfuncs:
            raise LoadError(f"exports[{i}] internal_ordinal out of bounds ({ordinal})")
        exports.append(ExportDef(n, ordinal))
    return exports


def _rodata(root: Table, fb: FlatBuffer, data: memoryview, fb_end: int
            ) -> tuple[list[memoryview | bytes], list[tuple[int, int]]]:
    """Rodata segments: embedded in the FlatBuffer or external, after it
    (64-aligned); and where each lies in ``data`` (offset, length)."""
    rodata_base = (fb_end + 63) & ~63
    fb_start = fb_end - len(fb.data)
    rodata: list[memoryview | bytes] = []
    spans: list[tuple[int, int]] = []
    for i, t in enumerate(root.vector_tables(9)):
        emb = t.vector_bytes(2)
        if emb is not None:
            s, n = emb
            rodata.append(fb.data[s:s + n])
            spans.append((fb_start + s, n))
        else:
            off = t.scalar(3, "u64")
            length = t.scalar(4, "u64")
            lo = rodata_base + off
            if lo + length > len(data) or lo > len(data):
                raise LoadError(f"rodata_segments[{i}] external data out of bounds "
                                f"(offset {off}, length {length}, file {len(data)} bytes)")
            rodata.append(data[lo:lo + length])
            spans.append((lo, length))
    return rodata, spans


def _state_size(root: Table) -> tuple[int, int]:
    """The module state's global byte and ref counts."""
    state = root.table(11)
    gbytes = state.scalar(0, "i32") if state is not None else 0
    grefs = state.scalar(1, "i32") if state is not None else 0
    if gbytes < 0 or grefs < 0 or gbytes > (64 << 20) or grefs > (1 << 20):
        raise LoadError(f"module state size out of range ({gbytes} bytes, {grefs} refs)")
    return gbytes, grefs


def _check_bytecode_version(bv: int) -> None:
    major, minor = bv >> 16, bv & 0xFFFF
    if major != BYTECODE_VERSION_MAJOR or minor > BYTECODE_VERSION_MINOR:
        raise LoadError(f"bytecode version mismatch; runtime supports {BYTECODE_VERSION_MAJOR}."
                        f"{BYTECODE_VERSION_MINOR}, module has {major}.{minor}")


def _check_descriptors(descs: list[FunctionDescriptor], bc_len: int) -> None:
    for i, d in enumerate(descs):
        if d.block_count <= 0 or d.bytecode_length <= 0:
            raise LoadError(f"function {i} has no blocks or no code")
        if d.bytecode_offset < 0 or d.bytecode_offset + d.bytecode_length > bc_len:
            raise LoadError(f"function {i} bytecode out of bounds (offset {d.bytecode_offset}, "
                            f"length {d.bytecode_length}, data {bc_len})")
        if d.i32_register_count < 0 or d.ref_register_count < 0 or \
                d.ref_register_count > 0x3FFF:
            raise LoadError(f"function {i} register counts out of range")
