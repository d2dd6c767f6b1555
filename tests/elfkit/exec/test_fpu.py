"""elfkit.exec.fpu: each CPU's FP control register and the stubs that read
and set it, run natively on the host and emulated for every CPU that has a
flush-to-zero mode (the hand-encoded machine code of all four is executed)."""
from __future__ import annotations

import numpy as np
import pytest

from elfkit.arch import get as get_arch
from elfkit.arch import host
from elfkit.exec import create_machine
from elfkit.exec.base import PROT_EXEC, PROT_READ
from elfkit.exec.fpu import flushing_call_through3, fp_control, host_fpu
from elfkit.signature import parse as parse_signature


def _tiny_product() -> np.float32:
    return np.float32(1e-20) * np.float32(1e-20)      # 1e-40: a denormal, or 0 when flushed


def test_iree_bits_per_cpu():
    assert fp_control("x86_64").flush_denormals == 0x8040       # FTZ | DAZ
    assert fp_control("i386").flush_denormals == 0x8040
    assert fp_control("aarch64").flush_denormals == 0x1080000   # FZ | FZ16
    assert fp_control("arm").flush_denormals == 0x1000000       # FZ
    assert fp_control("riscv64") is None and fp_control("riscv32") is None
    assert flushing_call_through3("riscv64") is None


@pytest.mark.skipif(host() is None or fp_control(host()) is None,
                    reason="no FP control facts for this host")
def test_host_flush_and_restore():
    fpu = host_fpu()
    assert fpu is not None
    before = fpu.get()
    token = fpu.flush_denormals()
    try:
        assert _tiny_product() == 0
        assert fpu.get() & fpu.control.flush_denormals == fpu.control.flush_denormals
        assert fpu.flush_denormals() is None                   # already set: nothing to undo
    finally:
        fpu.restore(token)
    assert _tiny_product() != 0
    flags = 0x3F if fpu.control.register == "MXCSR" else 0     # sticky exception flags
    assert fpu.get() & ~flags == before & ~flags


@pytest.mark.parametrize("arch", ["x86_64", "i386", "aarch64", "arm"])
def test_flushing_stub_sets_the_guest_register(arch):
    """The stub calls its function with the flush bits set, a plain call
    starts without them, and the set stub runs."""
    m = create_machine(get_arch(arch), "emulated")
    try:
        ctl = fp_control(arch)
        stub = flushing_call_through3(arch)
        assert ctl is not None and stub is not None
        page = m.arch.page_size
        base = m.reserve(page, page)
        or_at = base + 64
        set_at = or_at + len(ctl.or_code)
        m.write(base, stub)
        m.write(or_at, ctl.or_code + ctl.set_code)
        m.protect(base, page, PROT_READ | PROT_EXEC)
        w = f"u{m.arch.bits}"
        through = m.function(base, parse_signature(f"{w}({w},{w},{w},{w})"))
        set_bits = m.function(or_at, parse_signature(f"{w}({w})"))
        # emulated x86: DAZ alone; aarch64: FZ (FZ16 is RES0 on unicorn's
        # default CPU, which has no half-precision arithmetic)
        bits = {"MXCSR": 0x40, "FPCR": 1 << 24}.get(ctl.register, ctl.flush_denormals)
        assert through(or_at, 0, 0, 0) & bits == bits             # inside: set
        assert set_bits(0) & ctl.flush_denormals == 0             # a plain call: reset state
        setter = m.function(set_at, parse_signature(f"void({w})"))
        setter(0)                                                 # (runs without a fault)
    finally:
        m.close()
