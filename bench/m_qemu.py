"""Measure 15: emulated CPUs against IREE's own runtime for that CPU under
qemu-user (the way IREE's CI runs foreign CPUs).

For each program of the corpus and each foreign CPU: the whole command
``vmrt run --device=local-sync`` on this host (VM and HAL native, every
dispatch emulated by unicorn) against IREE's ``iree-run-module`` built for
that CPU, run by ``qemu-<cpu> -L <sysroot>`` with the same flags, spawn to
exit, interleaved, medians; the rows give the median and the worst of the
per-program ratios.

Corpus:

* the conformance programs (``tests/vmrt/conformance/programs``), compiled
  for the CPU by the tests' own harness (same cache).  Their test functions
  take and return nothing; a small driver module (VM dialect, compiled here)
  calls them all in one ``main``, so one command runs the whole program.
  Both commands load ``<program> <driver>``; vmrt resolves the program's
  optional ``check`` imports with its check module (every expectation
  verified; a failure fails the command), IREE's ``iree-run-module`` has no
  check module and skips them (IREE's ``iree-check-module`` is not in the
  wheel);
* the MNIST MLP of rows 13/14 and the 512x512 f32 matmul of row 13 (ones and
  twos; row 13c's random operands), inputs from ``.npy`` files; the results
  of both sides are written to ``.npy`` and compared.

Setup (``python -m bench --setup-qemu``): Debian's ``qemu-user`` and the
cross sysroots (``libc6-<cpu>-cross``, ``libstdc++6-<cpu>-cross`` ->
``/usr/<triple>``) with apt-get, and IREE's ``iree-base-runtime`` wheel of
the installed version for that CPU from PyPI (``pip download --platform``),
unpacked under ``build/bench/qemu/``.  PyPI has no riscv64 wheel of
iree-base-runtime (x86_64, aarch64, macOS and Windows only), so riscv64 has
no peer: its row says so.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from ._timing import Config, Row, bytecode_env, fmt_time, na_row, per_input
from .m_programs import matmul_inputs, mnist_input, mnist_mlir, ours_cmd
from .m_vmrt import MATMUL_MLIR, cpu_vmfb, which_tool

#: cpu -> (qemu binary, Debian cross architecture, sysroot, wheel platform tag)
CPUS = {
    "aarch64": ("qemu-aarch64", "arm64", "/usr/aarch64-linux-gnu", "manylinux_2_28_aarch64"),
    "riscv64": ("qemu-riscv64", "riscv64", "/usr/riscv64-linux-gnu", "manylinux_2_28_riscv64"),
}
GOAL_MEDIAN = 0.8
GOAL_WORST = 1.0
#: programs measured with --quick (a spread of small and dispatch-heavy ones)
QUICK = ("models", "elementwise", "linalg", "mnist")


def _iree_version() -> str:
    from importlib.metadata import version
    return version("iree-base-runtime")


def runtime_dir(work: Path, cpu: str) -> Path:
    return work / "qemu" / f"iree-base-runtime-{_iree_version()}-{cpu}"


def _apt_packages(cpu: str) -> list[str]:
    deb = CPUS[cpu][1]
    return [f"libc6-{deb}-cross", f"libstdc++6-{deb}-cross"]


def setup_qemu(work: Path) -> int:
    """Install qemu-user and the sysroots (apt-get, as root on Debian) and
    unpack IREE's runtime wheel for each CPU that PyPI has one for."""
    need = [] if all(shutil.which(CPUS[c][0]) for c in CPUS) else ["qemu-user"]
    for cpu in CPUS:
        if not Path(CPUS[cpu][2], "lib", "libstdc++.so.6").exists():
            need += _apt_packages(cpu)
    if need:
        cmd = ["apt-get", "install", "-y", "-q", *need]
        print("+", " ".join(cmd), flush=True)
        if not shutil.which("apt-get") or os.geteuid() != 0:
            print("setup-qemu: needs apt-get as root (Debian/Ubuntu); run the line above",
                  file=sys.stderr)
            return 1
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(cmd, env=env).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env)
            if subprocess.run(cmd, env=env).returncode != 0:
                return 1
    for cpu in CPUS:
        print(f"{cpu}: {_unpack_wheel(work, cpu)}", flush=True)
    return 0 if _peer_tool(work, "aarch64") else 1


