"""Measures 4-6: the emulated backend (unicorn) vs raw unicorn on the same code.

The guest plugins are built for riscv64 and aarch64 and loaded with
``elfkit.load(path, backend="emulated")``; the peer is ``_rawuc.RawMirror``:
the same relocated image copied to the same addresses in a hand-driven
``unicorn.Uc`` (see that module for exactly what a raw call does).

4.  a call of ``add_i64`` (two instructions and a return) through
    ``m.function(name, "i64(i64,i64)")`` vs the raw register/emu_start
    sequence;
5a. compute loop: ``spin(n)`` (a volatile counter, n iterations) - throughput
    in iterations/s, ours vs raw (goal ≥ 0.8×) and vs native x86_64 (reported);
5b. memory-bound loop: ``sum_i32`` over a 4 MiB page-aligned numpy int32
    buffer.  Ours passes the numpy array as the argument on every call (elfkit
    maps it zero-copy for the call); the raw peer maps it once with
    ``mem_map_ptr`` before timing.  Elements/s; also vs native (reported);
6.  guest -> Python import round trip: ``sum_via_host(p, n)`` calls the
    host's ``host_add`` n times; per round trip = call time / n.  Ours: a
    Python provider ``imports={"host_add": (fn, "i32(i32,i32)")}``; raw:
    a ``ret`` at the same stub address with a UC_HOOK_CODE on it that reads
    the argument registers, calls the same ``fn`` and writes the result;
6m. machine creation: ``EmulatedMachine(arch)`` + ``close()`` vs
    ``Uc()`` + ``mem_map`` of a 1 MiB stack + release (reported).
"""
from __future__ import annotations

from . import _build
from ._rawuc import RawMirror, new_uc, page_aligned
from ._timing import Config, Row, compare, compare_many, fmt_rate, fmt_time, measure, na_row

ARCHES = ("riscv64", "aarch64")


def _host_add(a: int, b: int) -> int:
    return a + b


def _imports() -> dict:
    return {"host_add": (_host_add, "i32(i32,i32)"),
            "host_log": (lambda code: None, "void(i32)"),
            "host_scale": (lambda x, s: x * s, "f64(f64,f32)")}


def _emulated_available() -> str | None:
    try:
        from elfkit.exec.emulated import EmulatedMachine  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"elfkit.exec.emulated does not import: {e}"
    return None


def emulated(cfg: Config) -> list[Row]:
    why = _emulated_available()
    if why:
        return [na_row(i, name, goal, why) for i, name, goal in (
            ("4", "emulated call vs raw unicorn", "≤ 1.3× peer time"),
            ("5a", "emulated compute loop vs raw unicorn", "≥ 0.8× peer throughput"),
            ("5b", "emulated memory-bound loop vs raw unicorn", "≥ 0.8× peer throughput"),
            ("6", "emulated import round trip vs raw unicorn hook", "≤ 1.5× peer time"))]
    rows: list[Row] = []
    native = _native_refs(cfg)
    for arch in ARCHES:
        for fn, rid, what in ((_call, "4", "emulated call"), (_loops, "5", "emulated loops"),
                              (_imports_rt, "6", "emulated import round trip")):
            try:
                rows += fn(cfg, arch, native)
            except Exception as e:  # noqa: BLE001 - one broken measure must not hide the rest
                r = na_row(rid, f"{what} ({arch})", "", f"failed: {type(e).__name__}: {e}")
                r.data["arch"] = arch
                rows.append(r)
    rows.sort(key=lambda r: (r.id, ARCHES.index(r.data.get("arch", "riscv64"))))
    try:
        rows += _creation(cfg)
    except Exception as e:  # noqa: BLE001
        rows.append(na_row("6m", "emulated machine creation", "reported", f"failed: {e}"))
    return rows


