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

import bisect
import re
from typing import Any

from ..errors import EmulationFault

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


def build_fault(m: Any, err: int, stop: str | None, pc: int, entry: int) -> EmulationFault:
    arch = m.arch
    mem = m._mem_fault
    intno = m._intno
    regs = m.registers()
    access = None
    address = None
    size = None
    kind = None
    if arch.name.startswith("riscv") and (err == 21 or stop == "interrupt"):
        pc -= 4            # unicorn reports riscv exceptions past the instruction
    if mem is not None and (err in _MEM_ERRORS or err == 0):
        hk, address, size, _value = mem
        err_m = _HOOK_KIND_TO_ERR.get(hk, err)
        access, kind = _MEM_ERRORS.get(err_m, ("access", "invalid memory access"))
    elif err in _MEM_ERRORS:
        access, kind = _MEM_ERRORS[err]
        address = pc if access == "fetch" else None
    elif err == 10:
        kind = "invalid instruction"
    elif err == 21 or stop == "interrupt":
        kind = _INTR.get(arch.name, {}).get(intno if intno is not None else -1)
        if kind is None:
            kind = f"CPU exception {intno}" if intno is not None else "unhandled CPU exception"
    else:
        from .emulated._uc import strerror
        kind = f"emulation error: {strerror(err)}"
    if access == "fetch" and address is None:
        address = pc

    sym = m.symbolize(pc)
    insns = _code_around(m, pc, sym)
    cur = next((i for i in insns if i.address == pc), None)
    if cur is not None:
        text = f"{cur.mnemonic} {cur.op_str}".strip()
        if kind in ("invalid instruction", "undefined instruction", "invalid opcode",
                    "illegal instruction", "breakpoint / trap instruction (brk)",
                    "breakpoint / trap instruction (bkpt)", "breakpoint (ebreak)") and \
                (cur.bytes == arch.trap_insn or cur.mnemonic in _TRAP_MNEMONICS):
            kind = f"trap instruction ({text}: __builtin_trap / abort)"
        if arch.name in ("x86_64", "i386") and cur.mnemonic in ("div", "idiv") and err in (0, 21):
            kind = "division error (divide by zero or quotient overflow)"
        if arch.name in ("x86_64", "i386") and cur.mnemonic == "ud2":
            kind = "trap instruction (ud2: __builtin_trap / abort)"

    frames = backtrace(m, pc, regs)
    src = m.source_line(pc)

    headline = f"{kind}"
    if address is not None and access != "fetch":
        headline += f" at {address:#x}" + (f" ({size} bytes)" if size else "")
    headline += f" in {sym}"
    if src:
        headline += f" ({src})"
    headline += f" [{arch.name}]"

    lines = [headline]
    lines.append(f"  called: {m.symbolize(entry)} ({entry:#x})")
    lines.append(f"  pc:     {pc:#x} {sym}" + (f" at {src}" if src else ""))
    if address is not None:
        what = f"{access} of {size} bytes" if size else access
        lines.append(f"  access: {what} at {address:#x}: {m._where(address, size or 1)}")
    if frames:
        lines.append("  backtrace:")
        i = 0
        while i < len(frames):
            a, how = frames[i]
            same = 1
            while i + same < len(frames) and frames[i + same][0] == a:
                same += 1
            s = m.symbolize(a)
            line = m.source_line(a if i == 0 else a - 1)
            lines.append(f"    #{i} {a:#x} {s}" + (f" ({line})" if line else "")
                         + (f"  [{how}]" if how else "")
                         + (f"  (x{same}: #{i}..#{i + same - 1} identical)" if same > 1 else ""))
            i += same
        if len(frames) >= 64:
            lines.append("    ... (more frames not shown)")
    if insns:
        lines.append("  code:")
        for ins in insns:
            mark = "=>" if ins.address == pc else "  "
            lines.append(f"    {mark} {ins.address:#x} {m.symbolize(ins.address):<28} "
                         f"{ins.mnemonic} {ins.op_str}".rstrip())
    lines.append("  registers:")
    w = 8 if arch.bits == 32 else 16
    items = [f"{k.lower():>6}={v:0{w}x}" for k, v in regs.items()]
    per = 4
    for i in range(0, len(items), per):
        lines.append("   " + " ".join(items[i:i + per]))

    exc = EmulationFault("\n".join(lines))
    exc.arch = arch.name                 # type: ignore[attr-defined]
    exc.pc = pc                          # type: ignore[attr-defined]
    exc.symbol = sym                     # type: ignore[attr-defined]
    exc.kind = kind                      # type: ignore[attr-defined]
    exc.address = address                # type: ignore[attr-defined]
    exc.access = access                  # type: ignore[attr-defined]
    exc.size = size                      # type: ignore[attr-defined]
    exc.registers = regs                 # type: ignore[attr-defined]
    exc.disassembly = [f"{i.address:#x}: {i.mnemonic} {i.op_str}".rstrip() for i in insns]  # type: ignore[attr-defined]
    exc.backtrace = [(a, m.symbolize(a)) for a, _how in frames]  # type: ignore[attr-defined]
    exc.source = src                     # type: ignore[attr-defined]
    exc.entry = entry                    # type: ignore[attr-defined]
    exc.intno = intno                    # type: ignore[attr-defined]
    exc.headline = headline              # type: ignore[attr-defined]
    return exc


