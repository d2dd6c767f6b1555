"""Workgroup race detection (``vmrt run --check_races``).

A dispatch's workgroups may run in any order and at the same time, so no two
of them may write the same byte.  :class:`RaceChecker` is a dispatch
observer (:func:`vmrt.hal.dispatch_observer.observe_dispatches`) that runs each
dispatch with more than one workgroup itself, on copies of its bindings
(any local executable: :class:`~vmrt.hal.local.local_executable.LocalExecutable`;
chosen workgroups run through :func:`~vmrt.hal.dispatch_observer.workgroup_probe`):

1. forward, one workgroup at a time: the bytes a workgroup writes are its
   write set (see below); a byte written by two workgroups is an overlap
   (reported with both workgroup ids);
   (bytes are grouped into elements when the export name ends in an
   element type, as IREE names dispatches: ``..._4x8_f32``);
2. in reverse and in a shuffled order, from the same starting contents: bytes
   whose final value depends on the order are reported too (a workgroup that
   reads what another writes).

Write sets of an emulated executable are recorded exactly, with a memory
write hook over the bindings' guest copies (``workgroup_probe(writes=)``,
``EmulatedMachine.record_writes``): a store of the value already there counts,
so two workgroups storing the same value to the same bytes are reported too.
Natively the bytes are compared instead, and such a store is invisible (it
cannot change a result either).  The forward result is then written to the
real buffers and the program goes on.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from elfkit.support import DataRecord

from ..buffer import aligned_array
from ..dispatch_observer import ObservedDispatch, workgroup_probe
from ..element_types import dtype_of, export_element_type

#: findings reported per dispatch at most (the rest are counted)
MAX_PER_DISPATCH = 8


def workgroup_id(k: int, wc: Sequence[int]) -> tuple[int, int, int]:
    """The (x, y, z) id of linear workgroup ``k`` (x fastest)."""
    return k % wc[0], (k // wc[0]) % wc[1], k // (wc[0] * wc[1])


class Race(DataRecord, frozen=True):
    """Bytes ``[start, end)`` of ``binding`` written by two workgroups
    (``kind`` "overlap") or whose value depends on the workgroup order
    (``kind`` "order"; ``workgroups`` is empty then)."""
    dispatch: int                  # the dispatch's ordinal in the program
    executable: str
    export: str
    grid: tuple[int, int, int]
    binding: int
    start: int
    end: int
    kind: str
    workgroups: tuple[tuple[int, int, int], ...] = ()

    def describe(self) -> str:
        x, y, z = self.grid
        where = (f"dispatch {self.dispatch} (executable '{self.executable}' export "
                 f"'{self.export}', {x}x{y}x{z} workgroups): binding {self.binding} bytes "
                 f"[{self.start}, {self.end})")
        if self.kind == "overlap":
            a, b = self.workgroups
            return f"{where} written by workgroups {a} and {b}"
        return f"{where} differ between forward, reverse and shuffled workgroup orders"


class _Work:
    """Aligned copies of the buffers a dispatch binds (one per buffer, so
    aliasing bindings alias) and the bindings as views of them."""

    def __init__(self, obs: ObservedDispatch):
        spans: dict[int, list[Any]] = {}
        for buf, start, length in obs.ranges:
            s = spans.setdefault(id(buf), [buf, start, start + length])
            s[1], s[2] = min(s[1], start), max(s[2], start + length)
        self.spans = list(spans.values())
        self.initial = [buf.as_array()[lo:hi].copy() for buf, lo, hi in self.spans]
        self.copies = [aligned_array(max(hi - lo, 1), "race check copy")[0][:hi - lo]
                       for _buf, lo, hi in self.spans]
        self.where = []           # per binding: (span index, offset in the span)
        for buf, start, _length in obs.ranges:
            i = next(j for j, s in enumerate(self.spans) if s[0] is buf)
            self.where.append((i, start - self.spans[i][1]))
        self.lengths = [length for _b, _s, length in obs.ranges]
        self.reset()

    def reset(self) -> None:
        for c, init in zip(self.copies, self.initial):
            c[:] = init

    def bindings(self) -> list[Any]:
        return [self.copies[i][off:off + n] for (i, off), n in zip(self.where, self.lengths)]

    def binding_at(self, span: int, pos: int) -> tuple[int, int]:
        """(binding, offset in it) of byte ``pos`` of span ``span``."""
        for b, ((i, off), n) in enumerate(zip(self.where, self.lengths)):
            if i == span and off <= pos < off + n:
                return b, pos - off
        return 0, pos

    def changed(self, prev: list[Any]) -> list[Any]:
        """Per span: the byte positions that differ from ``prev`` (which is
        brought up to date)."""
        import numpy as np
        out = []
        for c, p in zip(self.copies, prev):
            changed = np.flatnonzero(c != p)
            p[changed] = c[changed]
            out.append(changed)
        return out

    def stored(self, writes: Sequence[tuple[int, int, int]]) -> list[Any]:
        """Per span: the byte positions of the ``(binding, offset, size)``
        stores ``writes`` (sorted, each once)."""
        import numpy as np
        parts: list[list[Any]] = [[] for _ in self.copies]
        for b, off, n in writes:
            i, base = self.where[b]
            parts[i].append(np.arange(base + off, base + off + n))
        return [np.unique(np.concatenate(p)) if p else np.zeros(0, np.int64) for p in parts]

    def write_back(self) -> None:
        for (buf, lo, hi), c in zip(self.spans, self.copies):
            if not buf.bytes.readonly:
                buf.bytes[lo:hi] = memoryview(c)


def _ranges(positions: Any) -> list[tuple[int, int]]:
    """Sorted byte positions merged into [start, end) ranges."""
    import numpy as np
    if len(positions) == 0:
        return []
    p = np.asarray(positions)
    breaks = np.flatnonzero(np.diff(p) != 1)
    starts = np.concatenate(([p[0]], p[breaks + 1]))
    ends = np.concatenate((p[breaks], [p[-1]])) + 1
    return [(int(s), int(e)) for s, e in zip(starts, ends)]


class RaceChecker:
    """The ``--check_races`` dispatch observer; findings collect in ``races``."""

    def __init__(self, seed: int = 0, element_type: str | None = None) -> None:
        #: the element type of dispatches whose export name carries none
        self.element_type = element_type
        self.races: list[Race] = []
        self.dispatches = 0
        self.checked = 0
        self.seed = seed

    def __call__(self, obs: ObservedDispatch) -> None:
        ordinal = self.dispatches
        self.dispatches += 1
        cmd = obs.command
        total = cmd.workgroups[0] * cmd.workgroups[1] * cmd.workgroups[2]
        if total < 2 or not obs.ranges \
                or any(n == 0 for _b, _s, n in obs.ranges):
            obs.run()
            return
        self.checked += 1
        self.races += self.check(obs, ordinal)

    def check(self, obs: ObservedDispatch, ordinal: int) -> list[Race]:
        """Run ``obs`` in several orders; its races (forward result kept)."""
        import numpy as np
        cmd = obs.command
        exe, wc = cmd.executable.exe, cmd.workgroups
        total = wc[0] * wc[1] * wc[2]
        work = _Work(obs)
        arrays = work.bindings()

        hooked = exe.backend == "emulated"  # a memory write hook sees every store

        def run(order: Sequence[int], writes: list[Any] | None = None) -> None:
            with workgroup_probe(order, writes):
                exe.dispatch(cmd.ordinal, wc, arrays, list(cmd.constants),
                             deadline=obs.deadline)

        etype = export_element_type(obs.names()[1], self.element_type)
        g = dtype_of(etype).itemsize if etype else 1
        owners = [np.full(-(-c.size // g), -1, np.int64) for c in work.copies]
        prev: list[Any] = [] if hooked else [c.copy() for c in work.copies]
        pairs: dict[tuple[int, int, int], list[Any]] = {}
        for k in range(total):
            writes: list[Any] | None = [] if hooked else None
            run([k], writes)
            written = work.stored(writes) if writes is not None else work.changed(prev)
            for s, (positions, own) in enumerate(zip(written, owners)):
                if positions.size == 0:
                    continue
                units = np.unique(positions // g)
                earlier = own[units]
                hit = (earlier >= 0) & (earlier != k)
                for other in np.unique(earlier[hit]):
                    pairs.setdefault((s, int(other), k), []).append(
                        units[hit & (earlier == other)])
                own[units] = k
        forward = [c.copy() for c in work.copies]
        order = list(range(total))
        random.Random(self.seed + ordinal).shuffle(order)
        moved = [np.zeros(c.size, bool) for c in work.copies]
        for o in (order[::-1], order):
            work.reset()
            run(o)
            for m, c, f in zip(moved, work.copies, forward):
                m |= c != f
        for c, f in zip(work.copies, forward):
            c[:] = f
        work.write_back()
        exe_name, export = obs.names()
        found: list[Race] = []
        for (s, a, b), chunks in sorted(pairs.items()):
            for lo, hi in _ranges(np.unique(np.concatenate(chunks))):
                lo, hi = lo * g, min(hi * g, work.copies[s].size)
                binding, off = work.binding_at(s, lo)
                found.append(Race(ordinal, exe_name, export, wc, binding, off, off + hi - lo,
                                  "overlap", (workgroup_id(a, wc), workgroup_id(b, wc))))
        if not found:
            for s, m in enumerate(moved):
                for lo, hi in _ranges(np.flatnonzero(m)):
                    binding, off = work.binding_at(s, lo)
                    found.append(Race(ordinal, exe_name, export, wc, binding, off,
                                      off + hi - lo, "order"))
        return found


def race_report(races: Sequence[Race], checked: int) -> str:
    """The text ``--check_races`` prints: one ``[RACE]`` line per finding
    (at most :data:`MAX_PER_DISPATCH` per dispatch) and a summary."""
    lines = []
    shown: dict[int, int] = {}
    for r in races:
        shown[r.dispatch] = shown.get(r.dispatch, 0) + 1
        if shown[r.dispatch] <= MAX_PER_DISPATCH:
            lines.append(f"[RACE] {r.describe()}")
    for d, n in shown.items():
        if n > MAX_PER_DISPATCH:
            lines.append(f"[RACE] dispatch {d}: {n - MAX_PER_DISPATCH} more finding(s)")
    if races:
        lines.append(f"[RACE] {len(races)} race(s) in {len(shown)} of {checked} checked "
                     f"dispatch(es)")
    return "".join(line + "\n" for line in lines)
