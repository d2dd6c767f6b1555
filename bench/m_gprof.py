"""Row 19: what a guest-code profile costs (``EmulatedMachine.profile``,
``vmrt run --guest_profile``, ``vmrt.load(guest_profile=...)``).

A corpus of emulated workloads: a tight loop in a plain plugin (``elfkit``
call) on aarch64, riscv64 and armv7, and three IREE programs (the MNIST MLP
of row 13a, a 128x128 matmul, a row softmax; ``vmrt.load``, ``local-sync``)
on aarch64, riscv64 and riscv32.  Each workload is timed unprofiled and profiled,
in pairs, medians; a profiled sample is a whole profile session: start
(translation cache flushed, block hook added: it counts blocks and the
call edges of the call stacks), the call, stop (hook removed, translation
cache flushed, counts charged to functions and lines: instruction lengths,
symbols, DWARF; calls named).  Each unprofiled sample follows a
profiled one, so both translate their code afresh, as a fresh process does
(``vmrt run --guest_profile`` vs ``vmrt run``).  The goal judges the worst
ratio.

Which block hook counts is the library's choice (the native C counter of
``elfkit.exec.emulated.blockhook``, else the Python one);
``ELFKIT_PROFILE_HOOK=python`` measures the Python hook.
"""
from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from . import _build
from ._timing import Config, Row, fmt_time, na_row, per_input, run_n
from .m_programs import mnist_mlir
from .m_vmrt import which_tool

GOAL = "≤ 2×"
LOOP_ARCHES = ("aarch64", "riscv64", "arm")
#: (armv7 generic has no fmaxf instruction: iree-compile cannot link MNIST or
#: softmax for it; riscv32 is the 32-bit CPU of the IREE programs)
IREE_ARCHES = ("aarch64", "riscv64", "riscv32")
LOOP_C = """\
volatile unsigned sink;

__attribute__((noinline)) void hot(unsigned n) {
    for (unsigned i = 0; i < n; i++) sink = sink * 31u + (i ^ (sink >> 3)) * 7u;
}

__attribute__((noinline)) void cold(unsigned n) {
    for (unsigned i = 0; i < n; i++) sink += i;
}

__attribute__((visibility("default"))) unsigned entry(unsigned n) {
    hot(n * 1000);
    cold(n);
    return sink;
}
"""
MATMUL_MLIR = """\
func.func @matmul(%a: tensor<128x128xf32>, %b: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x128xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
  %r = linalg.matmul ins(%a, %b : tensor<128x128xf32>, tensor<128x128xf32>)
      outs(%f : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %r : tensor<128x128xf32>
}
"""
SOFTMAX_MLIR = """\
func.func @softmax(%x: tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  %e = tensor.empty() : tensor<64x1024xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<64x1024xf32>)
      outs(%e : tensor<64x1024xf32>) -> tensor<64x1024xf32>
  return %r : tensor<64x1024xf32>
}
"""


