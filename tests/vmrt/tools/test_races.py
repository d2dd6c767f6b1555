"""``vmrt run --check_races`` on a hand-made dispatch whose workgroups
overwrite each other (data/racy.mlir), natively, emulated and as vmvx
bytecode (any local executable is checked), on one whose
workgroups store the same values to the same bytes (seen under emulation,
where a memory write hook records every store), and on programs without
races."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.vmrt.hal.hal_testutil import vmrt_run

N = 10                      # elements; workgroup w starts at element 4w
INPUT = f"--input={N}xf32=" + " ".join(str(float(i + 1)) for i in range(N))


def expected_overlaps(n: int, width: int, stride: int = 4) -> list[tuple[int, int, int, int]]:
    """(byte start, byte end, workgroup a, workgroup b) of the f32 elements
    two workgroups of data/racy.mlir both write, computed from its rule."""
    groups = -(-n // stride)
    writes = [set(range(w * stride, min(w * stride + width, n))) for w in range(groups)]
    out = []
    for a in range(groups):
        for b in range(a + 1, groups):
            both = sorted(writes[a] & writes[b])
            if both:
                assert both == list(range(both[0], both[-1] + 1))
                out.append((4 * both[0], 4 * both[-1] + 4, a, b))
    return out


def _races(stdout: str) -> list[tuple[int, int, int, int]]:
    return [(int(s), int(e), int(a), int(b)) for s, e, a, b in re.findall(
        r"binding 1 bytes \[(\d+), (\d+)\) written by workgroups \((\d+), 0, 0\) and "
        r"\((\d+), 0, 0\)", stdout)]


@pytest.mark.parametrize("arch", ["x86_64", "riscv64", "vmvx"])
def test_overlapping_workgroups_are_reported(hal_compile, arch, emulation):
    vmfb = hal_compile("racy.mlir", arch)
    # local-task may run the workgroups in any order: the reference is local-sync
    plain = vmrt_run([f"--module={vmfb}", "--function=racy", INPUT, "--device=local-sync"])
    got = vmrt_run([f"--module={vmfb}", "--function=racy", INPUT, "--check_races"])
    assert got.rc == 1, got.stderr
    assert _races(got.stdout) == expected_overlaps(N, 8)
    assert "export 'tile_f32', 3x1x1 workgroups" in got.stdout
    assert got.stdout.splitlines()[-1] == "[RACE] 2 race(s) in 1 of 1 checked dispatch(es)"
    # the program still ran: its result (forward order) is printed first
    assert got.stdout.startswith(plain.stdout)


@pytest.mark.parametrize("arch", ["riscv64", "aarch64"])
def test_same_value_overlaps_are_reported_under_emulation(hal_compile, arch, emulation):
    vmfb = hal_compile("racy.mlir", arch)
    got = vmrt_run([f"--module={vmfb}", "--function=same", INPUT, "--check_races"])
    assert got.rc == 1, got.stderr
    assert _races(got.stdout) == expected_overlaps(N, 8)
    assert "export 'copy_f32', 3x1x1 workgroups" in got.stdout
    assert "differ between" not in got.stdout        # no order changes the result
    assert got.stdout.splitlines()[-1] == "[RACE] 2 race(s) in 1 of 1 checked dispatch(es)"
    printed = got.stdout.splitlines()[2].split("=", 1)[1].split()
    np.testing.assert_array_equal([float(v) for v in printed], np.arange(1, N + 1))


@pytest.mark.parametrize("arch", ["x86_64", "riscv64", "aarch64", "vmvx"])
def test_disjoint_workgroups_run_normally(hal_compile, arch, emulation):
    vmfb = hal_compile("racy.mlir", arch)
    got = vmrt_run([f"--module={vmfb}", "--function=clean", INPUT, "--check_races"])
    plain = vmrt_run([f"--module={vmfb}", "--function=clean", INPUT])
    assert (got.rc, got.stdout, got.stderr) == (0, plain.stdout, "")
    x = np.arange(1, N + 1, dtype=np.float32)
    want = x + np.arange(N) // 4
    printed = got.stdout.splitlines()[2].split("=", 1)[1].split()
    np.testing.assert_array_equal([float(v) for v in printed], want)


def test_compiled_programs_have_no_races(hal_compile, tmp_path):
    rng = np.random.default_rng(5)
    np.save(tmp_path / "a.npy", rng.standard_normal((16, 32)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal((32, 16)).astype(np.float32))
    args = [f"--module={hal_compile('chain.mlir')}", f"--input=@{tmp_path / 'a.npy'}",
            f"--input=@{tmp_path / 'b.npy'}"]
    got = vmrt_run([*args, "--check_races"])
    assert (got.rc, got.stdout) == (0, vmrt_run(args).stdout)


def test_from_python(hal_compile):
    import vmrt
    from vmrt.hal.dispatch_observer import observe_dispatches
    from vmrt.hal.local.races import RaceChecker
    checker = RaceChecker()
    x = np.arange(1, N + 1, dtype=np.float32)
    with vmrt.load(hal_compile("racy.mlir")) as prog, observe_dispatches(checker):
        racy = prog["racy"](x)
        clean = prog["clean"](x)
    assert (checker.dispatches, checker.checked) == (2, 2)
    assert [(r.dispatch, r.binding, r.start, r.end, r.workgroups[0][0], r.workgroups[1][0])
            for r in checker.races] == [(0, 1, *o) for o in expected_overlaps(N, 8)]
    # forward order: the later workgroup's value stays
    np.testing.assert_array_equal(racy, x + [0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(clean, x + np.arange(N) // 4)
