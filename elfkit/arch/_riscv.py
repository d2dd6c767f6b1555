"""The RISC-V relocation types of relocatable objects (``.o``), shared by
riscv64 and riscv32: the psABI's static relocations, with the word size
deciding the range checks of absolute values."""
from ._base import Check, ObjReloc, obj_table
from ._base import ObjFormula as O

_S = Check.SIGNED


def obj_relocs(bits: int) -> dict[int, ObjReloc]:
    """The object relocation table of a ``bits``-bit RISC-V."""
    # absolute HI20/LO12 pairs reach only the low/high 2 GiB on rv64 (wrapping on rv32)
    abs_hi = {"bits": 32, "check": _S} if bits == 64 else {}
    return obj_table(
        "R_RISCV_",
        (0, "NONE", O.NONE),
        (1, "32", O.ABS, "w32", {"bits": 32, "check": Check.EITHER} if bits == 64 else {}),
        (2, "64", O.ABS, "w64"),
        (16, "BRANCH", O.PCREL, "rv_b", {"bits": 13, "check": _S, "align": 1}),
        (17, "JAL", O.PCREL, "rv_j", {"bits": 21, "check": _S, "align": 1, "branch": True}),
        (18, "CALL", O.PCREL, "rv_call", {"branch": True}),
        (19, "CALL_PLT", O.PCREL, "rv_call", {"branch": True}),
        (20, "GOT_HI20", O.GOT_PCREL, "rv_hi20"),
        (21, "TLS_GOT_HI20", O.TLS),
        (22, "TLS_GD_HI20", O.TLS),
        (23, "PCREL_HI20", O.PCREL, "rv_hi20"),
        (24, "PCREL_LO12_I", O.PCREL_LO, "rv_i"),
        (25, "PCREL_LO12_S", O.PCREL_LO, "rv_s"),
        (26, "HI20", O.ABS, "rv_hi20", abs_hi),
        (27, "LO12_I", O.ABS, "rv_i"),
        (28, "LO12_S", O.ABS, "rv_s"),
        (29, "TPREL_HI20", O.TLS),
        (30, "TPREL_LO12_I", O.TLS),
        (31, "TPREL_LO12_S", O.TLS),
        (32, "TPREL_ADD", O.TLS),
        (33, "ADD8", O.ADD, "w8"),
        (34, "ADD16", O.ADD, "w16"),
        (35, "ADD32", O.ADD, "w32"),
        (36, "ADD64", O.ADD, "w64"),
        (37, "SUB8", O.SUB, "w8"),
        (38, "SUB16", O.SUB, "w16"),
        (39, "SUB32", O.SUB, "w32"),
        (40, "SUB64", O.SUB, "w64"),
        (41, "GOT32_PCREL", O.GOT_PCREL, "w32", {"bits": 32, "check": _S}),
        (43, "ALIGN", O.ALIGN),
        (44, "RVC_BRANCH", O.PCREL, "rv_cb", {"bits": 9, "check": _S, "align": 1}),
        (45, "RVC_JUMP", O.PCREL, "rv_cj", {"bits": 12, "check": _S, "align": 1}),
        (51, "RELAX", O.RELAX),
        (52, "SUB6", O.SUB, "low6"),
        (53, "SET6", O.SET, "low6"),
        (54, "SET8", O.SET, "w8"),
        (55, "SET16", O.SET, "w16"),
        (56, "SET32", O.SET, "w32"),
        (57, "32_PCREL", O.PCREL, "w32", {"bits": 32, "check": _S}),
        (59, "PLT32", O.PCREL, "w32", {"bits": 32, "check": _S}),
        (60, "SET_ULEB128", O.SET_ULEB, "uleb128"),
        (61, "SUB_ULEB128", O.SUB_ULEB, "uleb128"),
        (62, "TLSDESC_HI20", O.TLS),
        (63, "TLSDESC_LOAD_LO12", O.TLS),
        (64, "TLSDESC_ADD_LO12", O.TLS),
        (65, "TLSDESC_CALL", O.TLS),
    )
