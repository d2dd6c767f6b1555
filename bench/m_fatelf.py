"""Measures 7 and 8: FatELF pack/select throughput and CLI start-up.

7. Inputs: a 256 MiB x86_64 ELF (64 MiB with --quick) and the 3.9 KB aarch64
   standalone plugin.
   - pack:   ``elfkit.fatelf.pack_to(out, [big.so, standalone_aarch64.so])``
             (a ~256 MiB .sos) vs ``cp`` of an existing copy of that same
             .sos to a new path;
   - select: ``elfkit.fatelf.extract_to(out, fat.sos, "x86_64")`` (what
             ``elfkit fatelf select`` writes: the 256 MiB slice) vs ``cp`` of
             big.so (the identical bytes) to a new path.
   Ours is timed in-process, around the one function call, in a worker
   process (so its peak RSS, VmHWM, can be read); ``cp`` is timed from spawn to exit
   (``subprocess.run``), so its ratio includes cp's ~1 ms process start -
   nothing is subtracted.  Outputs are deleted (untimed) before every
   sample; all inputs are in the page cache (warm-up runs first); the two
   sides alternate.  Peak RSS: the worker's VmHWM and how much it grew from
   its value after imports, and cp's (``/usr/bin/time -f %M``, untimed run).
8. ``elfkit fatelf list fat.sos`` (the console script) vs ``python -c pass``,
   whole-process wall time, bytecode caching on for both (PYTHONDONTWRITEBYTECODE
   removed from the environment, two warm-up runs so the .pyc files exist).
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import _build
from ._timing import Config, Row, bytecode_env, compare_commands, fmt_bytes, fmt_rate, fmt_time

_WORKER = r"""
import json, os, resource, sys, time
import elfkit.fatelf as F
def rss():
    # VmHWM: this process's peak RSS since exec (ru_maxrss would include
    # the parent's size inherited through fork)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
