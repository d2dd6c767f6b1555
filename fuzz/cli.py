"""Fuzz target ``cli``: random and mutated command lines on mutated files.

The input is a file (a plugin ELF, a FatELF, a .vmfb or a dispatch library;
the seeds come from the test catalogue).  From a hash of the input the
target derives one command line (so a saved input replays exactly):
``elfkit inspect|run|disasm``, ``elfkit fatelf list|verify|pack|extract|
select|remove``, ``vmrt run`` or ``vmrt executable list|dispatch``, with random flags
and values, then sometimes drops, repeats, swaps or replaces tokens.  Each
command runs in a fresh directory, in its own process, with a timeout.

Invariants (``Finding`` otherwise):

* no hang (``HANG`` seconds) and no death by a signal;
* exit 0, or non-zero with one line on stderr and no traceback.  Allowed
  longer forms, each documented: argparse's usage lines before its one
  ``PROG: error:`` line (exit 2); ``elfkit run``'s fault report (exit 1,
  first line ``elfkit: SYMBOL faulted under emulation:``); ``fatelf
  verify``'s problem list and ``inspect``'s "cannot be loaded" on stdout
  (exit 1, stderr empty), ``fatelf verify --json``'s fatal problem in the
  JSON (exit 2, stderr empty);
* a failed command leaves no file behind (``-o``, ``--output=@f.npy``,
  temporaries), and a successful one only the files it was asked for.

Code only ever runs emulated: ``elfkit run`` gets ``--backend emulated``
unless the mutation changed it, plus an instruction budget, and the
.vmfb / dispatch-library seeds are for a foreign CPU (a mutated
x86_64 library would run natively, where a crash is no sandbox failure).
"""
from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

#: seconds one command may take (start-up, unicorn, a budgeted call)
HANG = 30.0
ARCH_WORDS = ["x86_64", "aarch64", "riscv64", "arm", "i386", "riscv32", "amd64", "arm64",
              "x86", "mips", "", "RISCV64", "-1"]
SYMBOLS = ["add_i32", "add_i64", "many_f64", "sum_i32", "fill_u8", "write_u32", "read_u32",
           "crash_store", "spin_forever", "recurse", "spin", "exported_twice", "call_host_add",
           "iree_hal_executable_plugin_query", "g_counter", "nope", "", "main"]
SIGS = ["i32(i32,i32)", "i64(i64,i64)", "void()", "u64(u64)", "void(ptr,i64,u32)",
        "i64(ptr,i64)", "f64(f64,f64,f64)", "ptr()", "i32(i32", "x(y)", "void(void)",
        "f32(f32,f32)", "u32(ptr)", ""]
VALUES = ["0", "1", "-1", "40", "2", "0x10", "0xffffffffffffffff", "18446744073709551616",
          "1.5", "nan", "inf", "-0.0", "null", "abc", "", "1e400", "0x", "1_000"]
TENSORS = ["4xf32=1", "4xf32=1 2 3 4", "3.0", "2x2xi32=[1 2][3 4]", "0xf32", "4xf32=",
           "4xi8=300", "(null)", "@missing.npy", "1000000000xf32=1", "4x", "f32=1", "nan"]


class Finding(AssertionError):
    """A command line broke the CLI's promises.  ``key`` groups findings of
    one cause (the command and what went wrong, without the arguments)."""

    def __init__(self, message: str, argv: list[str], what: str):
        super().__init__(message)
        words = argv[2:5] if argv[3] in ("fatelf", "executable") else argv[2:4]
        self.key = f"{' '.join(words)}: {what}"


