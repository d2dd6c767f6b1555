"""Bare-unicorn reproducer of one emulated dispatch (measure 15's notes).

    python -m bench.rawuc_dispatch DIR [--repeat N] [--peers]

DIR is a folder ``vmrt run --dump_dispatches=DIR`` wrote for one dispatch
(``dispatch.json``, ``executable.so``, ``binding<i>.npy``, ``expected<i>.npy``).
The script runs that dispatch's function with as little Python as the unicorn
binding allows: the library is loaded once (elfkit, then copied page by page
into a fresh ``unicorn.Uc`` by ``_rawuc.RawMirror``), the library query and
the export table are read once, the bindings are mapped zero-copy, and a
dispatch is, per workgroup, one ``mem_write`` of the workgroup state, three
``reg_write``s and ``emu_start``.  FPCR/FPSR are set as vmrt sets them for
dispatch code (flush-to-zero, inexact flag up).  It checks the result against
``expected<i>.npy`` and prints the CPU and wall time per dispatch, and the
share of it spent inside ``emu_start`` (the JIT-compiled guest code):
comparing that with vmrt (``vmrt executable benchmark DIR``) separates
vmrt's overhead from unicorn's own speed, and comparing it with IREE's
``iree-benchmark-executable`` under ``qemu-aarch64`` (same library, export,
workgroup count and bindings) separates unicorn from qemu-user.  With
``--peers`` the script runs those two as well (CPU time per dispatch, from
their ``process_time`` column; qemu-aarch64 and IREE's aarch64 tools from
``python -m bench --setup-qemu``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ._rawuc import PAGE, RawMirror, page_aligned

LIBRARY_QUERY = "iree_hal_executable_library_query"
LIBRARY_VERSION = 6
FPCR_FZ = 1 << 24
FPSR_IXC = 1 << 4


def _aligned_copy(a: Any) -> Any:
    out = page_aligned(a.size, a.dtype.str)
    out[:] = a.reshape(-1)
    return out


class RawDispatch:
    def __init__(self, folder: Path):
        import numpy as np
        from unicorn import arm64_const, unicorn_const

        import elfkit
        from vmrt.hal.local.library_abi import layout
        meta = json.loads((folder / "dispatch.json").read_text())
        if meta["arch"] != "aarch64":
            raise SystemExit(f"{folder}: only aarch64 dispatches ({meta['arch']})")
        self.meta = meta
        self.module = elfkit.load(str(folder / "executable.so"), backend="emulated")
        # 4 KiB guest pages, as elfkit asks for (unicorn's AArch64 default is 1 KiB)
        raw = self.raw = RawMirror(self.module, page_size=PAGE)
        uc = raw.uc
        lay = layout(8)
        # scratch page: environment, dispatch state, binding tables, workgroup state
        self.scratch = scratch = 0x30000000
        uc.mem_map(scratch, 4 * PAGE, unicorn_const.UC_PROT_READ | unicorn_const.UC_PROT_WRITE)
        env = scratch
        uc.mem_write(env, bytes(lay.env_size))
        query = raw.caller(self.module.symbol(LIBRARY_QUERY))
        lib = query(LIBRARY_VERSION, env)
        if not lib:
            raise SystemExit("the library query returned NULL")
        v0 = lay.library_v0(bytes(uc.mem_read(lib, lay.library_v0_size)))
        ordinal = meta["export_ordinal"]
        fn = int.from_bytes(uc.mem_read(v0.export_ptrs + 8 * ordinal, 8), "little")
        attrs = lay.dispatch_attrs(bytes(uc.mem_read(v0.export_attrs + lay.attrs_size * ordinal,
                                                     lay.attrs_size))) if v0.export_attrs else None
        local_size = attrs.local_memory_size if attrs else 0
        local = 0
        if local_size:
            local = 0x38000000
            uc.mem_map(local, (local_size + PAGE - 1) & ~(PAGE - 1),
                       unicorn_const.UC_PROT_READ | unicorn_const.UC_PROT_WRITE)
        self.arrays = [_aligned_copy(np.load(folder / b)) for b in meta["bindings"]]
        self.inputs = [a.copy() for a in self.arrays]
        ptrs = [raw.share(a) for a in self.arrays]
        sizes = meta["binding_sizes"]
        consts = b"".join(int(c & 0xFFFFFFFF).to_bytes(4, "little") for c in meta["constants"])
        c_off, bp_off, bl_off, ds_off = 0x100, 0x400, 0x800, 0xC00
        uc.mem_write(scratch + c_off, consts or b"\0")
        uc.mem_write(scratch + bp_off, lay.pack_words(*ptrs))
        uc.mem_write(scratch + bl_off, lay.pack_words(*sizes))
        wc = tuple(meta["workgroup_count"])
        ws3 = tuple(meta["workgroup_size"])
        uc.mem_write(scratch + ds_off, lay.dispatch_state(
            ws3, len(meta["constants"]), wc, 1, len(ptrs), scratch + c_off if consts else 0,
            scratch + bp_off, scratch + bl_off))
        self.ds = scratch + ds_off
        self.env = env
        self.ws = scratch + 2 * PAGE
        self.states = [lay.workgroup_state(x, y, z, 0, local, local_size)
                       for z in range(wc[2]) for y in range(wc[1]) for x in range(wc[0])]
        self.call = raw.caller(fn)
        self.uc = uc
        self.fpcr, self.fpsr = arm64_const.UC_ARM64_REG_FPCR, arm64_const.UC_ARM64_REG_FPSR
        self.emu_s = 0.0

    def dispatch(self) -> None:
        """Every workgroup, in order (x fastest): the whole dispatch."""
        uc, call, env, ds, ws = self.uc, self.call, self.env, self.ds, self.ws
        uc.reg_write(self.fpcr, FPCR_FZ)
        uc.reg_write(self.fpsr, FPSR_IXC)
        clock = time.perf_counter
        t = 0.0
        for rec in self.states:
            uc.mem_write(ws, rec)
            t0 = clock()
            rc = call(env, ds, ws)
            t += clock() - t0
            if rc:
                raise SystemExit(f"workgroup returned {rc}")
        self.emu_s += t

    def reset(self) -> None:
        for a, b in zip(self.arrays, self.inputs):
            a[:] = b

    def check(self, folder: Path) -> str:
        import numpy as np
        worst = 0.0
        for i, a in enumerate(self.arrays):
            exp = folder / f"expected{i}.npy"
            if not exp.is_file():
                continue
            want = np.load(exp).reshape(-1)
            if a.dtype.kind == "f":
                if not np.allclose(a, want, rtol=1e-5, atol=1e-5, equal_nan=True):
                    raise SystemExit(f"binding {i} differs from expected{i}.npy")
                worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - want))))
            elif not np.array_equal(a, want):
                raise SystemExit(f"binding {i} differs from expected{i}.npy")
        return "identical" if worst == 0 else f"max abs diff {worst:.2g}"


def measure(folder: Path, repeat: int) -> dict[str, Any]:
    """CPU and wall seconds per dispatch (medians) and the emu_start share."""
    d = RawDispatch(folder)
    d.dispatch()
    same = d.check(folder)
    cpu: list[float] = []
    wall: list[float] = []
    d.emu_s = 0.0
    for _ in range(repeat):
        d.reset()
        c0, w0 = time.process_time(), time.perf_counter()
        d.dispatch()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall),
            "emu_share": d.emu_s / sum(wall), "workgroups": len(d.states), "result": same}


def _process_time(cmd: list[str]) -> float:
    """Median ``process_time`` seconds per dispatch a benchmark tool prints."""
    import re
    import subprocess
    p = subprocess.run(cmd, capture_output=True, text=True)
    times = [int(m.group(1)) for m in re.finditer(
        r"^BM_dispatch_\S+/real_time\s+\d+ ns\s+(\d+) ns", p.stdout, re.M)]
    if p.returncode != 0 or not times:
        raise SystemExit(f"{' '.join(cmd)} failed: {(p.stdout + p.stderr)[-400:]}")
    return statistics.median(times) / 1e9


def peers(folder: Path, repeat: int) -> dict[str, float]:
    """CPU seconds per dispatch of vmrt's and (under qemu) IREE's executable benchmark."""
    import os
    import shutil

    from ._timing import REPO
    from .m_qemu import CPUS, runtime_dir
    meta = json.loads((folder / "dispatch.json").read_text())
    common = [f"--workgroup_count={','.join(map(str, meta['workgroup_count']))}",
              *[f"--binding=@{folder / b}" for b in meta["bindings"]],
              *[f"--constant={c}" for c in meta["constants"]],
              "--batch_size=1", "--benchmark_min_time=1x",
              f"--benchmark_repetitions={repeat}"]
    out = {}
    vmrt = shutil.which("vmrt") or "vmrt"
    out["vmrt"] = _process_time([vmrt, "executable", "benchmark", str(folder), "--batch_size=1",
                                 "--benchmark_min_time=1x", f"--benchmark_repetitions={repeat}"])
    qemu, _deb, sysroot, _tag = CPUS["aarch64"]
    tools = Path(os.environ.get("VMRT_BENCH_IREE_AARCH64")
                 or runtime_dir(REPO / "build" / "bench", "aarch64"), "iree", "_runtime_libs")
    consts = [a.replace("--constant=", "--push_constant=") for a in common
              if a.startswith("--constant=")]
    out["qemu"] = _process_time(
        [qemu, "-L", sysroot, str(tools / "iree-benchmark-executable"), "--device=local-sync",
         "--executable_format=embedded-elf-arm_64", f"--executable_file={folder / 'executable.so'}",
         f"--entry_point={meta['export_ordinal']}",
         *[a for a in common if not a.startswith("--constant=")], *consts])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.rawuc_dispatch",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="a vmrt run --dump_dispatches dispatch folder")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--peers", action="store_true",
                    help="also run vmrt's and (under qemu-aarch64) IREE's executable benchmark")
    args = ap.parse_args(argv)
    r = measure(args.folder, args.repeat)
    print(f"raw unicorn: {r['cpu_s'] * 1e3:.1f} ms CPU ({r['wall_s'] * 1e3:.1f} ms wall) per "
          f"dispatch of {r['workgroups']} workgroups, {100 * r['emu_share']:.1f} % inside "
          f"emu_start; result vs expected: {r['result']}")
    if args.peers:
        p = peers(args.folder, args.repeat)
        print(f"vmrt executable benchmark: {p['vmrt'] * 1e3:.1f} ms CPU per dispatch "
              f"({p['vmrt'] / r['cpu_s']:.2f}x raw unicorn)")
        print(f"qemu-aarch64 iree-benchmark-executable: {p['qemu'] * 1e3:.1f} ms CPU per "
              f"dispatch (raw unicorn / qemu-user = {r['cpu_s'] / p['qemu']:.2f}x, "
              f"vmrt / qemu-user = {p['vmrt'] / p['qemu']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
