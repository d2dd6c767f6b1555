"""Lay an ELF out, place it in a machine's address space, relocate, protect.

The image is assembled in a host buffer (segments copied, .bss zero), the
relocations are applied there for the base the machine reserved, and the
finished bytes are written to the machine in one go.  The same code therefore
loads into host memory (native) or into an emulator (emulated).
"""
from __future__ import annotations

import struct
from collections.abc import Callable

from .._support.records import DataRecord, field
from ..arch import Check, Formula
from ..errors import ElfkitError, LayoutError, RelocationError
from ..exec.base import PROT_EXEC, PROT_NONE, PROT_READ, PROT_WRITE, Machine
from ..signature import parse as _parse_sig
from . import tags as T
from .parse import ElfFile
from .plan import IMAGE_KEEP_MAX, LoadPlan, Relative, plain_relative
from .relocate import Deferred, ImageBuffer, Stats, add_bias, apply, store


def _align_down(v: int, a: int) -> int:
    return v & ~(a - 1)


def _align_up(v: int, a: int) -> int:
    return (v + a - 1) & ~(a - 1)


class Layout(DataRecord, frozen=True, slots=True):
    lo: int        # lowest link-time address covered (aligned)
    size: int      # bytes to reserve (page multiple)
    align: int     # alignment the base must have (largest p_align, at least a page)


def layout(elf: ElfFile, page: int) -> Layout:
    loads = elf.loads
    align = max([page] + [s.align for s in loads if s.align > 1])
    lo = min(_align_down(s.vaddr, max(s.align, 1)) for s in loads)
    lo = _align_down(lo, page)
    hi = max(_align_up(s.vaddr + s.memsz, max(s.align, 1)) for s in loads)
    size = _align_up(hi - lo, page)
    if size > elf.limits.max_image_size:
        raise LayoutError(f"image needs {size:#x} bytes of address space, more than the limit "
                          f"({elf.limits.max_image_size:#x})")
    return Layout(lo, size, align)


def build(elf: ElfFile, lay: Layout, into: memoryview | None = None) -> ImageBuffer:
    """The image at link-time addresses: file bytes copied, the rest zero
    (copied into ``into``, zero-filled and ``lay.size`` bytes, when given)."""
    image = bytearray(lay.size) if into is None else into
    data = elf.data
    for s in elf.loads:
        if s.filesz:
            start = s.vaddr - lay.lo
            image[start:start + s.filesz] = data[s.offset:s.offset + s.filesz]
    return image


def _prot(flags: int) -> int:
    p = PROT_NONE
    if flags & T.PF_R:
        p |= PROT_READ
    if flags & T.PF_W:
        p |= PROT_WRITE | PROT_READ
    if flags & T.PF_X:
        p |= PROT_EXEC | PROT_READ
    return p


class LoadedImage(DataRecord, slots=True):
    elf: ElfFile
    machine: Machine
    base: int            # where the reservation starts
    bias: int            # runtime address = bias + link-time address
    size: int
    stats: Stats
    # the final protection runs and RELRO ranges, image offsets (see protections)
    prot_runs: tuple[list[tuple[int, int, int]], list[tuple[int, int]]] = ([], [])
    # IFUNC relocations left unapplied because the machine cannot run code
    unapplied: list[str] = field(default_factory=list)
    released: bool = False
    # the plan's kept image when the range was filled with it (see release)
    kept: bytes | None = None

    @property
    def protections(self) -> list[tuple[int, int, int]]:
        """``(address, size, prot)`` of every PT_LOAD's pages, then each
        RELRO range (read-only), as placing the image set them."""
        prots, relro = self.prot_runs
        base = self.base
        return ([(base + a, s, p) for a, s, p in prots]
                + [(base + start, size, PROT_READ) for start, size in relro])

    def address(self, vaddr: int) -> int:
        return self.bias + vaddr

    def contains(self, addr: int, size: int = 1) -> bool:
        return self.base <= addr and addr + size <= self.base + self.size

    def run_init(self) -> None:
        """DT_INIT, then DT_INIT_ARRAY in order (entries 0 and -1 skipped)."""
        for addr in self._init_list():
            self.machine.call(addr, _VOID, ())

    def _init_list(self) -> list[int]:
        out = []
        if self.elf.init:
            out.append(self.bias + self.elf.init)
        out += self._array(self.elf.init_array)
        return out

    def run_fini(self) -> None:
        """DT_FINI_ARRAY in reverse order, then DT_FINI."""
        for addr in reversed(self._array(self.elf.fini_array)):
            self.machine.call(addr, _VOID, ())
        if self.elf.fini:
            self.machine.call(self.bias + self.elf.fini, _VOID, ())

    def _array(self, arr: tuple[int, int]) -> list[int]:
        vaddr, count = arr
        if not count:
            return []
        w = self.elf.word
        raw = self.machine.read(self.bias + vaddr, count * w)
        allones = (1 << (8 * w)) - 1
        out = []
        for i in range(count):
            v = int.from_bytes(raw[i * w:(i + 1) * w], "little")
            if v in (0, allones):
                continue
            if not self.contains(v):
                raise ElfkitError(f"init/fini array entry {i} at {self.bias + vaddr + i * w:#x} "
                                  f"points to {v:#x}, outside the image")
            out.append(v)
        return out

    def release(self) -> None:
        if not self.released:
            self.released = True
            if self.kept is None:
                self.machine.release(self.base, self.size)
            else:           # a reload at this address may take the range back as it is
                self.machine.release_image(self.base, self.size, self.kept)


