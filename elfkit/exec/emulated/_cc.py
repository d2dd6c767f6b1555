"""Calling conventions: where each argument and the result of a C call live.

``plan(arch, sig, float_abi)`` returns a ``Plan``: for every argument the
registers and/or stack slots it occupies (``Piece``s), the size of the
outgoing argument area, and where the result comes back.  The machine turns
a plan into specialised Python code once per signature (see ``_codegen``).

Rules implemented (scalars only: integers, pointers, f32, f64):

* SysV x86_64: 6 integer registers, 8 XMM registers, then 8-byte stack slots
  in argument order; result in RAX / XMM0.
* AAPCS64: X0-X7 and V0-V7, then 8-byte stack slots; result in X0 / V0.
* RISC-V (LP64D, ILP32D, ILP32F, ILP32): a0-a7 and fa0-fa7.  A float that is
  wider than the float ABI or finds no free FP register travels as an integer
  of the same size.  Double-word integers (i64 on riscv32) use the next two
  free registers -- *no* even-register alignment for named arguments -- and
  may be split between a7 and the stack.  32-bit integers, signed or not,
  are sign-extended to 64 bits on riscv64.  f32 in a 64-bit FP register is
  NaN-boxed.
* AAPCS-VFP (arm hard float): r0-r3; i64 starts at an even register or goes
  wholly to the stack (8-byte aligned); once anything went to the stack no
  further core registers are used.  s0-s15 / d0-d7 with back-filling: an f32
  takes the lowest free S register (possibly the odd half of a D register an
  earlier f64 skipped), an f64 the lowest free D register; once a float
  argument went to the stack no VFP register is used any more.  Results in
  r0 (r0:r1 for i64), s0 / d0.
* i386 cdecl: everything on the stack in 4-byte units (i64/f64 take 8 bytes,
  4-byte aligned), the argument area 16-byte aligned; results in EAX
  (EDX:EAX for i64) and x87 st(0) for f32/f64.
"""
from __future__ import annotations

from ..._support.records import DataRecord
from ...arch import Arch
from ...arch import get as get_arch
from ...errors import SignatureError
from ...signature import CType, Signature

# float ABI names accepted (riscv uses the width, arm only "hard")
FLOAT_ABIS = ("hard", "double", "single", "soft")


class Piece(DataRecord, frozen=True, slots=True):
    """One register or stack slot holding (part of) a value."""

    reg: str | None          # unicorn register suffix, or None for the stack
    offset: int              # stack: byte offset from the stack pointer at the call
    kind: str                # "int" | "f32" | "f64"
    size: int                # bytes the piece occupies (register slot or stack bytes)
    part: int = -1           # -1 whole value; 0 low word / 1 high word of a double-word
    box: bool = False        # f32 in a 64-bit FP register: NaN-box the upper half


class Loc(DataRecord, frozen=True, slots=True):
    type: CType
    pieces: tuple[Piece, ...]
    as_int: bool = False     # a float carried in integer registers / slots (soft float)
    x87: bool = False        # i386 float result in st(0)


class Plan(DataRecord, frozen=True, slots=True):
    sig: Signature
    args: tuple[Loc, ...]
    ret: Loc | None          # None for void
    stack_size: int          # bytes of outgoing argument area (before alignment)
    sext32: bool = False     # riscv64: 32-bit integers are sign-extended


def reg_size(arch: Arch, reg: str) -> int:
    """Bytes unicorn reads/writes for register ``reg`` (a UC_*_REG_ suffix)."""
    if reg.startswith(("XMM", "Q")):
        return 16
    if arch.name == "arm" and reg[0] in "SD" and reg[1:].isdigit():
        return 4 if reg[0] == "S" else 8
    if arch.name.startswith("riscv") and reg.startswith("F") and reg not in ("FCSR",):
        return 8
    return arch.word


def check_abi(arch: Arch, float_abi: str) -> str:
    """``float_abi`` checked for ``arch``; "hard" becomes the arch's own."""
    if float_abi not in FLOAT_ABIS:
        raise SignatureError(f"unknown float ABI {float_abi!r}; use one of {', '.join(FLOAT_ABIS)}")
    if float_abi == "hard":
        float_abi = arch.cc.float_abi
    if not arch.name.startswith("riscv") and float_abi != "hard":
        raise SignatureError(f"{arch.name}: only the hard-float ABI is supported, not "
                             f"{float_abi!r}")
    return float_abi


def float_abi_from_eflags(arch: Arch | str, e_flags: int) -> str:
    """The float ABI a RISC-V ELF declares in ``e_flags`` (EF_RISCV_FLOAT_ABI);
    "hard" for other architectures."""
    arch = get_arch(arch)
    if not arch.name.startswith("riscv"):
        return "hard"
    abi = (e_flags >> 1) & 3
    if abi == 3:
        raise SignatureError("RISC-V quad-float ABI (EF_RISCV_FLOAT_ABI_QUAD) is not supported")
    return ("soft", "single", "double")[abi]


