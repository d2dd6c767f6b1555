"""Bad input to device replay: corrupt, truncated and foreign captures,
unknown records, operations vmrt does not replay, unwritable capture paths
(a one-line ReplayError, no partial file), and a deterministic fuzz over
truncations and bit flips of a real capture."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import vmrt
from tests.vmrt.tools.replay_testutil import iree_capture, vmrt_capture, vmrt_replay
from vmrt.tools.replay_format import (
    OBJECT,
    OPERATION,
    OPTIONAL,
    PREPARE,
    SESSION,
    UNSUPPORTED,
    CaptureWriter,
    read_capture,
)


@pytest.fixture(scope="module")
def capture(hal_compile, tmp_path_factory):
    """A capture vmrt wrote of elementwise.mlir's add (IREE accepts it:
    test_replay.py)."""
    path = tmp_path_factory.mktemp("replay_errors") / "add.ireereplay"
    got = vmrt_capture(path, hal_compile("elementwise.mlir"), "add",
                       ["8xf32=1,2,3,4,5,6,7,8", "8xf32=10"])
    assert got.rc == 0, got.stderr
    return path


@pytest.fixture(scope="module")
def iree_add(hal_compile, tmp_path_factory):
    """The same call captured by iree-run-module (more record kinds: queue
    allocas, semaphores, init/execute/deinit scopes, failed calls)."""
    path = tmp_path_factory.mktemp("replay_errors") / "iree_add.ireereplay"
    return iree_capture(path, hal_compile("elementwise.mlir"), "add",
                        ["8xf32=1,2,3,4,5,6,7,8", "8xf32=10"])


def failure(path) -> str:
    got = vmrt_replay(path)
    assert got.rc == 1, got.stdout
    assert got.stderr.count("\n") == 1, got.stderr       # one line
    with pytest.raises(vmrt.ReplayError):
        vmrt.replay(path)
    return got.stderr


def written(tmp_path, w: CaptureWriter, name: str = "x.ireereplay"):
    path = tmp_path / name
    w.write(str(path))
    return path


def test_not_a_capture_truncated_and_unclosed(capture, tmp_path):
    data = capture.read_bytes()
    junk = tmp_path / "junk.ireereplay"
    junk.write_bytes(b"not a replay capture at all, just text\n")
    assert "INVALID_ARGUMENT; 'junk.ireereplay" not in failure(junk)   # the path is given whole
    assert "not an IREE replay capture (bad magic 0x20746f6e)" in failure(junk)
    short = tmp_path / "short.ireereplay"
    short.write_bytes(data[:1000])
    assert "truncated capture: its header says" in failure(short)
    unclosed = tmp_path / "unclosed.ireereplay"
    unclosed.write_bytes(data[:16] + bytes(8) + data[24:])
    assert "never closed" in failure(unclosed)
    v1 = tmp_path / "v1.ireereplay"
    v1.write_bytes(data[:4] + struct.pack("<H", 1) + data[6:])
    assert "version 1.0 is not supported" in failure(v1)
    missing = failure(tmp_path / "nope.ireereplay")
    assert "NOT_FOUND" in missing


def test_capture_of_a_gpu_is_refused(capture, tmp_path):
    data = capture.read_bytes()
    fmt = b"embedded-elf-x86_64"
    gpu = tmp_path / "gpu.ireereplay"
    gpu.write_bytes(data.replace(fmt, b"vulkan-spirv-fb-gpu", 1))
    msg = failure(gpu)
    assert msg.startswith("UNIMPLEMENTED; ")
    assert ("executable_cache.prepare_executable) at offset 663: executable format "
            "'vulkan-spirv-fb-gpu' is not a CPU format vmrt runs") in msg


def test_unknown_records_and_operations(tmp_path):
    w = CaptureWriter()
    w.record(SESSION)
    w.record(9, b"\1\2\3", flags=OPTIONAL)          # skipped: optional
    ok = written(tmp_path, w, "optional.ireereplay")
    assert vmrt.replay(ok).ok
    w.record(9, b"")
    msg = failure(written(tmp_path, w, "unknown.ireereplay"))
    assert "record #2 at offset" in msg and "unknown record type 9 (not marked optional)" in msg
    for op in ("command_buffer.collective", "device.queue_host_call", "device.create_channel",
               "allocator.virtual_memory_reserve"):
        w = CaptureWriter()
        w.record(OBJECT, obj=1, object_type=1)
        w.record(OPERATION, device=1, obj=1, operation=op)
        msg = failure(written(tmp_path, w))
        assert f"vmrt does not replay {op}" in msg and msg.startswith("UNIMPLEMENTED; ")
    w = CaptureWriter()
    w.record(UNSUPPORTED, operation="device.queue_write")
    assert "marks device.queue_write as an operation it could not record" in \
        failure(written(tmp_path, w))


def test_payload_shorter_than_its_struct(tmp_path):
    w = CaptureWriter()
    w.record(OPERATION, PREPARE.pack(0, 1 << 40, 0, 0, 3, 0) + b"abc", device=1, obj=3,
             related=4, operation="executable_cache.prepare_executable", payload_type=7)
    msg = failure(written(tmp_path, w))
    assert "payload too short for executable data" in msg and msg.startswith("DATA_LOSS; ")


def test_unwritable_capture_path_leaves_nothing(hal_compile, tmp_path):
    module = hal_compile("elementwise.mlir")
    args = ["8xf32=1", "8xf32=2"]
    folder = vmrt_capture(tmp_path / "no" / "such" / "x.ireereplay", module, "add", args)
    assert folder.rc == 1 and "no folder" in folder.stderr
    assert folder.stderr.count("\n") == 1 and "EXEC" not in folder.stdout
    into_dir = vmrt_capture(tmp_path, module, "add", args)
    assert into_dir.rc == 1 and "not a file name" in into_dir.stderr
    # a failed run writes no capture, and leaves an existing one alone
    old = tmp_path / "old.ireereplay"
    old.write_bytes(b"old")
    failed = vmrt_capture(old, module, "add", ["8xf32=1", "4xf32=2"])
    assert failed.rc == 1
    assert old.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.ireereplay"]
    combined = vmrt_capture(tmp_path / "c.ireereplay", module, "add", args, "--check_races")
    assert combined.rc == 1 and "cannot be combined with --check_races" in combined.stderr


def _executable_bytes(path) -> range:
    """Where the capture holds its executable's ELF."""
    cap = read_capture(str(path))
    rec = next(r for r in cap.records if r.payload_type == 7)
    fmt_len, data_len = struct.unpack_from("<I", rec.payload, 28)[0], \
        struct.unpack_from("<Q", rec.payload, 8)[0]
    start = rec.offset + 96 + PREPARE.size + fmt_len
    return range(start, start + data_len)


