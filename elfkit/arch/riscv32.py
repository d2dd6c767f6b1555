"""riscv32: RISC-V ILP32 (float ABI from e_flags), RELA."""
import struct

from ._base import Arch, CallingConvention, gdb_regs, table
from ._base import Formula as F
from ._riscv import obj_relocs

RELOCS = table(
    "R_RISCV_",
    (0, "NONE", F.NONE),
    (1, "32", F.ABS, 32),
    (3, "RELATIVE", F.RELATIVE, 32),
    (4, "COPY", F.COPY),
    (5, "JUMP_SLOT", F.SYM, 32),
    (6, "TLS_DTPMOD32", F.TLS),
    (8, "TLS_DTPREL32", F.TLS),
    (10, "TLS_TPREL32", F.TLS),
    (12, "TLSDESC", F.TLS),
    (58, "IRELATIVE", F.IRELATIVE, 32),
)

_RV_REGS = ("RA", "SP", "GP", "TP", "T0", "T1", "T2", "S0", "S1", "A0", "A1", "A2", "A3", "A4",
            "A5", "A6", "A7", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11",
            "T3", "T4", "T5", "T6", "PC")
#: gdb's names of f0..f31 (ABI names)
_RV_FREGS = (*(f"ft{i}" for i in range(8)), "fs0", "fs1", *(f"fa{i}" for i in range(8)),
             *(f"fs{i}" for i in range(2, 12)), *(f"ft{i}" for i in range(8, 12)))

#: relocations of relocatable objects
OBJ_RELOCS = obj_relocs(32)

ARCH = Arch(
    obj_relocs=OBJ_RELOCS,
    # auipc t1,0; lw t1,12(t1); jr t1; .word target
    veneer=struct.pack("<3I", 0x00000317, 0x00C32303, 0x00030067) + bytes(4), veneer_slot=12,
    name="riscv32", machine=243, bits=32, rela=True, relocs=RELOCS,
    cc=CallingConvention(
        name="RISC-V ILP32(F/D)",
        int_args=tuple(f"A{i}" for i in range(8)),
        float_args=tuple(f"FA{i}" for i in range(8)),
        int_ret=("A0", "A1"), float_ret="FA0",
        sp="SP", pc="PC", lr="RA", stack_align=16, stack_slot=4,
        fp="S0", frame=(-8, -4), float_abi="double",
    ),
    zig_target="riscv32", zig_cflags=("-mcpu=generic_rv32+m+a+f+d+c",),
    clang_target="riscv32-unknown-none-elf", clang_cflags=("-march=rv32imafdc", "-mabi=ilp32d"),
    lld_emulation="elf32lriscv",
    uc_arch="UC_ARCH_RISCV", uc_mode=("UC_MODE_RISCV32",),
    cs_arch="CS_ARCH_RISCV", cs_mode=("CS_MODE_RISCV32", "CS_MODE_RISCVC"),
    aliases=("riscv_32", "rv32"),
    ret_insn=bytes.fromhex("67800000"), trap_insn=bytes.fromhex("73001000"),
    # mv t0,a0; mv a0,a1; mv a1,a2; mv a2,a3; jr t0
    call_through3=struct.pack("<5I", 0x00050293, 0x00058513, 0x00060593, 0x00068613, 0x00028067),
    # mstatus.FS = dirty: FP instructions enabled; no thread pointer
    uc_init=(("MSTATUS", 0x6000), ("TP", 0)),
    dump_regs=_RV_REGS,
    gdb_arch="riscv:rv32",
    gdb_regs=(*gdb_regs("org.gnu.gdb.riscv.cpu", 32, "zero=X0 " + " ".join(_RV_REGS[:-1]).lower()),
              *gdb_regs("org.gnu.gdb.riscv.cpu", 32, "pc", "code_ptr"),
              *gdb_regs("org.gnu.gdb.riscv.fpu", 64, " ".join(
                  f"{n}=F{i}" for i, n in enumerate(_RV_FREGS)), "ieee_double"),
              *gdb_regs("org.gnu.gdb.riscv.fpu", 32, "fflags frm fcsr")),
)
