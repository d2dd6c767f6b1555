"""Call stacks of guest profiles, reconstructed from counted call edges
(gprof-style), not sampled.

While a machine profiles (``_profiler``), the block hook also notes, on each
block that starts a function (its address is a symbol's: a hash set of the
entry addresses), where the function was entered from, by the return
address (the link register on aarch64, arm and riscv; the word at the stack
pointer on x86):

- the end of the block run just before: a call from that block
  (``(return address, callee)``);
- the runtime page: a call from the host (``ROOT``);
- anything else: a jump (a tail call, or a loop back to the function's first
  instruction), charged to the block run before (``JUMP``; a jump from the
  function itself is a loop and no edge).

``calls_by_function`` names both ends: ``{(caller, callee): calls}``, the
caller ``""`` for the host.  ``stacks`` then spreads each function's cost
over the stacks that reach it in proportion to the calls from each caller,
as gprof's call graph does: a function called 3 times from ``a`` and once
from ``b`` is charged 3/4 under ``a`` and 1/4 under ``b`` -- exact when every
call costs the same, an estimate otherwise (the counts say how often, not
which call was the expensive one).  Recursion and cycles of calls are
strongly connected components: a component is entered once per stack (by
calls from outside it) and drawn as a spanning tree of its own calls, each
member's whole cost under it; so every stack is finite and the stacks add
up to the flat profile.
"""
from __future__ import annotations

from collections import defaultdict

TYPE_CHECKING = False    # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

EDGE = 1 << 63           # a table entry that is a call edge, not a block
JUMP = 1 << 62
ROOT = 1 << 61
CALLEE = ROOT - 1        # the callee's address bits
NONE = (1 << 64) - 1     # a free slot of the entry set
_M = (1 << 64) - 1
HOST = ""                # the caller of the functions the host calls
DEEPER = "[deeper calls]"
MAX_DEPTH = 64           # frames per stack (a cycle's tree may add more); then whole
MIN_SHARE = 1e-6         # stacks with less of the total are charged whole

#: arch -> (return address register, 0 or the bytes of the return address
#: at the address that register holds, mask of the return address)
RETURN_ADDRESS = {"aarch64": ("X30", 0, _M), "riscv64": ("RA", 0, _M),
                  "riscv32": ("RA", 0, _M), "arm": ("LR", 0, _M - 1),
                  "x86_64": ("RSP", 8, _M), "i386": ("ESP", 4, _M)}


def mix(a: int, b: int) -> int:
    """The C hook's hash (``blockhook.SOURCE``)."""
    return (((a * 0x9E3779B97F4A7C15) & _M) ^ b) * 0xC2B2AE3D27D4EB4F & _M


class CallSites:
    """What the hooks need to count call edges on one machine: ``entries``
    (function entry addresses), the return address register's unicorn id
    (``ra_reg``), ``ra_bytes`` (0: the address is in the register, else that
    many bytes at the address it holds), ``ra_mask`` and the runtime page
    ``[host_lo, host_hi)``; ``read_ra`` reads the return address (the
    Python hook's way)."""

    def __init__(self, entries: set[int], ra_reg: int, ra_bytes: int, ra_mask: int,
                 host: tuple[int, int], read_ra: Callable[[], int]) -> None:
        self.entries = frozenset(e for e in entries if e < ROOT)
        self.ra_reg, self.ra_bytes, self.ra_mask = ra_reg, ra_bytes, ra_mask
        self.host_lo, self.host_hi = host
        self.read_ra = read_ra
        #: ``function_symbols`` of the machine when profiling started
        self.symbols: Any = None

    def table(self) -> list[int]:
        """The entries as the C hook's open-addressed set (a power of two of
        slots, at most a quarter used; ``NONE``: free)."""
        size = 4
        while size < 4 * len(self.entries):
            size *= 2
        slots = [NONE] * size
        for e in sorted(self.entries):
            i = (mix(e, 0) >> 32) & (size - 1)
            while slots[i] != NONE:
                i = (i + 1) & (size - 1)
            slots[i] = e
        return slots

    def edge(self, address: int, prev: int, prev_end: int) -> tuple[int, int]:
        """The edge key of entering the function at ``address`` after the
        block ``[prev, prev_end)`` (what the C hook counts)."""
        ra = self.read_ra() & self.ra_mask
        if self.host_lo <= ra < self.host_hi:
            return 0, EDGE | ROOT | address
        if ra == prev_end:
            return ra, EDGE | address
        return prev, EDGE | JUMP | address


def _named_modules(machine: Any) -> list[Any]:
    return [m for m in machine.modules
            if getattr(m, "elf", None) is not None and not getattr(m, "closed", False)]


def module_ids(machine: Any) -> tuple[int, ...]:
    """Which modules ``function_symbols`` would read now."""
    return tuple(id(m) for m in _named_modules(machine))


def function_symbols(machine: Any) -> tuple[tuple[int, ...], list[tuple[int, int, str]],
                                            frozenset[int]]:
    """The ``.symtab`` functions (static ones too) of ``machine``'s modules as
    sorted ``(address, size >= 1, name)``, with the ids of those modules
    (the list is good while they are the same: ``module_ids``) and the
    addresses of the Thumb functions (their symbols' odd addresses are
    their code's, even, in the list)."""
    from ..symfile import STT_FUNC, STT_GNU_IFUNC, plugin_symbols
    funcs: list[tuple[int, int, str]] = []
    thumb: set[int] = set()
    mods = _named_modules(machine)
    arm = machine.arch.name == "arm"
    for mod in mods:
        for s in plugin_symbols(mod):
            if s.type in (STT_FUNC, STT_GNU_IFUNC):
                if arm and s.address & 1:
                    thumb.add(s.address - 1)
                funcs.append((s.address & ~1 if arm else s.address, max(s.size, 1), s.name))
    funcs.sort()
    return tuple(id(m) for m in mods), funcs, frozenset(thumb)


