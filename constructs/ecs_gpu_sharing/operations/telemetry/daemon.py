"""The telemetry daemon's loop: NVML samples, process owners from cgroups and ECS, EMF lines on stdout.

Run as ``python -m telemetry.daemon`` in its image. Settings come from the environment the construct sets:
``CLUSTER`` (the cluster's name), ``SAMPLE_SECONDS`` (5), ``PUBLISH_SECONDS`` (60), ``HOST_PROC`` (the host's
/proc, mounted read-only; /host/proc), ``MPS_PIPE_DIR`` (the AMI's MPS pipe folder, mounted read-only;
/host/run/mps-ecs). ECS gives the task's own metadata at ``ECS_CONTAINER_METADATA_URI_V4``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .sampling import MIB, GpuSample, Owner, Window, attribute, container_id_from_cgroup, window_records


def read_gpus(nvml: Any) -> list[GpuSample]:
    """Every GPU's memory, utilization and compute processes, from NVML (``pynvml``, or a fake in tests)."""
    out = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        utilization = nvml.nvmlDeviceGetUtilizationRates(handle)
        processes = tuple(
            (p.pid, None if p.usedGpuMemory is None else p.usedGpuMemory // MIB)
            for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        )
        out.append(GpuSample(index, memory.used // MIB, memory.total // MIB, int(utilization.gpu), processes))
    return out


def mps_up(proc: Path, pipe_dir: Path) -> bool:
    """Whether the host's MPS control daemon runs: its pipe exists and a process named nvidia-cuda-mps-control."""
    if not (pipe_dir / "control").exists():
        return False
    for comm in proc.glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "nvidia-cuda-mps-control":
                return True
        except OSError:
            continue
    return False


class TaskDirectory:
    """Container runtime id -> owner, from ECS's record of the tasks on this host (refreshed on a miss)."""

    def __init__(self, ecs: Any, cluster: str, container_instance: str | None) -> None:
        self._ecs = ecs
        self._cluster = cluster
        self._instance = container_instance
        self._owners: dict[str, Owner] = {}
        self._refreshed = 0.0

    def refresh(self) -> None:
        arns: list[str] = []
        kwargs: dict[str, Any] = {"cluster": self._cluster, "desiredStatus": "RUNNING"}
        if self._instance:
            kwargs["containerInstance"] = self._instance
        for page in self._ecs.get_paginator("list_tasks").paginate(**kwargs):
            arns.extend(page["taskArns"])
        owners = {}
        for start in range(0, len(arns), 100):  # DescribeTasks takes at most 100 tasks
            described = self._ecs.describe_tasks(cluster=self._cluster, tasks=arns[start : start + 100])
            for task in described["tasks"]:
                group = task.get("group", "")
                service = group.split(":", 1)[1] if group.startswith("service:") else ""
                for c in task.get("containers", []):
                    if c.get("runtimeId"):
                        owners[c["runtimeId"]] = Owner(service, c["name"], task["taskArn"])
        self._owners = owners

    def owner(self, container_id: str, now: float, min_interval: float = 30.0) -> Owner | None:
        if container_id not in self._owners and now - self._refreshed >= min_interval:
            self._refreshed = now
            self.refresh()
        return self._owners.get(container_id)


def owners_of(pids: Iterable[int], proc: Path, directory: TaskDirectory, now: float) -> dict[int, Owner | None]:
    out: dict[int, Owner | None] = {}
    for pid in pids:
        try:
            cid = container_id_from_cgroup((proc / str(pid) / "cgroup").read_text())
        except OSError:
            cid = None  # the process ended between NVML's answer and this read
        out[pid] = directory.owner(cid, now) if cid else None
    return out


class Daemon:
    """Samples every ``sample_s`` seconds and writes one window of records every ``publish_s`` seconds."""

    def __init__(
        self,
        *,
        nvml: Any,
        directory: TaskDirectory,
        cluster: str,
        instance: str,
        proc: Path,
        pipe_dir: Path,
        emit: Callable[[str], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.nvml, self.directory, self.cluster, self.instance = nvml, directory, cluster, instance
        self.proc, self.pipe_dir, self.emit, self.clock = proc, pipe_dir, emit, clock
        self.windows: dict[Owner, Window] = {}
        self.last: list[GpuSample] = []

    def sample(self) -> None:
        gpus = read_gpus(self.nvml)
        owners = owners_of({pid for g in gpus for pid, _ in g.processes}, self.proc, self.directory, self.clock())
        for owner, (memory, util) in attribute(gpus, owners).items():
            window = self.windows.setdefault(owner, Window())
            window.memory_mib.append(memory)
            window.utilization.append(util)
        self.last = gpus

    def publish(self) -> None:
        records = window_records(
            int(self.clock() * 1000),
            self.cluster,
            self.instance,
            self.windows,
            self.last,
            mps_up(self.proc, self.pipe_dir),
        )
        for record in records:
            self.emit(json.dumps(record, separators=(",", ":")))
        self.windows = {}


def _own_task() -> tuple[str, str]:
    """This task's cluster and ARN, from ECS's task metadata endpoint (v4)."""
    with urllib.request.urlopen(os.environ["ECS_CONTAINER_METADATA_URI_V4"] + "/task", timeout=5) as response:
        meta = json.load(response)
    return meta["Cluster"], meta["TaskARN"]


def main() -> int:  # pragma: no cover - runs on a GPU host; its parts are tested on their own
    import boto3
    import pynvml  # type: ignore[import-not-found]  # in the daemon image only (requirements.txt)

    sample_s = float(os.environ.get("SAMPLE_SECONDS", "5"))
    publish_s = float(os.environ.get("PUBLISH_SECONDS", "60"))
    cluster, task_arn = _own_task()
    ecs = boto3.client("ecs")
    (own,) = ecs.describe_tasks(cluster=cluster, tasks=[task_arn])["tasks"]
    instance = own.get("containerInstanceArn", "")
    described = ecs.describe_container_instances(cluster=cluster, containerInstances=[instance])
    ec2_id = described["containerInstances"][0].get("ec2InstanceId", instance)
    pynvml.nvmlInit()
    daemon = Daemon(
        nvml=pynvml,
        directory=TaskDirectory(ecs, cluster, instance),
        cluster=os.environ.get("CLUSTER", cluster.rsplit("/", 1)[-1]),
        instance=ec2_id,
        proc=Path(os.environ.get("HOST_PROC", "/host/proc")),
        pipe_dir=Path(os.environ.get("MPS_PIPE_DIR", "/host/run/mps-ecs")),
        emit=lambda line: print(line, flush=True),
    )
    stop = False

    def _stop(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    next_publish = time.time() + publish_s
    while not stop:
        try:
            daemon.sample()
        except Exception as error:  # one bad sample (a GPU reset, a throttled call) must not end the daemon
            print(json.dumps({"level": "error", "message": f"sample failed: {error}"}), file=sys.stderr, flush=True)
        if time.time() >= next_publish:
            daemon.publish()
            next_publish += publish_s
        time.sleep(sample_s)
    daemon.publish()
    pynvml.nvmlShutdown()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
