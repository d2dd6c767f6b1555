"""``vmrt run --dump_dispatches=DIR[,GLOB]``: one folder per dispatch whose
replay.sh re-runs it with ``vmrt executable dispatch`` and checks the
outputs the program computed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.vmrt.hal.hal_testutil import vmrt_run
from tests.vmrt.iree_tools import REPO
from tests.vmrt.tools.conftest import CPU_BUG_FACTOR
from vmrt.hal.dispatch_observer import workgroup_probe
from vmrt.hal.local.executable import Executable


def replay(folder) -> subprocess.CompletedProcess:
    env = dict(os.environ, VMRT=f"{sys.executable} -m vmrt", PYTHONPATH=str(REPO))
    return subprocess.run(["sh", str(folder / "replay.sh")], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def chain_dump(hal_compile, tmp_path_factory):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    d = tmp_path_factory.mktemp("dump")
    np.save(d / "a.npy", a)
    np.save(d / "b.npy", b)
    args = [f"--module={hal_compile('chain.mlir')}", f"--input=@{d / 'a.npy'}",
            f"--input=@{d / 'b.npy'}"]
    got = vmrt_run([*args, f"--dump_dispatches={d / 'all'}"])
    assert got.rc == 0, got.stderr
    assert got.stdout == vmrt_run(args).stdout
    return a, b, d / "all", args


def test_one_folder_per_dispatch_with_its_bindings(chain_dump):
    a, b, out, _ = chain_dump
    names = sorted(p.name for p in out.iterdir())
    assert names == ["0000_chain_dispatch_0_matmul_16x16x32_f32",
                     "0001_chain_dispatch_1_matmul_16x16x16_f32",
                     "0002_chain_dispatch_2_reduction_16x16_f32"]
    first = out / names[0]
    info = json.loads((first / "dispatch.json").read_text())
    assert info["export"] == "chain_dispatch_0_matmul_16x16x32_f32"
    assert info["dispatch"] == 0 and info["element_type"] == "f32"
    assert info["arch"] == "x86_64" and len(info["workgroup_count"]) == 3
    bindings = [np.load(first / f"binding{i}.npy") for i in range(3)]
    outputs = [np.load(first / f"expected{i}.npy") for i in range(3)]
    # the matmul reads a and b and writes a @ b into the third binding
    np.testing.assert_array_equal(bindings[0][:a.size], a.reshape(-1))
    np.testing.assert_array_equal(bindings[1][:b.size], b.reshape(-1))
    np.testing.assert_allclose(outputs[2][:256].reshape(16, 16),
                               a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    assert (first / "executable.so").read_bytes()[:4] == b"\x7fELF"


def test_replay_checks_the_recorded_outputs(chain_dump):
    _a, _b, out, _ = chain_dump
    for folder in sorted(out.iterdir()):
        r = replay(folder)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.count("[SUCCESS]") == len(list(folder.glob("expected*.npy")))
    # the middle matmul reads m from and writes into one buffer: its two
    # bindings are byte ranges of one file, so they alias in the replay too
    folder = sorted(out.iterdir())[1]
    info = json.loads((folder / "dispatch.json").read_text())
    assert [b.split("[")[0] for b in info["bindings"]] == ["buffer0.npy"] * 2
    # a wrong recorded output makes the replay fail, naming the binding
    wrong = np.load(folder / "expected0.npy")
    wrong[300] += 1
    np.save(folder / "expected0.npy", wrong)
    r = replay(folder)
    assert r.returncode == 1
    assert "[FAILED] binding[0]: 1 of 512 f32 elements differ; first: [300]" in r.stdout


def test_filter_by_export_name(chain_dump):
    _a, _b, d, args = chain_dump
    got = vmrt_run([*args, f"--dump_dispatches={d / 'some'},*reduction*"])
    assert got.rc == 0
    assert [p.name for p in (d / "some").iterdir()] == ["0002_chain_dispatch_2_reduction_16x16_f32"]


def test_a_second_run_replaces_each_folder_whole(chain_dump):
    """Dumping into the same directory again swaps each folder for the new
    one: nothing of the old folder stays, no temporary is left behind."""
    _a, _b, d, args = chain_dump
    spec = f"--dump_dispatches={d / 'again'},*reduction*"
    assert vmrt_run([*args, spec]).rc == 0
    (folder,) = (d / "again").iterdir()
    first = {p.name: p.read_bytes() for p in folder.iterdir()}
    (folder / "stale.txt").write_text("from an earlier run")
    assert vmrt_run([*args, spec]).rc == 0
    assert [p.name for p in (d / "again").iterdir()] == [folder.name]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == first


def test_emulated_dispatch_with_a_plugin_replays(hal_compile, cpu_bug_sos, tmp_path, emulation):
    lhs = np.arange(1, 71, dtype=np.float32)
    rhs = np.full(70, 3, np.float32)
    np.save(tmp_path / "l.npy", lhs)
    np.save(tmp_path / "r.npy", rhs)
    got = vmrt_run([f"--module={hal_compile('simple_mul.mlir', 'riscv64')}",
                    "--function=plugin_mul", f"--input=@{tmp_path / 'l.npy'}",
                    f"--input=@{tmp_path / 'r.npy'}", f"--executable_plugin={cpu_bug_sos}",
                    f"--dump_dispatches={tmp_path / 'd'}", "--dispatch_element_type=f32"])
    assert got.rc == 0, got.stderr
    (folder,) = (tmp_path / "d").iterdir()
    assert folder.name == "0000_tiled_mul"
    assert (folder / "plugin0_cpu_bug.sos").read_bytes() == cpu_bug_sos.read_bytes()
    # the repro holds what the riscv64 build of the plugin computed (its planted bug)
    np.testing.assert_array_equal(np.load(folder / "expected2.npy")[:70],
                                  lhs * rhs * CPU_BUG_FACTOR)
    r = replay(folder)
    assert r.returncode == 0, r.stdout + r.stderr


def test_workgroup_order_changes_a_racy_result(hal_compile, tmp_path):
    got = vmrt_run([f"--module={hal_compile('racy.mlir')}", "--function=racy",
                    "--input=10xf32=1 2 3 4 5 6 7 8 9 10", f"--dump_dispatches={tmp_path}"])
    assert got.rc == 0
    (folder,) = tmp_path.iterdir()
    info = json.loads((folder / "dispatch.json").read_text())
    exe = Executable.load(folder / "executable.so")
    try:
        def run(order):
            bindings = [np.load(folder / "binding0.npy"), np.load(folder / "binding1.npy")]
            with workgroup_probe(order=order):
                exe.dispatch(info["export"], tuple(info["workgroup_count"]), bindings,
                             info["constants"])
            return bindings[1]
        forward, backward = run([0, 1, 2]), run([2, 1, 0])
        x = np.arange(1, 11, dtype=np.float32)
        # the last workgroup to write an element wins
        np.testing.assert_array_equal(forward, x + [0, 0, 0, 0, 1, 1, 1, 1, 2, 2])
        np.testing.assert_array_equal(backward, x + [0, 0, 0, 0, 0, 0, 0, 0, 1, 1])
        with pytest.raises(Exception, match="workgroup index 3 out of range"):
            run([0, 3])
    finally:
        exe.close()


def test_unusable_directory_is_one_error_line(hal_compile, tmp_path):
    (tmp_path / "file").write_text("x")
    got = vmrt_run([f"--module={hal_compile('racy.mlir')}", "--function=racy",
                    "--input=4xf32=1", f"--dump_dispatches={tmp_path / 'file'}"])
    assert got.rc == 1 and got.stdout == ""
    assert len(got.stderr.splitlines()) == 1 and "cannot create directory" in got.stderr


def test_executable_dispatch_flag_errors(chain_dump):
    import io

    from vmrt.tools.executable import main
    folder = sorted(chain_dump[2].iterdir())[1]
    info = json.loads((folder / "dispatch.json").read_text())
    base = [str(folder / "executable.so"), f"--export={info['export']}",
            "--workgroup_count=" + ",".join(map(str, info["workgroup_count"])),
            *(f"--constant={c}" for c in info["constants"])]

    def run(*extra):
        out, err = io.StringIO(), io.StringIO()
        rc = main(["dispatch", *base, *extra], stdout=out, stderr=err)
        return rc, out.getvalue(), err.getvalue()

    rc, _out, err = run(f"--binding=@{folder / 'buffer0.npy'}[0:99999]",
                        f"--binding=@{folder / 'buffer0.npy'}[0:64]")
    assert rc == 1 and "byte range [0, 99999) is outside the file's 2048 bytes" in err
    rc, _out, err = run(f"--binding=@{folder / 'buffer0.npy'}[0:2048]",
                        f"--binding=@{folder / 'buffer0.npy'}[0:1024]",
                        f"--expected_output=@{folder / 'expected0.npy'}")
    assert rc == 1 and "1 expected outputs specified for 2 bindings" in err


def test_dump_folders_that_cannot_be_written_are_one_error_line(hal_compile, tmp_path):
    """issue 29: a dispatch folder whose name a file has, or a dump directory
    where nothing can be created (/proc), ended in ``INTERNAL; OSError``."""
    args = [f"--module={hal_compile('racy.mlir')}", "--function=racy", "--input=4xf32=1"]
    first = vmrt_run([*args, f"--dump_dispatches={tmp_path / 'd'}"])
    assert first.rc == 0, first.stderr
    (name,) = [p.name for p in (tmp_path / "d").iterdir()]
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / name).write_text("precious")
    got = vmrt_run([*args, f"--dump_dispatches={tmp_path / 'e'}"])
    assert got.rc == 1 and len(got.stderr.splitlines()) == 1, got.stderr
    assert got.stderr.startswith("ALREADY_EXISTS; ") and name in got.stderr
    assert (tmp_path / "e" / name).read_text() == "precious"
    assert os.listdir(tmp_path / "e") == [name]          # no temporary folder left
    if os.path.isdir("/proc/self"):
        got = vmrt_run([*args, "--dump_dispatches=/proc"])
        assert got.rc == 1 and len(got.stderr.splitlines()) == 1, got.stderr
        assert not got.stderr.startswith("INTERNAL"), got.stderr


def test_hostile_binding_files_are_one_error_line(chain_dump, tmp_path):
    """issue 29: ``--binding=@empty.npy`` raised EOFError, a header claiming
    2^40 elements MemoryError, and a FIFO as a binding or expected output hung."""
    import io

    from vmrt.tools.executable import main
    folder = sorted(chain_dump[2].iterdir())[1]
    info = json.loads((folder / "dispatch.json").read_text())
    base = [str(folder / "executable.so"), f"--export={info['export']}",
            "--workgroup_count=" + ",".join(map(str, info["workgroup_count"])),
            *(f"--constant={c}" for c in info["constants"])]
    good = [f"--binding=@{folder / b}" for b in info["bindings"]]
    (tmp_path / "empty.npy").write_bytes(b"")
    np.save(tmp_path / "ok.npy", np.zeros(4, np.float32))
    (tmp_path / "huge.npy").write_bytes(
        (tmp_path / "ok.npy").read_bytes().replace(b"(4,)", b"(1099511627776,)"))
    os.mkfifo(tmp_path / "fifo.npy")
    cases = [("empty.npy", "not a .npy file"), ("huge.npy", "claims"), ("fifo.npy", "FIFO")]
    for name, words in cases:
        for flags in ([f"--binding=@{tmp_path / name}", *good[1:]],
                      [*good, *([f"--expected_output=@{tmp_path / name}"] * len(good))]):
            out, err = io.StringIO(), io.StringIO()
            rc = main(["dispatch", *base, *flags], stdout=out, stderr=err)
            assert rc == 1 and len(err.getvalue().splitlines()) == 1, err.getvalue()
            assert words in err.getvalue() and "INTERNAL" not in err.getvalue(), err.getvalue()
