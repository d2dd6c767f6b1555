"""Binary layouts of the executable-plugin ABI (version 1) and the executable
library ABI (version 6), for 32- and 64-bit targets, plus the import thunk
for every architecture elfkit runs.

Everything here is data and pure functions over bytes: the structs are
packed and unpacked with :mod:`struct`, never touched through ctypes, so the
same code serves a native x86_64 library and a riscv32 one in an emulator.

Layout rules used below (little-endian, natural C alignment): a pointer or
``size_t`` is one *word* (4 or 8 bytes); a ``uint32_t`` count directly
followed by a pointer takes a whole word; u64 fields keep their offsets on
i386 (only their alignment differs), so one table per word size suffices.
"""
from __future__ import annotations

import enum
import struct
from collections.abc import Iterable

from elfkit.errors import ElfkitError
from elfkit.support import DataRecord, IntEnumBody, quick_enum

# ---------------------------------------------------------------------------
# Executable plugins (version 0.1)
# ---------------------------------------------------------------------------

PLUGIN_QUERY_NAME = "iree_hal_executable_plugin_query"
PLUGIN_VERSION_LATEST = 1

PLUGIN_FEATURE_STANDALONE = 1 << 0
PLUGIN_FEATURE_FULL_STATUS = 1 << 1

RESOLUTION_MISSING_OPTIONAL = 1 << 0

STATUS_CODE_MASK = 0x1F


@quick_enum(enum.IntEnum)      # (cheaper to create than the class statement's enum)
class Sanitizer(IntEnumBody):
    NONE = 0
    ADDRESS = 1
    MEMORY = 2
    THREAD = 3
    UNDEFINED = 4

    @classmethod
    def describe(cls, value: int) -> str:
        try:
            return cls(value).name
        except ValueError:
            return str(value)


@quick_enum(enum.IntEnum)
class AllocatorCommand(IntEnumBody):
    MALLOC = 0
    CALLOC = 1
    REALLOC = 2
    FREE = 3


# ---------------------------------------------------------------------------
# Executable libraries (version 0.6)
# ---------------------------------------------------------------------------

LIBRARY_QUERY_NAME = "iree_hal_executable_library_query"
#: what ends the query function's name of each library in a static library
#: object (``<library name>_library_query``, --iree-llvmcpu-link-static)
STATIC_QUERY_SUFFIX = "_library_query"
LIBRARY_VERSION = 6

DISPATCH_FLAG_SEQUENTIAL = 1 << 0
DISPATCH_FLAG_WORKGROUP_SIZE_DYNAMIC = 1 << 1
LOCAL_MEMORY_PAGE_SIZE = 4096
MAX_CONSTANT_COUNT = 64
MAX_BINDING_COUNT = 64
PROCESSOR_DATA_WORDS = 8

#: Import function signature: int fn(void* params, void* context, void* reserved).
IMPORT_SIGNATURE = "i32(ptr,ptr,ptr)"
#: Dispatch function: int fn(const env*, const dispatch_state*, const workgroup_state*).
DISPATCH_SIGNATURE = "i32(ptr,ptr,ptr)"


def is_optional(name: str) -> bool:
    """Import names starting with '?' are optional."""
    return name.startswith("?")


def strip_optional(name: str) -> str:
    return name[1:] if name.startswith("?") else name


class LibraryHeader(DataRecord, frozen=True, slots=True):
    version: int
    name_ptr: int
    features: int
    sanitizer: int


class LibraryV0(DataRecord, frozen=True, slots=True):
    header: int
    import_count: int
    import_symbols: int
    export_count: int
    export_ptrs: int
    export_attrs: int
    export_params: int
    export_occupancy: int
    export_names: int
    export_tags: int
    export_parameter_names: int
    export_source_locations: int
    export_stage_locations: int
    constant_count: int
    source_count: int
    source_files: int


