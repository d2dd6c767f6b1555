"""The shape of an architecture description (one file per architecture)."""
from __future__ import annotations

import enum

from .._support.enums import EnumBody, quick_enum
from .._support.records import DataRecord, field
from ..errors import ArchError

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: Compiler flags of every bare-metal plugin, after the per-arch ones:
#: position independent, no libc, symbols hidden unless exported explicitly,
#: no sanitizer runtime (zig turns UBSan on by default and its handlers do
#: not exist in a plugin), no debug info (small plugins).
PLUGIN_CFLAGS: tuple[str, ...] = ("-O2", "-fPIC", "-ffreestanding", "-fvisibility=hidden",
                                  "-fno-sanitize=undefined", "-g0")
#: ld.lld flags of every plugin (the hash style is chosen per plugin).
PLUGIN_LDFLAGS: tuple[str, ...] = ("-shared", "-nostdlib", "-z", "now", "-z", "relro")
#: Spellings of the target flags: ``zig`` for ``python -m ziglang cc`` (zig's
#: triples and CPU-feature syntax), ``clang`` for a plain (system) clang.
FLAVORS: tuple[str, ...] = ("zig", "clang")


@quick_enum(enum.Enum)     # (cheaper to create than the class statement's enum)
class Formula(EnumBody):
    """What a relocation writes.  S = symbol address, A = addend,
    B = load bias, P = address of the place."""

    NONE = "none"            # nothing
    ABS = "S+A"              # symbol + addend
    SYM = "S"                # symbol only (GLOB_DAT/JUMP_SLOT where the addend is ignored)
    PCREL = "S+A-P"          # pc-relative
    RELATIVE = "B+A"         # bias + addend
    IRELATIVE = "call(B+A)"  # result of calling the resolver at B+A
    TLS = "tls"              # refused: no TLS in bare-metal plugins
    COPY = "copy"            # refused: needs a symbol size and an executable


@quick_enum(enum.Enum)
class Check(EnumBody):
    """How a value is checked before it is stored in a field narrower than 64 bits."""

    WRAP = "wrap"        # store modulo 2**width (word-sized field of a 32-bit image)
    UNSIGNED = "u"       # 0 <= v < 2**width
    SIGNED = "s"         # -2**(width-1) <= v < 2**(width-1)
    EITHER = "us"        # -2**(width-1) <= v < 2**width (aarch64 ABS32/PREL32)


class RelocType(DataRecord, frozen=True, slots=True):
    number: int
    name: str
    formula: Formula
    width: int = 0          # bits written; 0 for NONE/TLS/COPY
    check: Check = Check.WRAP


@quick_enum(enum.Enum)
class ObjFormula(EnumBody):
    """What a relocation of a relocatable object (``.o``) computes.  S, A, P
    as in :class:`Formula`; G = address of the symbol's GOT slot (the loader
    builds the GOT), GOT = address of the GOT, Page(x) = x & ~0xfff."""

    NONE = "none"              # nothing (also R_ARM_V4BX: no interworking to fix)
    ABS = "S+A"
    PCREL = "S+A-P"            # also branches (``branch=True``: may go through a veneer)
    PAGE_PCREL = "Page(S+A)-Page(P)"
    GOT = "G+A"
    GOT_PCREL = "G+A-P"
    GDAT = "G(S+A)"            # aarch64: the slot holds S+A
    GDAT_PAGE = "Page(G(S+A))-Page(P)"
    GOTREL = "S+A-GOT"
    GOTPC = "GOT+A-P"
    GOT_GOTREL = "G+A-GOT"
    GOT_X86 = "G+A-GOT | G+A"  # i386 GOT32/GOT32X: G+A when the ModRM has no base register
    PCREL_LO = "lo(hi)"        # riscv PCREL_LO12_*: the low part of the AUIPC's value
    ADD = "V+S+A"              # riscv ADD*: in place
    SUB = "V-S-A"              # riscv SUB*: in place
    SET = "S+A "               # riscv SET*: the low bits of a field
    SET_ULEB = "uleb(S+A)"     # riscv SET_ULEB128, completed by SUB_ULEB128
    SUB_ULEB = "uleb(set-S-A)"
    ALIGN = "align"            # riscv ALIGN: NOPs the loader keeps (it does not relax)
    RELAX = "relax"            # riscv RELAX: a hint, nothing to do
    TLS = "tls"                # refused: no TLS in bare-metal plugins


