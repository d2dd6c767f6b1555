"""The ``local-task`` settings of iree-run-module's ``--task_*`` flags that
mean something for vmrt's CPU device (:class:`TaskTopology`): how many
worker threads run a dispatch's workgroups and how much workgroup-local
memory a dispatch may ask for.  vmrt's workers are unpinned Python threads
(``vmrt-task_N``); queues stay synchronous."""
from __future__ import annotations

import os

from elfkit.support import DataRecord

from ...errors import HalError, StatusCode

#: most worker threads vmrt starts for one local-task device
MAX_WORKERS = 256
#: iree-run-module's default of --task_topology_max_group_count
DEFAULT_MAX_GROUP_COUNT = 64
_SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"


def cpu_caches() -> dict[str, int]:
    """Data cache sizes of CPU 0 by IREE's names (``l1d``, ``l2d``, ``l3d``;
    unified caches count as data caches); empty where sysfs does not say."""
    out: dict[str, int] = {}
    try:
        entries = sorted(os.listdir(_SYSFS_CACHE))
    except OSError:
        return out
    for entry in entries:
        if not entry.startswith("index"):
            continue
        try:
            with open(f"{_SYSFS_CACHE}/{entry}/level") as f:
                level = int(f.read())
            with open(f"{_SYSFS_CACHE}/{entry}/type") as f:
                kind = f.read().strip()
            with open(f"{_SYSFS_CACHE}/{entry}/size") as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind not in ("Data", "Unified") or not size[:-1].isdigit():
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1], 0)
        if scale:
            out.setdefault(f"l{level}d", int(size[:-1]) * scale)
    return out


class TaskTopology(DataRecord, frozen=True):
    """``--task_topology_group_count`` (0: as many workers as CPUs vmrt may
    use, at most ``max_group_count``), ``--task_topology_cpu_ids`` (one
    worker per listed CPU) and ``--task_worker_local_memory`` (0: the size
    of CPU 0's L2 cache, as IREE; no limit when unknown)."""

    group_count: int = 0
    max_group_count: int = DEFAULT_MAX_GROUP_COUNT
    cpu_ids: tuple[int, ...] = ()
    worker_local_memory: int = 0

    def workers(self) -> int:
        """Worker threads of one local-task dispatch."""
        if self.cpu_ids:
            return len(self.cpu_ids)
        if self.group_count:
            return self.group_count
        from ...hal.local.device import task_workers  # the device layer, when needed
        return max(1, min(task_workers(), self.max_group_count))

    def local_memory(self) -> int | None:
        """Bytes of workgroup-local memory each worker offers (None: no limit)."""
        if self.worker_local_memory:
            return self.worker_local_memory
        return cpu_caches().get("l2d")

    @staticmethod
    def check_dispatch(local_memory_size: int, have: int | None) -> None:
        """A dispatch asking more local memory than a worker has (``have``,
        :meth:`local_memory`) fails, as under IREE's local-task."""
        if have is not None and local_memory_size > have:
            raise HalError(f"dispatch requires {local_memory_size}b of local memory but only "
                           f"{have}b is available per-worker", StatusCode.RESOURCE_EXHAUSTED)


__all__ = ["DEFAULT_MAX_GROUP_COUNT", "MAX_WORKERS", "TaskTopology", "cpu_caches"]
