"""The sample and test plugins: what they are, and how tests get them built.

``PLUGINS`` describes every plugin built from ``plugin_src/`` (the CMake
project there is what actually builds them; this table is what tests rely
on): its sources, link variant, imports and exports.  Every export carries its
C signature, in elfkit's signature syntax, and where it makes sense an
independent Python reference (``ref``) that says what the plugin returns for
given arguments, so tests compare against a formula and never against output
recorded from the code under test.

``build_plugins()`` builds the CMake project ``plugin_src/`` for all six
architectures through ``elfkit.toolchain.build_plugin_project`` (the one
plugin builder), cached under ``build/plugins/<hash>/``, where ``<hash>``
covers the plugin sources, the CMake modules, the flags' source
(``elfkit/arch/``), and the tool versions, so an unchanged tree reuses the
previous build (also across sessions).  The ``plugins`` fixture in
``tests/conftest.py`` returns its result.
"""
from __future__ import annotations

import os
import platform
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLUGIN_SRC = REPO / "plugin_src"
#: elfkit's CMake package (toolchain files, elfkit_add_plugin) and the plugin ABI header,
#: shipped inside the package (elfkit.toolchain.cmake_dir() / include_dir()).
CMAKE_DIR = REPO / "elfkit" / "share" / "cmake" / "elfkit"
INCLUDE_DIR = REPO / "elfkit" / "include"
BUILD_ROOT = REPO / "build" / "plugins"

#: Architecture names (elfkit.Arch.name), in build order.
ARCHES: tuple[str, ...] = ("x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32")

#: e_machine and ELF class (32/64) per architecture.
MACHINE = {"x86_64": ("EM_X86_64", 64), "aarch64": ("EM_AARCH64", 64),
           "riscv64": ("EM_RISCV", 64), "arm": ("EM_ARM", 32),
           "i386": ("EM_386", 32), "riscv32": ("EM_RISCV", 32)}

