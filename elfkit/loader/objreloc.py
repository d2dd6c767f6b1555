"""Apply the relocation sections of a relocatable object to its image.

The per-architecture tables (``Arch.obj_relocs``) say what each type
computes (``ObjFormula``), how the value is checked, shifted and which
instruction field takes it (``fields.py``); this module evaluates them.
Every problem is collected and reported at once, each naming the
relocation section, index, offset, type and symbol."""
from __future__ import annotations

from collections import Counter

from ..arch import Check, ObjFormula
from ..errors import RelocationError, UnsupportedError
from . import tags as T
from .fields import FIELDS, FieldError, sext, uleb128_write
from .headers import TLS_MESSAGE
from .objlayout import ObjLayout, implicit_addend, per_table
from .objparse import SHN_ABS, SHN_COMMON, SHT_NOBITS, ObjectFile, RelSection
from .relocate import ImageBuffer, Stats

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["apply_object", "describe_reloc", "address_limit", "link_debug"]

F = ObjFormula
SHN_UNDEF = 0
#: what relocations of DWARF sections compute (addresses, offsets, lengths)
_DEBUG_FORMULAS = (F.NONE, F.RELAX, F.ABS, F.SET, F.ADD, F.SUB, F.SET_ULEB, F.SUB_ULEB)
SHF_COMPRESSED = 0x800
_NOPS = (b"\x13\x00\x00\x00", b"\x01\x00")      # RISC-V nop, c.nop


def describe_reloc(elf: ObjectFile, rs: RelSection, i: int) -> str:
    """``.rela.text[3] at offset 0x10: R_X86_64_PLT32 against symbol 7 'f'``."""
    rt = elf.arch.obj_relocs.get(rs.types[i])
    name = rt.name if rt is not None else f"unknown type {rs.types[i]}"
    s = f"{rs.name}[{i}] at offset {rs.offsets[i]:#x}: {name}"
    sym = rs.syms[i]
    if sym:
        symbol = elf.symbols[sym]
        label = symbol.name or (f"section {elf.sections[symbol.shndx].name}"
                                if symbol.shndx < len(elf.sections) else "")
        s += f" against symbol {sym} {label!r}"
    return s




def address_limit(elf: ObjectFile, lay: ObjLayout) -> tuple[int, list[str]] | None:
    """Where the image must end when the object has absolute relocations
    narrower than an address against its own symbols (x86_64 ``-fno-pic``
    R_X86_64_32/32S, riscv64 medlow HI20/LO12: the low 2 GiB): (the lowest
    such bound, each value S+A, one past the end of an array too, staying
    below its field's limit; every such relocation described); None when
    the image may go anywhere."""
    relocs = elf.arch.obj_relocs
    width = 8 * elf.word
    end = 1 << width
    offenders = []
    # the S+A types narrower than an address
    narrow = per_table(relocs, width, lambda table: frozenset(
        t for t, rt in table.items() if rt.formula is F.ABS and 0 < rt.bits < width))
    for rs in elf.relsections:
        if not elf.sections[rs.target].alloc or narrow.isdisjoint(rs.types):
            continue
        for i, (rtype, sym) in enumerate(zip(rs.types, rs.syms)):
            if rtype not in narrow or not sym:
                continue
            rt = relocs[rtype]
            s = elf.symbols[sym]
            at = lay.symoff[sym]
            if at is None or s.absolute:
                continue        # an import's address is where its provider is
            a = rs.addends[i] if rs.rela else implicit_addend(elf, rs, i, rt.field) or 0
            lim = 1 << (rt.bits - (rt.check is Check.SIGNED))
            end = min(end, lim - max(0, at + a + 1 - lay.size))
            offenders.append(describe_reloc(elf, rs, i))
    return (end, offenders) if offenders else None


