"""IREE's own runtime for an emulated CPU, as the corpus's second oracle.

On x86_64 the corpus runs every ``.vmfb`` on ``iree.runtime`` too and
requires vmrt's outputs to equal IREE's byte for byte.  The other CPUs have
no IREE runtime on this host, but IREE publishes its runtime wheel
(``iree-base-runtime``) for aarch64, and qemu-user runs that wheel's
``iree-run-module`` here: this module runs a case's ``.vmfb`` that way
(inputs written as ``.npy`` files, ``--input=@in<i>.npy``, results read
back from ``--output=@out<i>.npy``).

The runtime for a CPU is an unpacked wheel (the folder holding ``iree/``),
named by the environment variable ``VMRT_IREE_RUNTIME_<ARCH>`` (e.g.
``VMRT_IREE_RUNTIME_AARCH64``; ``python -m tests.vmrt.onnx.corpus
--iree-runtime DIR`` sets it from the CPU of the wheel's binary).  The
stage is on only when that folder, ``qemu-<arch>`` and the CPU's sysroot
(``/usr/<triple>``: ``apt-get install libc6-arm64-cross
libstdc++6-arm64-cross``) are all present."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: arch -> (qemu-user binary, sysroot, ELF e_machine of its binaries)
QEMU = {
    "aarch64": ("qemu-aarch64", "/usr/aarch64-linux-gnu", 183),
    "riscv64": ("qemu-riscv64", "/usr/riscv64-linux-gnu", 243),
    "arm": ("qemu-arm", "/usr/arm-linux-gnueabihf", 40),
    "i386": ("qemu-i386", "/usr/i686-linux-gnu", 3),
}
TIMEOUT = 600.0


class ForeignIreeError(Exception):
    """IREE's runtime under qemu failed the case (its message, first line)."""


#: numpy (ml_dtypes) float8 types -> IREE's element type names: IREE's
#: .npy reader takes a 1-byte float as its generic ``f8``, which a program
#: expecting e.g. ``f8E5M2`` refuses, so these inputs go as raw bytes
FLOAT8 = {"float8_e4m3fn": "f8E4M3FN", "float8_e4m3fnuz": "f8E4M3FNUZ",
          "float8_e5m2": "f8E5M2", "float8_e5m2fnuz": "f8E5M2FNUZ"}


def input_flag(x: Any, stem: str) -> str:
    """iree-run-module's ``--input`` for ``x``, written to ``stem.npy``
    (``stem.bin`` and its shape and type in the flag for float8)."""
    import numpy as np
    if x.dtype.name in FLOAT8:
        Path(f"{stem}.bin").write_bytes(x.tobytes())
        return f"--input={'x'.join([*map(str, x.shape), FLOAT8[x.dtype.name]])}=@{stem}.bin"
    np.save(f"{stem}.npy", x, allow_pickle=False)
    return f"--input=@{stem}.npy"


def env_var(arch: str) -> str:
    return f"VMRT_IREE_RUNTIME_{arch.upper()}"


def tool_in(root: str | os.PathLike[str]) -> Path:
    """The ``iree-run-module`` of an unpacked iree-base-runtime wheel."""
    return Path(root, "iree", "_runtime_libs", "iree-run-module")


def elf_arch(exe: Path) -> str | None:
    """The CPU (one of QEMU's keys) an ELF executable is built for."""
    head = exe.read_bytes()[:20] if exe.is_file() else b""
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return next((a for a, (_q, _s, m) in QEMU.items() if m == machine), None)


@dataclass(frozen=True)
class ForeignIree:
    """``qemu-<arch> -L <sysroot> iree-run-module`` for one CPU."""

    arch: str
    qemu: str
    sysroot: str
    tool: Path

    def run(self, vmfb: Path, function: str, inputs: list[Any],
            expected: list[Any]) -> list[Any]:
        """The function's results as numpy arrays; ForeignIreeError if
        iree-run-module fails.  Results come back as ``.npy`` files; when
        IREE's ``.npy`` writer cannot encode a result's element type (the
        float8 types: "unsupported data encoding"), all come back as raw
        bytes (``--output=+out<i>.bin``), read as ``expected``'s dtypes and
        shapes (a byte count that does not fit is an error)."""
        import numpy as np
        with tempfile.TemporaryDirectory(prefix="vmrt-onnx-iree-") as tmp:
            args = [input_flag(np.asarray(x), f"{tmp}/in{i}") for i, x in enumerate(inputs)]
            n = len(expected)
            try:
                self._call(vmfb, function, [*args, *(f"--output=@{tmp}/out{i}.npy"
                                                     for i in range(n))])
                return [np.load(f"{tmp}/out{i}.npy", allow_pickle=False) for i in range(n)]
            except ForeignIreeError as e:
                if "unsupported data encoding" not in str(e):
                    raise
            self._call(vmfb, function, [*args, *(f"--output=+{tmp}/out{i}.bin"
                                                 for i in range(n))])
            outs = []
            for i, e in enumerate(expected):
                raw = Path(f"{tmp}/out{i}.bin").read_bytes()
                if len(raw) != e.nbytes:
                    raise ForeignIreeError(f"iree-run-module ({self.arch}, qemu): output {i} "
                                           f"has {len(raw)} bytes, expected {e.nbytes}")
                outs.append(np.frombuffer(raw, e.dtype).reshape(e.shape))
            return outs

    def _call(self, vmfb: Path, function: str, args: list[str]) -> None:
        cmd = [self.qemu, "-L", self.sysroot, str(self.tool), "--device=local-sync",
               f"--module={vmfb}", f"--function={function}", *args]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise ForeignIreeError(f"iree-run-module ({self.arch}, qemu) timed out "
                                   f"after {TIMEOUT:.0f} s") from None
        if p.returncode != 0:
            lines = [ln.strip() for ln in p.stderr.splitlines() if ln.strip()]
            raise ForeignIreeError(f"iree-run-module ({self.arch}, qemu) exited "
                                   f"{p.returncode}: {' '.join(lines[:3])[:400]}")

def bench_runtime(repo: Path, arch: str) -> Path:
    """Where ``python -m bench --setup-qemu`` unpacks IREE's runtime wheel
    for ``arch`` (the installed iree-base-runtime's version)."""
    from importlib.metadata import version
    return repo / "build" / "bench" / "qemu" / f"iree-base-runtime-{version('iree-base-runtime')}-{arch}"


def foreign_iree(arch: str, root: str | os.PathLike[str] | None = None) -> ForeignIree | None:
    """IREE's runtime for ``arch`` under qemu-user, if everything it needs
    is here (see the module's docstring), else None.  ``root``: the unpacked
    wheel (default: ``$VMRT_IREE_RUNTIME_<ARCH>``)."""
    root = root or os.environ.get(env_var(arch))
    if not root or arch not in QEMU:
        return None
    qemu, sysroot, _machine = QEMU[arch]
    exe = shutil.which(qemu)
    tool = tool_in(root)
    if exe is None or not Path(sysroot).is_dir() or elf_arch(tool) != arch:
        return None
    return ForeignIree(arch, exe, sysroot, tool)
