"""Disassembly with capstone: decoding, branch targets, symbolised listings.

Used by ``elfkit disasm`` and by the emulated backend's fault reports and
execution trace.  It knows nothing about machines.  capstone's library is
opened on first use, through ctypes (:mod:`elfkit.exec.capstone_lib`: the
``capstone`` package's import costs several times a whole ``elfkit disasm``),
so ``import elfkit`` stays cheap.
"""
from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Mapping

from .._support.records import DataRecord
from ..arch import Arch
from ..arch import get as get_arch

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any


class Instruction(DataRecord, frozen=True, slots=True):
    address: int
    size: int
    mnemonic: str
    op_str: str
    bytes: bytes
    target: int | None = None       # branch/call target, when direct
    comment: str = ""               # e.g. the target's symbol

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.op_str}".strip()

    def __str__(self) -> str:
        s = f"{self.address:#x}: {self.text}"
        return f"{s}  ; {self.comment}" if self.comment else s


@functools.cache
def _cs(arch_name: str, thumb: bool = False) -> Any:
    """A decoder with instruction details (the branch targets)."""
    return _new_cs(arch_name, thumb, True)


def _new_cs(arch_name: str, thumb: bool, detail: bool) -> Any:
    from .capstone_lib import decoder
    arch = get_arch(arch_name)
    return decoder(arch.cs_arch, tuple(arch.cs_mode), thumb, detail)


def symbolizer(symbols: Any) -> Callable[[int], str | None] | None:
    """Turn ``symbols`` (None, a callable ``addr -> str``, a mapping of
    address -> name or name -> address) into ``addr -> "name+0xoff" | None``."""
    if symbols is None:
        return None
    if callable(symbols) and not isinstance(symbols, Mapping):
        return symbols
    items: list[tuple[int, str]] = []
    for k, v in dict(symbols).items():
        if isinstance(k, int):
            items.append((k, str(v)))
        else:
            items.append((int(v), str(k)))
    items.sort()
    addrs = [a for a, _ in items]

    def look(addr: int) -> str | None:
        i = bisect.bisect_right(addrs, addr) - 1
        if i < 0:
            return None
        a, name = items[i]
        return name if addr == a else f"{name}+{addr - a:#x}"
    return look


def _target(arch: Arch, address: int, imm: int | None) -> int | None:
    """The target of a direct jump or call at ``address`` whose last operand
    is the immediate ``imm`` (None: not one)."""
    if imm is None:
        return None
    if arch.name.startswith("riscv"):
        return (address + imm) & ((1 << arch.bits) - 1)
    return imm & ((1 << arch.bits) - 1)


def disassemble(code: bytes, addr: int, arch: Arch | str, symbols: Any = None, *,
                thumb: bool = False, count: int = 0) -> list[Instruction]:
    """Disassemble ``code`` loaded at ``addr``.  Undecodable bytes become
    ``.byte`` entries and decoding resumes after them.  ``symbols`` (see
    ``symbolizer``) annotates direct branch targets."""
    arch = get_arch(arch)
    md = _cs(arch.name, thumb)
    look = symbolizer(symbols)
    out: list[Instruction] = []
    if thumb or arch.name.startswith("riscv"):
        step = 2
    else:
        step = 4 if arch.name in ("arm", "aarch64") else 1
    pos = 0
    code = bytes(code)
    while pos < len(code):
        for address, size, mnemonic, op_str, data, imm in md.decode(code[pos:], addr + pos):
            tgt = _target(arch, address, imm)
            comment = ""
            if tgt is not None and look is not None:
                s = look(tgt)
                comment = s or ""
            out.append(Instruction(address, size, mnemonic, op_str, data, tgt, comment))
            pos = address + size - addr
            if count and len(out) >= count:
                return out
        if pos >= len(code):
            break
        n = min(step, len(code) - pos)
        if n:
            out.append(Instruction(addr + pos, n, ".byte",
                                   ", ".join(f"{b:#04x}" for b in code[pos:pos + n]),
                                   code[pos:pos + n]))
            pos += n
            if count and len(out) >= count:
                return out
    return out


@functools.cache
def _cs_lite(arch_name: str) -> Any:
    """A decoder without instruction details (``disasm_lite``: no objects per
    instruction), for where only instruction boundaries matter."""
    return _new_cs(arch_name, False, False)


def instruction_addresses(code: bytes, addr: int, arch: Arch | str, *,
                          thumb: bool = False) -> list[int]:
    """The address of every instruction in ``code`` loaded at ``addr``, what
    instruction counts and profiles need, without decoding where the
    encoding gives the length: every 4 bytes on aarch64 and arm, by the
    length bits of the first halfword on riscv and thumb (an encoding
    capstone does not know, such as a newer extension's, still counts as one
    instruction).  x86: capstone without details, as ``disassemble`` (the
    same list, ``.byte`` entries included)."""
    arch = get_arch(arch)
    name = arch.name
    end = addr + len(code)
    if name == "aarch64" or (name == "arm" and not thumb):
        return list(range(addr, end, 4))
    if thumb or name.startswith("riscv"):
        out: list[int] = []
        pos, n = 0, len(code)
        riscv = not thumb
        while pos < n:
            out.append(addr + pos)
            if pos + 1 >= n:
                break
            if riscv:
                b = code[pos]
                pos += (2 if b & 3 != 3 else 4 if b & 0x1C != 0x1C else
                        6 if b & 0x3F == 0x1F else 8 if b & 0x7F == 0x3F else 2)
            else:
                pos += 4 if code[pos + 1] >> 3 in (0b11101, 0b11110, 0b11111) else 2
        return out
    md = _cs_lite(name)
    out = []
    pos = 0
    code = bytes(code)
    n = len(code)
    while pos < n:
        for a, size, *_rest in md.decode(code[pos:], addr + pos):
            out.append(a)
            pos = a + size - addr
        if pos >= n:
            break
        out.append(addr + pos)
        pos += 1
    return out


def format_listing(insns: list[Instruction], symbols: Any = None, *, show_bytes: bool = True,
                   labels: Mapping[int, str] | None = None, addr_width: int = 16) -> str:
    """A listing: ``<label>:`` lines at symbol starts, then one line per instruction."""
    look = symbolizer(symbols)
    lines = []
    width = max((len(i.bytes) for i in insns), default=0) * 3
    for i in insns:
        if labels and i.address in labels:
            lines.append(f"\n{i.address:0{addr_width}x} <{labels[i.address]}>:")
        b = i.bytes.hex(" ") if show_bytes else ""
        text = f"  {i.address:8x}:  " + (f"{b:<{min(width, 32)}} " if show_bytes else "") + i.text
        if i.comment:
            text += f"  ; {i.comment}"
        elif i.target is not None:
            s = look(i.target) if look else None
            if s:
                text += f"  ; {s}"
        lines.append(text.rstrip())
    return "\n".join(lines).lstrip("\n")


def longest_x87_run(code: bytes, addr: int) -> int:
    """The most x87 instructions in i386 ``code`` between two control
    transfers (the emulator's x87 work-around, ``elfkit.exec.emulated``)."""
    run = best = 0
    for _a, _s, mnemonic, *_rest in _cs_lite("i386").decode(bytes(code), addr):
        if mnemonic.startswith("f"):
            run += 1
            best = max(best, run)
        elif mnemonic.startswith(("j", "call", "ret", "loop", "hlt", "int", "ud")):
            run = 0
    return best