def link_debug(elf: ObjectFile, lay: ObjLayout) -> tuple[dict[int, bytes], list[str]]:
    """The object's ``.debug_*`` sections (index -> bytes) with their
    relocation sections applied as a linker would with the image at 0 (a
    symbol is its image offset; one in a section that is not loaded, such as
    ``.debug_str``'s section symbol, is its offset in that section): the
    DWARF then reads as a linked plugin's, moved to the load address the
    same way.  The same tables and code as the loaded sections'; ({}, every
    problem) when some relocation cannot be applied."""
    out: dict[int, bytearray] = {}
    symaddr: list[int] = []
    problems: list[str] = []
    for rs in elf.relsections:
        sec = elf.sections[rs.target]
        if sec.alloc or not sec.name.startswith(".debug_") or sec.type == SHT_NOBITS:
            continue
        if sec.flags & SHF_COMPRESSED:
            problems.append(f"{rs.name}: relocates {sec.name}, which is compressed")
            continue
        if not symaddr:
            symaddr = [off if off is not None else s.value if s.defined and not s.common else 0
                       for s, off in zip(elf.symbols, lay.symoff)]
        buf = out.setdefault(rs.target, bytearray(elf.data[sec.offset:sec.offset + sec.size]))
        st = _State(elf, lay, buf, 0, symaddr)
        st.sections, st.debug = {rs.target: 0}, True
        _apply_section(st, rs)
        problems += st.problems + [f"{t}: a TLS relocation" for t in st.tls]
    return ({}, problems) if problems else ({k: bytes(v) for k, v in out.items()}, [])


def _check(v: int, bits: int, check: Check) -> str:
    lim = 1 << bits
    if check is Check.SIGNED and not -(lim >> 1) <= v < (lim >> 1):
        return f"does not fit a signed {bits}-bit field"
    if check is Check.UNSIGNED and not 0 <= v < lim:
        return f"does not fit an unsigned {bits}-bit field"
    if check is Check.EITHER and not -(lim >> 1) <= v < lim:
        return f"does not fit a {bits}-bit field"
    return ""


class _State:
    """What one load's relocation loop shares: the image and the addresses."""

    def __init__(self, elf: ObjectFile, lay: ObjLayout, image: ImageBuffer, base: int,
                 symaddr: list[int]):
        self.elf, self.lay, self.image, self.base, self.symaddr = elf, lay, image, base, symaddr
        self.w = elf.word
        self.sections = lay.sections        # section index -> its offset in ``image``
        self.debug = False                  # relocating a .debug_* section (linked at 0)
        self.got = base + lay.got
        self.problems: list[str] = []
        self.tls: list[str] = []
        self.counts: dict[str, int] = {}
        self.total = 0
        self.hi: dict[int, int] = {}        # RISC-V: address of an AUIPC -> its full value
        self.uleb: dict[int, int] = {}      # RISC-V: place of SET_ULEB128 -> S+A


def apply_object(elf: ObjectFile, lay: ObjLayout, image: ImageBuffer, base: int,
                 symaddr: list[int]) -> Stats:
    """Relocate ``image`` (the laid-out object, to live at ``base``):
    ``symaddr[i]`` is S of symbol ``i`` (imports bound).  Writes the GOT
    slots and veneers too."""
    st = _State(elf, lay, image, base, symaddr)
    w = st.w
    for (sym, add), off in lay.got_slots.items():
        image[off:off + w] = ((symaddr[sym] + add) & ((1 << 8 * w) - 1)).to_bytes(w, "little")
    arch = elf.arch
    for (sym, add, thumb), off in lay.veneers.items():
        code = bytearray(arch.veneer_thumb if thumb else arch.veneer)
        slot = len(code) - w if thumb else arch.veneer_slot
        code[slot:slot + w] = ((symaddr[sym] + add) & ((1 << 8 * w) - 1)).to_bytes(w, "little")
        image[off:off + len(code)] = code
    for rs in elf.relsections:
        if rs.target in lay.sections:
            _apply_section(st, rs)
    if st.tls:
        raise UnsupportedError(f"{TLS_MESSAGE}; the object has {len(st.tls)} TLS relocation(s): "
                               + "; ".join(st.tls[:10]) + (" ..." if len(st.tls) > 10 else ""))
    if st.problems:
        raise RelocationError(f"{len(st.problems)} relocation(s) cannot be applied", st.problems)
    return Stats(st.counts, st.total)


