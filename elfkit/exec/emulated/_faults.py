"""Fault reports for guest code that crashed under emulation.

``build_fault`` turns the state unicorn left behind (error code, the access
recorded by the invalid-memory hook, the exception number from the interrupt
hook, the registers) into an ``elfkit.EmulationFault`` whose ``str()`` is a
readable multi-line report: what happened and where (``symbol+offset``,
``file:line`` when DWARF line information was registered), the accessed
address and what lives there, a backtrace (link register + frame-pointer
chain), the disassembly around the faulting instruction and the registers.
"""
from __future__ import annotations

import re

from ..._support.records import DataRecord
from ...errors import EmulationFault
from ..disasm import disassemble
from ._layout import SENTINEL
from ._uc import strerror

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

_SYM_OFF = re.compile(r"^(.*)\+0x([0-9a-f]+)$")

# unicorn error code -> (access, description)
_MEM_ERRORS = {
    6: ("read", "read of unmapped memory"),
    7: ("write", "write to unmapped memory"),
    8: ("fetch", "jump to unmapped address"),
    12: ("write", "write to read-only memory"),
    13: ("read", "read of protected memory"),
    14: ("fetch", "execution of non-executable memory"),
    16: ("read", "unaligned read"),
    17: ("write", "unaligned write"),
    18: ("fetch", "unaligned instruction fetch"),
}
# invalid-memory hook kinds -> errors above
_HOOK_KIND_TO_ERR = {19: 6, 20: 7, 21: 8, 23: 13, 22: 12, 24: 14}

_INTR = {
    "x86_64": {0: "division error (divide by zero or quotient overflow)", 1: "debug trap",
               3: "breakpoint (int3)", 4: "overflow trap", 5: "bound range exceeded",
               6: "invalid opcode", 13: "general protection fault", 14: "page fault"},
    "aarch64": {1: "undefined instruction", 2: "supervisor call (svc)",
                7: "breakpoint / trap instruction (brk)"},
    "arm": {1: "undefined instruction", 2: "supervisor call (svc)",
            7: "breakpoint / trap instruction (bkpt)"},
    "riscv64": {0: "misaligned instruction fetch", 1: "instruction access fault",
                2: "illegal instruction", 3: "breakpoint (ebreak)", 4: "misaligned load",
                5: "load access fault", 6: "misaligned store", 7: "store access fault",
                8: "environment call (ecall)", 9: "environment call (ecall)",
                11: "environment call (ecall)"},
}
_INTR["i386"] = _INTR["x86_64"]
_TRAP_MNEMONICS = {"ud2", "udf", "brk", "bkpt", "ebreak", "c.ebreak", "unimp", "c.unimp", "trap",
                   "int3"}
_INTR["riscv32"] = _INTR["riscv64"]


class _Cause(DataRecord):
    """What went wrong: a kind of fault and, for memory faults, the access."""
    kind: str
    access: str | None = None
    address: int | None = None
    size: int | None = None


def build_fault(m: Any, err: int, pc: int, entry: int, *, interrupted: bool = False,
                mem_fault: tuple[int, int, int, int] | None = None,
                intno: int | None = None) -> EmulationFault:
    """The ``EmulationFault`` for a call to ``entry`` that stopped at ``pc``.

    ``err`` is unicorn's error code, ``interrupted`` whether the interrupt
    hook stopped it, ``mem_fault`` the (kind, address, size, value) the
    invalid-memory hook recorded and ``intno`` the exception number the
    interrupt hook saw.  ``m`` is read through its public accessors only:
    ``arch``, ``registers``, ``symbolize``, ``source_line``, ``try_read``,
    ``describe_address``, ``stub_name``, ``is_code`` and ``stack_range``.
    """
    arch = m.arch
    regs = m.registers()
    if arch.name.startswith("riscv") and (err == 21 or interrupted):
        pc -= 4            # unicorn reports riscv exceptions past the instruction
    cause = _classify(arch, err, interrupted, pc, mem_fault, intno)
    sym = m.symbolize(pc)
    insns = _code_around(m, pc, sym)
    cur = next((i for i in insns if i.address == pc), None)
    if cur is not None:
        cause.kind = _refine_kind(arch, err, cause.kind, cur)
    frames = backtrace(m, pc, regs)
    notes: list[str] = []
    src = _source_line(m, pc, notes)
    slid = _zero_run_note(m, pc)
    if slid:
        notes.append(slid)
    headline = f"{cause.kind}"
    if cause.address is not None and cause.access != "fetch":
        headline += f" at {cause.address:#x}" + (f" ({cause.size} bytes)" if cause.size else "")
    headline += f" in {sym}" + (f" ({src})" if src else "") + f" [{arch.name}]"

    lines = [headline, f"  called: {m.symbolize(entry)} ({entry:#x})",
             f"  pc:     {pc:#x} {sym}" + (f" at {src}" if src else "")]
    if cause.address is not None:
        what = f"{cause.access} of {cause.size} bytes" if cause.size else cause.access
        lines.append(f"  access: {what} at {cause.address:#x}: "
                     f"{m.describe_address(cause.address, cause.size or 1)}")
    lines += _backtrace_lines(m, frames, notes)
    if insns:
        lines.append("  code:")
        for ins in insns:
            mark = "=>" if ins.address == pc else "  "
            lines.append(f"    {mark} {ins.address:#x} {m.symbolize(ins.address):<28} "
                         f"{ins.mnemonic} {ins.op_str}".rstrip())
    lines += _register_lines(arch, regs)
    lines += [f"  note: {n}" for n in notes]

    exc = EmulationFault("\n".join(lines))
    fields = dict(arch=arch.name, pc=pc, symbol=sym, kind=cause.kind, address=cause.address,
                  access=cause.access, size=cause.size, registers=regs,
                  disassembly=[f"{i.address:#x}: {i.mnemonic} {i.op_str}".rstrip() for i in insns],
                  backtrace=[(a, m.symbolize(a)) for a, _how in frames], source=src,
                  entry=entry, intno=intno, headline=headline)
    for k, v in fields.items():
        setattr(exc, k, v)
    return exc


