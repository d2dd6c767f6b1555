"""unicorn's C library through ctypes, without the ``unicorn`` Python package.

Importing the ``unicorn`` package costs ~45 ms (it pulls in ``inspect``,
``importlib.resources``, ``tempfile``, ``random``...); all elfkit needs is
the shared library, so this module opens ``libunicorn`` (found and opened
by ``elfkit.exec.unicorn_lib``, which may have started that already),
declares the prototypes of the functions it calls, and keeps
the few constants it uses (``C``, values from unicorn.h).  Register and
CPU model numbers come from the package's own ``<arch>_const.py`` tables,
loaded by path (plain assignments, nothing else runs).

The hot paths call the C functions (``lib``) directly with preallocated
buffers; ``Engine`` wraps one ``uc_engine *`` for everything else
(controls, contexts, hooks, register ids, registers of any width) and is
what every part of an emulated machine is given to reach the CPU.
"""
from __future__ import annotations

import ctypes
import os
import weakref
from types import ModuleType

from ...arch import Arch
from ...errors import BackendError, ExecutionError
from ..unicorn_lib import find_spec, open_library, package_dir

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class C:
    """The unicorn.h constants elfkit uses (unicorn 2.x)."""
    UC_ARCH_ARM = 1
    UC_ARCH_ARM64 = 2
    UC_ARCH_X86 = 4
    UC_ARCH_RISCV = 8
    UC_MODE_ARM = 0
    UC_MODE_THUMB = 16
    UC_MODE_32 = 4
    UC_MODE_64 = 8
    UC_MODE_RISCV32 = 4
    UC_MODE_RISCV64 = 8
    UC_PROT_READ = 1
    UC_PROT_WRITE = 2
    UC_PROT_EXEC = 4
    UC_MEM_READ = 16
    UC_MEM_WRITE = 17
    UC_MEM_FETCH = 18
    UC_MEM_READ_UNMAPPED = 19
    UC_MEM_WRITE_UNMAPPED = 20
    UC_MEM_FETCH_UNMAPPED = 21
    UC_MEM_WRITE_PROT = 22
    UC_MEM_READ_PROT = 23
    UC_MEM_FETCH_PROT = 24
    UC_HOOK_INTR = 1
    UC_HOOK_CODE = 4
    UC_HOOK_BLOCK = 8
    UC_HOOK_MEM_READ = 1024
    UC_HOOK_MEM_WRITE = 2048
    UC_HOOK_MEM_INVALID = 1008
    UC_CTL_IO_WRITE = 1
    UC_CTL_IO_READ = 2
    UC_CTL_UC_PAGE_SIZE = 1
    UC_CTL_CPU_MODEL = 7
    UC_CTL_TB_REMOVE_CACHE = 9
    UC_CTL_TB_FLUSH = 10
    UC_CTL_TLB_FLUSH = 11


def _declare(lib: ctypes.CDLL) -> None:
    err, h, p = ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
    s32, u32, u64, size_t = ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
    char_p = ctypes.POINTER(ctypes.c_char)
    protos: dict[str, tuple[Any, ...]] = {
        "uc_open": (err, u32, u32, ctypes.POINTER(h)),
        "uc_close": (err, h),
        "uc_strerror": (ctypes.c_char_p, err),
        "uc_ctl": (err, h, s32),
        "uc_emu_start": (err, h, u64, u64, u64, size_t),
        "uc_emu_stop": (err, h),
        "uc_hook_add": (err, h, ctypes.POINTER(size_t), s32, p, p, u64, u64),
        "uc_hook_del": (err, h, size_t),
        "uc_mem_map": (err, h, u64, u64, u32),
        "uc_mem_map_ptr": (err, h, u64, u64, u32, p),
        "uc_mem_protect": (err, h, u64, u64, u32),
        "uc_mem_unmap": (err, h, u64, u64),
        "uc_mem_read": (err, h, u64, char_p, u64),
        "uc_mem_write": (err, h, u64, char_p, u64),
        "uc_reg_read": (err, h, s32, p),
        "uc_reg_write": (err, h, s32, p),
        "uc_reg_read_batch": (err, h, ctypes.POINTER(s32), ctypes.POINTER(p), s32),
        "uc_reg_write_batch": (err, h, ctypes.POINTER(s32), ctypes.POINTER(p), s32),
        "uc_context_alloc": (err, h, ctypes.POINTER(p)),
        "uc_context_free": (err, p),
        "uc_context_save": (err, h, p),
        "uc_context_restore": (err, h, p),
    }
    for name, (res, *args) in protos.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = tuple(args)