_ANY = 1 << 66
_WORDS = {"w8": 1, "w16": 2, "w32": 4, "w64": 8}


def _plains(relocs: dict[int, Any]) -> dict[int, tuple[int, ObjFormula, int, int] | None]:
    """(field size, formula, lowest and one past the highest value it takes:
    any 64-bit value when unchecked) of the relocation types _apply_section
    applies inline in a 64-bit image: S+A, S+A-P or G+A-P into a whole
    little-endian word, nothing shifted, masked or aligned; None for the
    others.  A branch that cannot reach its target goes through _one (and
    its veneer)."""
    return per_table(relocs, "plain", _plain_table)


def _plain_table(relocs: dict[int, Any]) -> dict[int, tuple[int, ObjFormula, int, int] | None]:
    table: dict[int, tuple[int, ObjFormula, int, int] | None] = {}
    for rtype, rt in relocs.items():
        plain = None
        size = _WORDS.get(rt.field)
        if size and rt.formula in (F.ABS, F.PCREL, F.GOT_PCREL) \
                and not (rt.mask or rt.shift or rt.align):
            lo, hi = -_ANY, _ANY
            if rt.bits and rt.check is not Check.WRAP:
                lim = 1 << rt.bits
                lo = 0 if rt.check is Check.UNSIGNED else -(lim >> 1)
                hi = (lim >> 1) if rt.check is Check.SIGNED else lim
            plain = (size, rt.formula, lo, hi)
        table[rtype] = plain
    return table


def _count(st: _State, relocs: dict[int, Any], types: list[int]) -> None:
    """Count the relocations of known types, by type name (in bulk)."""
    counts = st.counts
    for rtype, n in Counter(types).items():
        rt = relocs.get(rtype)
        if rt is not None:
            st.total += n
            counts[rt.name] = counts.get(rt.name, 0) + n


def _apply_section(st: _State, rs: RelSection) -> None:
    elf = st.elf
    relocs = elf.arch.obj_relocs
    sec = elf.sections[rs.target]
    secoff = st.sections[rs.target]
    lows = []
    symbols = elf.symbols
    loaded = st.lay.sections
    debug = st.debug
    nobits = sec.type == SHT_NOBITS
    # the inline path: RELA in a 64-bit image (no addend to decode, no 32-bit wrap)
    inline = rs.rela and st.w == 8 and not debug and not nobits
    plains = _plains(relocs)
    image, symaddr, base, got_slots = st.image, st.symaddr, st.base, st.lay.got_slots
    offsets, syms, addends = rs.offsets, rs.syms, rs.addends
    _count(st, relocs, rs.types)
    for i, rtype in enumerate(rs.types):
        rt = relocs.get(rtype)
        if rt is None:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: not a {elf.arch.name} object "
                               "relocation type this loader knows")
            continue
        f = rt.formula
        if f is F.NONE or f is F.RELAX:
            continue
        if f is F.TLS:
            st.tls.append(describe_reloc(elf, rs, i))
            continue
        if f is F.ALIGN:
            err = _nops(st, sec, secoff + offsets[i], addends[i])
            if err:
                st.problems.append(f"{describe_reloc(elf, rs, i)}: {err}")
            continue
        sym = syms[i]
        target = symbols[sym]
        if target.type == T.STT_GNU_IFUNC:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: against an IFUNC symbol, which "
                               "objects do not support (link the object into a shared one)")
            continue
        if debug and f not in _DEBUG_FORMULAS:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: not an address, offset or "
                               "length, which is all a debug section holds")
            continue
        shndx = target.shndx
        if shndx != SHN_UNDEF and shndx != SHN_ABS and shndx != SHN_COMMON and not debug \
                and shndx not in loaded:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: the symbol is in section "
                               f"{shndx}, which is not loaded (not SHF_ALLOC)")
            continue
        if nobits:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: the place is in a section "
                               f"without contents ({sec.name})")
            continue
        if f is F.PCREL_LO:
            lows.append(i)
            continue
        if inline:
            plain = plains[rtype]
            off = offsets[i]
            if plain is not None and off + plain[0] <= sec.size:
                size, f, lo, hi = plain
                pos = secoff + off
                if f is F.ABS:
                    v = (symaddr[sym] if sym else 0) + addends[i]
                elif f is F.PCREL:
                    v = (symaddr[sym] if sym else 0) + addends[i] - base - pos
                else:
                    g = got_slots.get((sym, 0))
                    v = g + addends[i] - pos if g is not None else hi     # (G+A-P)
                if lo <= v < hi:    # (else _one says what is wrong, or takes a veneer)
                    image[pos:pos + size] = (v & ((1 << 8 * size) - 1)).to_bytes(size, "little")
                    continue
        err = _one(st, rs, i, rt, sec, secoff)
        if err:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: {err}")
    for i in lows:
        rt = relocs[rs.types[i]]
        err = _one(st, rs, i, rt, sec, secoff)
        if err:
            st.problems.append(f"{describe_reloc(elf, rs, i)}: {err}")