def _call(cfg: Config, arch: str, native: dict) -> list[Row]:
    import elfkit
    m = elfkit.load(_build.plugin(cfg.work, "kernels", arch), backend="emulated")
    raw = RawMirror(m)
    try:
        addr = m.exports["add_i64"]
        f = m.function("add_i64", "i64(i64,i64)")
        r = raw.caller(addr)
        assert f(40, 2) == 42 and r(40, 2) == 42, (f(40, 2), r(40, 2))
        ours, peer = compare(lambda: f(40, 2), lambda: r(40, 2), cfg)
    finally:
        raw.close()
        m.close()
    return [Row("4", f"emulated call of add_i64 ({arch}) vs raw unicorn emu_start",
                fmt_time(ours), fmt_time(peer), ours / peer, "≤ 1.3× peer time",
                ours / peer <= 1.3, data={"arch": arch, "ours_s": ours, "peer_s": peer})]


def _native_refs(cfg: Config) -> dict:
    """Native (x86_64, ctypes) times of the same loops, for 'vs native'."""
    import elfkit
    out: dict = {}
    m = elfkit.load(_build.plugin(cfg.work, "kernels", "x86_64"), backend="native")
    try:
        spin = m.function("spin", "u64(u64)")
        total = m.function("sum_i32", "i64(ptr,i64)")
        n = 50_000_000 if not cfg.quick else 5_000_000
        buf = page_aligned(1 << 20)
        buf[:] = 1
        ptr = buf.__array_interface__["data"][0]
        out["spin_rate"] = n / measure(lambda: spin(n), cfg, number=1)
        out["sum_rate"] = buf.size / measure(lambda: total(ptr, buf.size), cfg)
    finally:
        m.close()
    return out


def _loops(cfg: Config, arch: str, native: dict) -> list[Row]:
    import elfkit
    m = elfkit.load(_build.plugin(cfg.work, "kernels", arch), backend="emulated")
    raw = RawMirror(m)
    rows = []
    try:
        # compute
        n = 300_000 if cfg.quick else 1_500_000
        spin = m.function("spin", "u64(u64)")
        rspin = raw.caller(m.exports["spin"])
        assert spin(1000) == 1000 and rspin(1000) == 1000
        ours, peer = compare(lambda: spin(n), lambda: rspin(n), cfg, number=1)
        o_rate, p_rate = n / ours, n / peer
        nat = native.get("spin_rate")
        rows.append(Row("5a", f"emulated compute loop spin(n) ({arch}) vs raw unicorn",
                        fmt_rate(o_rate, "iter"), fmt_rate(p_rate, "iter"), o_rate / p_rate,
                        "≥ 0.8× peer throughput", o_rate / p_rate >= 0.8,
                        note=(f"n={n}; native x86_64 {fmt_rate(nat, 'iter')} = "
                              f"{o_rate / nat:.2%} of native" if nat else f"n={n}"),
                        data={"arch": arch, "ours_rate": o_rate, "peer_rate": p_rate,
                              "native_rate": nat}))
        # memory-bound: 4 MiB of int32
        buf = page_aligned(1 << 20)
        buf[:] = 3
        want = 3 * buf.size
        total = m.function("sum_i32", "i64(ptr,i64)")
        rptr = raw.share(buf)
        rtotal = raw.caller(m.exports["sum_i32"])
        assert total(buf, buf.size) == want and rtotal(rptr, buf.size) == want
        ours, peer = compare(lambda: total(buf, buf.size), lambda: rtotal(rptr, buf.size), cfg,
                             number=1)
        o_rate, p_rate = buf.size / ours, buf.size / peer
        # the same with the buffer mapped once (machine.share), for the notes
        shared = m.machine.share(buf)
        try:
            s_ours, s_peer = compare(lambda: total(shared, buf.size),
                                     lambda: rtotal(rptr, buf.size), cfg, number=1)
        finally:
            m.machine.unshare(shared)
        s_rate = buf.size / s_ours
        nat = native.get("sum_rate")
        rows.append(Row("5b", f"emulated sum_i32 of 4 MiB numpy ({arch}) vs raw unicorn",
                        fmt_rate(o_rate, "elem"), fmt_rate(p_rate, "elem"), o_rate / p_rate,
                        "≥ 0.8× peer throughput", o_rate / p_rate >= 0.8,
                        note=(f"array passed per call; with machine.share(array) mapped once: "
                              f"{fmt_rate(s_rate, 'elem')} = {s_rate / (buf.size / s_peer):.2f}× "
                              f"raw; " +
                              (f"native x86_64 {fmt_rate(nat, 'elem')}, emulated = "
                               f"{o_rate / nat:.2%} of native" if nat else "")),
                        data={"arch": arch, "ours_rate": o_rate, "peer_rate": p_rate,
                              "native_rate": nat, "shared_rate": s_rate,
                              "shared_peer_rate": buf.size / s_peer}))
    finally:
        raw.close()
        m.close()
    return rows


