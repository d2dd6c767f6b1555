"""Where the guest time goes: ``GuestProfile``, a profile of guest code
by function and source line (``EmulatedMachine.profile``).

While a machine profiles, a ``UC_HOOK_BLOCK`` hook counts how often each
translated block ``(address, size)`` runs, no per-instruction hook: a C
function counting into a table (``blockhook``), else a Python function
updating a dictionary (much slower; the counts are the same).  When
profiling stops, each distinct block is split into its instructions once
(``disasm.instruction_addresses``: by the encoding's length, capstone on
x86) and every instruction of it is charged, times the block's count, to
the function (``.symtab``, else ``machine.symbolize``) and source line
(``machine.source_line``: DWARF ``.debug_line``) of its own address.  Counts
are instructions, not time, so a profile is deterministic; its total equals
``machine.instructions`` (``count_instructions``) over the same calls.

The hook also counts calls between functions (``_callgraph``: on each
block at a function's entry, by the return address); the call stacks of the
files are reconstructed from those counts, gprof-style (a function's cost is
spread over its callers in proportion to their calls), not sampled.  The
flat counts (``counts``, ``functions``, ``lines``) stay exact.  ``write``
picks the format by the file's extension: ``.svg`` a flame chart
(self-contained, no script), ``.json`` speedscope's file format (``_flame``).
"""
from __future__ import annotations

import bisect
import os
import threading
from collections import defaultdict

from ..._support.files import replace_file
from ...errors import ExecutionError
from ..disasm import instruction_addresses
from ._callgraph import DEEPER, calls_by_function, function_symbols, module_ids, stacks
from ._flame import speedscope, svg

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

NO_LINE = "?"
UNKNOWN = "[unknown]"       # code no module names (a machine's runtime page)


def function_of(symbol: str) -> str:
    """``name`` of ``name+0xoff``; ``UNKNOWN`` for a bare address."""
    if symbol.startswith("0x"):
        return UNKNOWN
    return symbol.rpartition("+0x")[0] or symbol


class GuestProfile:
    """Instruction counts per ``(function, "file:line")`` of guest code, from
    any number of machines and calls (thread-safe to fill)."""

    def __init__(self, name: str = "guest") -> None:
        self.name = name
        self.counts: dict[tuple[str, str], int] = defaultdict(int)
        #: calls counted per ``(caller, callee)`` function (caller ``""``: the host)
        self.calls: dict[tuple[str, str], int] = defaultdict(int)
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        """Instructions counted."""
        return sum(self.counts.values())

    def functions(self) -> dict[str, int]:
        """Instructions per function, most first."""
        out: dict[str, int] = defaultdict(int)
        for (fn, _line), n in self.counts.items():
            out[fn] += n
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def lines(self) -> dict[tuple[str, str], int]:
        """Instructions per ``(function, line)``, most first."""
        return dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def add_blocks(self, machine: Any, blocks: dict[tuple[int, int], int],
                   edges: dict[tuple[int, int], int] | None = None,
                   symbols: Any = None) -> None:
        """Charge ``blocks`` (``(address, size) -> executions``) run on
        ``machine``, instruction by instruction (see the module doc); a block
        inside one function and without line information is charged whole.
        ``edges``: call edges counted meanwhile (``_callgraph``); ``symbols``:
        the machine's ``function_symbols`` if known."""
        where: dict[int, tuple[str, str]] = {}
        function = _function_namer(machine, symbols)
        local: dict[tuple[str, str], int] = defaultdict(int)
        for (address, size), times in blocks.items():
            name, end, thumb = function(address)
            code = machine.try_read(address, size) if size else None
            addrs = instruction_addresses(code, address, machine.arch, thumb=thumb
                                          ) if code else []
            if not addrs:
                addrs = [address]
            if addrs[-1] < end and not machine.has_line_info(address, addrs[-1] + 1):
                local[(name, NO_LINE)] += times * len(addrs)
                continue
            run, last = 0, ("", "")   # a run of instructions of one line: one update
            for a in addrs:
                key = where.get(a)
                if key is None:
                    if a >= end:
                        name, end, _thumb = function(a)
                    key = where[a] = (name, machine.source_line(a) or NO_LINE)
                if key != last:
                    if run:
                        local[last] += times * run
                    run, last = 0, key
                run += 1
            local[last] += times * run
        calls = calls_by_function(edges, lambda a: function(a)[0]) if edges else {}
        with self._lock:
            for key, n in local.items():
                self.counts[key] += n
            for pair, n in calls.items():
                self.calls[pair] += n

    def stacks(self) -> dict[tuple[str, ...], float]:
        """Instructions per call stack (root first), reconstructed from the
        call counts (``_callgraph.stacks``: gprof-style, not sampled)."""
        return stacks(self.functions(), self.calls)

    def samples(self) -> list[tuple[tuple[str, ...], str | None, int]]:
        """``(stack, line of its last function or None, instructions)``: the
        stacks split by the lines of their last function, in whole
        instructions adding up to ``total`` (largest remainders)."""
        by_fn: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for (fn, line), n in self.lines().items():
            by_fn[fn].append((line, n))
        own = self.functions()
        parts: list[tuple[tuple[str, ...], str | None, float]] = []
        for path, w in sorted(self.stacks().items()):
            if path[-1] == DEEPER or not own.get(path[-1]):
                parts.append((path, None, w))
                continue
            for line, n in by_fn[path[-1]]:
                parts.append((path, line, w * n / own[path[-1]]))
        ints = [int(w) for _, _, w in parts]
        spare = self.total - sum(ints)
        for i in sorted(range(len(parts)), key=lambda i: ints[i] - parts[i][2])[:max(spare, 0)]:
            ints[i] += 1
        return [(p, line, n) for (p, line, _), n in zip(parts, ints) if n]

    def speedscope(self) -> dict[str, Any]:
        """The profile in speedscope's file format (see ``_flame``)."""
        return speedscope(self.name, self.samples())

    def svg(self, width: int = 1200) -> str:
        """A flame chart of the call stacks (see ``_flame``)."""
        return svg(self.name, self.samples(), width)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the profile to ``path``: an SVG chart for ``.svg``, speedscope
        JSON for ``.json``.  Written to a temporary file then renamed, so a
        failure leaves no partial file; ``ExecutionError`` says why."""
        p = check_profile_path(path)
        if p.lower().endswith(".svg"):
            text = self.svg()
        else:
            import json  # only when a profile is written (start-up time)
            text = json.dumps(self.speedscope(), indent=1) + "\n"
        write_atomically(p, text, "profile")


def check_profile_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a string if a profile can be written there (a ``.svg`` or
    ``.json`` name in a writable folder), else ``ExecutionError``: checked
    before a run, so a bad path costs no run."""
    p = os.fspath(path)
    if not p.lower().endswith((".svg", ".json")):
        raise ExecutionError(f"profile {p}: the file name must end in .svg (flame chart) "
                             "or .json (speedscope)")
    folder = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise ExecutionError(f"cannot write the profile to {p}: "
                             f"{folder} is not a writable folder")
    return p


