"""The public Python loaders refuse FIFOs, devices and oversized files with
vmrt's own error instead of hanging or running out of memory (issue 16),
like the command line does (tests/vmrt/tools/test_hostile_cli.py)."""
from __future__ import annotations

import os
import threading

import pytest

import vmrt
from vmrt.files import MAX_MODULE_SIZE

LOADERS = {
    "BytecodeModule.load": lambda p: vmrt.BytecodeModule.load(vmrt.Instance(), p),
    "Executable.load": lambda p: vmrt.Executable.load(p),
    "ExecutablePlugin.load": lambda p: vmrt.ExecutablePlugin.load(p),
    "ExecutablePlugin.system": lambda p: vmrt.ExecutablePlugin.system(p),
    "PluginManager.register": lambda p: vmrt.PluginManager().register(os.fspath(p)),
    "vmrt.load": lambda p: vmrt.load(p),
}


def _outcome(load, path, unblock=None):
    """What ``load(path)`` raised, run in a thread that must end within 20 s
    (``unblock`` frees a thread stuck opening a FIFO so the test can fail)."""
    box: list = []

    def run():
        try:
            load(path)
            box.append(None)
        except BaseException as e:  # noqa: BLE001 - inspected by the test
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive() and unblock is not None:
        unblock()
        t.join(5)
    assert box, f"{path}: the loader hung"
    return box[0]


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_fifo_is_refused(tmp_path, name):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "prog.vmfb"
    os.mkfifo(fifo)

    def unblock():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)

    err = _outcome(LOADERS[name], fifo, unblock)
    assert isinstance(err, vmrt.VmError), repr(err)
    assert "FIFO" in str(err) and str(fifo) in str(err)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_character_device_is_refused(name):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    err = _outcome(LOADERS[name], "/dev/zero")
    assert isinstance(err, vmrt.VmError), repr(err)
    assert "character device" in str(err)


@pytest.mark.parametrize("name", ["BytecodeModule.load", "Executable.load",
                                  "PluginManager.register", "vmrt.load"])
def test_a_huge_sparse_file_is_refused_before_reading(tmp_path, name):
    p = tmp_path / "huge.vmfb"
    with open(p, "wb") as f:
        f.truncate(MAX_MODULE_SIZE + 1)
    err = _outcome(LOADERS[name], p)
    assert isinstance(err, vmrt.VmError), repr(err)
    assert err.code == vmrt.StatusCode.RESOURCE_EXHAUSTED and str(MAX_MODULE_SIZE) in str(err)


def test_a_missing_file_is_not_found():
    err = _outcome(LOADERS["BytecodeModule.load"], "/no/such/prog.vmfb")
    assert isinstance(err, vmrt.LoadError) and err.code == vmrt.StatusCode.NOT_FOUND