def _last(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""


def _elfkit() -> list[str]:
    return [sys.executable, "-m", "elfkit"]


def _vmrt() -> list[str]:
    return [sys.executable, "-m", "vmrt"]


def _kind(data: bytes) -> str:
    if data[:4] == b"\x7fELF":
        return "elf"
    if data[:4] == (0x1F0E70FA).to_bytes(4, "little"):
        return "fat"
    return "vmfb"


def _pick(rng: random.Random, options: list[str]) -> str:
    if rng.random() < 0.9:
        return rng.choice(options)
    # junk; no NUL (argv cannot hold one) and no line break: argparse echoes a
    # bad value in its error, so a newline in it splits that line (recorded in
    # README "Reliability"; left out so the runs look further)
    junk = rng.randbytes(rng.randint(1, 8)).decode("latin-1")
    return "".join(c for c in junk if c not in "\0\n\r\x0b\x0c\x1c\x1d\x1e\x85")


def command(rng: random.Random, kind: str, f: str) -> tuple[list[str], list[str]]:
    """(argv, output files it is asked to write) for input file ``f``."""
    verbs = {"elf": ["inspect", "run", "disasm", "list", "verify", "pack", "extract", "select",
                     "remove", "executable"],
             "fat": ["inspect", "run", "disasm", "list", "verify", "extract", "select",
                     "remove"],
             "vmfb": ["vmrt-run", "list", "inspect"]}[kind]
    if rng.random() < 0.1:       # any command on any file
        verbs = ["inspect", "run", "disasm", "list", "verify", "pack", "extract", "vmrt-run",
                 "executable"]
    verb = rng.choice(verbs)
    outs: list[str] = []
    opt: list[list[str]] = []
    if verb == "inspect":
        argv = [*_elfkit(), "inspect", f]
        for flag in ("--json", "--sections"):
            if rng.random() < 0.4:
                opt.append([flag])
        if rng.random() < 0.3:
            opt.append(["--arch", _pick(rng, ARCH_WORDS)])
    elif verb == "run":
        argv = _elfkit_run(rng, f, opt)
    elif verb == "disasm":
        argv = [*_elfkit(), "disasm", f]
        if rng.random() < 0.5:
            argv.append(_pick(rng, SYMBOLS))
        if rng.random() < 0.3:
            opt.append(["--arch", _pick(rng, ARCH_WORDS)])
        if rng.random() < 0.3:
            opt.append(["--no-bytes"])
    elif verb in ("list", "verify"):
        argv = [*_elfkit(), "fatelf", verb, f]
        if rng.random() < 0.4:
            opt.append(["--json"])
    elif verb == "pack":
        outs = [_pick(rng, ["out.sos", "sub/out.sos", "out.sos"])]
        argv = [*_elfkit(), "fatelf", "pack", "-o", outs[0], *([f] * rng.randint(1, 3))]
        if rng.random() < 0.3:
            opt.append(["--align", _pick(rng, ["4096", "auto", "3", "0", "65536", "-8", "1<<40"])])
    elif verb in ("extract", "select", "remove"):
        argv = _fatelf_slice(rng, verb, f, opt, outs)
    elif verb == "vmrt-run":
        argv = _vmrt_run(rng, f, opt, outs)
    elif rng.random() < 0.5:                     # vmrt executable list
        argv = [*_vmrt(), "executable", "list", f]
        if rng.random() < 0.3:
            opt.append([f"--arch={_pick(rng, ARCH_WORDS)}"])
        opt.append(["--backend=emulated"])
    else:                                        # vmrt executable dispatch
        argv = _vmrt_dispatch(rng, f, opt, outs)
    rng.shuffle(opt)                             # options keep their values
    argv += [t for group in opt for t in group]
    _mutate(rng, argv, f)
    if verb == "run":               # whatever the mutation did: bounded
        argv += ["--budget", str(rng.choice([1000, 200_000, 2_000_000]))]
    return argv, outs


def _fatelf_slice(rng: random.Random, verb: str, f: str, opt: list[list[str]],
                  outs: list[str]) -> list[str]:
    """``elfkit fatelf extract|select|remove`` on ``f`` (its output file goes to ``outs``)."""
    outs.append(_pick(rng, ["out.so", "sub/out.so", "out.so"]))
    argv = [*_elfkit(), "fatelf", verb, f, "-o", outs[0]]
    if verb != "select" or rng.random() < 0.5:
        if rng.random() < 0.5:
            opt.append(["--arch", _pick(rng, ARCH_WORDS)])
        else:
            opt.append(["--index", _pick(rng, ["0", "1", "2", "-1", "255", "x"])])
    if verb == "select" and rng.random() < 0.5:
        opt.append(["--fallback"])
    return argv


def _mutate(rng: random.Random, argv: list[str], f: str) -> None:
    """Now and then delete, repeat, swap or replace a few words of ``argv``
    after the command words (in place)."""
    n_fixed = 5 if argv[3] in ("fatelf", "executable") else 4
    for _ in range(rng.randint(0, 3) if rng.random() < 0.3 else 0):
        i = rng.randrange(n_fixed, len(argv)) if len(argv) > n_fixed else None
        if i is None:
            break
        op = rng.random()
        if op < 0.3:
            del argv[i]
        elif op < 0.5:
            argv.insert(i, argv[i])
        elif op < 0.7:
            j = rng.randrange(n_fixed, len(argv))
            argv[i], argv[j] = argv[j], argv[i]
        else:
            argv[i] = _pick(rng, ["--", "-", "-o", "--json", "--arch", "-h", "--bogus",
                                  f, "/dev/null", "/nonexistent", "."])


def _elfkit_run(rng: random.Random, f: str, opt: list[list[str]]) -> list[str]:
    """``elfkit run`` on ``f`` (options go to ``opt``), always emulated."""
    argv = [*_elfkit(), "run", f, "--call", _pick(rng, SYMBOLS)]
    if rng.random() < 0.6:
        opt.append(["--sig", _pick(rng, SIGS)])
    elif rng.random() < 0.5:
        opt.append(["--restype", _pick(rng, ["i32", "u64", "f64", "void", "ptr", "q"])])
    for _ in range(rng.randint(0, 4)):
        opt.append(["--arg", _pick(rng, VALUES)])
    if rng.random() < 0.3:
        opt.append(["--arch", _pick(rng, ARCH_WORDS)])
    if rng.random() < 0.4:
        opt.append(["--timeout", _pick(rng, ["0.2", "1", "0", "-1", "nan", "1e-9", "x"])])
    if rng.random() < 0.15:
        opt.append(["--trace", "trace.txt", "--trace-mode", rng.choice(["block", "compact"])])
    if rng.random() < 0.2:
        opt.append(["--hex"])
    opt.append(["--backend", "emulated"])
    return argv


def _vmrt_run(rng: random.Random, f: str, opt: list[list[str]], outs: list[str]) -> list[str]:
    """``vmrt run`` on ``f``: options go to ``opt``, files it may write to ``outs``."""
    argv = [*_vmrt(), "run", f"--module={f}"]
    if rng.random() < 0.8:
        opt.append([f"--function={_pick(rng, ['saxpy', 'grid2d', 'simple_mul', 'main'])}"])
    for _ in range(rng.randint(0, 4)):
        opt.append([f"--input={_pick(rng, TENSORS)}"])
    if rng.random() < 0.5:
        opt.append([f"--device={_pick(rng, ['local-sync', 'local-task', 'vulkan', ''])}"])
    if rng.random() < 0.3:
        opt.append([f"--module_mode={_pick(rng, ['preload', 'mmap', 'x'])}"])
    if rng.random() < 0.3:
        outs.append("out.npy")
        opt.append(["--output=@out.npy"])
    if rng.random() < 0.2:
        opt.append([f"--expected_output={_pick(rng, TENSORS)}"])
    opt.append(["--timeout=10", "--instruction_budget=2000000"])
    return argv


def _vmrt_dispatch(rng: random.Random, f: str, opt: list[list[str]],
                   outs: list[str]) -> list[str]:
    """``vmrt executable dispatch`` on ``f`` (a dispatch library)."""
    argv = [*_vmrt(), "executable", "dispatch", f,
            f"--export={_pick(rng, ['saxpy', 'grid2d', '0', '1', '7', 'nope'])}"]
    n = rng.randint(0, 4)
    for _ in range(n):
        opt.append([f"--binding={_pick(rng, TENSORS)}"])
    for _ in range(rng.randint(0, 3)):
        opt.append([f"--constant={_pick(rng, VALUES + ['i64:4', 'index:1', '2.5'])}"])
    if rng.random() < 0.5:
        opt.append([f"--workgroup_count={_pick(rng, ['1', '2,2', '0', '1,1,1', '-1', 'x'])}"])
    for i in range(n if rng.random() < 0.6 else 0):
        target = _pick(rng, ["", "-", f"@out{i}.npy", f"+out{i}.bin", "@sub/x.npy"])
        if target[:1] in "@+":
            outs.append(target[1:])
        opt.append([f"--output={target}"])
    opt.append(["--backend=emulated", "--timeout=10"])
    return argv


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_ERROR_LINE = re.compile(r"^(elfkit|vmrt)( [\w-]+)*: error: |^[A-Z_]+; ")


def check(argv: list[str], rc: int, stdout: str, stderr: str) -> None:
    where = " ".join(argv[2:])
    if "Traceback (most recent call last)" in stderr or "Traceback" in stdout:
        raise Finding(f"traceback from `{where}` (exit {rc}): {_last(stderr)}\n{stderr[-3000:]}",
                      argv, f"traceback: {_last(stderr).split(':')[0]}")
    if rc < 0:
        raise Finding(f"`{where}` died of signal {-rc}:\n{stderr[-2000:]}", argv,
                      f"signal {-rc}")
    if rc == 0:
        return
    # lines end at "\n" only: a "\r" or other control character is caught below
    lines = [ln for ln in stderr.split("\n") if ln.strip()]
    if len(lines) == 1:
        if _CONTROL.search(lines[0]):
            raise Finding(f"`{where}` (exit {rc}) echoed control characters from its input: "
                          f"{lines[0]!r}", argv, "control characters on stderr")
        return
    verify = argv[2:5] == ["elfkit", "fatelf", "verify"]
    if not lines and (rc == 1 and (verify or argv[2:4] == ["elfkit", "inspect"])
                      or rc == 2 and verify and "--json" in argv):
        return                                       # the problems are the result, on stdout
    if lines and lines[0].startswith("usage:") and rc == 2 and _ERROR_LINE.match(lines[-1]) \
            and all(ln.startswith((" ", "usage:")) for ln in lines[:-1]):
        return                                       # argparse: usage, then one error line
    if lines and rc == 1 and argv[2:4] == ["elfkit", "run"] and lines[0].endswith(
            " faulted under emulation:"):
        return                                       # the documented fault report
    raise Finding(f"`{where}` exited {rc} with {len(lines)} line(s) on stderr:\n"
                  f"{stderr[-2000:]!r}", argv, f"exit {rc} with {len(lines)} lines on stderr")


def run_one(data: bytes, timeout: float = HANG) -> tuple[list[str], int]:
    """Run the command derived from ``data``; returns (argv, exit code)."""
    rng = random.Random(hashlib.sha1(data).digest())
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as d:
        name = rng.choice(["input.bin", "in put.so", "plugin.sos", "m.vmfb"])
        Path(d, name).write_bytes(data)
        if rng.random() < 0.2:
            Path(d, "sub").mkdir()
        argv, outs = command(rng, _kind(data), name)
        before = _files(d)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])}
        try:
            proc = subprocess.run(argv, cwd=d, capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, env=env)
        except subprocess.TimeoutExpired:
            raise Finding(f"`{' '.join(argv[2:])}` did not end in {timeout:.0f} s", argv,
                          "hang") from None
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        check(argv, proc.returncode, out, err)
        new = _files(d) - before - {"trace.txt"}
        # a mutation may have renamed an output: what follows -o was asked for too
        asked = set(outs) | {argv[i + 1] for i, t in enumerate(argv[:-1]) if t == "-o"}
        allowed = set() if proc.returncode else asked
        if new - allowed:
            raise Finding(f"`{' '.join(argv[2:])}` (exit {proc.returncode}) left "
                          f"{sorted(new - allowed)} behind", argv, "left files behind")
        return argv, proc.returncode


def _files(d: str) -> set[str]:
    return {str(p.relative_to(d)) for p in Path(d).rglob("*") if not p.is_dir()}


def cli(data: bytes) -> None:
    run_one(data)


def default_seeds() -> list[bytes]:
    """Catalogue plugins (one per CPU), a FatELF of three, and the riscv64
    .vmfb and dispatch library of tests/vmrt/hal/local/plugins/data/codegen.mlir when
    the vmrt tests have compiled them (build/vmrt_plugins/iree/)."""
    from elfkit import fatelf
    from tests.plugins import ARCHES, REPO, build_plugins
    ps = build_plugins()
    seeds = [ps.data(n, a) for n, a in zip(["kernels", "relocs", "standalone", "imports",
                                            "kernels", "relocs"], ARCHES)]
    seeds.append(fatelf.pack([ps.path("kernels", a) for a in ("x86_64", "aarch64", "riscv32")]))
    for vmfb in sorted((REPO / "build" / "vmrt_plugins" / "iree").glob("*/riscv64/*.vmfb")):
        seeds.append(vmfb.read_bytes())
        seeds += [so.read_bytes() for so in sorted((vmfb.parent / "bin").glob("*.so"))]
    return seeds
