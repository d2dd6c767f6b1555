"""The bindings of an emulated dispatch: host numpy arrays copied into the
guest's memory and back.

Bindings that share host memory (one buffer bound twice, overlapping or
disjoint subranges of one allocation) are staged once, as the span that
covers them, so that they alias in the guest exactly as they do natively:
a write through one binding is visible through the other.  Every span ends
next to an unmapped guard page, so an access past it faults and is reported
against its binding.  Only the bytes of the bindings are copied in; nothing
else of the host is reachable from the guest.

Which bindings a dispatch only reads is known to the caller alone: IREE's
compiler marks bindings ``ReadOnly`` in its pipeline layouts, but neither the
llvm-cpu library (its dispatch attributes carry a binding count only, its
parameter table is NULL) nor the VM program (a binding is slot, buffer,
offset and length) keeps the marks, and IREE 3.13 writes some imported
constants in place.  A binding whose host memory is not writable is the
declaration: it is mapped read-only, never copied back, and a store into it
is reported (PERMISSION_DENIED) instead of being dropped."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from ...errors import StatusCode
from .dispatch_args import host_address, host_view, host_writable

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

def _root(array: Any) -> Any:
    """The object that owns an array's memory (the end of its ``.base`` chain)."""
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


def alias_groups(arrays: Sequence[Any], addresses: Sequence[int] | None = None
                 ) -> list[list[int]]:
    """Binding indices grouped by the host memory they share: views of one
    allocation (overlapping or not) and arrays whose bytes overlap are one
    group; every other binding is a group of its own.  Groups come in the
    order of their first binding.  ``addresses``: the bindings' host
    addresses, when the caller has them."""
    if len(arrays) == 1:
        return [[0]]
    parent = list(range(len(arrays)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    roots = [id(_root(a)) for a in arrays]
    # bindings are contiguous: they share memory when their byte ranges overlap
    los = list(addresses) if addresses is not None else [host_address(a) for a in arrays]
    his = [lo + a.nbytes for lo, a in zip(los, arrays)]
    for i in range(len(arrays)):
        for j in range(i + 1, len(arrays)):
            if roots[i] == roots[j] or (los[i] < his[j] and los[j] < his[i]):
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(arrays)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def explain_binding_fault(e: BaseException, guards: Sequence[tuple[int, int, int, int, int]],
                          ptrs: Sequence[int], arrays: Sequence[Any]
                          ) -> tuple[str, StatusCode] | None:
    """A message and status for guest fault ``e`` of an emulated dispatch
    that names a binding: an access to the unmapped page after a group of
    bindings (OUT_OF_RANGE), or a store into a read-only binding
    (PERMISSION_DENIED); None for any other fault.  ``guards``: per alias
    group (binding reported, guest address of the group's first byte, its
    size, guard page start, guard page end); ``ptrs``: each binding's guest
    address."""
    addr = getattr(e, "address", None)
    if addr is None:
        return None
    for index, data, n, lo, hi in guards:
        if lo <= addr < hi:
            return (f"binding {index} ({n} bytes) was accessed out of bounds at byte offset "
                    f"{addr - data} (is the binding smaller than the dispatch expects?)",
                    StatusCode.OUT_OF_RANGE)
    if getattr(e, "access", None) == "write":
        for i, (p, a) in enumerate(zip(ptrs, arrays)):
            if p <= addr < p + a.nbytes and not host_writable(a):
                return (f"binding {i} ({a.nbytes} bytes) is read-only (the caller's memory is "
                        f"not writable) and the dispatch wrote to it at byte offset {addr - p}",
                        StatusCode.PERMISSION_DENIED)
    return None


class StagedBindings:
    """The guest copies of one dispatch's bindings in ``machine``.

    Each group's span is written and read through the host pages behind it
    (``EmulatedMachine.span_memory``): one copy each way, no buffer in
    between.  A group none of whose bindings the caller may write (numpy
    arrays with ``writeable`` False, read-only memoryviews) is mapped
    read-only: it is never copied back, and a store into it faults and is
    reported against its binding (see :meth:`explain_fault`)."""

    def __init__(self, machine: Any, arrays: Sequence[Any]):
        self.machine = machine
        self.arrays = list(arrays)
        self.addresses = [host_address(a) for a in self.arrays]
        self.groups = alias_groups(self.arrays, self.addresses)
        #: per group: see :func:`explain_binding_fault`
        self.guards: list[tuple[int, int, int, int, int]] = []
        #: per group: its reservation, and whether it is read-only
        self.reserved: list[tuple[int, bool]] = []
        #: per group, to copy back: (host pages of the span, offset of the
        #: group's first byte in them, the group's lowest host address)
        self.spans: list[tuple[memoryview, int, int]] = []
        self.ptrs: list[int] = []

    def stage(self) -> list[int]:
        """Copy every group into the guest; returns each binding's guest address."""
        arrays, addresses = self.arrays, self.addresses
        self.ptrs = ptrs = [0] * len(arrays)
        page = self.machine.arch.page_size
        for group in self.groups:
            if len(group) == 1:
                lo = addresses[group[0]]
                n = arrays[group[0]].nbytes
            else:
                lo = min(addresses[i] for i in group)
                n = max(addresses[i] + arrays[i].nbytes for i in group) - lo
            read_only = not any(host_writable(arrays[i]) for i in group)
            # 64-byte aligned (what compiled dispatch code assumes of a
            # binding), ending within 63 bytes of the unmapped guard page
            data_span = -(-(n + 63) // page) * page
            base = self.machine.reserve_guarded(data_span, read_only=read_only)
            off = (data_span - n) & ~63
            self.reserved.append((base, read_only))
            self.guards.append((group[-1], base + off, n, base + data_span,
                                base + data_span + page))
            pages = self.machine.span_memory(base)  # zero-filled: gaps between bindings stay 0
            for i in group:
                a = arrays[i]
                at = off + addresses[i] - lo
                pages[at:at + a.nbytes] = host_view(a)
                ptrs[i] = base + at
            if not read_only:
                self.spans.append((pages, off, lo))
        return ptrs

    def copy_back(self) -> None:
        """What the guest code wrote lands in the host arrays (read-only
        bindings are left alone)."""
        arrays, addresses = self.arrays, self.addresses
        groups = (g for g, (_base, ro) in zip(self.groups, self.reserved) if not ro)
        for group, (pages, off, lo) in zip(groups, self.spans):
            for i in group:
                a = arrays[i]
                if host_writable(a):
                    at = off + addresses[i] - lo
                    host_view(a)[:] = pages[at:at + a.nbytes]

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

    def explain_fault(self, e: BaseException) -> tuple[str, StatusCode] | None:
        """See :func:`explain_binding_fault`."""
        return explain_binding_fault(e, self.guards, self.ptrs, self.arrays)

    def release(self) -> None:
        self.spans, self.guards = [], []
        reserved, self.reserved = self.reserved, []
        for base, _ro in reserved:
            self.machine.release(base)


__all__ = ["StagedBindings", "alias_groups", "explain_binding_fault"]