def plan(arch: Arch, sig: Signature, float_abi: str = "hard") -> Plan:
    float_abi = check_abi(arch, float_abi)
    if sig.ret is CType.VOID:
        pass
    for p in sig.params:
        if p is CType.VOID:
            raise SignatureError(f"{sig}: void is not an argument type")
    fn = _ALLOCATORS.get(arch.name)
    if fn is None:
        raise SignatureError(f"no calling convention for {arch.name}")
    args, stack = fn(arch, sig.params, float_abi)
    ret = None if sig.ret is CType.VOID else _RETURNS[arch.name](arch, sig.ret, float_abi)
    return Plan(sig, tuple(args), ret, stack, sext32=(arch.name == "riscv64"))


def _wide(t: CType, arch: Arch) -> bool:
    """A double-word integer on this target (i64/u64 on a 32-bit arch)."""
    return not t.is_float and t.size(arch.word) > arch.word


def _align(v: int, a: int) -> int:
    return (v + a - 1) & -a


# --- x86_64 -----------------------------------------------------------------
def _sysv64(arch: Arch, params: tuple[CType, ...], _abi: str) -> tuple[list[Loc], int]:
    cc = arch.cc
    ni = nf = 0
    off = 0
    out = []
    for t in params:
        if t.is_float:
            if nf < len(cc.float_args):
                out.append(Loc(t, (Piece(cc.float_args[nf], 0, t.value, 16),)))
                nf += 1
                continue
        elif ni < len(cc.int_args):
            out.append(Loc(t, (Piece(cc.int_args[ni], 0, "int", 8),)))
            ni += 1
            continue
        out.append(Loc(t, (Piece(None, off, t.value if t.is_float else "int", 8),)))
        off += 8
    return out, off


def _ret_sysv64(arch: Arch, t: CType, _abi: str) -> Loc:
    if t.is_float:
        return Loc(t, (Piece(arch.cc.float_ret, 0, t.value, 16),))
    return Loc(t, (Piece(arch.cc.int_ret[0], 0, "int", 8),))


# --- aarch64 ----------------------------------------------------------------
def _aapcs64(arch: Arch, params: tuple[CType, ...], _abi: str) -> tuple[list[Loc], int]:
    return _sysv64(arch, params, _abi)      # same shape: 8 + 8 registers, 8-byte slots


_ret_aapcs64 = _ret_sysv64


# --- RISC-V -----------------------------------------------------------------
def _flen(abi: str) -> int:
    return {"double": 8, "single": 4, "soft": 0}[abi]


def _riscv(arch: Arch, params: tuple[CType, ...], abi: str) -> tuple[list[Loc], int]:
    cc = arch.cc
    xlen = arch.word
    flen = _flen(abi)
    ni = nf = 0
    off = 0
    out = []
    nregs = len(cc.int_args)
    for t in params:
        size = t.size(xlen)
        if t.is_float and size <= flen and nf < len(cc.float_args):
            out.append(Loc(t, (Piece(cc.float_args[nf], 0, t.value, 8, box=(t is CType.F32)),)))
            nf += 1
            continue
        as_int = t.is_float
        if size <= xlen:
            if ni < nregs:
                out.append(Loc(t, (Piece(cc.int_args[ni], 0, "int", xlen),), as_int))
                ni += 1
            else:
                out.append(Loc(t, (Piece(None, off, "int", xlen),), as_int))
                off += xlen
            continue
        # 2*XLEN scalar (i64/u64/f64 on riscv32): next two registers, split, or stack
        if ni + 1 < nregs:
            out.append(Loc(t, (Piece(cc.int_args[ni], 0, "int", xlen, 0),
                               Piece(cc.int_args[ni + 1], 0, "int", xlen, 1)), as_int))
            ni += 2
        elif ni < nregs:
            out.append(Loc(t, (Piece(cc.int_args[ni], 0, "int", xlen, 0),
                               Piece(None, off, "int", xlen, 1)), as_int))
            ni += 1
            off += xlen
        else:
            off = _align(off, 2 * xlen)
            out.append(Loc(t, (Piece(None, off, "int", 2 * xlen),), as_int))
            off += 2 * xlen
    return out, off


def _ret_riscv(arch: Arch, t: CType, abi: str) -> Loc:
    cc = arch.cc
    xlen = arch.word
    size = t.size(xlen)
    if t.is_float and size <= _flen(abi):
        return Loc(t, (Piece(cc.float_ret, 0, t.value, 8, box=(t is CType.F32)),))
    if size <= xlen:
        return Loc(t, (Piece(cc.int_ret[0], 0, "int", xlen),), t.is_float)
    return Loc(t, (Piece(cc.int_ret[0], 0, "int", xlen, 0),
                   Piece(cc.int_ret[1], 0, "int", xlen, 1)), t.is_float)