def _nops(st: _State, sec: Any, pos: int, n: int) -> str:
    """R_RISCV_ALIGN: the ``n`` bytes at ``pos`` must be NOPs (kept: no relaxation)."""
    end = pos + n
    if n < 0 or end > st.sections[sec.index] + sec.size:
        return f"{n} bytes of alignment padding run past the end of {sec.name}"
    while pos < end:
        for nop in _NOPS:
            if bytes(st.image[pos:pos + len(nop)]) == nop and pos + len(nop) <= end:
                pos += len(nop)
                break
        else:
            return f"the {n} bytes of alignment padding are not all NOPs"
    return ""


def _one(st: _State, rs: RelSection, i: int, rt: Any, sec: Any, secoff: int) -> str:
    """Apply relocation ``i`` of ``rs``; '' or what is wrong."""
    off = rs.offsets[i]
    if rt.field == "uleb128":       # SET_ULEB128 / SUB_ULEB128: a number of its own length
        return _uleb(st, rs, i, rt, sec, secoff)
    fld = FIELDS[rt.field]
    if off + fld.size > sec.size:
        return f"its {fld.size}-byte field runs past the end of {sec.name}"
    image = st.image
    pos = secoff + off
    unit = int.from_bytes(image[pos:pos + fld.size], "little")
    if rs.rela:
        a = rs.addends[i]
    elif fld.decode is None:
        return "REL relocation of a field that holds no addend"
    else:
        a = fld.decode(unit)
    sym = rs.syms[i]
    s = st.symaddr[sym] if sym else 0
    p = st.base + pos
    f = rt.formula
    if f is F.ABS or f is F.SET:
        v = s + a
    elif f is F.PCREL:
        v = _pcrel(st, rt, sym, s + a - p, a, p)
    elif f is F.PAGE_PCREL:
        v = ((s + a) & ~0xFFF) - (p & ~0xFFF)
    elif f in (F.GOT, F.GOT_PCREL, F.GOT_GOTREL, F.GOT_X86):
        if (sym, 0) not in st.lay.got_slots:
            return "a GOT relocation without a symbol"
        g = st.base + st.lay.got_slots[(sym, 0)]
        v = g + a - p if f is F.GOT_PCREL else g + a
        if f is F.GOT_GOTREL or (f is F.GOT_X86 and not _absolute_modrm(image, pos)):
            v -= st.got
        if rt.field == "rv_hi20":
            st.hi[p] = v
    elif f in (F.GDAT, F.GDAT_PAGE):
        if (sym, a) not in st.lay.got_slots:
            return "a GOT relocation without a symbol"
        g = st.base + st.lay.got_slots[(sym, a)]
        v = g if f is F.GDAT else (g & ~0xFFF) - (p & ~0xFFF)
    elif f is F.GOTREL:
        v = s + a - st.got
    elif f is F.GOTPC:
        v = st.got + a - p
    elif f is F.PCREL_LO:
        hi = st.hi.get(s + a)
        if hi is None:
            return f"no R_RISCV_PCREL_HI20 / GOT_HI20 at {s + a:#x} (the AUIPC it pairs with)"
        v = sext(hi, 12)
    elif f is F.ADD:
        v = unit + s + a
    elif f is F.SUB:
        v = unit - (s + a)
    else:  # pragma: no cover - every formula is handled above
        return f"formula {f.value} is not applied to objects"
    return _store(st, rt, fld, pos, unit, v)


