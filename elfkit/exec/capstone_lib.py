"""capstone's C library through ctypes, without the ``capstone`` Python package.

Importing the ``capstone`` package costs ~55 ms (as much as the rest of ``elfkit
disasm`` several times over): it imports ``inspect`` (``ast``, ``dis``,
``tokenize``), ``pathlib``, ``importlib.resources`` (``zipfile``, ``typing``),
``sysconfig``, ``ctypes.util`` (``shutil``, ``subprocess``) and the operand
classes of all eighteen architectures.  What elfkit needs is the shared library
it ships: :class:`Decoder` opens it (found in the installed package's directory
by the import system's finders, which do not run the package, or in
``$LIBCAPSTONE_PATH``), and reads the instructions ``cs_disasm`` returns, and
the few fields of their details that give a direct branch's target (the
groups, the last operand's type and immediate), with :mod:`struct` at the
offsets of capstone 5.0's ``cs_insn`` and ``cs_detail`` (the constants below,
values from capstone.h and its architecture headers).

The library must be capstone 5.0 (``cs_version``) and the architecture one
elfkit runs (x86, ARM, AArch64, RISC-V); anything else goes through the
``capstone`` package itself (:class:`PackageDecoder`), the same way.
"""
from __future__ import annotations

import ctypes
import os
import struct
import sys

from ..errors import BackendError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Decoder", "PackageDecoder", "decoder"]

ARCHES = {"CS_ARCH_ARM": 0, "CS_ARCH_ARM64": 1, "CS_ARCH_X86": 3, "CS_ARCH_RISCV": 15}
MODES = {"CS_MODE_ARM": 0, "CS_MODE_THUMB": 16, "CS_MODE_32": 4, "CS_MODE_64": 8,
         "CS_MODE_RISCV32": 1, "CS_MODE_RISCV64": 2, "CS_MODE_RISCVC": 4}
CS_OPT_DETAIL, CS_OPT_ON = 2, 3
#: the groups of a control transfer whose target an immediate operand can give
BRANCH_GROUPS = frozenset({1, 2, 7})     # CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_BRANCH_RELATIVE
OP_IMM = 2                               # *_OP_IMM on every architecture above
VERSION = (5, 0)

#: cs_insn (capstone 5.0): id, address, size, bytes[24], mnemonic[32], op_str[160], detail*
_INSN = struct.Struct("<I4xQH24s32s160s6xQ")
#: cs_detail: groups[8] and groups_count at 83, the architecture's part at 96
_GROUPS, _ARCH = 83, 96
#: per architecture: (offset of op_count, of operands[], size of an operand,
#: offset of its type, of its immediate, the immediate's struct code)
_OPERANDS = {0: (32, 40, 48, 12, 16, "i"),          # cs_arm / cs_arm_op
             1: (7, 8, 56, 20, 32, "q"),            # cs_arm64 / cs_arm64_op
             3: (64, 72, 48, 0, 8, "q"),            # cs_x86 / cs_x86_op
             15: (1, 8, 24, 0, 8, "q")}             # cs_riscv / cs_riscv_op


def library_path() -> str | None:
    """The capstone library of ``$LIBCAPSTONE_PATH`` or of the installed package."""
    name = "libcapstone.dylib" if sys.platform == "darwin" else "libcapstone.so"
    dirs = [os.environ.get("LIBCAPSTONE_PATH")]
    for finder in sys.meta_path:  # importlib.util.find_spec's search, without importlib
        find = getattr(finder, "find_spec", None)
        try:
            spec = find("capstone", None) if find is not None else None
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            if spec.submodule_search_locations:
                dirs.append(os.path.join(list(spec.submodule_search_locations)[0], "lib"))
            break
    for d in dirs:
        for n in (name, f"{name}.{VERSION[0]}"):
            if d and os.path.exists(os.path.join(d, n)):
                return os.path.join(d, n)
    return None


_lib: list[Any] = []