base = rss()
print(json.dumps({"ready": True, "rss": base}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    out = cmd["out"]
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.perf_counter()
    if cmd["op"] == "pack":
        F.pack_to(out, cmd["inputs"])
    else:
        F.extract_to(out, cmd["source"], cmd["arch"])
    t = time.perf_counter() - t0
    print(json.dumps({"t": t, "rss": rss()}), flush=True)
"""


class _Worker:
    def __init__(self) -> None:
        self.p = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=bytecode_env())
        hello = json.loads(self.p.stdout.readline())
        self.base_rss = hello["rss"]
        self.peak_rss = hello["rss"]

    def run(self, **cmd) -> float:
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"fatelf worker died (exit {self.p.wait()})")
        r = json.loads(line)
        self.peak_rss = max(self.peak_rss, r["rss"])
        return r["t"]

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def _cp(src: Path, dst: Path) -> float:
    """Seconds from spawn to exit of ``cp src dst``."""
    if dst.exists():
        dst.unlink()
    t0 = time.perf_counter()
    p = subprocess.run(["cp", str(src), str(dst)])
    t = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"cp exited {p.returncode}")
    return t


def _cp_rss(src: Path, dst: Path) -> int | None:
    """cp's peak RSS in bytes, read by /usr/bin/time (a small parent: a
    child's ru_maxrss starts from its parent's size at fork)."""
    tool = shutil.which("time", path="/usr/bin:/bin")
    if not tool:
        return None
    if dst.exists():
        dst.unlink()
    p = subprocess.run([tool, "-f", "%M", "cp", str(src), str(dst)], capture_output=True,
                       text=True)
    try:
        return int(p.stderr.strip().splitlines()[-1]) * 1024
    except (ValueError, IndexError):
        return None


def fatelf(cfg: Config) -> list[Row]:
    size = (64 if cfg.quick else 256) << 20
    big = _build.big_elf(cfg.work, size)
    small = _build.plugin(cfg.work, "standalone", "aarch64")
    d = cfg.work / "data" / f"fatelf_{size >> 20}MiB"
    d.mkdir(parents=True, exist_ok=True)
    sos, sos_copy = d / "fat.sos", d / "fat_copy.sos"
    pid = os.getpid()
    out_pack, out_sel = d / f"packed.{pid}.sos", d / f"selected.{pid}.so"
    out_cp = d / f"cp.{pid}.out"
    import elfkit.fatelf as F
    F.pack_to(sos, [big, small])
    tmp = sos_copy.with_suffix(f".{pid}.tmp")
    shutil.copyfile(sos, tmp)
    tmp.replace(sos_copy)
    nbytes_pack, nbytes_sel = sos.stat().st_size, big.stat().st_size
    repeat = max(3, cfg.repeat if not cfg.quick else 3)
    w = _Worker()
    try:
        pack_cmd = {"op": "pack", "out": str(out_pack), "inputs": [str(big), str(small)]}
        sel_cmd = {"op": "select", "out": str(out_sel), "source": str(sos), "arch": "x86_64"}
        for _ in range(2):                       # warm-up: page cache, imports
            w.run(**pack_cmd), w.run(**sel_cmd), _cp(sos_copy, out_cp), _cp(big, out_cp)
        tp, cpp, ts, cps = [], [], [], []
        for i in range(repeat):
            pair = [lambda: tp.append(w.run(**pack_cmd)), lambda: cpp.append(_cp(sos_copy, out_cp))]
            for f in (pair if i % 2 == 0 else pair[::-1]):
                f()
            pair = [lambda: ts.append(w.run(**sel_cmd)), lambda: cps.append(_cp(big, out_cp))]
            for f in (pair if i % 2 == 0 else pair[::-1]):
                f()
        base, peak = w.base_rss, w.peak_rss
        cp_rss = _cp_rss(big, out_cp)
    finally:
        w.close()
        for p in (out_pack, out_sel, out_cp):
            p.unlink(missing_ok=True)
    o1, p1 = statistics.median(tp), statistics.median(cpp)
    o2, p2 = statistics.median(ts), statistics.median(cps)
    mem = (f"peak RSS (VmHWM): our worker {fmt_bytes(peak)}, i.e. {fmt_bytes(peak - base)} "
           f"above its {fmt_bytes(base)} after imports (flat: streamed); cp "
           f"{fmt_bytes(cp_rss) if cp_rss else 'n/a'}")
    rss_o = f", RSS {fmt_bytes(peak)}"
    rss_p = f", RSS {fmt_bytes(cp_rss)}" if cp_rss else ""
    mib = size >> 20
    return [
        Row("7a", f"FatELF pack of {mib} MiB vs cp",
            f"{fmt_time(o1)} ({fmt_rate(nbytes_pack / o1, 'B')}){rss_o}",
            f"{fmt_time(p1)} "
            f"({fmt_rate(nbytes_pack / p1, 'B')}){rss_p}", o1 / p1, "≤ 1.5× peer time",
            o1 / p1 <= 1.5, note=f"pack_to in-process vs cp spawn-to-exit; {mem}",
            data={"ours_s": o1, "peer_s": p1, "bytes": nbytes_pack, "rss_base": base,
                  "rss_peak": peak, "cp_rss": cp_rss, "repeat": repeat}),
        Row("7b", f"FatELF select (extract) of the {mib} MiB slice vs cp",
            f"{fmt_time(o2)} ({fmt_rate(nbytes_sel / o2, 'B')}){rss_o}",
            f"{fmt_time(p2)} "
            f"({fmt_rate(nbytes_sel / p2, 'B')}){rss_p}", o2 / p2, "≤ 1.5× peer time",
            o2 / p2 <= 1.5, note=f"extract_to in-process vs cp spawn-to-exit; {mem}",
            data={"ours_s": o2, "peer_s": p2, "bytes": nbytes_sel, "rss_base": base,
                  "rss_peak": peak, "cp_rss": cp_rss, "repeat": repeat}),
    ]


def cli_startup(cfg: Config) -> list[Row]:
    small = _build.plugin(cfg.work, "standalone", "aarch64")
    x86 = _build.plugin(cfg.work, "standalone", "x86_64")
    d = cfg.work / "data"
    sos = d / "standalone.sos"
    import elfkit.fatelf as F
    F.pack_to(sos, [x86, small])       # written atomically (temporary file + rename)
    exe = shutil.which("elfkit", path=str(Path(sys.executable).parent)) or shutil.which("elfkit")
    cmd = [exe, "fatelf", "list", str(sos)] if exe else \
        [sys.executable, "-m", "elfkit", "fatelf", "list", str(sos)]
    res = compare_commands({"ours": cmd, "peer": [sys.executable, "-c", "pass"]}, cfg,
                           env=bytecode_env(), repeat=max(cfg.repeat, 5))
    o, p = res["ours"], res["peer"]
    imports = _import_profile(cmd)
    return [Row("8", "CLI start-up: elfkit fatelf list vs python -c pass", fmt_time(o),
                fmt_time(p), o / p, "≤ 2× peer time", o / p <= 2.0,
                note=f"{'console script' if exe else 'python -m elfkit'}; wall time, "
                     f"bytecode caching on" + (f"; -X importtime: {imports}" if imports else ""),
                data={"ours_s": o, "peer_s": p})]


def _import_profile(cmd: list[str]) -> str:
    """The biggest imports of the command (python -X importtime), cumulative."""
    argv = ([sys.executable, "-X", "importtime"] +
            (cmd[1:] if cmd[0] == sys.executable else cmd))
    p = subprocess.run(argv, capture_output=True, text=True, env=bytecode_env())
    found: list[tuple[int, str]] = []
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:"):].split("|")
        try:
            cum = int(parts[1])
        except (ValueError, IndexError):
            continue
        name = parts[2]
        depth = (len(name) - len(name.lstrip())) // 2
        name = name.strip()
        if depth <= 2 and (name.startswith("elfkit") or name.startswith("__editable__")):
            found.append((cum, name))
    found.sort(reverse=True)
    return ", ".join(f"{n} {c / 1000:.1f} ms" for c, n in found[:5])