lib = open_library()
_declare(lib)

# native callback types (see unicorn.h)
HOOK_CODE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32,
                             ctypes.c_void_p)
HOOK_INTR = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)
HOOK_MEM = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_int,
                            ctypes.c_int64, ctypes.c_void_p)
HOOK_MEM_INVALID = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                    ctypes.c_int, ctypes.c_int64, ctypes.c_void_p)

MEM_ACCESS = {C.UC_MEM_READ: "read", C.UC_MEM_WRITE: "write", C.UC_MEM_FETCH: "fetch",
              C.UC_MEM_READ_UNMAPPED: "read", C.UC_MEM_WRITE_UNMAPPED: "write",
              C.UC_MEM_FETCH_UNMAPPED: "fetch", C.UC_MEM_READ_PROT: "read",
              C.UC_MEM_WRITE_PROT: "write", C.UC_MEM_FETCH_PROT: "fetch"}
MEM_PROT_KINDS = (C.UC_MEM_READ_PROT, C.UC_MEM_WRITE_PROT, C.UC_MEM_FETCH_PROT)

_CONST_FILES = {"UC_ARCH_X86": "x86_const", "UC_ARCH_ARM": "arm_const",
                "UC_ARCH_ARM64": "arm64_const", "UC_ARCH_RISCV": "riscv_const"}
_REG_PREFIX = {"UC_ARCH_X86": "UC_X86_REG_", "UC_ARCH_ARM": "UC_ARM_REG_",
               "UC_ARCH_ARM64": "UC_ARM64_REG_", "UC_ARCH_RISCV": "UC_RISCV_REG_"}
_tables: dict[str, ModuleType] = {}


def consts(arch: Arch) -> ModuleType:
    """unicorn's register/CPU-model table of ``arch`` (its ``<arch>_const.py``,
    loaded by path so that the ``unicorn`` package itself never runs)."""
    name = _CONST_FILES[arch.uc_arch]
    mod = _tables.get(name)
    if mod is None:
        pkg = package_dir()
        path = os.path.join(pkg, name + ".py")
        spec = find_spec(f"{__name__}.{name}", [pkg])
        if spec is None or spec.loader is None or spec.origin is None \
                or not os.path.samefile(spec.origin, path):  # pragma: no cover - broken install
            raise BackendError(f"cannot read unicorn's register table {path}")
        mod = ModuleType(spec.name)
        mod.__spec__, mod.__file__, mod.__loader__ = spec, spec.origin, spec.loader
        spec.loader.exec_module(mod)
        _tables[name] = mod
    return mod


def reg(arch: Arch, name: str) -> int:
    """Register id of ``UC_<ARCH>_REG_<name>``."""
    value = getattr(consts(arch), _REG_PREFIX[arch.uc_arch] + name, None)
    if not isinstance(value, int):
        raise BackendError(f"unicorn has no {arch.name} register {name!r}")
    return value


def _reg_bytes(arch: Arch, name: str) -> int:
    """How many bytes unicorn reads/writes for register ``name`` (0: an x87
    register, a (mantissa, exponent) pair)."""
    family = arch.uc_arch
    if family == "UC_ARCH_X86":
        if name.startswith("FP") and name[2:].isdigit():
            return 0
        for prefix, n in (("XMM", 16), ("YMM", 32), ("ZMM", 64)):
            if name.startswith(prefix) and name[3:].isdigit():
                return n
    elif family in ("UC_ARCH_ARM", "UC_ARCH_ARM64") and name[:1] in ("Q", "V") \
            and name[1:].isdigit():
        return 16
    return 8


