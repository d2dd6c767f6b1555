"""aarch64: AAPCS64, RELA."""
import struct

from ._base import Arch, CallingConvention, Check, gdb_regs, table
from ._base import Formula as F

RELOCS = table(
    "R_AARCH64_",
    (0, "NONE", F.NONE),
    (256, "NONE", F.NONE),           # withdrawn R_AARCH64_NULL, treated as none
    (257, "ABS64", F.ABS, 64),
    (258, "ABS32", F.ABS, 32, Check.EITHER),
    (260, "PREL64", F.PCREL, 64),
    (261, "PREL32", F.PCREL, 32, Check.EITHER),
    (1024, "COPY", F.COPY),
    (1025, "GLOB_DAT", F.ABS, 64),
    (1026, "JUMP_SLOT", F.ABS, 64),
    (1027, "RELATIVE", F.RELATIVE, 64),
    (1028, "TLS_DTPMOD", F.TLS),
    (1029, "TLS_DTPREL", F.TLS),
    (1030, "TLS_TPREL", F.TLS),
    (1031, "TLSDESC", F.TLS),
    (1032, "IRELATIVE", F.IRELATIVE, 64),
)

ARCH = Arch(
    name="aarch64", machine=183, bits=64, rela=True, relocs=RELOCS,
    cc=CallingConvention(
        name="AAPCS64",
        int_args=tuple(f"X{i}" for i in range(8)),
        float_args=tuple(f"Q{i}" for i in range(8)),
        int_ret=("X0", "X1"), float_ret="Q0",
        sp="SP", pc="PC", lr="X30", stack_align=16, stack_slot=8,
        fp="X29", frame=(0, 8),
    ),
    zig_target="aarch64", zig_cflags=(),
    clang_target="aarch64-unknown-none-elf", lld_emulation="aarch64elf",
    uc_arch="UC_ARCH_ARM64", uc_mode=("UC_MODE_ARM",),
    cs_arch="CS_ARCH_ARM64", cs_mode=("CS_MODE_ARM",),
    aliases=("arm64", "arm_64"),
    ret_insn=bytes.fromhex("c0035fd6"), trap_insn=bytes.fromhex("000020d4"),  # ret ; brk #0
    # mov x16,x0; mov x0,x1; mov x1,x2; mov x2,x3; br x16
    call_through3=struct.pack("<5I", 0xAA0003F0, 0xAA0103E0, 0xAA0203E1, 0xAA0303E2, 0xD61F0200),
    # CPACR_EL1.FPEN = 0b11: FP/SIMD not trapped; no thread pointer
    uc_init=(("CPACR_EL1", 3 << 20), ("TPIDR_EL0", 0)),
    dump_regs=tuple(f"X{i}" for i in range(31)) + ("SP", "PC", "NZCV"),
    gdb_arch="aarch64",
    gdb_regs=(*gdb_regs("org.gnu.gdb.aarch64.core", 64, " ".join(f"x{i}" for i in range(31))),
              *gdb_regs("org.gnu.gdb.aarch64.core", 64, "sp", "data_ptr"),
              *gdb_regs("org.gnu.gdb.aarch64.core", 64, "pc", "code_ptr"),
              *gdb_regs("org.gnu.gdb.aarch64.core", 32, "cpsr=PSTATE"),
              *gdb_regs("org.gnu.gdb.aarch64.fpu", 128, " ".join(f"v{i}" for i in range(32)),
                        "aarch64v"),
              *gdb_regs("org.gnu.gdb.aarch64.fpu", 32, "fpsr fpcr")),
)