class ObjReloc(DataRecord, frozen=True, slots=True):
    """A relocation type of relocatable objects: the value (``formula``),
    its range check (``bits`` wide, ``check``; 0: none), ``mask`` applied
    before the value is shifted right by ``shift`` bits (``align``: the low
    bits that must be zero) and stored in the instruction ``field`` (a name
    of ``elfkit.loader.fields``).  ``branch``: an out-of-range target may be
    reached through a veneer; ``bias``: the part of the addend that is the
    instruction's PC offset (-4 for x86 rel32, -8 for an A32 branch);
    ``thumb``: the place is Thumb code (its veneer is ``Arch.veneer_thumb``)."""

    number: int
    name: str
    formula: ObjFormula
    field: str = ""
    bits: int = 0
    check: Check = Check.WRAP
    shift: int = 0
    mask: int = 0
    align: int = 0
    branch: bool = False
    bias: int = 0
    thumb: bool = False


def obj_table(prefix: str, *entries: tuple[Any, ...]) -> dict[int, ObjReloc]:
    """Build an object relocation table from ``(number, name, formula, field,
    keyword arguments of ObjReloc)`` rows (the last two optional)."""
    out: dict[int, ObjReloc] = {}
    for e in entries:
        kw = e[4] if len(e) > 4 else {}
        out[e[0]] = ObjReloc(e[0], prefix + e[1], e[2], e[3] if len(e) > 3 else "", **kw)
    return out


class CallingConvention(DataRecord, frozen=True, slots=True):
    """Register names are the suffix of unicorn's UC_<ARCH>_REG_<NAME> constants."""

    int_args: tuple[str, ...]
    float_args: tuple[str, ...]     # registers for f32/f64 arguments (empty: on the stack)
    int_ret: tuple[str, ...]        # lo, hi for double-word results
    float_ret: str | None           # None: float results come back elsewhere (i386 x87)
    sp: str
    pc: str
    lr: str | None                  # link register; None: return address pushed on the stack
    stack_align: int
    stack_slot: int                 # bytes per stack argument slot
    name: str = ""
    # --- used by the emulator (elfkit.exec.emulated) --------------------------
    # Frame-pointer register and where a frame record keeps the caller's frame
    # pointer and the return address, as byte offsets from the frame pointer
    # (None: no frame-pointer walk).
    fp: str | None = None
    frame: tuple[int, int] | None = None
    # Double-word integer arguments (i64 on a 32-bit target) start at an
    # even-numbered register (AAPCS) or at the next free one (RISC-V).
    pair_align: bool = False
    # Bytes the callee may use below the stack pointer (x86_64 red zone).
    red_zone: int = 0
    # Float ABI when the ELF does not say: "hard" (floats in FP registers),
    # or for RISC-V the widest float type passed in FP registers: "double",
    # "single", "soft".
    float_abi: str = "hard"


class GdbReg(DataRecord, frozen=True, slots=True):
    """One register of the GDB remote protocol's register file (``g`` packet
    order), as described to gdb in ``target.xml``: its gdb name, width, gdb
    type, target-description feature, and the unicorn register it reads
    (suffix of UC_<ARCH>_REG_*; "" when unicorn has none: reads as zero)."""

    name: str
    bits: int
    uc: str
    type: str = "int"
    feature: str = ""


def gdb_regs(feature: str, bits: int, spec: str, type: str = "int") -> tuple[GdbReg, ...]:
    """GdbRegs of one feature from ``"gdbname=UCNAME gdbname ..."`` (a bare
    name reads the unicorn register of the same name in upper case; ``=`` with
    nothing after it reads as zero)."""
    out = []
    for item in spec.split():
        name, _, uc = item.partition("=")
        out.append(GdbReg(name, bits, uc if "=" in item else name.upper(), type, feature))
    return tuple(out)