_MIN_INSN = {"x86_64": 1, "i386": 1, "riscv64": 2, "riscv32": 2, "aarch64": 4, "arm": 2}


def _zero_run_note(m: Any, pc: int) -> str | None:
    """When the guest executed zero bytes up to ``pc``: where that run of
    zeros starts.  Code that reaches zeros called or jumped to a place with no
    code: a function compiled to zero bytes (a body the compiler reduced to
    ``unreachable``, which then runs into whatever follows) or a bad code
    pointer.  The fault itself comes later (a zero instruction's memory
    access, or the end of the executable pages) and names a misleading pc."""
    align = _MIN_INSN.get(m.arch.name, 1)
    head = m.try_read(pc, 4)
    if head is None or any(head):
        return None
    start, limit = pc, 1 << 16
    while pc - start < limit:
        lo = max(start - 256, pc - limit)
        chunk = m.try_read(lo, start - lo) if lo < start else None
        if not chunk:
            break
        nz = len(chunk.rstrip(b"\0"))
        if nz:
            start = lo + nz
            break
        start = lo
    start = -(-start // align) * align
    if not m.is_code(start):
        return None
    sym = m.symbolize(start)
    where = f"{start:#x}" + ("" if sym.startswith("0x") else f" {sym}")
    return (f"the code at pc is zero bytes, and so is all code back to {where}: execution ran "
            f"into padding or unwritten memory (a call to a function compiled to zero bytes, "
            f"e.g. one whose body is `unreachable`, or a bad code pointer)")


def _classify(arch: Any, err: int, interrupted: bool, pc: int,
              mem: tuple[int, int, int, int] | None, intno: int | None) -> _Cause:
    if mem is not None and (err in _MEM_ERRORS or err == 0):
        hk, address, size, _value = mem
        access, kind = _MEM_ERRORS.get(_HOOK_KIND_TO_ERR.get(hk, err),
                                       ("access", "invalid memory access"))
        return _Cause(kind, access, address, size)
    if err in _MEM_ERRORS:
        access, kind = _MEM_ERRORS[err]
        return _Cause(kind, access, pc if access == "fetch" else None)
    if err == 10:
        return _Cause("invalid instruction")
    if err == 21 or interrupted:
        intr = _INTR.get(arch.name, {}).get(intno if intno is not None else -1)
        if intr is None:
            intr = f"CPU exception {intno}" if intno is not None else "unhandled CPU exception"
        return _Cause(intr)
    return _Cause(f"emulation error: {strerror(err)}")


_TRAP_KINDS = ("invalid instruction", "undefined instruction", "invalid opcode",
               "illegal instruction", "breakpoint / trap instruction (brk)",
               "breakpoint / trap instruction (bkpt)", "breakpoint (ebreak)")


def _refine_kind(arch: Any, err: int, kind: str, cur: Any) -> str:
    """Name traps and x86 division errors by the faulting instruction."""
    text = f"{cur.mnemonic} {cur.op_str}".strip()
    if kind in _TRAP_KINDS and (cur.bytes == arch.trap_insn or cur.mnemonic in _TRAP_MNEMONICS):
        kind = f"trap instruction ({text}: __builtin_trap / abort)"
    if arch.name in ("x86_64", "i386") and cur.mnemonic in ("div", "idiv") and err in (0, 21):
        kind = "division error (divide by zero or quotient overflow)"
    if arch.name in ("x86_64", "i386") and cur.mnemonic == "ud2":
        kind = "trap instruction (ud2: __builtin_trap / abort)"
    return kind


def _source_line(m: Any, addr: int, notes: list[str]) -> str | None:
    """``file:line`` for ``addr``; a resolver that fails (a user's, or
    unreadable DWARF) must not replace the fault: its error becomes a note."""
    try:
        return m.source_line(addr)
    except Exception as e:  # noqa: BLE001 - reported in the fault's notes
        msg = f"line information failed: {type(e).__name__}: {e}"
        if msg not in notes:
            notes.append(msg)
        return None


def _backtrace_lines(m: Any, frames: list[tuple[int, str]], notes: list[str]) -> list[str]:
    if not frames:
        return []
    lines = ["  backtrace:"]
    i = 0
    while i < len(frames):
        a, how = frames[i]
        same = 1
        while i + same < len(frames) and frames[i + same][0] == a:
            same += 1
        s = m.symbolize(a)
        line = _source_line(m, a if i == 0 else a - 1, notes)
        lines.append(f"    #{i} {a:#x} {s}" + (f" ({line})" if line else "")
                     + (f"  [{how}]" if how else "")
                     + (f"  (x{same}: #{i}..#{i + same - 1} identical)" if same > 1 else ""))
        i += same
    if len(frames) >= 64:
        lines.append("    ... (more frames not shown)")
    return lines


def _register_lines(arch: Any, regs: dict[str, int]) -> list[str]:
    w = 8 if arch.bits == 32 else 16
    items = [f"{k.lower():>6}={v:0{w}x}" for k, v in regs.items()]
    return ["  registers:"] + ["   " + " ".join(items[i:i + 4]) for i in range(0, len(items), 4)]


def _code_around(m: Any, pc: int, sym: str) -> list[Any]:
    arch = m.arch
    thumb = arch.name == "arm" and bool(m.registers(["CPSR"])["CPSR"] & 0x20)
    fixed = arch.name in ("aarch64", "arm") and not thumb
    start = pc
    match = _SYM_OFF.match(sym)
    off = int(match.group(2), 16) if match else (0 if not sym.startswith("0x") else None)
    if fixed:
        start = pc - 16
    elif off is not None and off <= 96:
        start = pc - off
    if thumb:
        start = (pc - min(off if off is not None else 8, 12)) & ~1
    for s in (start, pc):
        code = m.try_read(s, pc - s + 24)
        if code is None:
            # maybe only the part from pc on is readable
            continue
        insns = disassemble(code, s, arch, thumb=thumb)
        if any(i.address == pc for i in insns):
            before = [i for i in insns if i.address < pc][-4:]
            after = [i for i in insns if i.address >= pc][:4]
            return before + after
    return []


def backtrace(m: Any, pc: int, regs: dict[str, int]) -> list[tuple[int, str]]:
    """Frames as (address, how-found): the pc, the link register when it
    points elsewhere, then the frame-pointer chain."""
    arch = m.arch
    cc = arch.cc
    frames: list[tuple[int, str]] = [(pc, "")]
    lo, hi = m.stack_range

    def code_addr(a: int) -> bool:
        return a not in (0, SENTINEL) and m.is_code(a)

    def read_word(a: int) -> int | None:
        b = m.try_read(a, arch.word)
        return None if b is None else int.from_bytes(b, "little")

    def func_of(a: int) -> str:
        s = m.symbolize(a)
        mt = _SYM_OFF.match(s)
        return mt.group(1) if mt else s

    if cc.lr is not None:
        lr = regs.get(cc.lr)
        if lr is None:
            lr = m.registers([cc.lr])[cc.lr]
        if code_addr(lr & ~1) and func_of(lr & ~1) != func_of(pc):
            frames.append((lr & ~1, "lr"))
    if cc.fp and cc.frame:
        fp = regs.get(cc.fp)
        if fp is None:
            fp = m.registers([cc.fp])[cc.fp]
        prev_off, ret_off = cc.frame
        seen = 0
        while seen < 64 and lo <= fp + min(prev_off, ret_off) and fp + max(prev_off, ret_off) < hi:
            ret = read_word(fp + ret_off)
            nxt = read_word(fp + prev_off)
            if ret is None or nxt is None:
                break
            if arch.name == "arm":
                ret &= ~1
            if not code_addr(ret):
                break
            if not (len(frames) == 2 and frames[1][1] == "lr" and frames[1][0] == ret
                    and len(frames) == 2 and seen == 0):
                frames.append((ret, "fp"))
            if nxt <= fp:
                break
            fp = nxt
            seen += 1
    return frames