def _data(work: Path) -> Path:
    d = work / "data" / "gprof"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _vmfb(work: Path, name: str, text: str, arch: str) -> Path:
    """``text`` compiled for ``arch``'s llvm-cpu local device (cached while
    the source and flags are unchanged)."""
    import subprocess

    from tests.vmrt.iree_tools import IREE_TARGET_FLAGS  # the tests' table (as load_corpus)
    d = _data(work)
    flags = ["--iree-hal-target-device=local",
             "--iree-hal-local-target-device-backends=llvm-cpu", *IREE_TARGET_FLAGS[arch]]
    src, out = d / f"{name}_{arch}.mlir", d / f"{name}_{arch}.vmfb"
    stamp = text + "\n// " + " ".join(flags) + "\n"
    if out.is_file() and src.is_file() and src.read_text() == stamp:
        return out
    compiler = which_tool("iree-compile")
    if not compiler:
        raise _build.BuildError("iree-compile not found (pip install iree-base-compiler)")
    src.write_text(stamp)
    p = subprocess.run([compiler, *flags, str(src), "-o", str(out)], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise _build.BuildError(f"iree-compile {name} for {arch}: {p.stderr.strip()[-300:]}")
    return out


def _loop_workload(cfg: Config, arch: str) -> tuple[Any, Any, Any]:
    """(plain call, profiled call, close) of the tight loop plugin."""
    import elfkit
    from elfkit.exec.emulated import GuestProfile
    from elfkit.toolchain import ToolchainError, compile_plugin
    d = _data(cfg.work)
    src = d / "loop.c"
    if not src.is_file() or src.read_text() != LOOP_C:
        src.write_text(LOOP_C)
    try:
        so = compile_plugin(src, arch, d / f"loop_{arch}.so", cflags=["-g"])
    except ToolchainError as e:
        raise _build.BuildError(str(e)) from None
    mod = elfkit.load(so, backend="emulated")
    n = 300 if cfg.quick else 1000

    def plain() -> None:
        mod.call("entry", n, restype="u32")

    def profiled() -> None:
        prof = GuestProfile()
        mod.machine.profile(prof)
        try:
            plain()
        finally:
            mod.machine.profile(None)
        if prof.functions().get("hot", 0) < 0.9 * prof.total:
            raise AssertionError(f"the profile misses the hot loop: {prof.functions()}")
    return plain, profiled, mod.close


def _program_workload(cfg: Config, name: str, arch: str) -> tuple[Any, Any, Any]:
    """(plain call, profiled call, close) of an IREE program through vmrt.load."""
    import numpy as np

    import vmrt
    from vmrt.hal.local.guest_profile import GuestProfileFile
    rng = np.random.default_rng(19)
    if name == "mnist":
        vmfb, fn = _vmfb(cfg.work, "mnist", mnist_mlir(), arch), "predict"
        args = [rng.random((1, 784), np.float32)]
    elif name == "matmul":
        vmfb, fn = _vmfb(cfg.work, "matmul128", MATMUL_MLIR, arch), "matmul"
        args = [rng.standard_normal((128, 128), np.float32) for _ in range(2)]
    else:
        vmfb, fn = _vmfb(cfg.work, "softmax", SOFTMAX_MLIR, arch), "softmax"
        args = [rng.standard_normal((64, 1024), np.float32)]
    prog = vmrt.load(vmfb, device="local-sync")
    call = prog[fn]
    expect = np.asarray(call(*args))
    path = os.path.join(tempfile.gettempdir(), "vmrt-bench-19.json")

    def plain() -> None:
        call(*args)

    def profiled() -> None:
        guest = GuestProfileFile(path, "bench 19")
        guest.start()
        try:
            out = call(*args)
        finally:
            guest.stop()
        if np.asarray(out).tobytes() != expect.tobytes():
            raise AssertionError("the profiled run's result differs")
        if not guest.profile.total:
            raise AssertionError("the profile counted nothing")
    return plain, profiled, prog.close


def _pairs(profiled: Any, plain: Any, repeat: int, budget: float) -> tuple[float, float]:
    """Median seconds of ``profiled`` and ``plain``, run in pairs, profiled
    first: a profile session flushes the translation cache as it starts and
    stops, so each plain call that follows one translates its code afresh,
    as the profiled call did (a fresh process does so once for either).
    Short calls get more pairs (up to ``budget`` seconds of plain calls, at
    most 61 pairs): their medians are the most exposed to other jobs."""
    profiled()                              # warm up (and fail early)
    repeat = max(repeat, min(61, int(budget / max(run_n(plain, 1), 1e-4))))
    a: list[float] = []
    b: list[float] = []
    for _ in range(repeat):
        a.append(run_n(profiled, 1))
        b.append(run_n(plain, 1))
    return statistics.median(a), statistics.median(b)


def profile_overhead(cfg: Config) -> list[Row]:
    title = "guest profile (block counts by function and line) vs an unprofiled run"
    try:
        from elfkit.exec.emulated import blockhook
        hook = "native C block hook" if blockhook.native_counter() is not None else \
            f"Python block hook ({blockhook.why_not()})"
    except Exception as e:  # noqa: BLE001 - any missing piece becomes an n/a row
        return [na_row("19", title, GOAL, str(e).splitlines()[0])]
    workloads = [(f"loop {a}", "loop", a) for a in LOOP_ARCHES]
    workloads += [(f"{p} {a}", p, a) for p in ("mnist", "matmul", "softmax")
                  for a in IREE_ARCHES]
    ratios: dict[str, float] = {}
    times: dict[str, tuple[float, float]] = {}
    missing: list[str] = []
    for label, kind, arch in workloads:
        try:
            plain, profiled, close = (_loop_workload(cfg, arch) if kind == "loop"
                                      else _program_workload(cfg, kind, arch))
        except Exception as e:  # noqa: BLE001 - a workload that cannot run is listed
            missing.append(f"{label}: {str(e).splitlines()[0][:120]}")
            continue
        try:
            ours, peer = _pairs(profiled, plain, 5 if cfg.quick else 11,
                                0.2 if cfg.quick else 0.6)
        finally:
            close()
        ratios[label] = ours / peer
        times[label] = (ours, peer)
        if cfg.verbose:
            print(f"    19 {label}: {ours / peer:.2f}× ({fmt_time(peer)} → {fmt_time(ours)})",
                  flush=True)
    if not ratios:
        return [na_row("19", title, GOAL, "; ".join(missing) or "no workload ran")]
    worst = max(ratios, key=ratios.__getitem__)
    med = statistics.median(ratios.values())
    over = [k for k, r in ratios.items() if r > 2.0]
    per = ", ".join(f"{k} {r:.2f}×" for k, r in ratios.items())
    note = (f"{hook}; {len(ratios)} workloads, medians of pairs (a whole profile "
            f"session: start, call, stop and charge; then the plain call): {per}"
            + (f"; over the goal: {', '.join(over)}" if over else "")
            + (f"; not run: {'; '.join(missing)}" if missing else ""))
    ours_t, peer_t = times[worst]
    return [
        Row("19a", f"{title}: median over {len(ratios)} workloads", f"{med:.2f}×",
            "1× (unprofiled)", med, "reported", None,
            data={"ratios": ratios, "hook": hook}),
        Row("19b", f"{title}: worst ({worst})", f"{fmt_time(ours_t)}", f"{fmt_time(peer_t)}",
            ratios[worst], GOAL, ratios[worst] <= 2.0, note=note,
            data={**per_input(ratios, 2.0), "times": times, "hook": hook, "missing": missing}),
    ]
