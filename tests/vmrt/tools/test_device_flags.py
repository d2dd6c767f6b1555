"""iree-run-module 3.13's device and task flags in ``vmrt run``:
``--list_drivers``, ``--list_devices``, ``--dump_devices``,
``--dump_task_topologies`` (compared with iree-run-module's output where
vmrt has the same thing) and the ``--task_*`` flags (worker count, local
memory, checked values)."""
from __future__ import annotations

import pytest

from tests.vmrt.hal.hal_testutil import TOOLS_DATA, iree_run, vmrt_run
from tests.vmrt.iree_tools import IREE_TARGET_FLAGS, require_tool
from tests.vmrt.tools.test_load_api import Compiler
from vmrt.errors import HalError, StatusCode, UsageError
from vmrt.modules.hal.task import TaskTopology, cpu_caches
from vmrt.tools.flags import parse_flags
from vmrt.tools.module_specs import context_settings, create_context
from vmrt.tools.run import RUN_FLAGS


@pytest.fixture(scope="module")
def chain():
    compile_ = Compiler(require_tool("iree-compile", "iree-base-compiler"))
    return compile_(TOOLS_DATA / "chain.mlir", ["--iree-hal-target-device=local",
                    "--iree-hal-local-target-device-backends=llvm-cpu",
                    *IREE_TARGET_FLAGS["x86_64"]], "chain-cpu")


def both(iree_run_module, args):
    return vmrt_run(args), iree_run(iree_run_module, args)


@pytest.mark.parametrize("flag", ["--list_devices=local-sync", "--list_devices=local-task",
                                  "--dump_devices=local-sync", "--dump_devices=local-task"])
def test_one_driver_like_iree(iree_run_module, flag):
    ours, theirs = both(iree_run_module, [flag])
    assert (ours.rc, ours.stdout, ours.stderr) == (theirs.rc, theirs.stdout, theirs.stderr) == \
        (0, theirs.stdout, "")


def test_all_drivers_are_iree_local_ones(iree_run_module):
    ours = vmrt_run(["--list_devices"])
    theirs = iree_run(iree_run_module, ["--list_devices"])
    assert ours.stdout == "".join(ln + "\n" for ln in theirs.stdout.splitlines()
                                  if ln.startswith("local-"))
    dump = vmrt_run(["--dump_devices"]).stdout
    assert dump == "\n".join(iree_run(iree_run_module, [f"--dump_devices={d}"]).stdout
                             for d in ("local-sync", "local-task"))


def test_list_drivers_layout(iree_run_module):
    ours, theirs = both(iree_run_module, ["--list_drivers"])
    assert ours.rc == theirs.rc == 0
    mine, iree = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert mine[:3] == iree[:3] and mine[4] == iree[4] == ""
    names = [ln.partition(":")[0] for ln in iree[5:] if ln.strip().startswith("local-")]
    assert [ln.partition(":")[0] for ln in mine[5:]] == names == ["      local-sync",
                                                                  "      local-task"]


@pytest.mark.parametrize("flag", ["--list_devices=foo", "--dump_devices=foo"])
def test_unknown_driver(iree_run_module, flag):
    ours, theirs = both(iree_run_module, [flag])
    assert ours.rc == theirs.rc == 1
    assert ours.stdout == ""                 # (iree-run-module prints a header first)
    assert ours.stderr.count("\n") == 1
    assert ours.stderr.startswith("NOT_FOUND; no driver 'foo' registered")
    assert "NOT_FOUND; no driver 'foo' registered" in theirs.stderr


def test_first_action_wins_and_nothing_runs(iree_run_module, chain):
    args = ["--list_devices=local-sync", "--dump_devices=local-task", f"--module={chain}",
            "--input=16x32xf32=1"]
    ours, theirs = both(iree_run_module, args)
    assert (ours.rc, ours.stdout) == (theirs.rc, theirs.stdout) == (0, "local-sync://\n")