def _unpack_wheel(work: Path, cpu: str) -> str:
    dest = runtime_dir(work, cpu)
    if _peer_tool(work, cpu):
        return f"IREE's runtime already unpacked in {dest}"
    version = _iree_version()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"iree-base-runtime=={version}",
               "--platform", CPUS[cpu][3], "--only-binary=:all:", "--no-deps", "-d", tmp]
        print("+", " ".join(cmd), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if p.returncode != 0 or not wheels:
            return (f"no {CPUS[cpu][3]} wheel of iree-base-runtime=={version} on the package "
                    f"index (pip: {p.stderr.strip().splitlines()[-1] if p.stderr else '?'})")
        part = dest.parent / f"{dest.name}.part"
        shutil.rmtree(part, ignore_errors=True)
        with zipfile.ZipFile(wheels[0]) as z:
            z.extractall(part)
        for exe in part.glob("iree/_runtime_libs/iree-*"):
            exe.chmod(0o755)        # zip extraction drops the mode bits
        shutil.rmtree(dest, ignore_errors=True)
        part.rename(dest)
    return f"unpacked {wheels[0].name} into {dest}"


def _peer_tool(work: Path, cpu: str) -> Path | None:
    root = os.environ.get(f"VMRT_BENCH_IREE_{cpu.upper()}") or runtime_dir(work, cpu)
    tool = Path(root, "iree", "_runtime_libs", "iree-run-module")
    return tool if tool.is_file() and os.access(tool, os.X_OK) else None


def _missing(work: Path, cpu: str) -> str | None:
    qemu, _deb, sysroot, _tag = CPUS[cpu]
    if not shutil.which(qemu):
        return f"{qemu} not found (python -m bench --setup-qemu)"
    if not Path(sysroot).is_dir():
        return f"no {cpu} sysroot at {sysroot} (python -m bench --setup-qemu)"
    if _peer_tool(work, cpu) is None:
        if cpu == "riscv64":
            return (f"PyPI has no riscv64 wheel of iree-base-runtime (its wheels: x86_64, "
                    f"aarch64, macOS, Windows; checked for {_iree_version()}): no IREE "
                    f"runtime for {cpu} to run under qemu")
        return (f"IREE's {cpu} iree-run-module not unpacked under {runtime_dir(work, cpu)} "
                f"(python -m bench --setup-qemu)")
    return None


# ---------------------------------------------------------------------------
# corpus
# ---------------------------------------------------------------------------

#: A ``check`` module with IREE's check signatures whose functions do
#: nothing: both commands load it, so both resolve the programs' optional
#: check imports to the same no-op calls (IREE's iree-run-module has no check
#: module of its own).  vmrt's real check module verifies the results once,
#: before the timing.
CHECK_STUB = """\
vm.module @check {
  vm.export @expect_true
  vm.func @expect_true(%a: i32) { vm.return }
  vm.export @expect_false
  vm.func @expect_false(%a: i32) { vm.return }
  vm.export @expect_all_true
  vm.func @expect_all_true(%d: !vm.ref<!hal.device>, %a: !vm.ref<!hal.buffer_view>) {
    vm.return
  }
  vm.export @expect_eq
  vm.func @expect_eq(%d: !vm.ref<!hal.device>, %a: !vm.ref<!hal.buffer_view>,
                     %b: !vm.ref<!hal.buffer_view>) { vm.return }
  vm.export @expect_almost_eq
  vm.func @expect_almost_eq(%d: !vm.ref<!hal.device>, %a: !vm.ref<!hal.buffer_view>,
                            %b: !vm.ref<!hal.buffer_view>, %atol: f32, %rtol: f32) {
    vm.return
  }
}
"""


def _vm_module(work: Path, name: str, text: str) -> Path:
    """``text`` (VM dialect) compiled by iree-compile, cached while unchanged."""
    src = work / "qemu" / "vm" / f"{name}.mlir"
    out = src.with_suffix(".vmfb")
    if out.is_file() and src.is_file() and src.read_text() == text:
        return out
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(text)
    p = subprocess.run([which_tool("iree-compile") or "iree-compile", "--compile-from=vm",
                        str(src), "-o", str(out)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"iree-compile of {src.name}: {p.stderr[-300:]}")
    return out


def _driver(work: Path, vmfb: Path) -> Path:
    """A VM-dialect module whose ``main`` calls every test function of ``vmfb``."""
    from vmrt.bytecode.format import parse_module
    from vmrt.vm.module import cconv_fragments
    d = parse_module(vmfb.read_bytes())
    names = [e.local_name for e in d.exports
             if not e.local_name.startswith("__") and "$" not in e.local_name
             and cconv_fragments(d.signatures[e.internal_ordinal]) == ("", "")]
    lines = ["vm.module @bench_driver {"]
    lines += [f"  vm.import private @{d.name}.{n}()" for n in names]
    lines += ["  vm.export @main", "  vm.func @main() {"]
    lines += [f"    vm.call @{d.name}.{n}() : () -> ()" for n in names]
    lines += ["    vm.return", "  }", "}", ""]
    return _vm_module(work, f"driver-{vmfb.parent.name}-{vmfb.stem}", "\n".join(lines))


def corpus(cfg: Config, cpu: str) -> list[tuple[str, list[str], bool]]:
    """``(name, flags, results)``: the flags both commands get, and whether
    the program returns results (compared through .npy files; otherwise it is
    a conformance program whose first flag is the no-op check module)."""
    from tests.vmrt.conformance.harness import arches_of, compile_for, programs
    out: list[tuple[str, list[str], bool]] = []
    stub = _vm_module(cfg.work, "check_stub", CHECK_STUB)
    for path in programs():
        if cpu not in arches_of(path):
            continue
        name = f"{path.parent.name}/{path.stem}"
        if cfg.quick and path.stem not in QUICK:
            continue
        vmfb = compile_for(path, cpu)
        out.append((name, [f"--module={stub}", f"--module={vmfb}",
                           f"--module={_driver(cfg.work, vmfb)}", "--function=main"], False))
    triple = f"{cpu}-linux-gnu"
    mnist = cpu_vmfb(cfg.work, f"mnist_{cpu}", mnist_mlir(), triple=triple)
    out.append(("mnist (MLP 784-128-10)", [f"--module={mnist}", "--function=predict",
                                           f"--input=@{mnist_input(cfg.work)}"], True))
    if not cfg.quick:
        mm = cpu_vmfb(cfg.work, f"matmul512_{cpu}", MATMUL_MLIR, triple=triple)
        out.append(("matmul 512x512 f32, ones x twos",
                    [f"--module={mm}", "--function=matmul", "--input=512x512xf32=1",
                     "--input=512x512xf32=2"], True))
        out.append(("matmul 512x512 f32, random",
                    [f"--module={mm}", "--function=matmul"]
                    + [f"--input=@{p}" for p in matmul_inputs(cfg.work)], True))
    return out


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------

def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``cmd``, spawn to exit; it must succeed."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read() if p.stderr else b""
    _pid, status, ru = os.wait4(p.pid, 0)
    t = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: "
                           f"{err.decode(errors='replace')[-400:]}")
    return t, ru.ru_utime + ru.ru_stime


def _compare_outputs(cmds: dict[str, list[str]], env: dict[str, str], results: bool) -> str:
    """Run each command once and compare what they print, or their results
    written to .npy files; returns how they compared (raises when they differ)."""
    import numpy as np
    with tempfile.TemporaryDirectory() as tmp:
        outs: dict[str, Any] = {}
        for k, c in cmds.items():
            extra = [f"--output=@{tmp}/{k}.npy"] if results else []
            p = subprocess.run(c + extra, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"{k}: {' '.join(c)} exited {p.returncode}: "
                                   f"{p.stderr[-400:]}")
            outs[k] = np.load(f"{tmp}/{k}.npy") if results else p.stdout
    a, b = outs["ours"], outs["peer"]
    if not results:
        if a != b:
            raise RuntimeError(f"outputs differ: {a[-200:]!r} vs {b[-200:]!r}")
        # the program's own expectations, by vmrt test (exit 1 on a failure)
        program = next(f for f in cmds["ours"] if f.startswith("--module=")
                       and "/qemu/vm/" not in f)
        test = ours_cmd()[:-1] + ["test", program, "--device=local-sync"]
        p = subprocess.run(test, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"vmrt test {program}: {(p.stdout + p.stderr)[-300:]}")
        return "same output; vmrt test passes every expectation"
    if a.shape != b.shape or a.dtype != b.dtype:
        raise RuntimeError(f"results differ: {a.dtype}{a.shape} vs {b.dtype}{b.shape}")
    if np.array_equal(a, b):
        return "results identical bit for bit"
    diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    if not np.allclose(a, b, rtol=1e-5, atol=1e-6):
        raise RuntimeError(f"results differ (max abs diff {diff:.3g})")
    return f"results equal within 1e-5 (max abs diff {diff:.2g})"


def _measure(cmds: dict[str, list[str]], env: dict[str, str], repeat: int) -> dict[str, Any]:
    """Median wall and CPU seconds of each command, interleaved (the runs
    that compared the outputs were the warm-up)."""
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in cmds}
    keys = list(cmds)
    i = 0
    while i < repeat:
        for k in (keys if i % 2 == 0 else keys[::-1]):
            samples[k].append(_timed(cmds[k], env))
        if i == 0 and samples[keys[0]][0][0] > 1.0:     # a long program: fewer samples
            repeat = max(3, repeat - 2)
        i += 1
    med = {f"{k}_{what}": statistics.median(s[j] for s in v)
           for k, v in samples.items() for j, what in enumerate(("s", "cpu_s"))}
    return med


