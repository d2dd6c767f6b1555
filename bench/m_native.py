"""Measure 3: native calls and ``import elfkit``.

3a. ``m.function("add_i64", "i64(i64,i64)")(1, 2)`` vs a ctypes
    ``CFUNCTYPE(c_int64, c_int64, c_int64)`` pointer to the same address,
    built by hand (the kernels plugin, x86_64, loaded natively).
3b. ``m.call("add_i64", 1, 2)`` (types inferred per call) vs the same bare
    ctypes call (reported).
3c. ``python -c "import elfkit"`` vs ``python -c pass``, wall clock of the
    whole process, bytecode caching on for both (reported).
"""
from __future__ import annotations

import ctypes
import sys

from . import _build
from ._timing import Config, Row, bytecode_env, compare, compare_commands, fmt_time


def native_calls(cfg: Config) -> list[Row]:
    import elfkit
    path = _build.plugin(cfg.work, "kernels", "x86_64")
    m = elfkit.load(path, backend="native")
    try:
        addr = m.exports["add_i64"]
        bare = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(addr)
        fn = m.function("add_i64", "i64(i64,i64)")
        assert fn(40, 2) == 42 and bare(40, 2) == 42
        ours, peer = compare(lambda: fn(40, 2), lambda: bare(40, 2), cfg)
        call = m.call
        ours2, peer2 = compare(lambda: call("add_i64", 40, 2), lambda: bare(40, 2), cfg)
    finally:
        m.close()
    return [
        Row("3a", "native Module.function call (add_i64) vs bare ctypes",
            fmt_time(ours), fmt_time(peer), ours / peer, "≤ 1.5× peer time", ours / peer <= 1.5,
            note="same address; one call per iteration of a Python loop",
            data={"ours_s": ours, "peer_s": peer}),
        Row("3b", "native Module.call (add_i64, types inferred) vs bare ctypes",
            fmt_time(ours2), fmt_time(peer2), ours2 / peer2, "reported", None,
            data={"ours_s": ours2, "peer_s": peer2}),
    ]


def import_cost(cfg: Config) -> list[Row]:
    env = bytecode_env()
    res = compare_commands({"ours": [sys.executable, "-c", "import elfkit"],
                            "peer": [sys.executable, "-c", "pass"]},
                           cfg, env=env, repeat=max(cfg.repeat, 5))
    o, p = res["ours"], res["peer"]
    return [Row("3c", 'python -c "import elfkit" vs python -c pass', fmt_time(o), fmt_time(p),
                o / p, "reported", None,
                note="whole-process wall time, bytecode caching on",
                data={"ours_s": o, "peer_s": p})]