_VOID = _parse_sig("void()")


def place(plan: LoadPlan, machine: Machine,
          symbol_address: Callable[[int, int], int],
          imports_key: tuple[int, ...] = ()) -> LoadedImage:
    """Reserve, relocate, write, protect.  ``symbol_address(i, bias)`` gives S
    for dynamic symbol i (defined ones are bias + st_value; imports bound).
    ``imports_key``: the addresses the imports are bound to (what, with the
    file and the load bias, the relocated image depends on).  What depends
    on the file alone is worked out once, in ``plan``."""
    elf = plan.elf
    page = machine.arch.page_size
    if plan.layout is None or plan.layout[0] != page:
        plan.layout = (page, layout(elf, page))
    lay: Layout = plan.layout[1]
    if plan.protections is None or plan.protections[0] != page:
        prots = _page_prots(elf, lay, page)
        relro = _relro(elf, lay, page)
        plan.protections = (page, prots, relro,
                            _final_calls(prots, relro, lay.size, page, PROT_READ | PROT_WRITE),
                            _final_calls(prots, relro, lay.size, page, PROT_NONE))
    _page, prots, relro, final, from_none = plan.protections
    kept = plan.image
    if kept is not None and kept[0] == page and kept[3] == imports_key and not kept[5] \
            and machine.reuse(kept[1] + lay.lo, lay.size, kept[2]):
        # the range a close of this plugin left, still holding the image relocated for it
        base = kept[1] + lay.lo
        calls = from_none
        li = LoadedImage(elf, machine, base, kept[1], lay.size, _copy(kept[4]), kept=kept[2])
        deferred: list[Deferred] = []
    else:
        base = machine.reserve(lay.size, lay.align)
        calls = final
        li = None
    try:
        if li is None:
            deferred, stats = _relocated(plan, lay, page, machine, base, symbol_address,
                                         imports_key)
            li = LoadedImage(elf, machine, base, base - lay.lo, lay.size, stats)
            kept = plan.image
            if not deferred and kept is not None and kept[1] == li.bias and kept[0] == page \
                    and kept[3] == imports_key:
                li.kept = kept[2]
        li.prot_runs = (prots, relro)
        # Final protections for every PT_LOAD; RELRO after deferred relocations.
        if not deferred:        # straight to the final protections, in fewest calls
            for addr, size, prot in calls:
                machine.protect(base + addr, size, prot)
            return li
        for addr, size, prot in prots:
            if prot != PROT_READ | PROT_WRITE:      # a reservation starts read/write
                machine.protect(base + addr, size, prot)
        if machine.can_execute:
            _apply_deferred(li, deferred)
        else:
            li.unapplied = [f"{d.index} (IFUNC resolver at {d.resolver:#x})" for d in deferred]
        for start, size in relro:       # RELRO after the deferred relocations
            machine.protect(base + start, size, PROT_READ)
        return li
    except BaseException:
        machine.release(base, lay.size)
        raise


def _relocated(plan: LoadPlan, lay: Layout, page: int, machine: Machine, base: int,
               symbol_address: Callable[[int, int], int], imports_key: tuple[int, ...]
               ) -> tuple[list[Deferred], Stats]:
    """Write the image relocated for ``base`` into the new reservation there:
    the plan's kept one when it was relocated for the same bias, page size
    and imports; else laid out and relocated in place when the reservation
    is host memory (``Machine.host_view``: no second copy of the image to
    allocate, fault in and copy over), or in a buffer written in one go.
    An image of at most IMAGE_KEEP_MAX bytes is kept in the plan, with its
    IFUNC relocations still to apply (their resolvers run at every load):
    both are a function of the file, the bias and the imports' addresses
    alone."""
    elf = plan.elf
    bias = base - lay.lo
    kept = plan.image
    if kept is not None and kept[1] == bias and kept[0] == page and kept[3] == imports_key:
        machine.write(base, kept[2])
        return list(kept[5]), _copy(kept[4])
    view = machine.host_view(base, lay.size)
    image = build(elf, lay, view)
    rel = plan.relative
    if rel is None:
        rel = plan.relative = plain_relative(elf, lay.lo, image) or False
    if isinstance(rel, Relative):
        deferred, stats = _apply_relative(rel, image, bias, elf.word)
    else:
        deferred, stats = apply(elf, image, lay.lo, bias, lambda i: symbol_address(i, bias))
    if lay.size <= IMAGE_KEEP_MAX:
        plan.image = (page, bias, bytes(image), imports_key, _copy(stats), tuple(deferred))
    if view is None:
        machine.write(base, image)
    return deferred, stats