def _code_around(m: Any, pc: int, sym: str) -> list:
    from .trace import disassemble
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
        code = m._try_read(s, pc - s + 24)
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
    sentinel = m._SENTINEL
    lo, hi = m.stack_range

    def code_addr(a: int) -> bool:
        if a == sentinel or a == 0:
            return False
        if m.stub_name(a) is not None:
            return True
        r = m._space.at(a)
        return r is not None and r.exec_ever

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
            ret = m._read_word(fp + ret_off)
            nxt = m._read_word(fp + prev_off)
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


class DwarfLines:
    """``addr -> "file:line"`` from an ELF's ``.debug_line`` (pyelftools, lazy)."""

    def __init__(self, elf: Any, bias: int):
        self._elf = elf
        self._bias = bias
        self._rows: list[tuple[int, str]] | None = None
        self._addrs: list[int] = []

    def _load(self) -> None:
        import io

        from elftools.elf.elffile import ELFFile
        src = self._elf
        if isinstance(src, (bytes, bytearray, memoryview)):
            stream: Any = io.BytesIO(bytes(src))
        else:
            stream = open(src, "rb")
        rows: list[tuple[int, str]] = []
        try:
            ef = ELFFile(stream)
            if ef.has_dwarf_info() and ef.get_section_by_name(".debug_line") is not None:
                dw = ef.get_dwarf_info(relocate_dwarf_sections=True)
                for cu in dw.iter_CUs():
                    lp = dw.line_program_for_CU(cu)
                    if lp is None:
                        continue
                    files = lp["file_entry"]
                    ver = lp.header.version
                    for entry in lp.get_entries():
                        st = entry.state
                        if st is None or st.end_sequence:
                            continue
                        idx = st.file if ver >= 5 else st.file - 1
                        name = "?"
                        if 0 <= idx < len(files):
                            n = files[idx].name
                            name = n.decode("utf-8", "replace") if isinstance(n, bytes) else str(n)
                        rows.append((st.address, f"{name}:{st.line}"))
        finally:
            if stream is not None and not isinstance(src, (bytes, bytearray, memoryview)):
                stream.close()
        rows.sort()
        self._rows = rows
        self._addrs = [r[0] for r in rows]
        self._elf = None

    def __call__(self, addr: int) -> str | None:
        if self._rows is None:
            self._load()
        rel = addr - self._bias
        i = bisect.bisect_right(self._addrs, rel) - 1
        if i < 0 or rel - self._addrs[i] > 4096:
            return None
        return self._rows[i][1]  # type: ignore[index]
