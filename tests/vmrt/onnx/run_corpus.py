"""Run the whole ONNX node corpus: ``python -m tests.vmrt.onnx.corpus``.

    python -m tests.vmrt.onnx.corpus [--arch x86_64 ...] [--jobs N] [--chunk N]
                                     [--match REGEX] [--limit N] [--list STAGE]
                                     [--iree-runtime DIR]

Cases run in child processes, ``--chunk`` at a time (a crash or a hang
reruns that chunk's remaining cases one by one, so it fails one case only;
``--timeout`` seconds each) and leaves its outcome in
``build/onnx_conformance/results/<stamp>/<arch>/<test>.json``; the stamp
hashes the versions of onnx and iree-compile and the sources of vmrt and
elfkit, so a rerun resumes where the last one stopped and a change of
vmrt reruns everything.  Several runs may share the cache at once.  At the
end it prints a table: per CPU, the cases in each stage, and every case IREE
passes but vmrt does not.  ``--iree-runtime DIR`` (IREE's runtime wheel for
an emulated CPU, unpacked) adds IREE's runtime for that CPU, under
qemu-user, as a second oracle (tests/vmrt/onnx/foreign_iree.py)."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

from tests.vmrt.iree_tools import cache_key
from tests.vmrt.onnx.corpus import (
    ARCHES,
    CACHE,
    REPO,
    Outcome,
    compiler_version,
    index,
    onnx_version,
    write_atomic,
)
from tests.vmrt.onnx.foreign_iree import elf_arch, env_var, foreign_iree, tool_in

STAGES = ("unsupported", "import", "compile", "iree-error", "iree-mismatch", "vmrt-error",
          "vmrt-mismatch", "vmrt-differs", "pass")


def source_stamp() -> str:
    """The hash of the onnx and compiler versions and of vmrt's and elfkit's
    sources as they are now."""
    parts: list[bytes | str] = [onnx_version(), compiler_version()]
    for p in sorted([*(REPO / "vmrt").rglob("*.py"), *(REPO / "elfkit").rglob("*.py")]):
        parts += [str(p.relative_to(REPO)), p.read_bytes()]
    return cache_key(*parts)


@cache
def stamp() -> str:
    """The results' stamp, taken once per process (its children take their
    own: see SourcesChanged)."""
    return source_stamp()


class SourcesChanged(RuntimeError):
    """vmrt's or elfkit's sources changed during a run: its child processes
    now run other code and keep their outcomes under another stamp, so the
    run stops rather than record their cases as failures."""


def result_path(name: str, arch: str) -> Path:
    """Where a case's outcome is kept: under ``<arch>+iree`` when IREE's
    runtime for that (emulated) CPU is the second oracle, else ``<arch>``."""
    sub = f"{arch}+iree" if arch != "x86_64" and foreign_iree(arch) else arch
    return CACHE / "results" / stamp() / sub / f"{name}.json"


def load_outcome(name: str, arch: str) -> Outcome | None:
    p = result_path(name, arch)
    if not p.is_file():
        return None
    d = json.loads(p.read_text())
    return Outcome(d["name"], d["arch"], d["stage"], d["detail"])


_CHILD = """
import sys
from tests.vmrt.onnx.run_corpus import save_outcome
from tests.vmrt.onnx.corpus import run_case
for item in sys.argv[1:]:
    name, arch = item.split("@")
    save_outcome(run_case(name, arch))
"""


def save_outcome(out: Outcome) -> None:
    write_atomic(result_path(out.name, out.arch), out.to_json().encode())


def run_chunk(chunk: list[tuple[str, str]], timeout: float) -> list[Outcome]:
    """Cases in one child process, which saves each outcome as it goes; the
    cases a crash or a timeout left without one run again one by one (and a
    case that kills its own process is recorded as a vmrt-error)."""
    why = ""
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, *(f"{n}@{a}" for n, a in chunk)],
                              cwd=REPO, capture_output=True, text=True,
                              timeout=timeout * len(chunk))
        if proc.returncode != 0:
            why = (f"the process exited with {proc.returncode}: "
                   f"{' '.join(proc.stderr.strip().splitlines()[-1:])}")
    except subprocess.TimeoutExpired:
        why = f"timed out after {timeout:.0f} s"
    outs = []
    for n, a in chunk:
        o = load_outcome(n, a)
        if o is None and source_stamp() != stamp():
            raise SourcesChanged(f"vmrt's or elfkit's sources changed during the run (results "
                                 f"stamp {stamp()} -> {source_stamp()}): run it again")
        if o is None:
            if len(chunk) > 1:
                o = run_chunk([(n, a)], timeout)[0]
            else:
                o = Outcome(n, a, "vmrt-error", why[:400] or "no outcome")
                save_outcome(o)
        outs.append(o)
    return outs


def summary(outcomes: list[Outcome], arches: list[str]) -> str:
    """The table: per CPU, how many cases end in each stage."""
    rows = ["| stage | " + " | ".join(arches) + " |",
            "|---|" + "---|" * len(arches)]
    counts = {a: Counter(o.stage for o in outcomes if o.arch == a) for a in arches}
    for s in STAGES:
        if any(counts[a][s] for a in arches):
            rows.append(f"| {s} | " + " | ".join(str(counts[a][s]) for a in arches) + " |")
    rows.append("| total | " + " | ".join(str(sum(counts[a].values())) for a in arches) + " |")
    return "\n".join(rows)


def short_reason(detail: str) -> str:
    """A failure's reason without the cache paths and source lines."""
    d = detail.split(" error: ", 1)[-1] if " error: " in detail else detail
    if re.match(r"#\d+ 0x", d):
        return "iree-compile crashed (its last stack frame was kept)"
    m = re.search(r'failed to legalize operation .torch.operator.*name = "([\w.]+)"', d)
    if m:
        return f"no lowering of {m.group(1)}"
    return re.sub(r"\s+", " ", d)[:120]


