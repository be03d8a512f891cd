"""Pure parts of the telemetry daemon: cgroup parsing, per-window statistics, embedded metric format records."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024

# A container's runtime id (64 hex digits) in a cgroup path: ".../docker-<id>.scope" (systemd driver) or
# ".../<id>" (cgroupfs driver, under ECS's /ecs/<task id>/ parent).
_CONTAINER_ID = re.compile(r"(?:docker-|/)([0-9a-f]{64})(?:\.scope)?(?:/|$)")


def container_id_from_cgroup(text: str) -> str | None:
    """The container runtime id in a process's ``/proc/<pid>/cgroup``, or ``None`` for a process outside one."""
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        match = _CONTAINER_ID.search(path)
        if match:
            return match.group(1)
    return None


@dataclass(frozen=True)
class Owner:
    """Who a GPU process belongs to, from ECS's record of the task."""

    service: str  # the ECS service name (from the task group "service:<name>"); "" for a task of no service
    container: str
    task_arn: str


@dataclass
class Window:
    """GPU memory samples (MiB) and the utilization of the GPUs a container ran on, over one publishing window."""

    memory_mib: list[int] = field(default_factory=list)
    utilization: list[int] = field(default_factory=list)

    @property
    def peak(self) -> int:
        return max(self.memory_mib, default=0)

    @property
    def p99(self) -> int:
        return percentile(self.memory_mib, 99)


def percentile(values: Sequence[int], pct: float) -> int:
    """The nearest-rank percentile: the smallest sample at or above ``pct`` percent of the samples."""
    if not values:
        return 0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class GpuSample:
    index: int
    memory_used_mib: int
    memory_total_mib: int
    utilization: int
    processes: tuple[tuple[int, int | None], ...]  # (pid, used GPU memory in MiB, None where NVML cannot tell)


def attribute(gpus: Iterable[GpuSample], owners: Mapping[int, Owner | None]) -> dict[Owner, tuple[int, int]]:
    """Per task container: GPU memory in MiB summed over its processes (a container may run several), and the
    highest utilization of the GPUs they run on. Processes outside ECS tasks, or without a memory figure, are left
    out."""
    out: dict[Owner, tuple[int, int]] = {}
    for gpu in gpus:
        for pid, used in gpu.processes:
            owner = owners.get(pid)
            if owner is None or used is None:
                continue
            key = owner
            memory, util = out.get(key, (0, 0))
            out[key] = (memory + used, max(util, gpu.utilization))
    return out


def emf(
    timestamp_ms: int,
    dimensions: Sequence[Sequence[str]],
    values: Mapping[str, str],
    metrics: Mapping[str, tuple[float, str]],
    namespace: str,
) -> dict[str, Any]:
    """One CloudWatch embedded-metric-format record: dimension values and metric values as top-level members."""
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [list(d) for d in dimensions],
                    "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in metrics.items()],
                }
            ],
        },
        **values,
        **{name: value for name, (value, _) in metrics.items()},
    }


def merge_processes(
    compute: Iterable[tuple[int, int | None]], mps_clients: Iterable[tuple[int, int | None]]
) -> tuple[tuple[int, int | None], ...]:
    """One entry per process from NVML's two lists: under MPS, clients come from the MPS list (each with its own
    memory) and the compute list shows the MPS server, and a driver may show a client in both. The MPS list's entry
    wins; a ``None`` figure gives way to a known one."""
    merged: dict[int, int | None] = {}
    for pid, used in (*mps_clients, *compute):
        if merged.get(pid) is None:
            merged[pid] = used
    return tuple(merged.items())


def window_records(
    timestamp_ms: int,
    cluster: str,
    instance: str,
    windows: Mapping[Owner, Window],
    gpus: Sequence[GpuSample],
    mps_up: bool | None,
    health: Mapping[str, float] | None = None,
    *,
    namespace: str,
) -> list[dict[str, Any]]:
    """The records of one publishing window: per service and container (the peak of any one task's container, the
    p99 over all their samples), per GPU, and the host's health: MPS (left out when it could not be told) and the
    daemon's own figures (``health``: metric name -> value, such as ``NvmlAvailable`` or ``EcsErrors``)."""
    merged: dict[tuple[str, str], Window] = {}
    for owner, w in windows.items():
        if not owner.service:
            continue  # a task outside any service: nothing to compare a budget with
        into = merged.setdefault((owner.service, owner.container), Window())
        into.memory_mib.extend(w.memory_mib)
        into.utilization.extend(w.utilization)
    records = []
    for (service, container), w in sorted(merged.items()):
        records.append(
            emf(
                timestamp_ms,
                [["Cluster", "Service"], ["Cluster", "Service", "Container"]],
                {"Cluster": cluster, "Service": service, "Container": container, "InstanceId": instance},
                {
                    "GpuMemoryPeakMiB": (w.peak, "Megabytes"),
                    "GpuMemoryP99MiB": (w.p99, "Megabytes"),
                    "GpuUtilizationPercent": (max(w.utilization, default=0), "Percent"),
                },
                namespace=namespace,
            )
        )
    for gpu in gpus:
        records.append(
            emf(
                timestamp_ms,
                [["Cluster", "InstanceId", "Gpu"]],
                {"Cluster": cluster, "InstanceId": instance, "Gpu": str(gpu.index)},
                {
                    "GpuMemoryUsedMiB": (gpu.memory_used_mib, "Megabytes"),
                    "GpuUtilizationPercent": (gpu.utilization, "Percent"),
                },
                namespace=namespace,
            )
        )
    host: dict[str, tuple[float, str]] = {name: (value, "Count") for name, value in sorted((health or {}).items())}
    if mps_up is not None:
        host["MpsHealthy"] = (1 if mps_up else 0, "Count")
    if host:
        records.append(
            emf(
                timestamp_ms,
                [["Cluster"], ["Cluster", "InstanceId"]],
                {"Cluster": cluster, "InstanceId": instance},
                host,
                namespace=namespace,
            )
        )
    return records