@pytest.mark.parametrize("which", ["vmrt", "iree"])
def test_fuzz_truncations_and_bit_flips(capture, iree_add, tmp_path, which):
    """Every mangled capture ends in a result or a ReplayError, never in
    another exception.  Bit flips spare the ELF's code: the format has no
    checksum over it, and mangled machine code run natively is a crash, not
    an error (the emulated backend runs every case anyway)."""
    from vmrt.vm.context import ExecutionLimits, running_under
    source = capture if which == "vmrt" else iree_add
    data = source.read_bytes()
    code = _executable_bytes(source)
    rng = np.random.default_rng(2026)
    cases = [data[:n] for n in range(0, len(data), 97)]
    cases += [data[:n] + bytes(len(data) - n) for n in range(24, len(data), 389)]
    spots = [int(i) for i in rng.integers(0, len(data), 600) if int(i) not in code][:250]
    for i in spots:
        flipped = bytearray(data)
        flipped[i] ^= 1 << int(rng.integers(0, 8))
        cases.append(bytes(flipped))
    outcomes = {"ok": 0, "mismatch": 0, "error": 0}
    path = tmp_path / "fuzz.ireereplay"
    for case in cases:
        path.write_bytes(case)
        try:
            with running_under(ExecutionLimits(10_000_000)):
                result = vmrt.replay(path, backend="emulated", element_type="f32")
        except vmrt.ReplayError as e:
            assert "\n" not in str(e)
            outcomes["error"] += 1
            continue
        outcomes["ok" if result.ok else "mismatch"] += 1
    assert sum(outcomes.values()) == len(cases)
    assert outcomes["error"] > len(cases) // 3 and outcomes["ok"] > 10, outcomes