def test_dump_task_topologies_layout(iree_run_module):
    ours, theirs = both(iree_run_module, ["--task_topology_group_count=3",
                                          "--dump_task_topologies"])
    assert ours.rc == theirs.rc == 0
    mine, iree = ours.stdout.splitlines(), theirs.stdout.splitlines()
    assert len(mine) == len(iree)
    assert mine[1] == iree[1] == "# topology[0]: 3 worker groups, numa node: any"
    assert [ln.partition(":")[0] for ln in mine[4:]] == \
        [ln.partition(":")[0].replace("iree-worker", "vmrt-task") for ln in iree[4:]]
    caches = cpu_caches()
    if "l2d" in caches:
        assert f"l2d={caches['l2d']}" in ours.stdout
    listed = vmrt_run(["--task_topology_cpu_ids=0", "--dump_task_topologies"]).stdout
    assert "1 worker groups" in listed and "processor: 0" in listed


def _hal_devices(argv):
    flags = parse_flags(argv, RUN_FLAGS)
    settings = context_settings(flags)
    from vmrt.tools.devices import task_topology
    settings.options.extra["task"] = task_topology(flags)
    ctx, _ = create_context(settings.modules, settings.options)
    try:
        hal = next(m for m in ctx.modules if m.name == "hal")
        return [(d.identifier, d.dispatch_threads) for d in ctx.state_of(hal).devices]
    finally:
        ctx.close()


def test_group_count_sets_the_workers(chain):
    assert _hal_devices([f"--module={chain}", "--device=local-task",
                         "--task_topology_group_count=3"]) == [("local-task", 3)]
    assert _hal_devices([f"--module={chain}", "--device=local-task",
                         "--task_topology_cpu_ids=0"]) == [("local-task", 1)]
    assert _hal_devices([f"--module={chain}", "--device=local-task",
                         "--task_topology_max_group_count=1"]) == [("local-task", 1)]
    assert _hal_devices([f"--module={chain}", "--device=local-sync",
                         "--task_topology_group_count=3"]) == [("local-sync", 1)]


@pytest.mark.parametrize("count", [1, 3])
def test_group_count_runs_like_iree(iree_run_module, chain, count):
    args = ["--device=local-task", f"--module={chain}", f"--task_topology_group_count={count}",
            "--task_worker_spin_us=0", "--task_topology_distribution=compact",
            "--task_abort_on_failure=false", "--input=16x32xf32=0.5", "--input=32x16xf32=0.25"]
    ours, theirs = both(iree_run_module, args)
    assert (ours.rc, ours.stdout) == (theirs.rc, theirs.stdout) == (0, theirs.stdout), \
        ours.stderr


@pytest.mark.parametrize("flag,code,iree_too", [
    ("--task_topology_group_count=abc", "INVALID_ARGUMENT", False),
    ("--task_topology_group_count=-1", "INVALID_ARGUMENT", False),
    ("--task_topology_group_count=100000", "INVALID_ARGUMENT", False),
    ("--task_topology_mode=foo", "INVALID_ARGUMENT", True),
    ("--task_topology_nodes=foo", "INVALID_ARGUMENT", True),
    ("--task_topology_performance_level=foo", "INVALID_ARGUMENT", True),
    ("--task_topology_distribution=foo", "INVALID_ARGUMENT", True),
    ("--task_topology_cpu_ids=0,4096", "OUT_OF_RANGE", True),
    ("--task_topology_snapshot=topo.txt", "UNIMPLEMENTED", False),
    ("--task_worker_local_memory=lots", "INVALID_ARGUMENT", False),
])
def test_bad_task_values(iree_run_module, chain, flag, code, iree_too):
    args = ["--device=local-task", f"--module={chain}", "--input=16x32xf32=1",
            "--input=32x16xf32=1", flag]
    ours = vmrt_run(args)
    assert ours.rc == 1 and ours.stdout == "" and ours.stderr.count("\n") == 1
    assert ours.stderr.startswith(f"{code}; ")
    if iree_too:                           # iree-run-module refuses it as well
        theirs = iree_run(iree_run_module, args)
        assert theirs.rc == 1 and code in theirs.stderr


def test_local_memory_limit():
    TaskTopology.check_dispatch(1024, 1024)
    TaskTopology.check_dispatch(1 << 30, None)           # limit unknown: no check
    with pytest.raises(HalError, match="dispatch requires 2048b of local memory but only "
                                       "1024b is available per-worker") as info:
        TaskTopology.check_dispatch(2048, 1024)
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert TaskTopology(worker_local_memory=4096).local_memory() == 4096
    assert TaskTopology().local_memory() == cpu_caches().get("l2d")
    with pytest.raises(UsageError):
        parse_flags(["--task_topology_group_count"], RUN_FLAGS)