def cpu_rows(cfg: Config, cpu: str, rids: tuple[str, str]) -> list[Row]:
    what = f"emulated {cpu} `vmrt run` vs IREE's {cpu} iree-run-module under qemu-user"
    goals = (f"median ≤ {GOAL_MEDIAN:g}× peer time", f"worst ≤ {GOAL_WORST:g}× peer time")
    names = (f"{what}: corpus median", f"{what}: corpus worst")
    ids = rids
    why = _missing(cfg.work, cpu)
    if why:
        return [na_row(i, n, g, why) for i, n, g in zip(ids, names, goals)]
    qemu, _deb, sysroot, _tag = CPUS[cpu]
    peer = [shutil.which(qemu) or qemu, "-L", sysroot, str(_peer_tool(cfg.work, cpu))]
    env = bytecode_env()
    repeat = 3 if cfg.quick else 5
    # the floor: the interpreter's own start-up (python -c pass), same environment
    floor = [_timed([sys.executable, "-c", "pass"], env) for _ in range(repeat)]
    per: list[dict[str, Any]] = []
    for name, flags, results in corpus(cfg, cpu):
        args = flags + ["--device=local-sync"]
        cmds = {"ours": ours_cmd() + args, "peer": peer + args}
        try:
            same = _compare_outputs(cmds, env, results)
            m = _measure(cmds, env, repeat)
        except Exception as e:  # noqa: BLE001
            return [na_row(i, n, g, f"failed: {name}: {str(e).splitlines()[0][:300]}")
                    for i, n, g in zip(ids, names, goals)]
        m.update(program=name, ratio=m["ours_s"] / m["peer_s"],
                 cpu_ratio=m["ours_cpu_s"] / m["peer_cpu_s"], outputs=same)
        per.append(m)
        if cfg.verbose:
            print(f"  15 {cpu} {name}: ours {fmt_time(m['ours_s'])} (CPU "
                  f"{fmt_time(m['ours_cpu_s'])}), qemu {fmt_time(m['peer_s'])} (CPU "
                  f"{fmt_time(m['peer_cpu_s'])}): {m['ratio']:.2f}×; {same}", flush=True)
    ratios = [m["ratio"] for m in per]
    med, worst = statistics.median(ratios), max(ratios)
    worst_prog = max(per, key=lambda m: m["ratio"])
    cpu_worst = max(per, key=lambda m: m["cpu_ratio"])
    misses = [f"{m['program']} {m['ratio']:.2f}×" for m in sorted(per, key=lambda m: -m["ratio"])
              if m["ratio"] > GOAL_WORST]
    ours_med = statistics.median(m["ours_s"] for m in per)
    peer_med = statistics.median(m["peer_s"] for m in per)
    floor_s = statistics.median(f[0] for f in floor)
    floor_cpu = statistics.median(f[1] for f in floor)
    peer_cpu = statistics.median(m["peer_cpu_s"] for m in per)
    data = {"programs": per, "median": med, "worst": worst, "python_pass_s": floor_s,
            "python_pass_cpu_s": floor_cpu}
    corpus_note = (f"{len(per)} programs ({sum(1 for m in per if '/' in m['program'])} "
                   f"conformance programs + MNIST/matmul), N={repeat} interleaved per side; "
                   f"median CPU-time ratio {statistics.median(m['cpu_ratio'] for m in per):.2f}×; "
                   f"`python -c pass` alone takes {fmt_time(floor_s)} ("
                   f"{floor_s / peer_med:.2f}× the peer's median; CPU time "
                   f"{fmt_time(floor_cpu)}, {floor_cpu / peer_cpu:.2f}× the peer's)")
    return [
        Row(ids[0], names[0], f"median {fmt_time(ours_med)}", f"median {fmt_time(peer_med)}",
            med, goals[0], med <= GOAL_MEDIAN, note=corpus_note, data=data),
        Row(ids[1], names[1], fmt_time(worst_prog["ours_s"]), fmt_time(worst_prog["peer_s"]),
            worst, goals[1], worst <= GOAL_WORST,
            note=(f"worst: {worst_prog['program']}; above {GOAL_WORST:g}×: "
                  f"{', '.join(misses) or 'none'}; by CPU time (load-proof) worst "
                  f"{cpu_worst['program']} {cpu_worst['cpu_ratio']:.2f}×"),
            data={**per_input({m["program"]: m["ratio"] for m in per}, GOAL_WORST),
                  "misses": misses}),
    ]


def qemu_user(cfg: Config) -> list[Row]:
    return cpu_rows(cfg, "aarch64", ("15a", "15b")) + cpu_rows(cfg, "riscv64", ("15c", "15d"))