def _pcrel(st: _State, rt: Any, sym: int, v: int, a: int, p: int) -> int:
    """S+A-P, through the symbol's veneer when the branch cannot reach it."""
    w64 = st.w == 8
    key = (sym, a - rt.bias, rt.thumb)
    if rt.branch and key in st.lay.veneers and (
            rt.bits and _check(sext(v, 32) if not w64 else v, rt.bits, rt.check)
            or rt.field == "rv_call" and w64 and not -(1 << 31) <= v + 0x800 < (1 << 31)
            or rt.field == "thm_b24" and not v & 1):    # B.W to A32 code
        v = st.base + st.lay.veneers[key] + rt.thumb + rt.bias - p
    if rt.field == "rv_hi20":
        st.hi[p] = v
    elif rt.field == "thm_call" and not v & 1:
        v += p & 2      # a BLX to A32 code counts from P aligned down to 4
    return v


def _uleb(st: _State, rs: RelSection, i: int, rt: Any, sec: Any, secoff: int) -> str:
    """SET_ULEB128 remembers S+A; the SUB_ULEB128 at the same place writes the difference."""
    s = (st.symaddr[rs.syms[i]] if rs.syms[i] else 0) + rs.addends[i]
    pos = secoff + rs.offsets[i]
    if rt.formula is F.SET_ULEB:
        st.uleb[pos] = s
        return ""
    if pos not in st.uleb:
        return "SUB_ULEB128 without the SET_ULEB128 at the same place"
    return uleb128_write(st.image, pos, secoff + sec.size, st.uleb.pop(pos) - s)


def _store(st: _State, rt: Any, fld: Any, pos: int, unit: int, v: int) -> str:
    """Check value ``v`` against ``rt``'s range and alignment and write it into
    the field at ``pos`` (``unit``: its bytes now); '' or what is wrong."""
    image = st.image
    if st.w != 8:     # 32-bit arithmetic wraps: keep the value as a signed 32-bit number
        v = sext(v + 0x800, 32) - 0x800 if rt.field in ("rv_hi20", "rv_call") else sext(v, 32)
    if rt.bits:
        err = _check(v, rt.bits, rt.check)
        if err:
            return f"value {v:#x} {err}"
    if rt.mask:
        v &= rt.mask
    if rt.align and v & ((1 << rt.align) - 1):
        return f"value {v:#x} is not a multiple of {1 << rt.align}"
    try:
        new = fld.encode(unit, v >> rt.shift)
    except FieldError as e:
        return f"value {v:#x} {e}"
    image[pos:pos + fld.size] = (new & ((1 << 8 * fld.size) - 1)).to_bytes(fld.size, "little")
    return ""


def _absolute_modrm(image: ImageBuffer, pos: int) -> bool:
    """i386 GOT32/GOT32X: the instruction's ModRM (the byte before the
    displacement) has no base register (mod 00, r/m 101): G+A, not G+A-GOT."""
    return pos > 0 and (image[pos - 1] & 0xC7) == 0x05