class DispatchAttrs(DataRecord, frozen=True, slots=True):
    flags: int
    local_memory_pages: int
    constant_count: int
    binding_count: int
    workgroup_size: tuple[int, int, int]
    parameter_count: int

    @property
    def local_memory_size(self) -> int:
        return self.local_memory_pages * LOCAL_MEMORY_PAGE_SIZE


class PluginHeader(DataRecord, frozen=True, slots=True):
    version: int
    name_ptr: int
    description_ptr: int
    features: int
    sanitizer: int


class Layout:
    """Struct sizes, offsets and codecs for one word size (4 or 8)."""

    def __init__(self, word: int):
        if word not in (4, 8):
            raise ValueError(f"word size must be 4 or 8, not {word}")
        self.word = word
        self.bits = word * 8
        self.w = "I" if word == 4 else "Q"          # unsigned word
        self.mask = (1 << self.bits) - 1
        # -- plugin ABI ---------------------------------------------------
        # header: version u32 | name | description | features u32 | sanitizer i32 | u64 reserved[8]
        self.plugin_header_fmt = "<I4x" + "QQ" + "Ii" if word == 8 else "<I" + "II" + "Ii"
        self.plugin_header_size = struct.calcsize(self.plugin_header_fmt)
        self.plugin_v0_size = 4 * word                 # header, load, unload, resolve
        self.resolve_params_size = 4 * word            # count, names, out_fns, out_contexts
        self.string_pair_size = 4 * word               # key{data,size}, value{data,size}
        self.plugin_env_size = 2 * word                # host_allocator{self, ctl}
        # -- library ABI --------------------------------------------------
        self.library_header_fmt = "<I4xQIi" if word == 8 else "<IIIi"
        self.library_header_size = struct.calcsize(self.library_header_fmt)
        self.library_v0_size = 16 * word
        self.attrs_fmt = "<QHBBIIHH40x"
        self.attrs_size = 64
        # environment: constants, import_thunk, import_funcs, import_contexts, processor.data[8]
        self.env_size = 4 * word + 8 * PROCESSOR_DATA_WORDS
        self.env_import_thunk = word
        self.env_import_funcs = 2 * word
        self.env_import_contexts = 3 * word
        self.env_processor = 4 * word
        # dispatch state: wg size xyz (u32,u32,u16), constant_count u16,
        # wg count xyz (u32,u32,u16), max_concurrency u8, binding_count u8,
        # then constants, binding_ptrs, binding_lengths pointers
        self.ds_fmt = "<IIHHIIHBB" + self.w * 3
        self.ds_size = struct.calcsize(self.ds_fmt)
        # workgroup state: id xyz (u32,u32,u16), reserved u16, processor_id u32,
        # local_memory ptr, local_memory_size u32 (+ tail padding on 64-bit)
        self.ws_fmt = "<IIHHI" + self.w + "I" + ("4x" if word == 8 else "")
        self.ws_size = struct.calcsize(self.ws_fmt)
        assert self.ds_size == (48 if word == 8 else 36)
        assert self.ws_size == (32 if word == 8 else 24)
        assert self.env_size == (96 if word == 8 else 80)

    # -- words ----------------------------------------------------------
    def pack_words(self, *values: int) -> bytes:
        return struct.pack(f"<{len(values)}{self.w}", *(v & self.mask for v in values))

    def unpack_words(self, data: bytes, count: int | None = None) -> tuple[int, ...]:
        n = len(data) // self.word if count is None else count
        return struct.unpack_from(f"<{n}{self.w}", data)

    # -- plugin ABI -----------------------------------------------------
    def plugin_header(self, data: bytes) -> PluginHeader:
        return PluginHeader(*struct.unpack_from(self.plugin_header_fmt, data))

    def plugin_v0(self, data: bytes) -> tuple[int, int, int, int]:
        return self.unpack_words(data, 4)  # type: ignore[return-value]

    def resolve_params(self, count: int, names: int, fns: int, contexts: int) -> bytes:
        return self.pack_words(count, names, fns, contexts)

    def string_pair(self, key_ptr: int, key_len: int, value_ptr: int, value_len: int) -> bytes:
        return self.pack_words(key_ptr, key_len, value_ptr, value_len)

    # -- library ABI ----------------------------------------------------
    def library_header(self, data: bytes) -> LibraryHeader:
        return LibraryHeader(*struct.unpack_from(self.library_header_fmt, data))

    def library_v0(self, data: bytes) -> LibraryV0:
        return LibraryV0(*self.unpack_words(data, 16))

    def dispatch_attrs(self, data: bytes) -> DispatchAttrs:
        (flags, pages, constants, bindings, sx, sy, sz, params) = struct.unpack_from(
            self.attrs_fmt, data)
        return DispatchAttrs(flags, pages, constants, bindings, (sx, sy, sz), params)

    def dispatch_state(self, workgroup_size: tuple[int, int, int], constant_count: int,
                       workgroup_count: tuple[int, int, int], max_concurrency: int,
                       binding_count: int, constants: int, binding_ptrs: int,
                       binding_lengths: int) -> bytes:
        return struct.pack(self.ds_fmt, workgroup_size[0], workgroup_size[1], workgroup_size[2],
                           constant_count, workgroup_count[0], workgroup_count[1],
                           workgroup_count[2], max_concurrency, binding_count,
                           constants, binding_ptrs, binding_lengths)

    def workgroup_state(self, x: int, y: int, z: int, processor_id: int, local_memory: int,
                        local_memory_size: int) -> bytes:
        return struct.pack(self.ws_fmt, x, y, z, 0, processor_id, local_memory,
                           local_memory_size)

    def thread_records(self, wc: tuple[int, int, int], threads: int) -> bytes:
        """The states of every workgroup of a ``wc`` grid cut into ``threads``
        contiguous ranges (the first ``total % threads`` one longer), each
        workgroup's processor id the index of its range: a grid shared by
        threads in chunks, as a prepared multi-threaded dispatch runs it."""
        total = wc[0] * wc[1] * wc[2]
        step, extra = divmod(total, threads)
        out, start = [], 0
        for t in range(threads):
            end = start + step + (t < extra)
            out.append(self.workgroup_records(wc, range(start, end), t, 0, 0))
            start = end
        return b"".join(out)

    def workgroup_records(self, wc: tuple[int, int, int], indices: Iterable[int],
                          processor_id: int, local_memory: int, local_memory_size: int) -> bytes:
        """The workgroup states of linear workgroup ``indices`` (x fastest) of a
        ``wc`` grid, packed one after another."""
        pack = struct.Struct(self.ws_fmt).pack
        x, xy = wc[0], wc[0] * wc[1]
        return b"".join([pack(k % x, (k // x) % wc[1], (k // xy) & 0xFFFF, 0, processor_id,
                              local_memory, local_memory_size) for k in indices])


_LAYOUTS = {4: Layout(4), 8: Layout(8)}


def layout(word: int) -> Layout:
    """The layout for a word size (4 or 8 bytes)."""
    return _LAYOUTS[word]


# ---------------------------------------------------------------------------
# Import thunks
# ---------------------------------------------------------------------------
#
# int thunk(import_fn fn, void* params, void* context, void* reserved)
#     { return fn(params, context, reserved); }
#
# Compiled dispatch code never calls an import directly: it calls
# environment->import_thunk.  The thunk is ordinary code of the target
# architecture, so under emulation an import call stays inside the emulated
# CPU (dispatch -> thunk -> plugin) with no host round trip.  Each variant
# shifts the three arguments down one register (or stack slot) and jumps
# (or calls) to the function.

def import_thunk_code(arch_name: str) -> bytes:
    """The thunk's machine code for architecture ``arch_name`` (KeyError: none)."""
    from elfkit import arch  # the code lives with each architecture's facts (one file)
    try:
        code = arch.get(arch_name).call_through3
    except ElfkitError:
        code = b""
    if not code:
        raise KeyError(f"no import thunk for architecture {arch_name!r}")
    return code


THUNK_SIGNATURE = "i32(ptr,ptr,ptr,ptr)"
