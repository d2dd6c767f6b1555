"""Place a relocatable object in a machine: reserve its layout, copy the
sections in (``.bss`` and COMMON zero), bind symbols, relocate, write, set
each kind of section's protection (code read/execute, read-only data read,
data read/write) and run ``.preinit_array`` / ``.init_array`` (and at close
``.fini_array``, in reverse) as the shared-object loader runs them."""
from __future__ import annotations

from .._support.records import DataRecord, field
from ..errors import ElfkitError, RelocationError
from ..exec.base import Machine
from ..signature import parse as _parse_sig
from .objlayout import ObjectPlan
from .objparse import SHT_NOBITS, ObjectFile, parse_object
from .objreloc import address_limit, apply_object, link_debug
from .parse import DEFAULT_LIMITS, Limits
from .plan import IMAGE_KEEP_MAX, plan_for
from .relocate import ImageBuffer, Stats

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from ..arch import Arch

__all__ = ["ObjectImage", "object_plan", "place_object"]

_VOID = _parse_sig("void()")


class ObjectImage(DataRecord, slots=True):
    """A placed object, with the interface of ``image.LoadedImage`` that
    ``Module`` uses (the load bias is the base: image offsets are addresses
    relative to it)."""

    elf: ObjectFile
    machine: Machine
    base: int
    size: int
    stats: Stats
    arrays: list[tuple[str, int, int]]     # (kind, address, entries)
    protections: list[tuple[int, int, int]] = field(default_factory=list)
    unapplied: list[str] = field(default_factory=list)
    released: bool = False
    # the plan's kept image when the range holds it (see release)
    kept: bytes | None = None

    @property
    def bias(self) -> int:
        return self.base

    def contains(self, addr: int, size: int = 1) -> bool:
        return self.base <= addr and addr + size <= self.base + self.size

    def _entries(self, kinds: tuple[str, ...]) -> list[int]:
        w = self.elf.word
        allones = (1 << (8 * w)) - 1
        out = []
        for kind, addr, count in self.arrays:
            if kind not in kinds:
                continue
            raw = self.machine.read(addr, count * w)
            for i in range(count):
                v = int.from_bytes(raw[i * w:(i + 1) * w], "little")
                if v in (0, allones):
                    continue
                if not self.contains(v):
                    raise ElfkitError(f".{kind}_array entry {i} at {addr + i * w:#x} points to "
                                      f"{v:#x}, outside the image")
                out.append(v)
        return out

    def run_init(self) -> None:
        """``.preinit_array`` then ``.init_array`` entries, in order."""
        for addr in self._entries(("preinit", "init")):
            self.machine.call(addr, _VOID, ())

    def run_fini(self) -> None:
        """``.fini_array`` entries in reverse order."""
        for addr in reversed(self._entries(("fini",))):
            self.machine.call(addr, _VOID, ())

    def release(self) -> None:
        if not self.released:
            self.released = True
            if self.kept is None:
                self.machine.release(self.base, self.size)
            else:           # a reload at this address may take the range back as it is
                self.machine.release_image(self.base, self.size, self.kept)


def _new_plan(data: memoryview, limits: Limits, expect_arch: Arch | None) -> ObjectPlan:
    elf = parse_object(data, limits=limits, expect_arch=expect_arch)
    plan = ObjectPlan(elf, elf.arch.page_size)
    plan.low = address_limit(elf, plan.layout)
    linked, plan.debug_problems = link_debug(elf, plan.layout)
    if linked:
        elf.data = memoryview(_with_debug(elf, linked))
    return plan


def _with_debug(elf: ObjectFile, linked: dict[int, bytes]) -> bytes:
    """``elf``'s bytes with the relocated debug sections in place and the
    relocation sections that targeted them made SHT_NULL: a DWARF reader
    (pyelftools for the line table, the debugger symfile) applies nothing
    twice."""
    out = bytearray(elf.data)
    for idx, body in linked.items():
        sec = elf.sections[idx]
        out[sec.offset:sec.offset + sec.size] = body
    is64 = elf.elfclass == 2
    shoff = int.from_bytes(out[0x28:0x30] if is64 else out[0x20:0x24], "little")
    for rs in elf.relsections:
        if rs.target in linked:
            at = shoff + rs.index * (64 if is64 else 40) + 4       # sh_type
            out[at:at + 4] = bytes(4)
    return bytes(out)