# --- arm (AAPCS-VFP) ----------------------------------------------------------
def _aapcs_vfp(arch: Arch, params: tuple[CType, ...], _abi: str) -> tuple[list[Loc], int]:
    cc = arch.cc
    ncrn = 0
    nsaa = 0
    nsregs = len(cc.float_args)          # s0..s15
    free = [True] * nsregs
    vfp_open = True
    out = []
    for t in params:
        if t is CType.F32:
            if vfp_open and any(free):
                i = free.index(True)
                free[i] = False
                out.append(Loc(t, (Piece(f"S{i}", 0, "f32", 4),)))
                continue
            vfp_open = False
            free = [False] * nsregs
            out.append(Loc(t, (Piece(None, nsaa, "f32", 4),)))
            nsaa += 4
            continue
        if t is CType.F64:
            if vfp_open:
                for d in range(nsregs // 2):
                    if free[2 * d] and free[2 * d + 1]:
                        free[2 * d] = free[2 * d + 1] = False
                        out.append(Loc(t, (Piece(f"D{d}", 0, "f64", 8),)))
                        break
                else:
                    d = -1
                if d >= 0:
                    continue
            vfp_open = False
            free = [False] * nsregs
            nsaa = _align(nsaa, 8)
            out.append(Loc(t, (Piece(None, nsaa, "f64", 8),)))
            nsaa += 8
            continue
        if _wide(t, arch):
            if cc.pair_align:
                ncrn = _align(ncrn, 2)
            if ncrn + 1 < len(cc.int_args):
                out.append(Loc(t, (Piece(cc.int_args[ncrn], 0, "int", 4, 0),
                                   Piece(cc.int_args[ncrn + 1], 0, "int", 4, 1))))
                ncrn += 2
            else:
                ncrn = len(cc.int_args)
                nsaa = _align(nsaa, 8)
                out.append(Loc(t, (Piece(None, nsaa, "int", 8),)))
                nsaa += 8
            continue
        if ncrn < len(cc.int_args):
            out.append(Loc(t, (Piece(cc.int_args[ncrn], 0, "int", 4),)))
            ncrn += 1
        else:
            out.append(Loc(t, (Piece(None, nsaa, "int", 4),)))
            nsaa += 4
    return out, nsaa


def _ret_aapcs_vfp(arch: Arch, t: CType, _abi: str) -> Loc:
    cc = arch.cc
    if t is CType.F32:
        return Loc(t, (Piece("S0", 0, "f32", 4),))
    if t is CType.F64:
        return Loc(t, (Piece("D0", 0, "f64", 8),))
    if _wide(t, arch):
        return Loc(t, (Piece(cc.int_ret[0], 0, "int", 4, 0), Piece(cc.int_ret[1], 0, "int", 4, 1)))
    return Loc(t, (Piece(cc.int_ret[0], 0, "int", 4),))


# --- i386 cdecl ---------------------------------------------------------------
def _cdecl(arch: Arch, params: tuple[CType, ...], _abi: str) -> tuple[list[Loc], int]:
    off = 0
    out = []
    for t in params:
        size = max(4, t.size(4))
        kind = t.value if t.is_float else "int"
        out.append(Loc(t, (Piece(None, off, kind, size),)))
        off += size
    return out, off


def _ret_cdecl(arch: Arch, t: CType, _abi: str) -> Loc:
    cc = arch.cc
    if t.is_float:
        return Loc(t, (), x87=True)
    if _wide(t, arch):
        return Loc(t, (Piece(cc.int_ret[0], 0, "int", 4, 0), Piece(cc.int_ret[1], 0, "int", 4, 1)))
    return Loc(t, (Piece(cc.int_ret[0], 0, "int", 4),))


_ALLOCATORS = {"x86_64": _sysv64, "aarch64": _aapcs64, "riscv64": _riscv, "riscv32": _riscv,
               "arm": _aapcs_vfp, "i386": _cdecl}
_RETURNS = {"x86_64": _ret_sysv64, "aarch64": _ret_aapcs64, "riscv64": _ret_riscv,
            "riscv32": _ret_riscv, "arm": _ret_aapcs_vfp, "i386": _ret_cdecl}


def describe(p: Plan) -> str:
    """Human-readable placement, e.g. for ``elfkit run -v`` and error messages."""
    parts = []
    for i, loc in enumerate(p.args):
        where = "+".join(pc.reg if pc.reg else f"[sp+{pc.offset}]" for pc in loc.pieces)
        parts.append(f"arg{i}:{loc.type.value}@{where}")
    if p.ret is not None:
        where = "st(0)" if p.ret.x87 else "+".join(pc.reg or "?" for pc in p.ret.pieces)
        parts.append(f"ret:{p.ret.type.value}@{where}")
    return ", ".join(parts)
