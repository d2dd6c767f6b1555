"""Inputs the long-running fuzzer (fuzz/run.py) found, rebuilt from real
programs so that no binary is committed."""
from __future__ import annotations

import pytest

import vmrt
from tests.vmrt.vmrt_testutil import needs_iree

pytestmark = needs_iree


@pytest.mark.parametrize("new", [b"0if_i", b"0ii_f", b"0ff_i"])
def test_export_cconv_disagreeing_with_registers(compile_mlir, new):
    """An export whose cconv was corrupted so an i32 register carries a float
    (fuzz finding: TypeError escaped from the interpreter)."""
    original = compile_mlir("ints.mlir").read_bytes()
    spots = [i for i in range(len(original)) if original.startswith(b"0ii_i", i)]
    assert spots
    for at in spots:
        data = bytearray(original)
        data[at:at + 5] = new
        _load_and_call_all(bytes(data))


def _load_and_call_all(data: bytes) -> None:
    inst = vmrt.Instance()
    try:
        mod = vmrt.BytecodeModule.load(inst, data)
        ctx = vmrt.Context(inst, [mod])
    except vmrt.VmError:
        return
    for e in mod.exports:
        codes = e.cconv[1:].split("_")[0]
        if not set(codes) <= {"i", "f"}:
            continue
        args = [1.5 if c == "f" else 7 for c in codes]
        try:
            ctx.invoke(f"{mod.name}.{e.name}", args)
        except vmrt.VmError as err:
            assert str(err)
    ctx.close()