def _function_namer(machine: Any, known: Any = None) -> Callable[[int], tuple[str, int, bool]]:
    """``addr -> (function name, where that name ends, Thumb code?)``: the
    ``.symtab`` functions of the machine's modules (static ones too;
    ``known``: their ``function_symbols`` if read already), else
    ``machine.symbolize`` (for that one address; Thumb as the CPU is now)."""
    if known is None or known[0] != module_ids(machine):   # (modules came or went)
        known = function_symbols(machine)
    _ids, funcs, thumbs = known
    thumb_now = False
    if machine.arch.name == "arm":
        thumb_now = bool(machine.registers(["CPSR"])["CPSR"] & 0x20)

    def name(addr: int) -> tuple[str, int, bool]:
        i = bisect.bisect_right(funcs, (addr, 1 << 64, "")) - 1
        if i >= 0 and addr < funcs[i][0] + funcs[i][1]:
            end = funcs[i][0] + funcs[i][1]
            if i + 1 < len(funcs):       # (overlapping symbols: the next one starts)
                end = min(end, funcs[i + 1][0])
            return funcs[i][2], end, funcs[i][0] in thumbs
        return function_of(machine.symbolize(addr)), addr + 1, thumb_now
    return name


def write_atomically(path: str, text: str, what: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    import tempfile  # not at import time: shutil, bz2, lzma, random
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        replace_file(tmp, path)
        tmp = None
    except OSError as e:
        raise ExecutionError(f"cannot write the {what} to {path}: {e.strerror or e}") from e
    finally:
        if tmp is not None:
            os.unlink(tmp)


class BlockCounter:
    """The hook side of profiling one machine: executions per block and call
    edges (with ``sites``, a ``_callgraph.CallSites``), counted by
    ``on_block`` (the Python hook) or by ``native`` (a ``NativeCounter``
    whose C hook the machine installed instead)."""

    def __init__(self, profile: GuestProfile, native: Any = None, sites: Any = None) -> None:
        self.profile = profile
        self.native = native
        self.sites = sites
        if native is not None and sites is not None:
            native.count_calls(sites)
        self.blocks: dict[tuple[int, int], int] = defaultdict(int)
        self.edges: dict[tuple[int, int], int] = defaultdict(int)
        self._prev = self._prev_end = 0

    def on_block(self, _h: Any, address: int, size: int, _ud: Any) -> None:
        self.blocks[(address, size)] += 1
        sites = self.sites
        if sites is not None:
            if address in sites.entries:
                self.edges[sites.edge(address, self._prev, self._prev_end)] += 1
            self._prev, self._prev_end = address, address + size

    def finish(self, machine: Any) -> None:
        blocks, self.blocks = self.blocks, defaultdict(int)
        edges, self.edges = self.edges, defaultdict(int)
        if self.native is not None:
            more, more_edges = self.native.take()
            for key, n in more.items():
                blocks[key] += n
            for key, n in more_edges.items():
                edges[key] += n
        self.profile.add_blocks(machine, blocks, edges,
                                self.sites.symbols if self.sites is not None else None)