def _library() -> Any:
    """The library with its prototypes declared, once; None when it is missing
    or not capstone 5.0."""
    if _lib:
        return _lib[0]
    lib = None
    path = library_path() if sys.platform.startswith("linux") else None
    if path is not None:
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_DEEPBIND", 0))
        except OSError:
            lib = None
    if lib is not None:
        lib.cs_version.restype = ctypes.c_int
        lib.cs_version.argtypes = (ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.cs_version(ctypes.byref(major), ctypes.byref(minor))
        if (major.value, minor.value) != VERSION:
            lib = None
    if lib is not None:
        handle = ctypes.c_size_t
        for name, res, args in (
                ("cs_open", ctypes.c_int, (ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)),
                ("cs_option", ctypes.c_int, (handle, ctypes.c_int, ctypes.c_size_t)),
                ("cs_disasm", ctypes.c_size_t, (handle, ctypes.c_char_p, ctypes.c_size_t,
                                                ctypes.c_uint64, ctypes.c_size_t,
                                                ctypes.c_void_p)),
                ("cs_free", None, (ctypes.c_void_p, ctypes.c_size_t)),
                ("cs_errno", ctypes.c_int, (handle,)),
                ("cs_strerror", ctypes.c_char_p, (ctypes.c_int,))):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
    _lib.append(lib)
    return lib


class Decoder:
    """One capstone handle (``cs_open``) for an architecture and mode;
    ``detail``: ask for the instructions' details (the branch targets)."""

    def __init__(self, lib: Any, arch: int, mode: int, detail: bool):
        self.lib = lib
        self.arch = arch
        self.detail = detail
        handle = ctypes.c_size_t()
        err = lib.cs_open(arch, mode, ctypes.byref(handle))
        if err:
            raise BackendError(f"capstone cannot open architecture {arch} mode {mode}: "
                               f"{lib.cs_strerror(err).decode()}")
        self.handle = handle.value
        if detail:
            lib.cs_option(self.handle, CS_OPT_DETAIL, CS_OPT_ON)

    def decode(self, code: bytes, addr: int) -> list[tuple[Any, ...]]:
        """The instructions of ``code`` at ``addr``, up to the first that
        cannot be decoded: ``(address, size, mnemonic, op_str, bytes, branch
        immediate or None)``."""
        lib = self.lib
        insns = ctypes.c_void_p()
        n = lib.cs_disasm(self.handle, code, len(code), addr, 0, ctypes.byref(insns))
        if not n:
            err = lib.cs_errno(self.handle)
            if err:
                raise BackendError(f"capstone: {lib.cs_strerror(err).decode()}")
            return []
        try:
            out = []
            block = ctypes.string_at(insns, n * _INSN.size)
            for _id, address, size, data, mnemonic, op_str, detail in _INSN.iter_unpack(block):
                out.append((address, size, mnemonic.split(b"\0", 1)[0].decode("ascii"),
                            op_str.split(b"\0", 1)[0].decode("ascii"), data[:size],
                            self._branch(detail) if self.detail else None))
            return out
        finally:
            lib.cs_free(insns, n)

    def _branch(self, detail: int) -> int | None:
        """The immediate of a direct branch or call (its last operand), from
        the instruction's ``cs_detail`` at ``detail``; else None."""
        count_off, ops_off, op_size, type_off, imm_off, imm_code = _OPERANDS[self.arch]
        head = ctypes.string_at(detail, _ARCH + ops_off)
        if not BRANCH_GROUPS.intersection(head[_GROUPS:_GROUPS + head[_GROUPS + 8]]):
            return None
        ops = head[_ARCH + count_off]
        if not ops:
            return None
        last = ctypes.string_at(detail + _ARCH + ops_off + (ops - 1) * op_size, op_size)
        if struct.unpack_from("<I", last, type_off)[0] != OP_IMM:
            return None
        return int(struct.unpack_from("<" + imm_code, last, imm_off)[0])


class PackageDecoder:
    """:class:`Decoder` through the ``capstone`` package (another capstone
    version, or an architecture :class:`Decoder` does not read)."""

    def __init__(self, arch: str, modes: tuple[str, ...], thumb: bool, detail: bool):
        import capstone
        mode = 0
        for m in modes:
            mode |= getattr(capstone, m)
        if thumb:
            mode = (mode & ~capstone.CS_MODE_ARM) | capstone.CS_MODE_THUMB
        self.md = capstone.Cs(getattr(capstone, arch), mode)
        self.md.detail = detail
        self.detail = detail

    def decode(self, code: bytes, addr: int) -> list[tuple[Any, ...]]:
        out = []
        for ins in self.md.disasm(code, addr):
            imm = None
            if self.detail and set(ins.groups) & BRANCH_GROUPS:
                ops = ins.operands
                if ops and ops[-1].type == OP_IMM:
                    imm = ops[-1].imm
            out.append((ins.address, ins.size, ins.mnemonic, ins.op_str, bytes(ins.bytes), imm))
        return out


def decoder(arch: str, modes: tuple[str, ...], thumb: bool, detail: bool
            ) -> Decoder | PackageDecoder:
    """A decoder of capstone architecture ``arch`` (``"CS_ARCH_X86"``) in
    ``modes`` (``("CS_MODE_64",)``; ``thumb``: ARM's Thumb instead of ARM)."""
    lib = _library()
    number = ARCHES.get(arch)
    if lib is None or number is None or any(m not in MODES for m in modes):
        return PackageDecoder(arch, modes, thumb, detail)
    mode = 0
    for m in modes:
        mode |= MODES[m]
    if thumb:
        mode = (mode & ~MODES["CS_MODE_ARM"]) | MODES["CS_MODE_THUMB"]
    return Decoder(lib, number, mode, detail)