def _cpu_model(arch: Arch, cpu: str | int) -> int:
    """The unicorn CPU model number of ``cpu`` (a name, with or without
    ``UC_CPU_``, or a number); BackendError listing the names otherwise."""
    mod = consts(arch)
    family = arch.uc_arch.removeprefix("UC_ARCH_")
    prefix = f"UC_CPU_{family}{arch.bits if family == 'RISCV' else ''}_"
    names = sorted(n.removeprefix(prefix) for n in dir(mod) if n.startswith(prefix)
                   and not n.endswith("_ENDING"))
    numbers = {getattr(mod, prefix + n) for n in names}
    if isinstance(cpu, str):
        value = getattr(mod, cpu if cpu.startswith("UC_CPU_") else f"UC_CPU_{cpu}",
                        getattr(mod, prefix + cpu.upper(), None))
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(cpu, int) and not isinstance(cpu, bool) and cpu in numbers:
        return cpu
    raise BackendError(f"unknown {arch.name} CPU model {cpu!r}; unicorn has: "
                       f"{', '.join(names)}")


def strerror(err: int) -> str:
    text = lib.uc_strerror(err)
    return text.decode("ascii", "replace") if text else f"unicorn error {err}"


class Context:
    """A saved CPU context (``uc_context *``), freed with the object."""
    __slots__ = ("context", "__weakref__")

    def __init__(self, handle: ctypes.c_void_p) -> None:
        self.context = ctypes.c_void_p()
        err = lib.uc_context_alloc(handle, ctypes.byref(self.context))
        if err:
            raise BackendError(f"unicorn: cannot allocate a CPU context: {strerror(err)}")
        weakref.finalize(self, lib.uc_context_free, self.context)


def _ctl_code(control: int, nargs: int, io: int = C.UC_CTL_IO_WRITE) -> int:
    return (io << 30) | (nargs << 26) | control


#: the families whose guest page size unicorn lets a caller choose.  It
#: defaults to 1 KiB there (QEMU's smallest ARM page), so the softmmu TLB
#: (256 entries) covers only 256 KiB and a kernel streaming through a few
#: MiB of operands keeps refilling it: a 512x512 f32 matmul spent ~10 % of
#: its time in TLB refills, about none with 4 KiB pages
_PAGE_SIZE_SETTABLE = ("UC_ARCH_ARM", "UC_ARCH_ARM64")


