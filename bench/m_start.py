"""Measure 20: start-up of every ``elfkit`` and ``vmrt`` command.

The commands are enumerated from the command-line descriptions (elfkit's
``ROOT`` tree in elfkit/tools/__init__.py, vmrt's ``COMMANDS`` and ``SUBCOMMANDS`` in
vmrt/tools/main.py), so a new command joins the table by itself; each is run
with ``--help`` and once for real on a small input (``REAL`` below; a command
without an entry there is a miss).  Time is the CPU time of the whole process,
spawn to exit (user + system of the child, ``os.wait4``), against ``python -c
pass`` in the same run, interleaved, medians; bytecode caching on.  Both sides
run under :func:`clean_python` (a plain Python's start-up: no site ``.pth`` hooks).

- 20a elfkit ``--help`` of every command (and of the program and its families)
- 20b elfkit: one real invocation of every command but ``run``
- 20c vmrt ``--help`` of every command
- 20d vmrt: one real invocation of every command (``run`` of a host-only program)
- 20e ``elfkit run --arch riscv64 kernels.so --call add_i32 --arg 2 --arg 3`` (one
  emulated call), goal ≤ 3×
- 20f ``vmrt run`` of a one-dispatch program (4-element f32 add, local-sync) vs the
  pip ``iree-run-module`` console script, goal ≤ 1.3×
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from . import _build
from ._timing import REPO, Config, Row, bytecode_env, compare_commands, cpu, fmt_time, na_row
from .m_programs import ADD_MLIR
from .m_vmrt import cpu_vmfb, dispatch_library, which_tool

#: one small program with a test function, for ``vmrt test`` (the tests' own)
CHECK_MLIR = REPO / "tests" / "vmrt" / "programs" / "check_add.mlir"


class _Inputs:
    """The small inputs of the real invocations (built once, cached in build/)."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.x86 = _build.plugin(work, "standalone", "x86_64")
        self.aarch64 = _build.plugin(work, "standalone", "aarch64")
        self.kernels_rv = _build.plugin(work, "kernels", "riscv64")
        self.out = work / "start"
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.mkdir(parents=True)
        self.sos = self.out / "standalone.sos"
        import elfkit.fatelf as F
        F.pack_to(self.sos, [self.x86, self.aarch64])
        self.loop = _build.loop_vmfb(work)
        self.add = cpu_vmfb(work, "add4", ADD_MLIR)
        self.check = cpu_vmfb(work, "check_add", CHECK_MLIR.read_text())
        self.dispatch = dispatch_library(work)
        self.replay = self.out / "add4.ireereplay"      # vmrt run's device replay capture
        subprocess.run([sys.executable, "-m", "vmrt", "run", f"--module={self.add}",
                        "--device=local-sync", "--function=add", "--input=4xf32=1 2 3 4",
                        "--input=4xf32=0.5", f"--device_replay_output={self.replay}"],
                       check=True, capture_output=True, env=bytecode_env())


def _o(inp: _Inputs, name: str) -> str:
    return str(inp.out / name)


#: one real invocation per command (its words after the program's name)
REAL: dict[str, Callable[[_Inputs], list[str]]] = {
    "elfkit inspect": lambda i: [str(i.x86)],
    "elfkit disasm": lambda i: [str(i.x86), "iree_hal_executable_plugin_query"],
    "elfkit fatelf pack": lambda i: ["-o", _o(i, "packed.sos"), str(i.x86), str(i.aarch64)],
    "elfkit fatelf list": lambda i: [str(i.sos)],
    "elfkit fatelf extract": lambda i: [str(i.sos), "--arch", "aarch64", "-o",
                                        _o(i, "extracted.so")],
    "elfkit fatelf split": lambda i: [str(i.sos), "-d", _o(i, "split")],
    "elfkit fatelf select": lambda i: [str(i.sos), "-o", _o(i, "selected.so")],
    "elfkit fatelf remove": lambda i: [str(i.sos), "--arch", "aarch64", "-o",
                                       _o(i, "removed.sos")],
    "elfkit fatelf replace": lambda i: [str(i.sos), str(i.aarch64), "-o",
                                        _o(i, "replaced.sos")],
    "elfkit fatelf verify": lambda i: [str(i.sos)],
    "elfkit toolchain flags": lambda i: ["--arch", "riscv64"],
    "elfkit toolchain cmake": lambda i: [],
    "vmrt run": lambda i: [f"--module={i.loop}", "--function=loop", "--input=1"],
    "vmrt test": lambda i: [f"--module={i.check}"],
    "vmrt benchmark": lambda i: [f"--module={i.loop}", "--function=loop", "--input=1",
                                 "--benchmark_min_time=1x"],
    "vmrt replay": lambda i: [str(i.replay)],
    "vmrt executable list": lambda i: [str(i.dispatch)],
    "vmrt executable imports": lambda i: [str(i.dispatch)],
    "vmrt executable dispatch": lambda i: [str(i.dispatch), "--export=work",
                                           "--workgroup_count=4", "--binding=4xf32=1",
                                           "--binding=4xf32=0", "--constant=i64:2",
                                           "--constant=i64:4"],
    "vmrt executable benchmark": lambda i: [f"--executable_file={i.dispatch}",
                                            "--entry_point=0", "--workgroup_count=4,1,1",
                                            "--binding=4xf32=1", "--binding=4xf32=0",
                                            "--constant=2", "--constant=0",
                                            "--constant=4", "--constant=0", "--batch_size=1",
                                            "--benchmark_min_time=1x"],
}


