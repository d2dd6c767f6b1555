"""arm: armv7-a, AAPCS-VFP (hard float), REL."""
import struct

from ._base import Arch, CallingConvention, Check, gdb_regs, obj_table, table
from ._base import Formula as F
from ._base import ObjFormula as O

RELOCS = table(
    "R_ARM_",
    (0, "NONE", F.NONE),
    (2, "ABS32", F.ABS, 32),
    (3, "REL32", F.PCREL, 32),
    (13, "TLS_DESC", F.TLS),
    (17, "TLS_DTPMOD32", F.TLS),
    (18, "TLS_DTPOFF32", F.TLS),
    (19, "TLS_TPOFF32", F.TLS),
    (20, "COPY", F.COPY),
    (21, "GLOB_DAT", F.SYM, 32),
    (22, "JUMP_SLOT", F.SYM, 32),
    (23, "RELATIVE", F.RELATIVE, 32),
    (160, "IRELATIVE", F.IRELATIVE, 32),
)

_BR = {"bits": 26, "check": Check.SIGNED, "branch": True, "bias": -8}
_THM = {"bits": 25, "check": Check.SIGNED, "branch": True, "bias": -4, "thumb": True}
#: relocations of relocatable objects (A32 code; REL: addends in the fields)
OBJ_RELOCS = obj_table(
    "R_ARM_",
    (0, "NONE", O.NONE),
    (2, "ABS32", O.ABS, "w32"),
    (3, "REL32", O.PCREL, "w32"),
    (24, "GOTOFF32", O.GOTREL, "w32"),
    (25, "BASE_PREL", O.GOTPC, "w32"),
    (26, "GOT_BREL", O.GOT_GOTREL, "w32"),
    (10, "THM_CALL", O.PCREL, "thm_call", _THM),
    (28, "CALL", O.PCREL, "arm_call", _BR),
    (29, "JUMP24", O.PCREL, "arm_b24", _BR),
    (30, "THM_JUMP24", O.PCREL, "thm_b24", _THM),
    (38, "TARGET1", O.ABS, "w32"),
    (40, "V4BX", O.NONE),
    (42, "PREL31", O.PCREL, "arm_prel31", {"bits": 31, "check": Check.SIGNED}),
    (43, "MOVW_ABS_NC", O.ABS, "arm_imm16"),
    (44, "MOVT_ABS", O.ABS, "arm_imm16", {"shift": 16}),
    (45, "MOVW_PREL_NC", O.PCREL, "arm_imm16"),
    (46, "MOVT_PREL", O.PCREL, "arm_imm16", {"shift": 16}),
    (47, "THM_MOVW_ABS_NC", O.ABS, "thm_imm16"),
    (48, "THM_MOVT_ABS", O.ABS, "thm_imm16", {"shift": 16}),
    (49, "THM_MOVW_PREL_NC", O.PCREL, "thm_imm16"),
    (50, "THM_MOVT_PREL", O.PCREL, "thm_imm16", {"shift": 16}),
    (96, "GOT_PREL", O.GOT_PCREL, "w32"),
    *((n, name, O.TLS) for n, name in ((13, "TLS_DESC"), (17, "TLS_DTPMOD32"),
                                       (18, "TLS_DTPOFF32"), (19, "TLS_TPOFF32"),
                                       (104, "TLS_GD32"), (105, "TLS_LDM32"),
                                       (106, "TLS_LDO32"), (107, "TLS_IE32"),
                                       (108, "TLS_LE32"))),
)

ARCH = Arch(
    obj_relocs=OBJ_RELOCS,
    # ldr pc, [pc, #-4]; .word target
    veneer=struct.pack("<I", 0xE51FF004) + bytes(4), veneer_slot=4,
    # ldr.w pc, [pc, #0]; .word target (Thumb)
    veneer_thumb=struct.pack("<2H", 0xF8DF, 0xF000) + bytes(4),
    name="arm", machine=40, bits=32, rela=False, relocs=RELOCS,
    cc=CallingConvention(
        name="AAPCS-VFP",
        int_args=("R0", "R1", "R2", "R3"),
        float_args=tuple(f"S{i}" for i in range(16)),   # d<n> = s<2n>:s<2n+1>
        int_ret=("R0", "R1"), float_ret="S0",
        sp="SP", pc="PC", lr="LR", stack_align=8, stack_slot=4,
        fp="R11", frame=(0, 4), pair_align=True,
    ),
    # No unwind tables: with them clang references __aeabi_unwind_cpp_pr0 from
    # .ARM.exidx, an undefined symbol no bare-metal host provides.
    zig_target="arm",
    zig_cflags=("-mcpu=generic+v7a", "-mfloat-abi=hard",
                "-fno-unwind-tables", "-fno-asynchronous-unwind-tables"),
    clang_target="armv7a-unknown-none-eabihf",
    clang_cflags=("-mfloat-abi=hard", "-mfpu=vfpv3-d16", "-marm",
                  "-fno-unwind-tables", "-fno-asynchronous-unwind-tables"),
    lld_emulation="armelf",
    uc_arch="UC_ARCH_ARM", uc_mode=("UC_MODE_ARM",),
    cs_arch="CS_ARCH_ARM", cs_mode=("CS_MODE_ARM",),
    aliases=("arm_32", "armv7", "armv7a", "arm32"),
    ret_insn=bytes.fromhex("1eff2fe1"), trap_insn=bytes.fromhex("700020e1"),  # bx lr ; bkpt #0
    # mov r12,r0; mov r0,r1; mov r1,r2; mov r2,r3; bx r12 (A32; bx honours a Thumb target)
    call_through3=struct.pack("<5I", 0xE1A0C000, 0xE1A00001, 0xE1A01002, 0xE1A02003, 0xE12FFF1C),
    func_mode_bit=True,
    # VFP on: CPACR grants cp10/cp11 full access, FPEXC.EN; no thread pointer
    uc_init=(("C1_C0_2", 0xF << 20), ("FPEXC", 1 << 30), ("C13_C0_3", 0)),
    dump_regs=tuple(f"R{i}" for i in range(13)) + ("SP", "LR", "PC", "CPSR"),
    gdb_arch="arm",
    gdb_regs=(*gdb_regs("org.gnu.gdb.arm.core", 32, " ".join(f"r{i}" for i in range(13))),
              *gdb_regs("org.gnu.gdb.arm.core", 32, "sp", "data_ptr"),
              *gdb_regs("org.gnu.gdb.arm.core", 32, "lr"),
              *gdb_regs("org.gnu.gdb.arm.core", 32, "pc", "code_ptr"),
              *gdb_regs("org.gnu.gdb.arm.core", 32, "cpsr"),
              *gdb_regs("org.gnu.gdb.arm.vfp", 64, " ".join(f"d{i}" for i in range(32)),
                        "ieee_double"),
              *gdb_regs("org.gnu.gdb.arm.vfp", 32, "fpscr")),
)
