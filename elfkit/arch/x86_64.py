"""x86_64: SysV AMD64 ABI, RELA."""
from ._base import Arch, CallingConvention, Check, gdb_regs, obj_table, table
from ._base import Formula as F
from ._base import ObjFormula as O

RELOCS = table(
    "R_X86_64_",
    (0, "NONE", F.NONE),
    (1, "64", F.ABS, 64),
    (2, "PC32", F.PCREL, 32, Check.SIGNED),
    (5, "COPY", F.COPY),
    (6, "GLOB_DAT", F.SYM, 64),
    (7, "JUMP_SLOT", F.SYM, 64),
    (8, "RELATIVE", F.RELATIVE, 64),
    (10, "32", F.ABS, 32, Check.UNSIGNED),
    (11, "32S", F.ABS, 32, Check.SIGNED),
    (16, "DTPMOD64", F.TLS),
    (17, "DTPOFF64", F.TLS),
    (18, "TPOFF64", F.TLS),
    (21, "DTPOFF32", F.TLS),
    (23, "TPOFF32", F.TLS),
    (24, "PC64", F.PCREL, 64),
    (36, "TLSDESC", F.TLS),
    (37, "IRELATIVE", F.IRELATIVE, 64),
    (38, "RELATIVE64", F.RELATIVE, 64),
)

_CORE, _SSE = "org.gnu.gdb.i386.core", "org.gnu.gdb.i386.sse"

_S, _U = Check.SIGNED, Check.UNSIGNED
_PC32 = {"bits": 32, "check": _S}
#: relocations of relocatable objects (small and medium code models, PIC or not)
OBJ_RELOCS = obj_table(
    "R_X86_64_",
    (0, "NONE", O.NONE),
    (1, "64", O.ABS, "w64"),
    (2, "PC32", O.PCREL, "w32", _PC32),
    (4, "PLT32", O.PCREL, "w32", {**_PC32, "branch": True, "bias": -4}),
    (9, "GOTPCREL", O.GOT_PCREL, "w32", _PC32),
    (10, "32", O.ABS, "w32", {"bits": 32, "check": _U}),
    (11, "32S", O.ABS, "w32", {"bits": 32, "check": _S}),
    (12, "16", O.ABS, "w16", {"bits": 16, "check": Check.EITHER}),
    (13, "PC16", O.PCREL, "w16", {"bits": 16, "check": _S}),
    (14, "8", O.ABS, "w8", {"bits": 8, "check": Check.EITHER}),
    (15, "PC8", O.PCREL, "w8", {"bits": 8, "check": _S}),
    (16, "DTPMOD64", O.TLS), (17, "DTPOFF64", O.TLS), (18, "TPOFF64", O.TLS),
    (19, "TLSGD", O.TLS), (20, "TLSLD", O.TLS), (21, "DTPOFF32", O.TLS),
    (22, "GOTTPOFF", O.TLS), (23, "TPOFF32", O.TLS),
    (24, "PC64", O.PCREL, "w64"),
    (25, "GOTOFF64", O.GOTREL, "w64"),
    (26, "GOTPC32", O.GOTPC, "w32", _PC32),
    # large-model PIC (-mcmodel=large -fPIC): 64-bit GOT offsets and PLT
    # offsets from the GOT (the function itself: objects get no lazy PLT)
    (27, "GOT64", O.GOT_GOTREL, "w64"),
    (28, "GOTPCREL64", O.GOT_PCREL, "w64"),
    (29, "GOTPC64", O.GOTPC, "w64"),
    (30, "GOTPLT64", O.GOT_GOTREL, "w64"),
    (31, "PLTOFF64", O.GOTREL, "w64"),
    (34, "GOTPC32_TLSDESC", O.TLS), (35, "TLSDESC_CALL", O.TLS), (36, "TLSDESC", O.TLS),
    (41, "GOTPCRELX", O.GOT_PCREL, "w32", _PC32),
    (42, "REX_GOTPCRELX", O.GOT_PCREL, "w32", _PC32),
)

ARCH = Arch(
    obj_relocs=OBJ_RELOCS,
    # jmp *0(%rip); .quad target
    veneer=bytes.fromhex("ff2500000000") + bytes(10), veneer_slot=6,
    name="x86_64", machine=62, bits=64, rela=True, relocs=RELOCS,
    cc=CallingConvention(
        name="SysV AMD64",
        int_args=("RDI", "RSI", "RDX", "RCX", "R8", "R9"),
        float_args=tuple(f"XMM{i}" for i in range(8)),
        int_ret=("RAX", "RDX"), float_ret="XMM0",
        sp="RSP", pc="RIP", lr=None, stack_align=16, stack_slot=8,
        fp="RBP", frame=(0, 8), red_zone=128,
    ),
    zig_target="x86_64", zig_cflags=(),
    clang_target="x86_64-unknown-none-elf", lld_emulation="elf_x86_64",
    uc_arch="UC_ARCH_X86", uc_mode=("UC_MODE_64",),
    cs_arch="CS_ARCH_X86", cs_mode=("CS_MODE_64",),
    aliases=("amd64", "x86-64", "x64"),
    ret_insn=b"\xc3", trap_insn=b"\x0f\x0b",
    # mov rax,rdi; mov rdi,rsi; mov rsi,rdx; mov rdx,rcx; jmp rax
    call_through3=bytes.fromhex("4889f8" "4889f7" "4889d6" "4889ca" "ffe0"),
    # x87 as after FNINIT, SSE exceptions masked, no thread pointer
    uc_init=(("FPCW", 0x37F), ("FPSW", 0), ("FPTAG", 0xFFFF), ("MXCSR", 0x1F80),
             ("FS_BASE", 0), ("GS_BASE", 0)),
    dump_regs=("RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP", "RSP", "R8", "R9", "R10",
               "R11", "R12", "R13", "R14", "R15", "RIP", "EFLAGS"),
    gdb_arch="i386:x86-64",
    gdb_regs=(*gdb_regs(_CORE, 64, "rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15"),
              *gdb_regs(_CORE, 64, "rip", "code_ptr"), *gdb_regs(_CORE, 32, "eflags"),
              *gdb_regs(_CORE, 32, "cs ss ds es fs gs"),
              *gdb_regs(_CORE, 80, " ".join(f"st{i}=FP{i}" for i in range(8)), "i387_ext"),
              *gdb_regs(_CORE, 32, "fctrl=FPCW fstat=FPSW ftag=FPTAG fiseg=FCS fioff=FIP "
                                        "foseg=FDS fooff=FDP fop=FOP"),
              *gdb_regs(_SSE, 128, " ".join(f"xmm{i}" for i in range(16)), "uint128"),
              *gdb_regs(_SSE, 32, "mxcsr")),
)