def commands() -> dict[str, list[str]]:
    """Every command of both programs, ``"elfkit fatelf list"`` -> its words, from
    the command-line descriptions; a family is listed before its commands."""
    from elfkit.tools import ROOT
    from vmrt.tools.main import COMMANDS, SUBCOMMANDS
    out: dict[str, list[str]] = {"elfkit": []}

    def walk(cmd, words: list[str]) -> None:
        for c in cmd.subcommands():
            out[" ".join(["elfkit", *words, c.name])] = [*words, c.name]
            if c.commands:
                walk(c, [*words, c.name])
    walk(ROOT, [])
    out["vmrt"] = []
    for name in COMMANDS:
        out[f"vmrt {name}"] = [name]
        for sub in SUBCOMMANDS.get(name, ()):
            out[f"vmrt {name} {sub}"] = [name, sub]
    return out


#: the console script pip writes for an entry point (pip's template, as installed)
_SCRIPT = """\
#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from {module} import {attr}
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit({attr}())
"""


def clean_python(work: Path) -> str:
    """An interpreter that starts as a plain Python install does: a venv in
    ``work`` (no pip, no system site-packages) whose one ``.pth`` line puts this
    Python's site-packages on the path as a plain directory, so the packages are
    there but their ``.pth`` files do not run.  (A site-wide ``.pth`` that imports
    a package at every start-up, as some sandboxes install, would otherwise add
    its cost to both sides and flatter every ratio.)  Its ``bin`` holds the
    console scripts of this checkout's ``[project.scripts]``, written as pip
    writes them (an installed script may name an entry point of another version)."""
    import sysconfig
    venv = (work / "start-venv").absolute()
    py = venv / "bin" / "python"
    cfg = venv / "pyvenv.cfg"
    home = str(Path(sys.executable).parent)
    if not (py.exists() and cfg.is_file() and f"home = {home}\n" in cfg.read_text()):
        if venv.exists():
            shutil.rmtree(venv)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    paths = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    Path(site.stdout.strip(), "base.pth").write_text("".join(f"{p}\n" for p in paths))
    for name, target in _project_scripts().items():
        module, _, attr = target.partition(":")
        script = venv / "bin" / name
        script.write_text(_SCRIPT.format(python=py, module=module, attr=attr))
        script.chmod(0o755)
    return str(py)


def _project_scripts() -> dict[str, str]:
    """``[project.scripts]`` of this checkout's pyproject.toml: name -> "module:attr"
    (read line by line: tomllib is Python 3.11+)."""
    out: dict[str, str] = {}
    section = ""
    for line in (REPO / "pyproject.toml").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            section = line
        elif section == "[project.scripts]" and "=" in line:
            name, _, value = line.partition("=")
            out[name.strip().strip('"')] = value.strip().strip('"')
    return out


_PYTHON: list[str] = []         # the clean interpreter, once made


def _program(tool: str) -> list[str]:
    """The console script of ``tool`` (pip's, for this checkout) run by the clean
    interpreter."""
    return [*_PYTHON, str(Path(_PYTHON[0]).parent / tool)]


def _families() -> set[str]:
    """The commands that only group others (no real invocation of their own)."""
    from elfkit.tools import ROOT
    from vmrt.tools.main import SUBCOMMANDS
    fams = {"elfkit", "vmrt"} | {f"vmrt {k}" for k in SUBCOMMANDS}
    fams |= {f"elfkit {c.name}" for c in ROOT.subcommands() if c.commands}
    return fams


def _group_row(rid: str, what: str, ratios: dict[str, float], times: dict[str, float],
               peer: float, limit: float, missing: list[str]) -> Row:
    from ._timing import per_input
    goal = f"≤ {limit:g}× peer time"
    if not ratios:
        return na_row(rid, what, goal, "failed: no command ran")
    worst_key = max(ratios, key=ratios.__getitem__)
    worst = ratios[worst_key]
    med = statistics.median(ratios.values())
    misses = sorted((k for k, r in ratios.items() if r > limit), key=ratios.__getitem__,
                    reverse=True)
    table = ", ".join(f"{k} {r:.2f}×" for k, r in sorted(ratios.items()))
    note = (f"{len(ratios)} commands, CPU time spawn to exit; median {med:.2f}×, worst "
            f"{worst:.2f}× ({worst_key}); per command: {table}")
    if misses or missing:
        note += "; misses: " + ", ".join([f"{k} {ratios[k]:.2f}×" for k in misses] +
                                         [f"{k} (no input)" for k in missing])
    return Row(rid, f"{what} vs python -c pass (worst of {len(ratios)})",
               fmt_time(statistics.median(times.values())), fmt_time(peer), worst, goal,
               worst <= limit and not missing, note=note,
               data={**per_input(ratios, limit), "times_s": times, "peer_s": peer, "median": med,
                     "worst": worst, "worst_command": worst_key, "misses": misses,
                     "missing": missing})


