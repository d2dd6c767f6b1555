"""aarch64: AAPCS64, RELA."""
import struct

from ._base import Arch, CallingConvention, Check, gdb_regs, obj_table, table
from ._base import Formula as F
from ._base import ObjFormula as O

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

_S, _E = Check.SIGNED, Check.EITHER
_BR26 = {"bits": 28, "check": _S, "shift": 2, "align": 2, "branch": True}
_PAGE = {"bits": 33, "check": _S, "shift": 12}


def _ldst(scale: int) -> dict[str, int]:
    return {"mask": 0xFFF, "shift": scale, "align": scale}


#: relocations of relocatable objects (small code model, PIC or not)
OBJ_RELOCS = obj_table(
    "R_AARCH64_",
    (0, "NONE", O.NONE),
    (256, "NONE", O.NONE),
    (257, "ABS64", O.ABS, "w64"),
    (258, "ABS32", O.ABS, "w32", {"bits": 32, "check": _E}),
    (259, "ABS16", O.ABS, "w16", {"bits": 16, "check": _E}),
    (260, "PREL64", O.PCREL, "w64"),
    (261, "PREL32", O.PCREL, "w32", {"bits": 32, "check": _E}),
    (262, "PREL16", O.PCREL, "w16", {"bits": 16, "check": _E}),
    (263, "MOVW_UABS_G0", O.ABS, "a64_imm16", {"bits": 16, "check": Check.UNSIGNED}),
    (264, "MOVW_UABS_G0_NC", O.ABS, "a64_imm16"),
    (265, "MOVW_UABS_G1", O.ABS, "a64_imm16", {"bits": 32, "check": Check.UNSIGNED,
                                                "shift": 16}),
    (266, "MOVW_UABS_G1_NC", O.ABS, "a64_imm16", {"shift": 16}),
    (267, "MOVW_UABS_G2", O.ABS, "a64_imm16", {"bits": 48, "check": Check.UNSIGNED,
                                                "shift": 32}),
    (268, "MOVW_UABS_G2_NC", O.ABS, "a64_imm16", {"shift": 32}),
    (269, "MOVW_UABS_G3", O.ABS, "a64_imm16", {"shift": 48}),
    (273, "LD_PREL_LO19", O.PCREL, "a64_imm19", {"bits": 21, "check": _S, "shift": 2,
                                                  "align": 2}),
    (274, "ADR_PREL_LO21", O.PCREL, "a64_adr", {"bits": 21, "check": _S}),
    (275, "ADR_PREL_PG_HI21", O.PAGE_PCREL, "a64_adr", _PAGE),
    (276, "ADR_PREL_PG_HI21_NC", O.PAGE_PCREL, "a64_adr", {"shift": 12}),
    (277, "ADD_ABS_LO12_NC", O.ABS, "a64_imm12", {"mask": 0xFFF}),
    (278, "LDST8_ABS_LO12_NC", O.ABS, "a64_imm12", _ldst(0)),
    (279, "TSTBR14", O.PCREL, "a64_imm14", {"bits": 16, "check": _S, "shift": 2, "align": 2}),
    (280, "CONDBR19", O.PCREL, "a64_imm19", {"bits": 21, "check": _S, "shift": 2, "align": 2}),
    (282, "JUMP26", O.PCREL, "a64_imm26", _BR26),
    (283, "CALL26", O.PCREL, "a64_imm26", _BR26),
    (284, "LDST16_ABS_LO12_NC", O.ABS, "a64_imm12", _ldst(1)),
    (285, "LDST32_ABS_LO12_NC", O.ABS, "a64_imm12", _ldst(2)),
    (286, "LDST64_ABS_LO12_NC", O.ABS, "a64_imm12", _ldst(3)),
    (299, "LDST128_ABS_LO12_NC", O.ABS, "a64_imm12", _ldst(4)),
    (309, "GOT_LD_PREL19", O.GOT_PCREL, "a64_imm19", {"bits": 21, "check": _S, "shift": 2,
                                                       "align": 2}),
    (311, "ADR_GOT_PAGE", O.GDAT_PAGE, "a64_adr", _PAGE),
    (312, "LD64_GOT_LO12_NC", O.GDAT, "a64_imm12", _ldst(3)),
    (314, "PLT32", O.PCREL, "w32", {"bits": 32, "check": _S}),
    (315, "GOTPCREL32", O.GOT_PCREL, "w32", {"bits": 32, "check": _S}),
    *((n, name, O.TLS) for n, name in (
        (512, "TLSGD_ADR_PREL21"), (513, "TLSGD_ADR_PAGE21"), (514, "TLSGD_ADD_LO12_NC"),
        (541, "TLSIE_ADR_GOTTPREL_PAGE21"), (542, "TLSIE_LD64_GOTTPREL_LO12_NC"),
        (549, "TLSLE_ADD_TPREL_HI12"), (550, "TLSLE_ADD_TPREL_LO12"),
        (551, "TLSLE_ADD_TPREL_LO12_NC"), (560, "TLSDESC_ADR_PAGE21"),
        (561, "TLSDESC_LD64_LO12"), (562, "TLSDESC_ADD_LO12"), (569, "TLSDESC_CALL"))),
)

ARCH = Arch(
    obj_relocs=OBJ_RELOCS,
    # ldr x16, #8; br x16; .quad target
    veneer=struct.pack("<2I", 0x58000050, 0xD61F0200) + bytes(8), veneer_slot=8,
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
