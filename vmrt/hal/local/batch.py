"""Several commands of one submission in one native call.

A submission of a command buffer runs its prepared dispatches
(:class:`~vmrt.hal.local.prepared.NativeDispatch`) one after another; each
costs a ctypes call into the workgroup loop, and the FPU state is set and
restored around them with two more.  A :class:`Batch` runs a run of
consecutive commands -- prepared dispatches and buffer copies -- in one
call of the batch loop (x86_64: ``BATCH_CODE`` of
:mod:`~vmrt.hal.local.workgroup_loop_x86_64`, written beside the workgroup
loop): the loop flushes denormals as :mod:`~vmrt.hal.local.fpu_state`
does, calls each dispatch's function for each of its workgroup states and
``memmove`` for each copy, and restores the caller's FPU state.

A batch owns one host block per thread holding, per dispatch, a copy of
what its prepared form keeps (constants, binding pointers and lengths,
dispatch state, workgroup states: the same bytes, so results are the same),
and the loop's records.  A submission writes every binding pointer and
length with one ``struct.pack_into`` (and each copy's addresses with one more).  The
command buffer keeps the batches of a recording (made once per distinct
sequence of prepared dispatches: :meth:`NativeDispatch.batch`), checks
every operand in Python before the call (anything odd takes the commands'
checked path instead) and gets the same errors as the dispatches run one by
one: a failing workgroup names its dispatch, workgroup and status, a cancel
stops the batch before the next workgroup.  Dispatches shared with worker
threads (local-task: a grid whose trials found the workers worth it, or
still trying), of different native machines, under a deadline or a
profile keep the per-dispatch path; a grid a stall guard sent back to the
calling thread for a while runs in batches, which count its runs.  A
reusable command buffer whose submission is one batch of dispatches
submits through :meth:`Batch.plain` (gathering and running in one call).
"""
from __future__ import annotations

import ctypes
import struct
import threading

from ...vm.context import INVOCATION
from ..buffer import BUFFER_ALIGNMENT, aligned_memory
from ..dispatch_observer import current_observer, current_range_recorder
from .dispatch_limits import before_workgroup
from .fpu_state import flush_bits
from .guest import sig
from .workgroup_loop import NEVER_ADDRESS, cancel_word

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

#: the host's memmove: a copy's record calls it (its return ignored)
MEMMOVE: int = ctypes.cast(ctypes.memmove, ctypes.c_void_p).value or 0
#: words of a record of the batch loop: fn, a0, a1, ws, ws_size, total, mask
_RECORD = 7
_WORD = 8
_COPY = struct.Struct("<3Q").pack_into
#: the batch loop's signature (see BATCH_CODE in workgroup_loop_x86_64)
BATCH_SIG = "u64(u64)"


def make_batch(steps: tuple[Any, ...]) -> Batch | None:
    """A :class:`Batch` of ``steps`` (prepared dispatches and None for
    copies; the first a dispatch), or None where the batch loop does not
    apply: no loop on this host, a dispatch shared with worker threads (see
    :func:`settled_alone`), not all of one native machine."""
    first = steps[0]
    machine = first.exe.machine
    addr = first.runner.batch_address()
    if not addr or not MEMMOVE or first.layout.word != _WORD:
        return None
    for p in steps:
        if p is not None and (p.threads != 1 and not settled_alone(p) or
                              p.exe.machine is not machine or not p.runner.loop_address):
            return None
    return Batch(steps, machine.function(addr, sig(BATCH_SIG)))


def settled_alone(p: Any) -> bool:
    """Whether the multi-threaded prepared dispatch ``p`` runs on the calling
    thread alone, for good (its trials found the workers cost more than they
    save) or for a while (sent back by a stall guard: a batch counts its
    runs down as its run() does): a batch may run it then, as its run()
    would (the same workgroup states)."""
    return p.inline is True


