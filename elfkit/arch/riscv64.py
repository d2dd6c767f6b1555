"""riscv64: RISC-V LP64D, RELA."""
from ._base import Arch, CallingConvention, Formula as F, table

RELOCS = table(
    "R_RISCV_",
    (0, "NONE", F.NONE),
    (1, "32", F.ABS, 32),
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
# R_RISCV_32 in a 64-bit image must fit: lld emits it only for .word data.
from ._base import Check as _C, RelocType as _R  # noqa: E402
RELOCS[1] = _R(1, "R_RISCV_32", F.ABS, 32, _C.UNSIGNED)

ARCH = Arch(
    name="riscv64", machine=243, bits=64, rela=True, relocs=RELOCS,
    cc=CallingConvention(
        name="RISC-V LP64D",
        int_args=tuple(f"A{i}" for i in range(8)),
        float_args=tuple(f"FA{i}" for i in range(8)),
        int_ret=("A0", "A1"), float_ret="FA0",
        sp="SP", pc="PC", lr="RA", stack_align=16, stack_slot=8,
    ),
    zig_target="riscv64", zig_cflags=("-mcpu=generic_rv64+m+a+f+d+c",),
    uc_arch="UC_ARCH_RISCV", uc_mode=("UC_MODE_RISCV64",),
    cs_arch="CS_ARCH_RISCV", cs_mode=("CS_MODE_RISCV64", "CS_MODE_RISCVC"),
    aliases=("riscv_64", "rv64"),
    ret_insn=bytes.fromhex("67800000"), trap_insn=bytes.fromhex("73001000"),  # jalr x0,0(ra) ; ebreak
)