def _copy(stats: Stats) -> Stats:
    return Stats(dict(stats.by_type), stats.total)


def _apply_relative(rel: Relative, image: ImageBuffer, bias: int, w: int
                    ) -> tuple[list[Deferred], Stats]:
    """Relocate by a plan's plain RELATIVE list (see ``plan.plain_relative``)."""
    if rel.positions is None:
        add_bias(image, rel.words, rel.values, rel.runs, bias, w)
        return [], Stats(dict(rel.counts), rel.total)
    fmt, mask = ("<Q", 0xFFFFFFFFFFFFFFFF) if w == 8 else ("<I", 0xFFFFFFFF)
    pack = struct.pack_into
    for pos, a in zip(rel.positions, rel.addends or ()):
        pack(fmt, image, pos, (bias + a) & mask)
    return [], Stats(dict(rel.counts), rel.total)


def _final_calls(prots: list[tuple[int, int, int]], relro: list[tuple[int, int]], size: int,
                 page: int, start: int) -> list[tuple[int, int, int]]:
    """``protect`` calls that take a reservation whose pages are all
    ``start`` (read/write when new, PROT_NONE when kept) to the final
    protections (``prots``, then RELRO read-only): one per run that is not
    ``start``, or, when fewer, the whole image to its commonest protection
    first and then the runs that differ."""
    final = [PROT_NONE] * (size // page)
    for addr, n, prot in prots:
        final[addr // page:(addr + n) // page] = [prot] * (n // page)
    for begin, n in relro:
        final[begin // page:(begin + n) // page] = [PROT_READ] * (n // page)
    runs = []
    i = 0
    while i < len(final):
        j = i
        while j + 1 < len(final) and final[j + 1] == final[i]:
            j += 1
        runs.append((i * page, (j - i + 1) * page, final[i]))
        i = j + 1
    plain = [r for r in runs if r[2] != start]
    common = max(set(final), key=final.count)
    first = [] if common == start else [(0, size, common)]
    whole = first + [r for r in runs if r[2] != common]
    return whole if len(whole) < len(plain) else plain


def _relro(elf: ElfFile, lay: Layout, page: int) -> list[tuple[int, int]]:
    """``(image offset, size)`` of each PT_GNU_RELRO, whole pages."""
    out = []
    for s in elf.segments:
        if s.type == T.PT_GNU_RELRO and s.memsz:
            start = _align_down(s.vaddr, page) - lay.lo
            end = _align_up(s.vaddr + s.memsz, page) - lay.lo
            # lld pads RELRO to a page end; never protect beyond the image
            end = min(end, lay.size)
            if end > start:
                out.append((start, end - start))
    return out


def _page_prots(elf: ElfFile, lay: Layout, page: int) -> list[tuple[int, int, int]]:
    """Per-page protection: a page shared by two segments gets the union."""
    npages = lay.size // page
    prot = [PROT_NONE] * npages
    for s in elf.loads:
        if not s.memsz:
            continue
        a = (_align_down(s.vaddr, page) - lay.lo) // page
        b = (_align_up(s.vaddr + s.memsz, page) - lay.lo) // page
        p = _prot(s.flags)
        for i in range(a, b):
            prot[i] |= p
    for i, p in enumerate(prot):
        if p & PROT_WRITE and p & PROT_EXEC:
            raise LayoutError(f"page at offset {i * page:#x} would be both writable and executable "
                              f"(segments share a page); refusing W+X")
    out = []
    i = 0
    while i < npages:
        j = i
        while j + 1 < npages and prot[j + 1] == prot[i]:
            j += 1
        out.append((i * page, (j - i + 1) * page, prot[i]))
        i = j + 1
    return out


_PTR_FN = _parse_sig("ptr()")


def _apply_deferred(li: LoadedImage, deferred: list[Deferred]) -> None:
    m = li.machine
    problems = []
    w = li.elf.word
    for d in deferred:
        if not li.contains(d.resolver):
            problems.append(f"{d.index}: resolver address {d.resolver:#x} is outside the image")
            continue
        try:
            r = m.call(d.resolver, _PTR_FN, ())
        except ElfkitError as e:
            raise RelocationError(f"{d.index}: calling the IFUNC resolver at {d.resolver:#x} "
                                  f"failed: {e}") from e
        v = r if d.formula is Formula.SYM else (r + d.addend if d.formula is Formula.ABS
                                                else r + d.addend - d.p)
        buf = bytearray(d.width // 8)
        err = store(buf, 0, d.width, Check.WRAP if d.width == 8 * w else Check.SIGNED, v, w)
        if err:
            problems.append(f"{d.index}: value {v:#x} {err}")
            continue
        m.write(li.base + d.place, buf)
    if problems:
        raise RelocationError(f"{len(problems)} IFUNC relocation(s) cannot be applied", problems)
