"""vmrt's emulated i386 against the real CPU (tests/vmrt/onnx/real_i386.py):
every workgroup call of these ONNX programs leaves the same bytes natively
(a 32-bit process on the x86-64 host) as in the emulator.  The cases are
the ones vmrt fails against ONNX on i386 while passing on x86_64 (each
fails on the real CPU too: IREE's i386 code computes it, see
docs/onnx-conformance.md) and a few that pass."""
from __future__ import annotations

import struct
import subprocess

import pytest

from tests.vmrt.onnx import real_i386

SAME = [
    "test_round",                                   # IREE's roundf under x87 precision
    "test_qlinearmatmul_2D_uint8_float32",          # rounds through roundf too
    "test_resize_downsample_scales_linear",         # x87 excess precision
    "test_pow_types_float32_int32",                 # IREE's f64 exp/log are stubs on i386
    "test_reduce_log_sum_exp_default_axes_keepdims_example",
    "test_bitshift_right_int32_shift_ge_width",     # x86 masks shift counts to 5 bits
    "test_matmul_2d",                               # passes against ONNX
    "test_conv_with_strides_padding",
]


@pytest.fixture(scope="module")
def replay_program():
    try:
        return real_i386.harness()
    except real_i386.Unavailable as e:
        pytest.skip(f"no native i386 oracle: {e}")


@pytest.mark.parametrize("name", SAME)
def test_emulated_i386_computes_the_real_cpus_bytes(replay_program, name):
    seen, _error = real_i386.run_case(name)
    assert seen.calls > 0
    assert seen.differ == [] and seen.same == seen.calls


def test_the_oracle_sees_a_different_x87_precision(replay_program, tmp_path, monkeypatch):
    """The comparison can fail: with the x87 set to single precision before
    the call (the emulator keeps Linux's extended precision), IREE's roundf
    rounds for real and test_round's output bytes differ."""
    src = real_i386.SOURCE.read_text().replace(
        "    int rc = ((dispatch_fn)head[1])",
        '    { unsigned short cw = 0x007f; __asm__ volatile("fldcw %0" :: "m"(cw)); }\n'
        "    int rc = ((dispatch_fn)head[1])")
    c = tmp_path / "single.c"
    c.write_text(src)
    exe = tmp_path / "single"
    subprocess.run(["gcc", "-m32", "-O1", "-ffreestanding", "-fno-pic", "-fno-stack-protector",
                    "-nostdlib", "-static", "-Wl,-Ttext-segment=0x70000000", "-o", str(exe),
                    str(c)], check=True, capture_output=True)
    monkeypatch.setattr(real_i386, "harness", lambda: exe)
    seen, _error = real_i386.run_case("test_round")
    assert seen.calls == 1 and len(seen.differ) == 1
    (start, kind, _first, _last, count), = seen.differ[0]
    assert kind != "stack" and count > 0


def test_a_probe_call_exits_cleanly(replay_program):
    p = subprocess.run([str(replay_program)], input=struct.pack("<5I", 0, 0, 0, 0, 0),
                       capture_output=True, timeout=30)
    assert p.returncode == 0 and p.stdout == b""


def test_x87_stack_overflow_is_where_the_emulator_and_the_cpu_part(replay_program, tmp_path):
    """The one difference the whole corpus shows (docs/onnx-conformance.md):
    unicorn (like qemu-user 7.2) does not model an x87 stack overflow.  A
    ninth load onto the full register stack gives the real CPU the
    "indefinite" NaN 0xffc00000 and the emulator the loaded value.  IREE's
    i386 code for f32->f16 casts overflows the stack (its __truncsfhf2
    returns in st(0), and the callers read %ax and never pop), so those
    cases give ONNX's answer emulated and NaN on the CPU.  If this test
    fails, unicorn now models it: update the docs."""
    from elfkit.exec.base import PROT_EXEC, PROT_READ
    from elfkit.exec.emulated import EmulatedMachine
    nine_loads = bytes.fromhex("d9e8") * 9                 # fld1 x 9
    store = bytes.fromhex("d918dbe3")                       # fstp dword [eax]; fninit
    code = bytes.fromhex("8b442404") + nine_loads + store + b"\xc3"
    with EmulatedMachine("i386") as m:
        at = m.reserve(4096)
        m.write(at, code)
        m.protect(at, 4096, PROT_READ | PROT_EXEC)
        out = m.reserve(4096)
        m.function(at, "void(u32)")(out)
        emulated = struct.unpack("<I", m.read(out, 4))[0]
    # the same bytes on the CPU: map them (no relocation needed) and call them
    page = 0x00400000
    blob = code.ljust(64, b"\x90")
    memory = [(page, blob + bytes(4096 - len(blob)), "image"), (page + 0x1000, bytes(4096), "heap")]
    # the harness calls f(env, ds, ws): env is the output address, as the code reads [esp+4]
    rc, after = real_i386.native_call(page, page + 0x1000, 0, 0, memory)
    native = struct.unpack_from("<I", after[1])[0]
    assert (emulated, native) == (0x3F800000, 0xFFC00000)
