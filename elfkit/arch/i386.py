"""i386: System V i386 ABI (cdecl), REL."""
from ._base import Arch, CallingConvention, Check, gdb_regs, obj_table, table
from ._base import Formula as F
from ._base import ObjFormula as O

RELOCS = table(
    "R_386_",
    (0, "NONE", F.NONE),
    (1, "32", F.ABS, 32),
    (2, "PC32", F.PCREL, 32),
    (5, "COPY", F.COPY),
    (6, "GLOB_DAT", F.SYM, 32),
    (7, "JUMP_SLOT", F.SYM, 32),
    (8, "RELATIVE", F.RELATIVE, 32),
    (14, "TLS_TPOFF", F.TLS),
    (35, "TLS_DTPMOD32", F.TLS),
    (36, "TLS_DTPOFF32", F.TLS),
    (37, "TLS_TPOFF32", F.TLS),
    (41, "TLS_DESC", F.TLS),
    (42, "IRELATIVE", F.IRELATIVE, 32),
)

_CORE, _SSE = "org.gnu.gdb.i386.core", "org.gnu.gdb.i386.sse"

#: relocations of relocatable objects (REL: addends in the fields; 32-bit
#: arithmetic wraps, so every target is in reach)
OBJ_RELOCS = obj_table(
    "R_386_",
    (0, "NONE", O.NONE),
    (1, "32", O.ABS, "w32"),
    (2, "PC32", O.PCREL, "w32"),
    (3, "GOT32", O.GOT_X86, "w32"),
    (4, "PLT32", O.PCREL, "w32"),
    (9, "GOTOFF", O.GOTREL, "w32"),
    (10, "GOTPC", O.GOTPC, "w32"),
    (20, "16", O.ABS, "w16", {"bits": 16, "check": Check.EITHER}),
    (21, "PC16", O.PCREL, "w16", {"bits": 16, "check": Check.SIGNED}),
    (22, "8", O.ABS, "w8", {"bits": 8, "check": Check.EITHER}),
    (23, "PC8", O.PCREL, "w8", {"bits": 8, "check": Check.SIGNED}),
    (43, "GOT32X", O.GOT_X86, "w32"),
    *((n, name, O.TLS) for n, name in ((14, "TLS_TPOFF"), (15, "TLS_IE"), (16, "TLS_GOTIE"),
                                       (17, "TLS_LE"), (18, "TLS_GD"), (19, "TLS_LDM"),
                                       (35, "TLS_DTPMOD32"), (36, "TLS_DTPOFF32"),
                                       (37, "TLS_TPOFF32"), (39, "TLS_GOTDESC"),
                                       (40, "TLS_DESC_CALL"), (41, "TLS_DESC"))),
)

ARCH = Arch(
    # 32-bit arithmetic wraps: every target is in reach, no veneers
    obj_relocs=OBJ_RELOCS,
    name="i386", machine=3, bits=32, rela=False, relocs=RELOCS,
    cc=CallingConvention(
        name="i386 cdecl",
        int_args=(), float_args=(),
        int_ret=("EAX", "EDX"), float_ret=None,   # f32/f64 results in x87 st(0)
        sp="ESP", pc="EIP", lr=None, stack_align=16, stack_slot=4,
        fp="EBP", frame=(0, 4),
    ),
    zig_target="x86", zig_cflags=(),
    # plain clang: the same baseline as zig (pentium4): SSE2 math, no x87 excess precision
    clang_target="i686-unknown-none-elf", clang_cflags=("-march=pentium4", "-mfpmath=sse"),
    lld_emulation="elf_i386",
    uc_arch="UC_ARCH_X86", uc_mode=("UC_MODE_32",),
    cs_arch="CS_ARCH_X86", cs_mode=("CS_MODE_32",),
    aliases=("x86", "i686", "x86_32", "ia32"),
    ret_insn=b"\xc3", trap_insn=b"\x0f\x0b",
    # cdecl: mov eax,[esp+4]; push [esp+16] x3; call eax; add esp,12; ret (keeps 16-byte alignment)
    call_through3=bytes.fromhex("8b442404" "ff742410" "ff742410" "ff742410" "ffd0" "83c40c" "c3"),
    # x87 as after FNINIT (64-bit precision, empty stack), SSE exceptions masked
    uc_init=(("FPCW", 0x37F), ("FPSW", 0), ("FPTAG", 0xFFFF), ("MXCSR", 0x1F80)),
    dump_regs=("EAX", "EBX", "ECX", "EDX", "ESI", "EDI", "EBP", "ESP", "EIP", "EFLAGS"),
    gdb_arch="i386",
    gdb_regs=(*gdb_regs(_CORE, 32, "eax ecx edx ebx esp ebp esi edi"),
              *gdb_regs(_CORE, 32, "eip", "code_ptr"), *gdb_regs(_CORE, 32, "eflags"),
              *gdb_regs(_CORE, 32, "cs ss ds es fs gs"),
              *gdb_regs(_CORE, 80, " ".join(f"st{i}=FP{i}" for i in range(8)), "i387_ext"),
              *gdb_regs(_CORE, 32, "fctrl=FPCW fstat=FPSW ftag=FPTAG fiseg=FCS fioff=FIP "
                                        "foseg=FDS fooff=FDP fop=FOP"),
              *gdb_regs(_SSE, 128, " ".join(f"xmm{i}" for i in range(8)), "uint128"),
              *gdb_regs(_SSE, 32, "mxcsr")),
)
