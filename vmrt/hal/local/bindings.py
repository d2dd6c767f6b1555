"""The bindings of an emulated dispatch: host numpy arrays copied into the
guest's memory and back.

Bindings that share host memory (one buffer bound twice, overlapping or
disjoint subranges of one allocation) are staged once, as the span that
covers them, so that they alias in the guest exactly as they do natively:
a write through one binding is visible through the other.  Every span ends
next to an unmapped guard page, so an access past it faults and is reported
against its binding.  Only the bytes of the bindings are copied in; nothing
else of the host is reachable from the guest."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from .dispatch_args import host_address, host_view, host_writable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

def _root(array: Any) -> Any:
    """The object that owns an array's memory (the end of its ``.base`` chain)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def alias_groups(arrays: Sequence[Any]) -> list[list[int]]:
    """Binding indices grouped by the host memory they share: views of one
    allocation (overlapping or not) and arrays whose bytes overlap are one
    group; every other binding is a group of its own.  Groups come in the
    order of their first binding."""
    parent = list(range(len(arrays)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    roots = [id(_root(a)) for a in arrays]
    # bindings are contiguous: they share memory when their byte ranges overlap
    los = [host_address(a) for a in arrays]
    his = [lo + a.nbytes for lo, a in zip(los, arrays)]
    for i in range(len(arrays)):
        for j in range(i + 1, len(arrays)):
            if roots[i] == roots[j] or (los[i] < his[j] and los[j] < his[i]):
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(arrays)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


class StagedBindings:
    """The guest copies of one dispatch's bindings in ``machine``."""

    def __init__(self, machine: Any, arrays: Sequence[Any]):
        self.machine = machine
        self.arrays = list(arrays)
        self.groups = alias_groups(self.arrays)
        #: per group: (binding index reported on a fault, reservation base,
        #: guest address of the span, span size, reservation size)
        self.guards: list[tuple[int, int, int, int, int]] = []
        self.ptrs: list[int] = []

    def _span(self, group: list[int]) -> tuple[int, int]:
        lo = min(host_address(self.arrays[i]) for i in group)
        hi = max(host_address(self.arrays[i]) + self.arrays[i].nbytes for i in group)
        return lo, hi

    def stage(self) -> list[int]:
        """Copy every group into the guest; returns each binding's guest address."""
        self.ptrs = [0] * len(self.arrays)
        for group in self.groups:
            lo, hi = self._span(group)
            if len(group) == 1:
                span: Any = host_view(self.arrays[group[0]])    # copied once, by write
            else:
                span = bytearray(hi - lo)               # bytes between bindings stay zero
                for i in group:
                    a = self.arrays[i]
                    off = host_address(a) - lo
                    span[off:off + a.nbytes] = host_view(a)
            start = self._place(group[-1], span)
            for i in group:
                self.ptrs[i] = start + host_address(self.arrays[i]) - lo
        return self.ptrs

    def _place(self, index: int, data: Any) -> int:
        """Write ``data`` (bytes-like) at a 64-byte aligned guest address
        (the alignment compiled dispatch code assumes of a binding) so that it
        ends, within 63 bytes, at a page boundary followed by an unmapped
        guard page.  (The machine hands out a span an earlier dispatch
        released, zero-filled, instead of mapping a new one.)"""
        m = self.machine
        page = m.arch.page_size
        n = len(data)
        data_span = -(-(n + 63) // page) * page
        base = m.reserve_guarded(data_span)
        self.guards.append((index, base, 0, n, data_span + page))
        addr = (base + data_span - n) & ~63
        m.write(addr, data)
        self.guards[-1] = (index, base, addr, n, data_span + page)
        return addr

    def copy_back(self) -> None:
        """What the guest code wrote lands in the host arrays (each group's
        span is read once; read-only bindings are left alone)."""
        for group in self.groups:
            if not any(host_writable(self.arrays[i]) for i in group):
                continue
            lo, hi = self._span(group)
            start = self.ptrs[group[0]] - (host_address(self.arrays[group[0]]) - lo)
            span = memoryview(self.machine.read(start, hi - lo))
            for i in group:
                a = self.arrays[i]
                if host_writable(a):
                    off = host_address(a) - lo
                    host_view(a)[:] = span[off:off + a.nbytes]

    @contextlib.contextmanager
    def recording(self, out: list[tuple[int, int, int]] | None) -> Iterator[None]:
        """While the block runs (after :meth:`stage`), append to ``out`` one
        ``(binding, byte offset, size)`` per guest store into a binding (for
        each binding the stored bytes fall in; bindings that alias see the
        same store), a store of the value already there included.  Does
        nothing (and installs no hook) when ``out`` is None."""
        if out is None:
            yield
            return
        ranges = [(p, a.nbytes) for p, a in zip(self.ptrs, self.arrays)]
        with self.machine.record_writes(sorted(set(ranges))) as seen:
            yield
        for addr, n in seen:
            for b, (p, size) in enumerate(ranges):
                lo, hi = max(addr, p), min(addr + n, p + size)
                if lo < hi:
                    out.append((b, lo - p, hi - lo))

    def explain_fault(self, e: BaseException) -> str | None:
        """A message for a fault in a guard page, naming the binding."""
        addr = getattr(e, "address", None)
        if addr is None:
            return None
        page = self.machine.arch.page_size
        for index, base, data, n, span in self.guards:
            guard = base + span - page
            if guard <= addr < base + span:
                return (f"binding {index} ({n} bytes) was accessed out of bounds at byte offset "
                        f"{addr - data} (is the binding smaller than the dispatch expects?)")
        return None

    def release(self) -> None:
        for _i, base, _addr, _n, _span in self.guards:
            self.machine.release(base)
        self.guards = []


__all__ = ["StagedBindings", "alias_groups"]
