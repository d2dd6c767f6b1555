"""Shared by the tests that drive the pip IREE tools: target flags per CPU
and a fixture helper that skips when a tool is missing."""
from __future__ import annotations

import shutil

import pytest

#: iree-compile target flags per elfkit arch (llvm-cpu backend).
IREE_TARGET_FLAGS = {
    "x86_64": ["--iree-llvmcpu-target-triple=x86_64-pc-linux-elf",
               "--iree-llvmcpu-target-cpu=generic"],
    "aarch64": ["--iree-llvmcpu-target-triple=aarch64-pc-linux-elf",
                "--iree-llvmcpu-target-cpu=generic"],
    "riscv64": ["--iree-llvmcpu-target-triple=riscv64-pc-linux-elf",
                "--iree-llvmcpu-target-cpu=generic-rv64",
                "--iree-llvmcpu-target-cpu-features=+m,+a,+f,+d,+c",
                "--iree-llvmcpu-target-abi=lp64d"],
    "arm": ["--iree-llvmcpu-target-triple=armv7a-pc-linux-elf",
            "--iree-llvmcpu-target-float-abi=hard", "--iree-llvmcpu-target-cpu=generic"],
    "i386": ["--iree-llvmcpu-target-triple=i686-pc-linux-elf",
             "--iree-llvmcpu-target-cpu=generic"],
    "riscv32": ["--iree-llvmcpu-target-triple=riscv32-pc-linux-elf",
                "--iree-llvmcpu-target-cpu=generic-rv32",
                "--iree-llvmcpu-target-cpu-features=+m,+f",
                "--iree-llvmcpu-target-abi=ilp32"],
}


def require_tool(name: str, package: str) -> str:
    """Path of an IREE command-line tool, or skip the test."""
    exe = shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} is not installed (pip install {package})")
    return exe