def call_sites(machine: Any, engine: Any, host: tuple[int, int]) -> CallSites | None:
    """``CallSites`` of ``machine`` (unicorn ``engine``), None where its
    architecture has no rule or its modules no function symbols."""
    from . import _uc
    rule = RETURN_ADDRESS.get(machine.arch.name)
    if rule is None:
        return None
    symbols = function_symbols(machine)
    entries = {a for a, _n, _s in symbols[1]}
    if not entries:
        return None
    name, nbytes, mask = rule
    regid = _uc.reg(machine.arch, name)
    handle = engine.handle
    if nbytes:
        import ctypes
        buf = ctypes.create_string_buffer(8)

        def read_ra() -> int:
            at = engine.read_word(regid)
            if _uc.lib.uc_mem_read(handle, at, buf, nbytes):
                return 0
            return int.from_bytes(buf.raw[:nbytes], "little")
    else:
        def read_ra() -> int:
            return int(engine.read_word(regid))
    sites = CallSites(entries, regid, nbytes, mask, host, read_ra)
    sites.symbols = symbols
    return sites


def calls_by_function(edges: dict[tuple[int, int], int],
                      function: Callable[[int], str]) -> dict[tuple[str, str], int]:
    """``{(caller, callee): calls}`` of counted edge keys (see the module
    doc); loops back to a function's entry are left out."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for (site, word), n in edges.items():
        callee = function(word & CALLEE)
        if word & ROOT:
            caller = HOST
        elif word & JUMP:
            caller = function(site)
            if caller == callee:
                continue
        else:
            caller = function(site - 1)
        out[(caller, callee)] += n
    return dict(out)


def _components(nodes: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative), callees' first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            kids = succ.get(v, [])
            if i < len(kids):
                work.append((v, i + 1))
                w = kids[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


class _Graph:
    """The call graph of ``stacks``: callees (``succ``), strongly connected
    components (callees' first), calls into each from outside (``into``)
    and each one's inclusive cost (``incl``)."""

    def __init__(self, own: dict[str, int], calls: dict[tuple[str, str], int]) -> None:
        nodes = sorted(set(own) | {f for e in calls for f in e if f != HOST})
        self.succ: dict[str, list[str]] = defaultdict(list)
        for (a, b) in sorted(calls):
            if a != HOST:
                self.succ[a].append(b)
        self.comps = _components(nodes, self.succ)
        self.comp_of = {f: i for i, c in enumerate(self.comps) for f in c}
        self.into: dict[int, int] = defaultdict(int)
        for (a, b), n in calls.items():
            if a == HOST or self.comp_of[a] != self.comp_of[b]:
                self.into[self.comp_of[b]] += n
        self.incl: list[float] = []
        for i, c in enumerate(self.comps):
            self.incl.append(sum(own.get(f, 0) for f in c)
                             + sum(share * self.incl[self.comp_of[g]]
                                   for f in c for g, share in self.out_of(f, i, calls)))

    def out_of(self, f: str, c: int, calls: dict[tuple[str, str], int]
               ) -> list[tuple[str, float]]:
        """The callees of ``f`` outside its component ``c``, with the share
        of each one's cost its calls from ``f`` carry."""
        return [(g, calls[(f, g)] / self.into[self.comp_of[g]])
                for g in self.succ.get(f, []) if self.comp_of[g] != c]


def stacks(own: dict[str, int], calls: dict[tuple[str, str], int]) -> dict[tuple[str, ...], float]:
    """Each function's own cost (``own``) spread over the call stacks that
    reach it (root first), by the ``calls`` between functions (see the module
    doc).  The weights add up to ``sum(own)``; a stack reaching
    ``MAX_DEPTH`` frames, or with less than ``MIN_SHARE`` of the total, is
    charged whole to its frame with a ``DEEPER`` frame under it."""
    g = _Graph(own, calls)
    grand = sum(own.values()) or 1
    out: dict[tuple[str, ...], float] = defaultdict(float)

    def enter(prefix: tuple[str, ...], entry: str, share: float) -> None:
        c = g.comp_of[entry]
        if len(prefix) + 2 >= MAX_DEPTH or share * g.incl[c] < MIN_SHARE * grand:
            out[prefix + (entry, DEEPER)] += share * g.incl[c]
            return
        paths = {entry: prefix + (entry,)}
        todo = [entry]                             # a spanning tree of the component
        while todo:
            f = todo.pop(0)
            for h in g.succ.get(f, []):
                if g.comp_of[h] == c and h not in paths:
                    paths[h] = paths[f] + (h,)
                    todo.append(h)
        for f, path in paths.items():
            if own.get(f):
                out[path] += share * own[f]
            for h, part in g.out_of(f, c, calls):
                enter(path, h, share * part)

    for i in range(len(g.comps) - 1, -1, -1):     # callers first
        comp = g.comps[i]
        if not g.into[i]:                         # never seen called: a root
            enter((), max(comp, key=lambda f: (own.get(f, 0), f)), 1.0)
        else:
            for f in comp:
                n = calls.get((HOST, f), 0)
                if n:
                    enter((), f, n / g.into[i])
    return {k: v for k, v in out.items() if v > 0}
