"""Measure 16: load time vs ``lief.parse`` over a corpus (``load_corpus``).

For every file of the corpus (x86_64 plugins, objects and IREE dispatch
libraries the tests load natively; see ``bench/load_corpus.py``), two
interleaved comparisons, each ``elfkit.load(bytes, imports=stubs).close()``
against ``lief.parse`` of the same bytes:

* first load: bytes elfkit has never seen in this process.  elfkit keeps a
  load plan per file content (the bytes are the key) and a closed image's
  range with its relocated bytes for that plan, so every first load gets
  a fresh copy of the file with a new value in the unused e_ident padding
  (bytes 9-15, a counter from a random start: never used before in this
  process or an earlier one, so no cache, in memory or on disk, has seen
  it): a plan-cache miss, parsed, laid out and relocated afresh.  The
  copies are made before each sample, outside the timing, and LIEF parses
  the very same copies.
  What the process keeps between loads of different files (freed address
  ranges of the same size, ctypes types) is used as it would be by any
  process that loads several plugins.
* reload: the same bytes object loaded and closed again and again (as in
  row 1a).

Each comparison is the median of ``repeat`` samples per side (ours and
LIEF alternating which goes first), taken round robin over the files.
Rows: median and worst ratio over the corpus of each; the goal (≤ 3×)
judges the worst; the files above it are listed.
"""
from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from typing import Any

from ._timing import Config, Row, calibrate, per_input, run_n
from .load_corpus import Entry, gather, stub_imports

GOAL = 3.0
#: bytes of fresh copies made for one sample of first loads
_COPY_BUDGET = 24 << 20
#: starts at a random value: no copy repeats one an earlier process made (and
#: a cache kept on disk, such as elfkit's, may remember)
_counter = [int.from_bytes(os.urandom(6), "little")]


def fresh(data: bytes) -> bytes:
    """``data`` with e_ident bytes 9-15 (padding) set to a new counter value."""
    _counter[0] += 1
    b = bytearray(data)
    b[9:16] = (_counter[0] & ((1 << 48) - 1) | 1 << 48).to_bytes(7, "little")
    return bytes(b)


def _loader(e: Entry) -> Callable[[bytes], None]:
    import elfkit
    imports = stub_imports(e)

    def f(data: bytes) -> None:
        elfkit.load(data, imports=imports, backend="native").close()
    return f


def _parser() -> Callable[[bytes], None]:
    import lief
    lief.logging.disable()

    def f(data: bytes) -> None:
        lief.parse(data)
    return f


class _Sampler:
    """One file's two comparisons, one sample at a time (see corpus_load)."""

    def __init__(self, e: Entry, cfg: Config):
        self.e, self.ours, self.peer = e, _loader(e), _parser()
        self.samples: dict[str, tuple[list[float], list[float]]] = {
            "first": ([], []), "reload": ([], [])}
        data = e.data
        self.ours(fresh(data))
        self.peer(fresh(data))
        cap = max(1, _COPY_BUDGET // max(1, len(data)))
        self.n_first = max(1, min(cap, calibrate(lambda: self.ours(fresh(data)), cfg.target,
                                                 max_number=cap)))
        self.n_reload = max(1, min(calibrate(lambda: self.ours(data), cfg.target),
                                   calibrate(lambda: self.peer(data), cfg.target)))

    def sample(self, i: int) -> None:
        """One sample of each comparison, the order of the sides alternating with ``i``."""
        copies = [fresh(self.e.data) for _ in range(self.n_first)]
        data = self.e.data
        a, b = self.samples["first"]
        for fn, out in (((self.ours, a), (self.peer, b)) if i % 2 == 0
                        else ((self.peer, b), (self.ours, a))):
            it = iter(copies)
            out.append(run_n(lambda fn=fn, it=it: fn(next(it)), self.n_first) / self.n_first)
        a, b = self.samples["reload"]
        for fn, out in (((self.ours, a), (self.peer, b)) if i % 2 == 1
                        else ((self.peer, b), (self.ours, a))):
            out.append(run_n(lambda fn=fn: fn(data), self.n_reload) / self.n_reload)

    def medians(self, kind: str) -> tuple[float, float]:
        a, b = self.samples[kind]
        return statistics.median(a), statistics.median(b)


def _rows(kind: str, ids: tuple[str, str], per: dict[str, tuple[float, float]],
          what: str) -> list[Row]:
    ratios = {k: o / p for k, (o, p) in per.items()}
    med = statistics.median(ratios.values())
    worst_k = max(ratios, key=ratios.__getitem__)
    worst = ratios[worst_k]
    over = sorted((k for k, r in ratios.items() if r > GOAL), key=ratios.__getitem__,
                  reverse=True)
    o_med = statistics.median(o for o, _p in per.values())
    p_med = statistics.median(p for _o, p in per.values())
    from ._timing import fmt_time
    data: dict[str, Any] = {"ratios": ratios, "ours_s": {k: v[0] for k, v in per.items()},
                            "peer_s": {k: v[1] for k, v in per.items()}}
    missing = (f"; above {GOAL:g}×: " + ", ".join(f"{k} {ratios[k]:.2f}×" for k in over)
               if over else f"; every file within {GOAL:g}×")
    return [
        Row(ids[0], f"{kind} of {len(per)} files vs lief.parse: median ratio",
            fmt_time(o_med), fmt_time(p_med), med, "reported", None,
            note=f"{what}; ours/peer: median of the per-file ratios (times: medians over "
                 f"the files)", data=data),
        Row(ids[1], f"{kind} of {len(per)} files vs lief.parse: worst ratio",
            fmt_time(per[worst_k][0]), fmt_time(per[worst_k][1]), worst,
            f"≤ {GOAL:g}× peer time", worst <= GOAL,
            note=f"worst: {worst_k}{missing}", data={"worst": worst_k, "over": over,
                                                       **per_input(ratios, GOAL)}),
    ]


def corpus_load(cfg: Config) -> list[Row]:
    entries = gather(cfg.work, log=cfg.verbose)
    samplers = [_Sampler(e, cfg) for e in entries]
    # round robin over the files: a burst of load from another process hits
    # a sample or two of many files, not every sample of one
    for i in range(cfg.repeat):
        for sm in samplers:
            sm.sample(i)
    first = {sm.e.label: sm.medians("first") for sm in samplers}
    again = {sm.e.label: sm.medians("reload") for sm in samplers}
    kinds: dict[str, int] = {}
    for e in entries:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    comp = (f"corpus: {kinds.get('so', 0)} shared objects, {kinds.get('o', 0)} relocatable "
            f"objects, {kinds.get('iree', 0)} IREE dispatch libraries (x86_64, see "
            f"bench/load_corpus.py); elfkit.load(bytes, imports=stub).close() vs "
            f"lief.parse(bytes)")
    return (_rows("first load", ("16a", "16b"), first,
                  comp + "; first load: a never-seen copy (new e_ident padding) each time")
            + _rows("reload", ("16c", "16d"), again, comp + "; reload: the same bytes again"))