def families_markdown(outcomes: list[Outcome]) -> str:
    """Per op family on x86_64: how many cases end in each stage, and the
    names (without ``test_``) of those IREE itself does not pass, by stage,
    with the first reason given."""
    from tests.vmrt.onnx.corpus import family
    by: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.arch == "x86_64":
            by.setdefault(family(o.name), []).append(o)
    rows = ["| op family | cases | pass | not passed by IREE (stage: cases; first reason) |",
            "|---|---|---|---|"]
    for fam in sorted(by):
        outs = by[fam]
        npass = sum(o.stage == "pass" for o in outs)
        parts = []
        for st in STAGES:
            bad = [o for o in outs if o.stage == st and st != "pass"]
            if bad:
                names = ", ".join(o.name[5:] for o in bad)
                reason = short_reason(bad[0].detail).replace("|", "/")
                parts.append(f"**{st}** ({len(bad)}): {names}; *{reason}*")
        rows.append(f"| {fam} | {len(outs)} | {npass} | {'<br>'.join(parts)} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.vmrt.onnx.corpus")
    ap.add_argument("--arch", action="append", choices=ARCHES,
                    help="CPUs to run on (repeatable; default x86_64)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--match", default="", help="only tests whose name matches this regex")
    ap.add_argument("--limit", type=int, default=0, help="only the first N tests (by name)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    ap.add_argument("--chunk", type=int, default=16, help="cases per child process")
    ap.add_argument("--rerun", metavar="STAGE", action="append", default=[],
                    help="run the cases that ended in this stage again (repeatable)")
    ap.add_argument("--list", metavar="STAGE", default="",
                    help="also list the cases in this stage (with their detail)")
    ap.add_argument("--iree-runtime", metavar="DIR", action="append", default=[],
                    help="an unpacked iree-base-runtime wheel for an emulated CPU: its "
                         "iree-run-module runs each case under qemu-user as a second oracle "
                         "(repeatable; default: $VMRT_IREE_RUNTIME_<ARCH>)")
    ap.add_argument("--markdown", metavar="FILE", default="",
                    help="write the per-family table (x86_64) to FILE")
    args = ap.parse_args(argv)
    arches = args.arch or ["x86_64"]
    for root in args.iree_runtime:
        cpu = elf_arch(tool_in(root))
        if cpu is None:
            ap.error(f"--iree-runtime {root}: no iree/_runtime_libs/iree-run-module of a "
                     f"known CPU in it")
        os.environ[env_var(cpu)] = str(Path(root).resolve())    # the children inherit it
    for a in arches:
        if a != "x86_64":
            iree = foreign_iree(a)
            print(f"{a}: " + (f"IREE's runtime under {iree.qemu}: {iree.tool}" if iree else
                              f"no IREE runtime for it (${env_var(a)}, qemu-user, sysroot)"),
                  flush=True)
    names = [n for n in sorted(index()) if re.search(args.match, n)]
    if args.limit:
        names = names[:args.limit]
    def wanted(n: str, a: str) -> bool:
        o = load_outcome(n, a)
        return o is None or o.stage in args.rerun
    # in a fixed pseudo-random order: a run stopped early has done a uniform sample
    todo = sorted(((n, a) for a in arches for n in names if wanted(n, a)),
                  key=lambda t: (cache_key(t[0]), t[1]))
    print(f"{len(names)} tests x {len(arches)} CPUs; {len(todo)} to run "
          f"(results in {result_path('x', 'x').parent.parent})", flush=True)
    t0 = time.monotonic()
    done = 0
    chunks = [todo[i:i + args.chunk] for i in range(0, len(todo), max(1, args.chunk))]
    pool = ThreadPoolExecutor(max(1, args.jobs))
    try:
        for outs in pool.map(lambda c: run_chunk(c, args.timeout), chunks):
            for out in outs:
                done += 1
                if out.stage.startswith("vmrt") or done % 50 == 0:
                    print(f"[{done}/{len(todo)} {time.monotonic() - t0:.0f}s] {out.arch} "
                          f"{out.name}: {out.stage} {out.detail[:200]}", flush=True)
    except SourcesChanged as e:
        pool.shutdown(wait=False, cancel_futures=True)
        print(f"python -m tests.vmrt.onnx.corpus: {e}", file=sys.stderr)
        return 2
    pool.shutdown()
    outcomes = [o for a in arches for n in names if (o := load_outcome(n, a)) is not None]
    print(summary(outcomes, arches))
    iree_pass = {o.name for o in outcomes if o.arch == "x86_64" and o.stage == "pass"}
    bad = [o for o in outcomes if o.stage.startswith("vmrt")]
    for o in bad:
        # on x86_64 vmrt runs a case only after IREE's runtime passed it
        tag = "IREE passes it" if o.arch == "x86_64" \
            else f"IREE's {o.arch} runtime ran it" if foreign_iree(o.arch) \
            else "IREE passes it on x86_64" if o.name in iree_pass else "IREE not run"
        print(f"VMRT FAILS {o.arch} {o.name} ({tag}): {o.stage}: {o.detail}")
    if args.list:
        for o in outcomes:
            if o.stage == args.list:
                print(f"{o.arch} {o.name}: {o.detail}")
    if args.markdown:
        Path(args.markdown).write_text(summary(outcomes, arches) + "\n\n"
                                       + families_markdown(outcomes) + "\n")
    print(f"{time.monotonic() - t0:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