def _imports_rt(cfg: Config, arch: str, native: dict) -> list[Row]:
    import struct

    import elfkit
    m = elfkit.load(_build.plugin(cfg.work, "imports", arch), backend="emulated",
                    imports=_imports())
    raw = RawMirror(m)
    try:
        stub = struct.unpack("<Q", m.read(m.exports["g_host_add_ptr"], 8))[0]
        raw.hook_import(stub, _host_add)
        n = 200 if cfg.quick else 2000
        buf = page_aligned(n)
        buf[:] = 2
        f = m.function("sum_via_host", "i32(ptr,i32)")
        rptr = raw.share(buf)
        r = raw.caller(m.exports["sum_via_host"])
        assert f(buf, n) == 2 * n and r(rptr, n) == 2 * n, (f(buf, n), r(rptr, n))
        ours, peer = compare(lambda: f(buf, n), lambda: r(rptr, n), cfg, number=1)
        ours, peer = ours / n, peer / n
        # one whole call of call_host_add (entry + one round trip), reported
        g = m.function("call_host_add", "i32(i32,i32)")
        rg = raw.caller(m.exports["call_host_add"])
        assert g(40, 2) == 42 and rg(40, 2) == 42
        ours1, peer1 = compare(lambda: g(40, 2), lambda: rg(40, 2), cfg)
    finally:
        raw.close()
        m.close()
    return [Row("6", f"emulated guest→Python import round trip ({arch}) vs raw unicorn hook",
                fmt_time(ours), fmt_time(peer), ours / peer, "≤ 1.5× peer time",
                ours / peer <= 1.5,
                note=(f"sum_via_host: {n} host_add calls per guest call; whole "
                      f"call_host_add(40, 2): {fmt_time(ours1)} vs {fmt_time(peer1)}"),
                data={"arch": arch, "ours_s": ours, "peer_s": peer, "call_ours_s": ours1,
                      "call_peer_s": peer1})]


def _creation(cfg: Config) -> list[Row]:
    from unicorn import unicorn_const as C

    import elfkit
    from elfkit.arch import get as get_arch
    from elfkit.exec.emulated import EmulatedMachine
    rows = []
    for arch_name in ARCHES:
        arch = get_arch(arch_name)

        def ours(arch=arch):
            EmulatedMachine(arch).close()

        def peer(arch=arch):
            uc = new_uc(arch)
            uc.mem_map(0x7F000000 - (1 << 20), 1 << 20, C.UC_PROT_READ | C.UC_PROT_WRITE)
            fin = getattr(uc, "_Uc__finalizer", None)
            if fin is not None:
                fin()

        path = _build.plugin(cfg.work, "kernels", arch_name)
        data = path.read_bytes()

        def load(data=data):
            elfkit.load(data, backend="emulated").close()
        res = compare_many({"ours": ours, "peer": peer, "load": load}, cfg, number=5)
        rows.append(Row("6m", f"emulated machine creation ({arch_name}) vs Uc()+mem_map",
                        fmt_time(res["ours"]), fmt_time(res["peer"]), res["ours"] / res["peer"],
                        "reported", None,
                        note=f"elfkit.load(kernels.so, backend='emulated')+close: "
                             f"{fmt_time(res['load'])}",
                        data={"arch": arch_name, "ours_s": res["ours"], "peer_s": res["peer"],
                              "load_s": res["load"]}))
    return rows