def object_plan(data: memoryview, limits: Limits = DEFAULT_LIMITS,
                expect_arch: Arch | None = None) -> ObjectPlan:
    """A relocatable object parsed and laid out (page size of its arch),
    remembered like a shared object's plan (``plan.plan_for``)."""
    plan: ObjectPlan = plan_for(data, limits, expect_arch, _new_plan)
    return plan


def _reserve_low(plan: ObjectPlan, machine: Machine) -> int:
    limit, offenders = plan.low or (0, [])
    lay = plan.layout
    base = machine.reserve_low(lay.size, lay.align, limit)
    if base is None:
        raise RelocationError(
            f"the object's absolute relocations need its image ({lay.size:#x} bytes) below "
            f"{limit:#x}, where this {machine.backend} machine has no free range (code built "
            "without -fPIC for a small code model; rebuild it with -fPIC, or load it emulated)",
            offenders)
    return base


def place_object(plan: ObjectPlan, machine: Machine, bound: dict[int, int]) -> ObjectImage:
    """Reserve, fill, relocate, write, protect.  ``bound`` gives the address
    of each import (symbol index -> address; missing weak ones are 0)."""
    elf = plan.elf
    lay = plan.layout
    key = tuple(bound.values())
    kept = plan.image
    if kept is not None and kept[2] == key and kept[4] is not None \
            and machine.reuse(kept[0], lay.size, kept[4]):
        # the range a close of this object left, still holding its image
        try:
            return _protected(plan, machine, kept[0],
                              Stats(dict(kept[3].by_type), kept[3].total), kept[4])
        except BaseException:
            machine.release(kept[0], lay.size)
            raise
    base = machine.reserve(lay.size, lay.align) if plan.low is None else \
        _reserve_low(plan, machine)
    try:
        if kept is not None and kept[0] == base and kept[2] == key:
            # placed at this base with these imports before: the same bytes
            machine.write(base, kept[1])
            return _protected(plan, machine, base, Stats(dict(kept[3].by_type), kept[3].total),
                              kept[4])
        # laid out in place when the reservation is host memory (it starts zeroed)
        view = machine.host_view(base, lay.size)
        image: ImageBuffer = bytearray(lay.size) if view is None else view
        data = elf.data
        for idx, at in lay.sections.items():
            sec = elf.sections[idx]
            if sec.type != SHT_NOBITS and sec.size:
                image[at:at + sec.size] = data[sec.offset:sec.offset + sec.size]
        symaddr = [base + off for off in plan.symbase]
        for i, v in plan.symfixed:
            symaddr[i] = v if v is not None else bound.get(i, 0)
        stats = apply_object(elf, lay, image, base, symaddr)
        filled = _filled(plan)
        whole = None
        if filled <= IMAGE_KEEP_MAX:
            # the whole range's bytes too when its protections cover it
            # (then a close may keep it for a reload to take back as is)
            if lay.size <= IMAGE_KEEP_MAX and sum(n for _o, n, _p in lay.prots) == lay.size:
                whole = bytes(image)
            plan.image = (base, whole[:filled] if whole is not None else bytes(image[:filled]),
                          key, Stats(dict(stats.by_type), stats.total), whole)
        if view is None:
            machine.write(base, image)
        return _protected(plan, machine, base, stats, whole)
    except BaseException:
        machine.release(base, lay.size)
        raise


def _filled(plan: ObjectPlan) -> int:
    """How much of the image loading writes: past it (.bss, COMMON) the
    image stays as the reservation starts, zero.  The whole image when it
    has veneers (their size is the architecture's)."""
    lay = plan.layout
    elf = plan.elf
    if lay.veneers:
        return lay.size
    end = max((lay.got_slots[k] + elf.word for k in lay.got_slots), default=0)
    for idx, at in lay.sections.items():
        sec = elf.sections[idx]
        if sec.type != SHT_NOBITS:
            end = max(end, at + sec.size)
    return min(end, lay.size)


def _protected(plan: ObjectPlan, machine: Machine, base: int, stats: Stats,
               kept: bytes | None = None) -> ObjectImage:
    """Set the final protections of the image written at ``base`` (or
    taken back there holding ``kept``, the plan's whole image)."""
    lay = plan.layout
    for off, size, prot in lay.prots:
        machine.protect(base + off, size, prot)
    return ObjectImage(plan.elf, machine, base, lay.size, stats,
                       [(k, base + off, n) for k, off, n in lay.arrays],
                       [(base + off, size, prot) for off, size, prot in lay.prots],
                       [f"{p} (the DWARF is left unrelocated)" for p in plan.debug_problems],
                       kept=kept)