class Batch:
    """Consecutive commands run by one call of the batch loop; see the
    module docstring.  :meth:`run` takes, in order, each dispatch's binding
    pointers and lengths, then each copy's target, source and length."""

    def __init__(self, steps: tuple[Any, ...], call: Any):
        self.steps = steps
        self.call = call
        self.count = len(steps)
        self.exes = tuple({id(p.exe): p.exe for p in steps if p is not None}.values())
        self.first = steps[0]
        #: one dispatch of one workgroup: no cancel word to watch during it
        self.single = self.count == 1 and self.first.total == 1
        # the block: the loop's header [0, 64) (its cancel word's address
        # last), every dispatch's binding pointers and lengths one after
        # another (one pack writes them with that address), each dispatch's
        # region, then the records
        words = sum(2 * p.n for p in steps if p is not None)
        offs, args, off = [], 64, 64 + -(-words * _WORD // 64) * 64
        for p in steps:
            offs.append((off, args) if p is not None else (-1, -1))
            if p is not None:
                off += -(-p.region_size() // 64) * 64
                args += 2 * p.n * _WORD
        self.offs = offs
        self.rec_off = off
        self.size = off + self.count * _RECORD * _WORD
        self.words = words
        self.pack = struct.Struct(f"<{1 + words}Q").pack_into
        #: the offsets of each copy's three words (target, source, length)
        self.copies = [off + i * _RECORD * _WORD + _WORD for i, p in enumerate(steps)
                       if p is None]
        self.local = threading.local()
        #: grids for several threads run alone here: each run counts down
        #: those a stall guard sent back for a while (their ``ran_alone``)
        self.counted = tuple(p for p in steps if p is not None and p.threads > 1)
        self._run = self._runner(None, None)

    def _block(self) -> tuple[Any, int]:
        """This thread's block and its address (the loop's header)."""
        block, base = aligned_memory(self.size, "dispatch batch")
        recs = []
        for p, (o, args) in zip(self.steps, self.offs):
            if p is None:
                recs.append((MEMMOVE, 0, 0, 0, 0, 1, 0))
                continue
            ds, ws = p.write_region(block[o:o + p.region_size()], base + o, base + args)
            recs.append((p.runner.function, p.env, ds, ws, p.ws_size, p.total, 0xFFFFFFFF))
        words = [w for r in recs for w in r]
        struct.pack_into(f"<{len(words)}Q", block, self.rec_off, *words)
        struct.pack_into("<Q", block, 0, flush_bits())
        struct.pack_into("<2Q", block, 24, base + self.rec_off, self.count)
        mine = (block, base)
        self.local.mine = mine
        return mine

    def run(self, values: list[int]) -> None:
        """Run every step over ``values`` (see the class docstring)."""
        self._run(values)

    def plain(self, dsteps: Any) -> Any:
        """A submission of this batch's dispatches in one call, or None when
        it has copies or an operand of ``dsteps`` (each dispatch's bindings)
        is not as ``binding_specs`` takes it: ``submit(table)`` gathers each
        binding's address from ``table`` as :func:`vmrt.hal.commands.gather`
        does and runs as :meth:`run` does; False, nothing run, when a tool
        watches (a dispatch observer or range recorder) or an operand is
        not that simple (the command buffer's execute then takes the
        submission)."""
        if self.copies:
            return None
        template: list[int] = []        # the values, lengths in place
        specs = []                      # each binding's index in it, and its spec
        for refs in dsteps:
            for b in refs:
                if b.slot < 0 or b.offset < 0 or b.length <= 0:
                    return None
                specs.append((len(template), b.slot, b.buffer, b.offset, b.offset + b.length))
                template.append(0)
            template += [b.length for b in refs]
        return self._runner(specs, template)

    def _runner(self, specs: Any, template: Any) -> Any:
        """:meth:`run` (``specs`` None) or :meth:`plain`'s ``submit``."""
        local, pack, call, count = self.local, self.pack, self.call, self.count
        exes, single, first = self.exes, self.single, self.first
        copies, counted = self.copies, self.counted
        observer, ranges = current_observer, current_range_recorder

        def go(arg: Any) -> bool:
            if specs is None:
                values = arg
            else:
                if observer() is not None or ranges() is not None:
                    return False
                # gather()'s checks, here over specs made once: a call of
                # gather() instead costs 8 % of a chain program's dispatch
                values = template.copy()
                try:
                    for i, slot, buf, off, end in specs:
                        if buf is None:
                            buf, base, tlen = arg[slot]
                            if base < 0 or end > tlen or base + tlen > buf.bytes.nbytes:
                                return False
                            off += base
                        elif end > buf.bytes.nbytes:
                            return False
                        addr = buf.address
                        if addr % BUFFER_ALIGNMENT:     # (also -1: not contiguous)
                            return False
                        values[i] = addr + off
                except (IndexError, TypeError, ValueError, AttributeError):
                    return False
            for exe in exes:
                if exe.closed:
                    exe.check_open()
            try:
                block, base = local.mine
            except AttributeError:
                block, base = self._block()
            # (current_limits() without its frame) a cancel is checked between workgroups
            limits = getattr(INVOCATION, "limits", None)
            cancel = NEVER_ADDRESS
            if limits is not None:
                if not single:          # (one workgroup: checked before it, as run() does)
                    cancel = cancel_word(limits)
                if limits.cancelled or limits.parent is not None:
                    before_workgroup(first.where, None, limits)
            if copies:
                self._copies(block, values)
            pack(block, 56, cancel, *values)
            i = call(base)
            if i < count:
                self._stopped(i, block, limits)
            if counted:
                self._count_down()
            return True
        return go

    def _count_down(self) -> None:
        """A run of every grid for several threads in the batch counted."""
        for p in self.counted:
            if p.retry:
                p.ran_alone()

    def _copies(self, block: Any, values: list[int]) -> None:
        """Write each copy's target, source and length (the end of
        ``values``) into its record, and leave ``values`` the dispatches'."""
        words = self.words
        for at, i in zip(self.copies, range(words, len(values), 3)):
            _COPY(block, at, values[i], values[i + 1], values[i + 2])
        del values[words:]

    def _stopped(self, i: int, block: Any, limits: Any) -> None:
        """Raise what stopped the batch loop at step ``i``."""
        k, status = struct.unpack_from("<QQ", block, 8)
        step = self.steps[i]
        if step is None:                # cancelled before a copy: name a dispatch
            step = next((p for p in self.steps[i:] if p is not None), self.first)
            k = 0
        step.runner.stopped(k, status, limits, None)


__all__ = ["MEMMOVE", "Batch", "make_batch"]
