"""riscv64: RISC-V LP64D, RELA."""
import struct

from ._base import Arch, CallingConvention, Check, gdb_regs, table
from ._base import Formula as F
from ._riscv import obj_relocs

RELOCS = table(
    "R_RISCV_",
    (0, "NONE", F.NONE),
    (1, "32", F.ABS, 32, Check.UNSIGNED),   # .word data in a 64-bit image: must fit
    (2, "64", F.ABS, 64),
    (3, "RELATIVE", F.RELATIVE, 64),
    (4, "COPY", F.COPY),
    (5, "JUMP_SLOT", F.SYM, 64),
    (6, "TLS_DTPMOD32", F.TLS),
    (7, "TLS_DTPMOD64", F.TLS),
    (8, "TLS_DTPREL32", F.TLS),
    (9, "TLS_DTPREL64", F.TLS),
    (10, "TLS_TPREL32", F.TLS),
    (11, "TLS_TPREL64", F.TLS),
    (12, "TLSDESC", F.TLS),
    (58, "IRELATIVE", F.IRELATIVE, 64),
)

_RV_REGS = ("RA", "SP", "GP", "TP", "T0", "T1", "T2", "S0", "S1", "A0", "A1", "A2", "A3", "A4",
            "A5", "A6", "A7", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11",
            "T3", "T4", "T5", "T6", "PC")
#: gdb's names of f0..f31 (ABI names)
_RV_FREGS = (*(f"ft{i}" for i in range(8)), "fs0", "fs1", *(f"fa{i}" for i in range(8)),
             *(f"fs{i}" for i in range(2, 12)), *(f"ft{i}" for i in range(8, 12)))

#: relocations of relocatable objects
OBJ_RELOCS = obj_relocs(64)

ARCH = Arch(
    obj_relocs=OBJ_RELOCS,
    # auipc t1,0; ld t1,16(t1); jr t1; nop; .quad target
    veneer=struct.pack("<4I", 0x00000317, 0x01033303, 0x00030067, 0x00000013) + bytes(8),
    veneer_slot=16,
    name="riscv64", machine=243, bits=64, rela=True, relocs=RELOCS,
    cc=CallingConvention(
        name="RISC-V LP64D",
        int_args=tuple(f"A{i}" for i in range(8)),
        float_args=tuple(f"FA{i}" for i in range(8)),
        int_ret=("A0", "A1"), float_ret="FA0",
        sp="SP", pc="PC", lr="RA", stack_align=16, stack_slot=8,
        fp="S0", frame=(-16, -8), float_abi="double",
    ),
    zig_target="riscv64", zig_cflags=("-mcpu=generic_rv64+m+a+f+d+c",),
    clang_target="riscv64-unknown-none-elf", clang_cflags=("-march=rv64imafdc", "-mabi=lp64d"),
    lld_emulation="elf64lriscv",
    uc_arch="UC_ARCH_RISCV", uc_mode=("UC_MODE_RISCV64",),
    cs_arch="CS_ARCH_RISCV", cs_mode=("CS_MODE_RISCV64", "CS_MODE_RISCVC"),
    aliases=("riscv_64", "rv64"),
    ret_insn=bytes.fromhex("67800000"),   # jalr x0,0(ra)
    trap_insn=bytes.fromhex("73001000"),  # ebreak
    # mv t0,a0; mv a0,a1; mv a1,a2; mv a2,a3; jr t0
    call_through3=struct.pack("<5I", 0x00050293, 0x00058513, 0x00060593, 0x00068613, 0x00028067),
    # mstatus.FS = dirty: FP instructions enabled; no thread pointer
    uc_init=(("MSTATUS", 0x6000), ("TP", 0)),
    dump_regs=_RV_REGS,
    gdb_arch="riscv:rv64",
    gdb_regs=(*gdb_regs("org.gnu.gdb.riscv.cpu", 64, "zero=X0 " + " ".join(_RV_REGS[:-1]).lower()),
              *gdb_regs("org.gnu.gdb.riscv.cpu", 64, "pc", "code_ptr"),
              *gdb_regs("org.gnu.gdb.riscv.fpu", 64, " ".join(
                  f"{n}=F{i}" for i, n in enumerate(_RV_FREGS)), "ieee_double"),
              *gdb_regs("org.gnu.gdb.riscv.fpu", 32, "fflags frm fcsr")),
)
