"""Which slice to run: IREE's host rule and elfkit's "best to emulate" order.

These work on records (a :class:`~elfkit.fatelf.FatElf` or any iterable of
:class:`~elfkit.fatelf.Record`) and never read a file; :func:`~elfkit.fatelf.select`
and :func:`~elfkit.fatelf.pick_slice` (``reader.py``) apply them to one.
"""
from __future__ import annotations

import sys

from .._support.machines import ARCH_MACHINES, host_arch_name
from .format import BEST_ORDER, BIG, IREE_OSABIS, LITTLE, Record, resolve_arch

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["host_target", "matches_host", "host_record", "best"]


def _records(source: Any) -> list[Record]:
    """The records of a FatElf, or the records given."""
    records = getattr(source, "records", None)
    return list(source if records is None else records)


def host_target(host: Any = None) -> tuple[int, int, int] | None:
    """``(machine, word_size, byte_order)`` (FatELF numbers) of the host, or of
    ``host`` (an arch name/Arch, taken as little-endian) when given; None on
    a host elfkit has no architecture for."""
    if host is None:        # the host's name and machine: no need of elfkit.arch
        name = host_arch_name()
        if name is None:
            return None
        machine, bits = ARCH_MACHINES[name]
        order = LITTLE if sys.byteorder == "little" else BIG
    else:
        from .. import arch as _arch
        a = _arch.get(host) if not isinstance(host, _arch.Arch) else host
        machine, bits, order = a.machine, a.bits, LITTLE
    return machine, (2 if bits == 64 else 1), order   # FatELF word size: 2 = 64-bit


def matches_host(record: Record, host: Any = None) -> bool:
    """IREE's rule: same machine, word size and byte order as the host, and
    osabi NONE (0), Linux (3) or Standalone (255).  ``osabi_version`` and
    the reserved bytes are ignored."""
    t = host_target(host)
    return t is not None and (record.machine, record.word_size, record.byte_order) == t \
        and record.osabi in IREE_OSABIS


def host_record(source: Any, host: Any = None) -> Record | None:
    """The first record IREE's runtime would take on this host (or on
    ``host``), or None.  ``source``: a FatElf or an iterable of records."""
    for r in _records(source):
        if matches_host(r, host):
            return r
    return None


def best(source: Any, available: Iterable[str] | None = None) -> Record | None:
    """The slice to emulate when the host has none of its own.

    Among records whose arch elfkit knows (see :attr:`Record.arch`; only
    those in ``available`` if given), prefer an osabi IREE accepts (NONE,
    Linux, Standalone), then the arch order of :data:`BEST_ORDER`
    (x86_64, aarch64, riscv64, arm, i386, riscv32: 64-bit first, then by how
    mature and fast its emulation is), then file order.  None if no record
    qualifies.
    """
    records = _records(source)
    allowed = set(BEST_ORDER if available is None else (resolve_arch(a) for a in available))
    rank = {name: i for i, name in enumerate(BEST_ORDER)}
    cands = [r for r in records if r.arch is not None and r.arch in allowed]
    if not cands:
        return None
    return min(cands, key=lambda r: (r.osabi not in IREE_OSABIS, rank.get(r.arch or "", 99),
                                     r.index))