#: Pointer size in bytes per architecture.
WORD = {a: MACHINE[a][1] // 8 for a in ARCHES}


# --------------------------------------------------------------------------
# Independent reference formulas
# --------------------------------------------------------------------------

def wrap(value: int, bits: int, signed: bool) -> int:
    """``value`` modulo 2**bits, as a signed or unsigned integer."""
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def i32(v: int) -> int:
    return wrap(v, 32, True)


def i64(v: int) -> int:
    return wrap(v, 64, True)


def u64(v: int) -> int:
    return wrap(v, 64, False)


def f32(v: float) -> float:
    """Round a Python float (double) to the nearest float32."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _many_f32(*f: float) -> float:
    r = f32(f[0])
    for k in range(1, 10):
        r = f32(r + f32(float(k + 1) * f32(f[k])))
    return r


def _many_f64(*d: float) -> float:
    r = d[0]
    for k in range(1, 10):
        r = r + float(k + 1) * d[k]
    return r


def _many_mixed(*args: float) -> float:
    acc = 0.0
    for k in range(10):
        i, d = args[2 * k], args[2 * k + 1]
        acc = (acc + float(k + 1) * float(i)) + d
    return acc


def _mix_fd(a: float, b: float, c: float, d: float, e: float) -> float:
    r = f32(a)
    r = r + 2.0 * b
    r = r + 3.0 * f32(c)
    r = r + 4.0 * d
    r = r + 5.0 * f32(e)
    return r


def _dot_f64(a, b, n: int) -> float:
    s = 0.0
    for i in range(n):
        s = s + a[i] * b[i]
    return s


def recurse_ref(depth: int) -> int:
    """recurse(d) = sum over k in 1..d of (k & 0xff) + 1 (mod 2**64)."""
    return u64(sum((k & 0xFF) + 1 for k in range(1, depth + 1)))


BIG_BSS_SIZE = 1 << 20


def bss_sum_after_fill(value: int) -> int:
    """bss_sum() after bss_fill(value): bytes (value + i) & 0xff over 1 MiB."""
    full, rest = divmod(BIG_BSS_SIZE, 256)
    return full * sum(range(256)) + sum((value + i) & 0xFF for i in range(rest))


# --------------------------------------------------------------------------
# The manifest
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Export:
    """One exported symbol.  ``signature`` is elfkit's signature string for
    functions, or ``"data"`` for exported objects; ``ref`` computes the result
    for scalar arguments (None when the export has side effects, takes
    buffers, or is a data object); ``arches`` limits it to some targets."""

    signature: str
    doc: str
    ref: Callable[..., object] | None = None
    arches: tuple[str, ...] = ARCHES


@dataclass(frozen=True)
class Plugin:
    name: str
    sources: tuple[str, ...]
    doc: str
    exports: Mapping[str, Export]
    hash_style: str = "sysv"            # sysv | gnu | both
    relr: bool = False                  # linked with -z pack-relative-relocs
    imports: tuple[str, ...] = ()       # required host functions (undefined, strong)
    weak_imports: tuple[str, ...] = ()  # optional host functions (undefined, weak)
    link_flags: tuple[str, ...] = ()    # as in plugin_src/CMakeLists.txt

    def exports_for(self, arch: str) -> dict[str, Export]:
        return {k: v for k, v in self.exports.items() if arch in v.arches}


_X86 = ("x86_64", "i386")

STANDALONE_EXPORTS = {
    "iree_hal_executable_plugin_query": Export(
        "ptr(u32,ptr)",
        "query(max_version, reserved): the v0 table (header, load, unload, resolve) "
        "when max_version >= 1, else NULL. Plugin name 'sample_standalone', "
        "features STANDALONE (1), sanitizer NONE; resolve knows 'simple_mul_workgroup' "
        "(params: binding0,binding0_offset,binding1,binding1_offset,binding2,"
        "binding2_offset,size,tid (pointer-sized), processor_id u32, processor_data ptr; "
        "out[off2+i] = a[off0+i] * b[off1+i]; context NULL; returns 0)"),
}

KERNELS_EXPORTS = {
    "add_i32": Export("i32(i32,i32)", "a + b (wrapping)", lambda a, b: i32(a + b)),
    "add_i64": Export("i64(i64,i64)", "a + b (wrapping)", lambda a, b: i64(a + b)),
    "mul_u64": Export("u64(u64,u64)", "a * b mod 2**64", lambda a, b: u64(a * b)),
    "many_i32": Export("i64(" + ",".join(["i32"] * 10) + ")",
                       "sum (k+1)*a_k, exact",
                       lambda *a: sum((k + 1) * a[k] for k in range(10))),
    "many_i64": Export("i64(" + ",".join(["i64"] * 10) + ")",
                       "sum (k+1)*a_k mod 2**64",
                       lambda *a: i64(sum((k + 1) * a[k] for k in range(10)))),
    "muladd_f64": Export("f64(f64,f64,f64)", "a*b + c, two roundings (no fma)",
                         lambda a, b, c: a * b + c),
    "scale_f32": Export("f32(f32,f32)", "x * s in float32",
                        lambda x, s: f32(f32(x) * f32(s))),
    "mix_if": Export("f64(i32,f64,i32,f32)", "(double)a*x + (double)b*y",
                     lambda a, x, b, y: float(a) * x + float(b) * f32(y)),
    "mix_fd": Export("f64(f32,f64,f32,f64,f32)",
                     "((((a + 2b) + 3c) + 4d) + 5e) in double", _mix_fd),
    "many_f64": Export("f64(" + ",".join(["f64"] * 10) + ")",
                       "d0 + 2*d1 + ... + 10*d9, left to right", _many_f64),
    "many_f32": Export("f32(" + ",".join(["f32"] * 10) + ")",
                       "f0 + 2*f1 + ... + 10*f9, left to right in float32", _many_f32),
    "many_mixed": Export("f64(" + ",".join(["i32,f64"] * 10) + ")",
                         "acc=0; for k: acc = (acc + (k+1)*i_k) + d_k", _many_mixed),
    "sum_i32": Export("i64(ptr,i64)", "sum of p[0..n) (int32) as int64",
                      lambda p, n: sum(int(x) for x in p[:max(n, 0)])),
    "iota_i32": Export("void(ptr,i64,i32)", "out[i] = start + i (wrapping int32)"),
    "add_f32": Export("void(ptr,ptr,ptr,i64)", "out[i] = a[i] + b[i] (float32)"),
    "scale_f64": Export("void(ptr,ptr,f64,i64)", "out[i] = in[i] * s (float64)"),
    "dot_f64": Export("f64(ptr,ptr,i64)", "sum a[i]*b[i] left to right, no fma", _dot_f64),
    "bss_size": Export("u32()", "size of the .bss buffer (1 MiB)", lambda: BIG_BSS_SIZE),
    "bss_fill": Export("void(u32)", "buffer[i] = (value + i) & 0xff"),
    "bss_sum": Export("u64()", "sum of all buffer bytes: 0 after load, "
                      "bss_sum_after_fill(v) after bss_fill(v)"),
    "bss_get": Export("u32(u32)", "buffer[i % size]"),
    "bss_address": Export("ptr()", "address of the 1 MiB .bss buffer"),
    "write_u32": Export("void(ptr,u32)", "*(u32*)address = value (wild store)"),
    "read_u32": Export("u32(ptr)", "*(u32*)address (wild load)"),
    "crash_store": Export("void()", "stores 0xDEADBEEF to address 0x10"),
    "fill_u8": Export("void(ptr,i64,u32)", "p[0..n) = value (byte), overruns when n is too big"),
    "spin_forever": Export("void()", "endless loop"),
    "spin": Export("u64(u64)", "busy loop of n iterations, returns n", lambda n: n),
    "recurse": Export("u64(u64)", "non-tail recursion of the given depth "
                      "(64-byte buffer per frame)", recurse_ref),
}

RELOCS_EXPORTS = {
    "g_counter": Export("data", "int32 = 41 initially"),
    "g_counter_ptr": Export("data", "int32* = &g_counter (absolute relocation)"),
    "g_fn_ptr": Export("data", "int32(*)(int32) = exported_twice (absolute relocation)"),
    "g_greeting": Export("data", "const char* = \"hello, plugin\" (RELATIVE)"),
    "exported_twice": Export("i32(i32)", "2*x (wrapping)", lambda x: i32(2 * x)),
    "twice_plus_one": Export("i32(i32)", "exported_twice(x) + 1 via the PLT",
                             lambda x: i32(2 * x + 1)),
    "get_counter": Export("i32()", "g_counter (through the GOT); 41 after load"),
    "set_counter": Export("void(i32)", "g_counter = value"),
    "bump_counter": Export("i32()", "++g_counter"),
    "read_counter_ptr": Export("i32()", "*g_counter_ptr"),
    "call_fn_ptr": Export("i32(i32)", "g_fn_ptr(x): 2*x", lambda x: i32(2 * x)),
    "counter_address": Export("ptr()", "&g_counter through the GOT (== exports['g_counter'])"),
    "call_op": Export("i32(u32,i32,i32)", "ops[i%4](a,b): add, sub, mul, xor (wrapping)",
                      lambda i, a, b: i32([a + b, a - b, a * b, a ^ b][i % 4])),
    "greeting_len": Export("u32()", "strlen(g_greeting) = 13", lambda: len("hello, plugin")),
    "sum_square_ptrs": Export("i64()", "sum of *square_ptrs[k], k < 70",
                              lambda: sum(k * k for k in range(70))),
    "square_at": Export("i32(u32)", "*square_ptrs[k % 70] = (k%70)**2",
                        lambda k: (k % 70) ** 2),
    "sparse_len": Export("u32(u32)", "len of ['alpha','beta','gamma'][i % 3]",
                         lambda i: len(["alpha", "beta", "gamma"][i % 3])),
    "call_ifunc": Export("i32(i32)", "3*x + 1 through a hidden ifunc (IRELATIVE)",
                         lambda x: i32(3 * x + 1)),
    "ifunc_resolved": Export("u32()", "times the ifunc resolver ran (1 after load)"),
    "init_log": Export("u32()", "order the initialisers ran: 312 = DT_INIT, "
                       "then .init_array[0], [1]", lambda: 312),
    "fini_log": Export("u32()", "order the finalisers ran: 12 = .fini_array, then DT_FINI; "
                       "0 before unload"),
    "set_fini_flag": Export("void(ptr)", "after each finaliser: *(u32*)flag = fini_log"),
}

RELOCS_PCREL_EXPORTS = {
    **RELOCS_EXPORTS,
    "pcrel_value": Export("ptr()", "g_pcrel_word = &g_counter - &g_pcrel_word, "
                          "an intptr_t (read the word as signed)", arches=_X86),
    "g_pcrel_word": Export("data", "intptr_t with a PC64 / PC32 dynamic relocation",
                           arches=_X86),
}

IMPORTS_EXPORTS = {
    "g_host_add_ptr": Export("data", "int32(*)(int32,int32) = host_add (absolute relocation "
                             "against an import)"),
    "call_host_add": Export("i32(i32,i32)", "host_add(a, b)"),
    "call_host_add_ptr": Export("i32(i32,i32)", "g_host_add_ptr(a, b)"),
    "sum_via_host": Export("i32(ptr,i32)", "acc=0; for i<n: acc = host_add(acc, p[i])"),
    "call_host_log": Export("void(i32)", "host_log(code)"),
    "call_host_scale": Export("f64(f64,f32)", "host_scale(x, s)"),
    "has_optional": Export("i32()", "1 if host_optional was bound, else 0"),
    "call_optional": Export("i32(i32)", "host_optional(x) if bound, else -1"),
}

#: Host functions the ``imports`` plugin needs: name -> signature.
IMPORTS_HOST_FUNCTIONS = {
    "host_add": "i32(i32,i32)",
    "host_log": "void(i32)",        # called with 100 by the initialiser, 200 by the finaliser
    "host_scale": "f64(f64,f32)",
    "host_optional": "i32(i32)",    # weak: may be left unbound
}

PLUGINS: dict[str, Plugin] = {p.name: p for p in (
    Plugin("standalone", ("standalone_plugin.c",),
           "IREE custom-dispatch sample plugin, bare metal", STANDALONE_EXPORTS,
           link_flags=("--no-undefined",)),
    Plugin("kernels", ("kernels.c",),
           "scalar/buffer/float kernels, 1 MiB .bss, faults, loops, recursion",
           KERNELS_EXPORTS, link_flags=("--no-undefined",)),
    Plugin("relocs", ("relocs.c",),
           "every relocation kind without imports; DT_INIT/INIT_ARRAY/FINI_ARRAY/FINI",
           RELOCS_EXPORTS, link_flags=("--no-undefined",)),
    Plugin("relocs_gnu", ("relocs.c",), "relocs with only DT_GNU_HASH", RELOCS_EXPORTS,
           hash_style="gnu", link_flags=("--no-undefined",)),
    Plugin("relocs_relr", ("relocs.c",), "relocs with DT_RELR (packed RELATIVE)",
           RELOCS_EXPORTS, relr=True,
           link_flags=("--no-undefined", "-z", "pack-relative-relocs")),
    Plugin("relocs_pcrel", ("relocs.c",),
           "relocs plus a writable word with a PC-relative dynamic relocation on x86_64 "
           "(R_X86_64_PC64) and i386 (R_386_PC32); identical to relocs elsewhere. "
           "glibc cannot dlopen the x86_64 one", RELOCS_PCREL_EXPORTS,
           link_flags=("--no-undefined",)),
    Plugin("imports", ("imports.c",),
           "calls host_add/host_log/host_scale, weak host_optional", IMPORTS_EXPORTS,
           imports=("host_add", "host_log", "host_scale"), weak_imports=("host_optional",)),
)}

NAMES: tuple[str, ...] = tuple(PLUGINS)


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------

class PluginBuildError(RuntimeError):
    """The plugins could not be built; the message says which and why."""


@dataclass
class PluginSet:
    """Built plugins.  ``path(name, arch)`` is the .so of one plugin for one
    architecture; ``system_plugin`` is the host build of system_plugin.c
    (None when there is no host C compiler)."""

    root: Path
    names: tuple[str, ...] = NAMES
    arches: tuple[str, ...] = ARCHES
    system_plugin: Path | None = None
    host_arch: str = field(default_factory=lambda: _host_arch())

    def path(self, name: str, arch: str) -> Path:
        if name not in PLUGINS:
            raise KeyError(f"unknown plugin {name!r} (known: {', '.join(self.names)})")
        if arch not in self.arches:
            raise KeyError(f"unknown arch {arch!r} (known: {', '.join(self.arches)})")
        p = self.root / arch / f"{name}.so"
        if not p.is_file():
            raise PluginBuildError(f"plugin {name} for {arch} was not built: {p} is missing "
                                   f"(see {self.root / 'build.log'})")
        return p

    def data(self, name: str, arch: str) -> bytes:
        return self.path(name, arch).read_bytes()

    def spec(self, name: str) -> Plugin:
        return PLUGINS[name]

    def __iter__(self) -> Iterator[tuple[str, str, Path]]:
        for name in self.names:
            for arch in self.arches:
                yield name, arch, self.path(name, arch)


def _host_arch() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64",
            "riscv64": "riscv64", "i686": "i386", "i386": "i386"}.get(m, m)


#: Configure options of the catalogue build (bench/_build.py passes the same,
#: so both reuse one cached build).
DEFINITIONS = {"ELFKIT_SYSTEM_PLUGIN": "ON"}


def build_plugins(build_root: Path | None = None) -> PluginSet:
    """Build (or reuse) every plugin for every architecture; see module doc."""
    from elfkit.toolchain import build_plugin_project
    build_root = Path(os.environ.get("ELFKIT_PLUGIN_BUILD_DIR", build_root or BUILD_ROOT))
    root = build_plugin_project(
        PLUGIN_SRC, build_root, definitions=DEFINITIONS,
        expect=[f"{arch}/{name}.so" for name in NAMES for arch in ARCHES])
    sp = root / "host" / "system_plugin.so"
    return PluginSet(root=root, system_plugin=sp if sp.is_file() else None)


if __name__ == "__main__":  # python tests/plugins.py: build and list
    ps = build_plugins()
    for name, arch, path in ps:
        print(f"{name:12} {arch:8} {path}")
    print(f"system_plugin ({ps.host_arch}): {ps.system_plugin}")