class Engine:
    """One unicorn engine (``uc_engine *``); closed by :meth:`close` or at
    garbage collection.  ``page_size``: the guest page size to ask for where
    unicorn allows choosing it (ARM, AArch64; must be set before the first
    mapping), so that mappings and protections at that granularity work
    and each TLB entry covers that much; elsewhere the architecture's own
    (4 KiB on x86 and RISC-V)."""

    def __init__(self, arch: Arch, cpu: str | int | None = None,
                 page_size: int | None = None) -> None:
        mode = 0
        for m in arch.uc_mode:
            mode |= getattr(C, m)
        self.arch = arch
        self.handle = ctypes.c_void_p()
        #: whether guest code may have been translated: from then on a host
        #: write to executable memory must drop the translations it covers
        self.ran = False
        self._regids: dict[str, int] = {}
        self._word = ctypes.c_uint64()             # scratch word for register reads
        self._word_ref = ctypes.byref(self._word)
        self._hooks: list[Any] = []                # the native callbacks, kept alive
        err = lib.uc_open(getattr(C, arch.uc_arch), mode, ctypes.byref(self.handle))
        if err:
            raise BackendError(f"unicorn cannot emulate {arch.name}: {strerror(err)}")
        self._finalizer = weakref.finalize(self, lib.uc_close, self.handle)
        if page_size is not None and arch.uc_arch in _PAGE_SIZE_SETTABLE:
            self._ctl(C.UC_CTL_UC_PAGE_SIZE, ctypes.c_uint32(page_size))
        cpu = cpu if cpu is not None else (arch.uc_cpu or None)
        if cpu is not None:
            model = _cpu_model(arch, cpu)
            self._ctl(C.UC_CTL_CPU_MODEL, ctypes.c_int(model))

    def _ctl(self, control: int, *args: Any) -> None:
        err = lib.uc_ctl(self.handle, _ctl_code(control, len(args)), *args)
        if err:
            raise BackendError(f"unicorn control {control} failed: {strerror(err)}")

    @property
    def page_size(self) -> int:
        """The guest page size unicorn uses (its TLB and mapping granularity)."""
        value = ctypes.c_uint32()
        code = _ctl_code(C.UC_CTL_UC_PAGE_SIZE, 1, C.UC_CTL_IO_READ)
        err = lib.uc_ctl(self.handle, code, ctypes.byref(value))
        if err:
            raise BackendError(f"unicorn cannot tell its page size: {strerror(err)}")
        return value.value

    def reg_id(self, name: str) -> int:
        """unicorn's id of register ``name`` (looked up once)."""
        r = self._regids.get(name)
        if r is None:
            r = self._regids[name] = reg(self.arch, name)
        return r

    def read_word(self, regid: int) -> int:
        """The low 64 bits of register ``regid`` (no error check), zero-extended."""
        self._word.value = 0
        lib.uc_reg_read(self.handle, regid, self._word_ref)
        return self._word.value

    def write_word(self, regid: int, value: int) -> None:
        self._word.value = value
        lib.uc_reg_write(self.handle, regid, self._word_ref)

    def add_hook(self, kind: int, cfn: Any, begin: int, end: int) -> int:
        """Install the native callback ``cfn`` (kept alive with the engine)
        for ``[begin, end]`` (``begin > end``: everywhere); returns its handle."""
        hh = ctypes.c_size_t()
        err = lib.uc_hook_add(self.handle, ctypes.byref(hh), kind,
                              ctypes.cast(cfn, ctypes.c_void_p), None, ctypes.c_uint64(begin),
                              ctypes.c_uint64(end))
        if err:
            raise ExecutionError(f"unicorn: cannot add hook: {strerror(err)}")
        self._hooks.append(cfn)
        return hh.value

    def add_native_hook(self, kind: int, function: int, user_data: int, begin: int,
                        end: int) -> int:
        """Install the C function at host address ``function`` (which stays
        loaded while the hook exists), called with ``user_data``, for
        ``[begin, end]``; returns its handle."""
        hh = ctypes.c_size_t()
        err = lib.uc_hook_add(self.handle, ctypes.byref(hh), kind, ctypes.c_void_p(function),
                              ctypes.c_void_p(user_data), ctypes.c_uint64(begin),
                              ctypes.c_uint64(end))
        if err:
            raise ExecutionError(f"unicorn: cannot add hook: {strerror(err)}")
        return hh.value

    def del_hook(self, handle: int, cfn: Any = None) -> None:
        """Remove hook ``handle``; ``cfn``: its callback, no longer kept alive."""
        lib.uc_hook_del(self.handle, handle)
        if cfn is not None and cfn in self._hooks:
            self._hooks.remove(cfn)

    def flush_tb(self) -> None:
        """Drop every translated block."""
        self._ctl(C.UC_CTL_TB_FLUSH)

    def flush_tlb(self) -> None:
        self._ctl(C.UC_CTL_TLB_FLUSH)

    def remove_cache(self, begin: int, end: int) -> None:
        """Drop the translated blocks of ``[begin, end)``."""
        self._ctl(C.UC_CTL_TB_REMOVE_CACHE, ctypes.c_uint64(begin), ctypes.c_uint64(end))

    def context_save(self) -> Context:
        ctx = Context(self.handle)
        lib.uc_context_save(self.handle, ctx.context)
        return ctx

    def reg_read(self, regid: int, name: str) -> Any:
        """Register ``regid`` (named ``name``): an int, or for an x87
        register a (mantissa, exponent) pair."""
        n = _reg_bytes(self.arch, name)
        buf = ctypes.create_string_buffer(64)
        err = lib.uc_reg_read(self.handle, regid, buf)
        if err:
            raise BackendError(f"cannot read register {name}: {strerror(err)}")
        if n == 0:
            return (int.from_bytes(buf.raw[:8], "little"), int.from_bytes(buf.raw[8:10], "little"))
        return int.from_bytes(buf.raw[:n], "little")

    def reg_write(self, regid: int, name: str, value: Any) -> None:
        n = _reg_bytes(self.arch, name)
        if n == 0:
            mantissa, exponent = value
            data = ((mantissa & (1 << 64) - 1).to_bytes(8, "little")
                    + (exponent & 0xFFFF).to_bytes(2, "little"))
        else:
            data = (int(value) & ((1 << 8 * n) - 1)).to_bytes(n, "little")
        buf = ctypes.create_string_buffer(data, 64)
        err = lib.uc_reg_write(self.handle, regid, buf)
        if err:
            raise BackendError(f"cannot write register {name}: {strerror(err)}")

    def close(self) -> None:
        """Close the engine now instead of at garbage collection."""
        self._finalizer()
