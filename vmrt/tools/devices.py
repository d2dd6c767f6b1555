"""iree-run-module's device and task-system flags in ``vmrt run``:
``--list_drivers``, ``--list_devices[=DRIVER]``, ``--dump_devices[=DRIVER]``
and ``--dump_task_topologies`` print what vmrt has, in IREE's layout;
the ``--task_*`` flags become a :class:`vmrt.modules.hal.task.TaskTopology`
(worker count and per-worker local memory of ``local-task``; the placement
flags are checked, and have no effect on vmrt's unpinned worker threads)."""
from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import StatusCode, UsageError
from ..modules.hal.task import DEFAULT_MAX_GROUP_COUNT, MAX_WORKERS, TaskTopology, cpu_caches
from .flags import Flags

#: the flags that print and exit, in the order ``vmrt run`` checks them
ACTIONS = ("list_drivers", "list_devices", "dump_devices", "dump_task_topologies")
#: ``--task_*`` value flags and their allowed words (None: a count >= 0)
TASK_VALUES: dict[str, tuple[str, ...] | None] = {
    "task_topology_group_count": None, "task_topology_max_group_count": None,
    "task_worker_spin_us": None, "task_worker_stack_size": None,
    "task_worker_local_memory": None,
    "task_topology_mode": ("physical_cores",),
    "task_topology_performance_level": ("any", "low", "efficiency", "high", "performance"),
    "task_topology_distribution": ("compact", "scatter"),
    "task_topology_favor": ("", "latency", "throughput", "efficiency"),
    "task_topology_snapshot": ("",),
    "task_topology_nodes": None,
}

_RULE = "# " + "=" * 76
_DEVICE_RULE = "# ===" + "-" * 70 + "==="
_TOPOLOGY_RULE = "# ===" + "-" * 72 + "==="
_DESCRIPTIONS = {
    "local-sync": "vmrt CPU device: queue operations and workgroups on the calling thread",
    "local-task": "vmrt CPU device: synchronous queues, workgroups on worker threads",
}


def first_action(argv: Sequence[str], flags: Flags) -> str | None:
    """The print-and-exit flag given first on the command line (IREE acts on
    the first one it parses); one given only in a flagfile counts after."""
    for arg in argv:
        name = arg[2:].partition("=")[0].strip() if arg.startswith("--") else ""
        if name in ACTIONS and (name in flags.values or name in flags.bools):
            return name
    for name in ACTIONS:
        if name in flags.values or name in flags.bools:
            return name
    return None


def _drivers(which: str, flag: str) -> tuple[str, ...]:
    from ..hal.local.device import DRIVERS  # (not imported by a plain run: start-up time)
    if not which:
        return DRIVERS
    if which not in DRIVERS:
        raise UsageError(f"no driver '{which}' registered (--{flag}; vmrt has "
                         f"{', '.join(DRIVERS)})", StatusCode.NOT_FOUND)
    return (which,)


def list_drivers() -> str:
    lines = [_RULE, "# Available HAL drivers", _RULE,
             "# --list_devices={driver name} lists the devices of one driver.", ""]
    lines += [f"{d:>16}: {_DESCRIPTIONS[d]}" for d in _drivers("", "list_drivers")]
    return "\n".join(lines) + "\n"


def list_devices(which: str) -> str:
    return "".join(f"{d}://\n" for d in _drivers(which, "list_devices"))


def dump_devices(which: str) -> str:
    blocks = []
    for d in _drivers(which, "dump_devices"):
        blocks.append(f"{_RULE}\n# Enumerated devices for driver '{d}'\n{_RULE}\n\n"
                      f"{_DEVICE_RULE}\n# --device={d}://\n#   default\n{_DEVICE_RULE}\n")
    return "\n".join(blocks)


def dump_task_topology(topology: TaskTopology) -> str:
    """The local-task workers vmrt starts, in IREE's topology layout."""
    n = topology.workers()
    sizes = cpu_caches()
    caches = ", ".join(f"{k}={sizes[k]}" for k in ("l1d", "l2d") if k in sizes)
    lines = [_TOPOLOGY_RULE, f"# topology[0]: {n} worker groups, numa node: any",
             _TOPOLOGY_RULE, "#"]
    for i in range(n):
        cpu = str(topology.cpu_ids[i]) if topology.cpu_ids else "(any)"
        lines += [f"# group[{i}]: 'vmrt-task_{i}'", f"#      processor: {cpu}",
                  "#     hardware ids: (any)", "#       affinity: (unspecified)",
                  f"#  caches: {caches or '(unknown)'}",
                  "#  last level cache sharing: (all/undefined)", "#"]
    return "\n".join(lines) + "\n"


def _count(flags: Flags, name: str, default: int) -> int:
    value = flags.count(name)
    return default if value is None else value


def task_topology(flags: Flags) -> TaskTopology:
    """The ``--task_*`` flags, checked (a bad value is a UsageError)."""
    for name, words in TASK_VALUES.items():
        text = flags.values.get(name)
        if text is None:
            continue
        if words is None:
            if name != "task_topology_nodes":
                flags.count(name)
            elif text not in ("current", "numa", "all") and \
                    not all(p.strip().isdigit() for p in text.split(",")):
                raise UsageError(f"flag --{name} expects current, numa, all or NUMA node ids "
                                 f"(0,2,...), got '{text}'")
        elif text not in words:
            if name == "task_topology_snapshot":
                raise UsageError("--task_topology_snapshot is not supported: vmrt reads no "
                                 "topology snapshots", StatusCode.UNIMPLEMENTED)
            choices = ", ".join(w or "''" for w in words)
            raise UsageError(f"flag --{name} expects one of {choices}, got '{text}'")
    cpu_lists = flags.lists.get("task_topology_cpu_ids", [])
    if len(cpu_lists) > 1:
        raise UsageError("vmrt makes one local-task topology: give --task_topology_cpu_ids once",
                         StatusCode.UNIMPLEMENTED)
    cpus: tuple[int, ...] = ()
    if cpu_lists:
        available = os.cpu_count() or 1
        try:
            cpus = tuple(int(p, 10) for p in cpu_lists[0].split(","))
        except ValueError:
            raise UsageError(f"flag --task_topology_cpu_ids expects CPU ids (0,1,...), got "
                             f"'{cpu_lists[0]}'") from None
        for i, cpu in enumerate(cpus):
            if not 0 <= cpu < available:
                raise UsageError(f"cpu_ids[{i}] {cpu} out of bounds, only {available} logical "
                                 "processors available", StatusCode.OUT_OF_RANGE)
    topology = TaskTopology(
        group_count=_count(flags, "task_topology_group_count", 0),
        max_group_count=_count(flags, "task_topology_max_group_count", DEFAULT_MAX_GROUP_COUNT),
        cpu_ids=cpus, worker_local_memory=_count(flags, "task_worker_local_memory", 0))
    if max(topology.group_count, len(cpus)) > MAX_WORKERS:
        raise UsageError(f"vmrt runs at most {MAX_WORKERS} local-task workers, the "
                         f"--task_topology_* flags ask for {topology.workers()}")
    return topology


__all__ = ["ACTIONS", "TASK_VALUES", "dump_devices", "dump_task_topology", "first_action",
           "list_devices", "list_drivers", "task_topology"]