class Arch(DataRecord, frozen=True, slots=True):
    name: str                 # x86_64, aarch64, riscv64, arm, i386, riscv32
    machine: int              # e_machine
    bits: int                 # 32 or 64
    rela: bool                # True: RELA tables (explicit addend); False: REL (addend in place)
    relocs: dict[int, RelocType] = field(repr=False)
    cc: CallingConvention = field(repr=False)
    # --- building plugins (the one source of these flags: elfkit.toolchain and
    # share/cmake/elfkit/ElfkitArchs.cmake both read them from here) ---------
    zig_target: str = ""      # the arch part of zig's target triple (<arch>-freestanding-none)
    zig_cflags: tuple[str, ...] = ()    # CPU/ABI flags in zig's spelling
    clang_target: str = ""    # full clang triple (--target=...)
    clang_cflags: tuple[str, ...] = ()  # CPU/ABI flags in plain clang's spelling
    lld_emulation: str = ""   # ld.lld -m emulation
    uc_arch: str = ""         # unicorn constant names (imported only by elfkit.exec)
    uc_mode: tuple[str, ...] = ()
    cs_arch: str = ""         # capstone constant names
    cs_mode: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    page_size: int = 4096
    # Little-endian machine code that returns to the caller immediately (used as
    # a sentinel / stub by the emulator).
    ret_insn: bytes = b""
    trap_insn: bytes = b""
    # Machine code for ``int f(fn, a, b, c) { return fn(a, b, c); }`` (pointer
    # arguments): a call-through stub, e.g. IREE's executable import thunk.
    call_through3: bytes = b""
    # Bit 0 of a function symbol's value selects an instruction set (arm's
    # Thumb bit), not an address: code addresses are value & ~1.
    func_mode_bit: bool = False
    # Emulator set-up: unicorn CPU model constant name (UC_CPU_*; "" = default)
    # and register values written once at start (suffixes of UC_<ARCH>_REG_*),
    # e.g. enabling the FPU; registers shown in fault reports, in order.
    uc_cpu: str = ""
    uc_init: tuple[tuple[str, int], ...] = ()
    dump_regs: tuple[str, ...] = ()
    # The GDB remote stub (elfkit.exec.emulated.gdbstub): gdb's name of the
    # architecture in target.xml, and the register file in ``g`` packet order.
    gdb_arch: str = ""
    gdb_regs: tuple[GdbReg, ...] = ()
    # --- relocatable objects (elfkit.loader.objects) ----------------------------
    # Relocation types of ``.o`` files, and the veneer (a jump to an absolute
    # address that any branch of the object can reach when its target cannot
    # be): machine code, then the target address at byte ``veneer_slot``.
    obj_relocs: dict[int, ObjReloc] = field(default_factory=dict, repr=False)
    veneer: bytes = b""
    veneer_slot: int = 0
    # the veneer branches from Thumb code go through (its address word last)
    veneer_thumb: bytes = b""

    @property
    def word(self) -> int:
        return self.bits // 8

    @property
    def elfclass(self) -> int:
        return 1 if self.bits == 32 else 2

    def plugin_cflags(self, flavor: str = "zig") -> tuple[str, ...]:
        """Every compiler flag a plugin for this CPU is built with: target,
        CPU/ABI flags (zig's or plain clang's spelling), then PLUGIN_CFLAGS."""
        if flavor == "zig":
            target: tuple[str, ...] = ("-target", f"{self.zig_target}-freestanding-none",
                                       *self.zig_cflags)
        elif flavor == "clang":
            target = (f"--target={self.clang_target}", *self.clang_cflags)
        else:
            raise ArchError(f"unknown compiler flavor {flavor!r} (known: {', '.join(FLAVORS)})")
        return target + PLUGIN_CFLAGS

    def reloc_name(self, rtype: int) -> str:
        r = self.relocs.get(rtype)
        return r.name if r else f"unknown type {rtype}"

    def __str__(self) -> str:
        return self.name


def table(prefix: str, *entries: tuple[Any, ...]) -> dict[int, RelocType]:
    """Build a relocation table from (number, name, formula[, width[, check]])."""
    out: dict[int, RelocType] = {}
    for e in entries:
        num, name, formula = e[0], e[1], e[2]
        width = e[3] if len(e) > 3 else 0
        check = e[4] if len(e) > 4 else Check.WRAP
        out[num] = RelocType(num, prefix + name, formula, width, check)
    return out