def startup(cfg: Config) -> list[Row]:
    env = bytecode_env()
    inp = _Inputs(cfg.work)
    repeat = max(5, cfg.repeat // 2) if cfg.quick else cfg.repeat
    _PYTHON[:] = [clean_python(cfg.work)]
    peer_cmd = [*_PYTHON, "-c", "pass"]
    fams = _families()
    groups: dict[str, tuple[dict[str, float], dict[str, float], list[float], list[str]]] = {
        g: ({}, {}, [], []) for g in ("20a", "20b", "20c", "20d")}
    for key, words in commands().items():
        tool = key.split()[0]
        prog = _program(tool)
        cases = [("20a" if tool == "elfkit" else "20c", f"{key} --help",
                  prog + words + ["--help"])]
        if key not in fams and key != "elfkit run":
            gid = "20b" if tool == "elfkit" else "20d"
            if key in REAL:
                cases.append((gid, key, prog + words + REAL[key](inp)))
            else:
                groups[gid][3].append(key)
        for gid, label, cmd in cases:
            res = compare_commands({"ours": cmd, "peer": peer_cmd}, cfg, env=env,
                                   repeat=repeat, warmup=1, clock=cpu)
            ratios, times, peers, _ = groups[gid]
            ratios[label] = res["ours"] / res["peer"]
            times[label] = res["ours"]
            peers.append(res["peer"])
    titles = {"20a": "elfkit COMMAND --help", "20b": "elfkit COMMAND (small input)",
              "20c": "vmrt COMMAND --help", "20d": "vmrt COMMAND (small input)"}
    rows = [_group_row(gid, f"start-up, CPU time: {titles[gid]}", r, t,
                       statistics.median(p) if p else 0.0, 2.0, m)
            for gid, (r, t, p, m) in groups.items()]
    rows.append(_emulated_call(cfg, inp, env, peer_cmd, repeat))
    rows.append(_one_dispatch(cfg, inp, env, repeat))
    return rows


def _emulated_call(cfg: Config, inp: _Inputs, env: dict[str, str], peer_cmd: list[str],
                   repeat: int) -> Row:
    what = "start-up, CPU time: elfkit run --arch riscv64 (one emulated call) vs python -c pass"
    cmd = _program("elfkit") + ["run", "--arch", "riscv64", str(inp.kernels_rv), "--call",
                                "add_i32", "--arg", "2", "--arg", "3", "--sig",
                                "i32(i32,i32)"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0 or out.stdout.split() != ["5"]:
        return na_row("20e", what, "≤ 3× peer time",
                      f"failed: {out.stdout[-200:]!r} {out.stderr[-200:]!r}")
    res = compare_commands({"ours": cmd, "peer": peer_cmd}, cfg, env=env, repeat=repeat,
                           warmup=1, clock=cpu)
    o, p = res["ours"], res["peer"]
    return Row("20e", what, fmt_time(o), fmt_time(p), o / p, "≤ 3× peer time", o / p <= 3.0,
               note="kernels.so add_i32(2, 3) under unicorn; CPU time spawn to exit",
               data={"ours_s": o, "peer_s": p})


def _one_dispatch(cfg: Config, inp: _Inputs, env: dict[str, str], repeat: int) -> Row:
    what = "start-up, CPU time: vmrt run of a one-dispatch program vs iree-run-module"
    goal = "≤ 1.3× peer time"
    iree = which_tool("iree-run-module")
    if not iree:
        return na_row("20f", what, goal, "iree-run-module is not installed")
    args = [f"--module={inp.add}", "--device=local-sync", "--function=add",
            "--input=4xf32=1 2 3 4", "--input=4xf32=0.5"]
    cmds = {"ours": _program("vmrt") + ["run"] + args, "peer": _PYTHON + [iree] + args}
    outs = [subprocess.run(c, capture_output=True, text=True, env=env) for c in cmds.values()]
    if outs[0].returncode != 0 or outs[0].stdout != outs[1].stdout:
        return na_row("20f", what, goal, f"failed: outputs differ: {outs[0].stdout[-200:]!r}"
                      f"{outs[0].stderr[-200:]!r} vs {outs[1].stdout[-200:]!r}")
    res = compare_commands(cmds, cfg, env=env, repeat=repeat, warmup=1, clock=cpu)
    o, p = res["ours"], res["peer"]
    return Row("20f", what, fmt_time(o), fmt_time(p), o / p, goal, o / p <= 1.3,
               note="4-element f32 add (one dispatch, x86_64 llvm-cpu), identical output; "
                    "the peer is the pip console script (a Python wrapper that execs the "
                    f"binary); CPU time spawn to exit ({os.path.basename(iree)})",
               data={"ours_s": o, "peer_s": p})
