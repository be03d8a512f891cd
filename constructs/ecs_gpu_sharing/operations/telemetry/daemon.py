"""The telemetry daemon's loop: NVML samples, process owners from cgroups and ECS, records to its evidence log group.

Run as ``python -m telemetry.daemon`` in its image. Settings come from the environment the construct sets:
``CLUSTER`` (the cluster's name), ``EVIDENCE_LOG_GROUP`` (where it writes, with its own task role),
``SAMPLE_SECONDS`` (5), ``PUBLISH_SECONDS`` (60), ``HOST_PROC`` (the host's /proc, mounted read-only; /host/proc).
NVML is the host's library, bind-mounted read-only (``LD_LIBRARY_PATH``). ECS gives the task's own metadata at
``ECS_CONTAINER_METADATA_URI_V4``.

It never exits on a failure it can outlive: NVML missing or failing, the host's /proc unreadable, ECS or CloudWatch
Logs refusing or throttling each become one log line (on stderr, when the failure starts and when it ends) and a
count in the host's health record, and sampling goes on with what still works.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .sampling import (
    MIB,
    GpuSample,
    Owner,
    Window,
    attribute,
    container_id_from_cgroup,
    merge_processes,
    window_records,
)

NVML, PROC, ECS, PUBLISH = "Nvml", "Proc", "Ecs", "Publish"  # what can fail; each is counted as <Kind>Errors
MAX_PENDING_LINES = 20_000  # records kept while publishing fails (about an hour of a large host), oldest dropped
NVML_RETRY_SECONDS = 60.0


def _processes(nvml: Any, call: str, handle: Any) -> list[tuple[int, int | None]]:
    """NVML's process list ``call`` on a GPU, as (pid, MiB or None); a driver without that list gives none."""
    function = getattr(nvml, call, None)
    if function is None:
        return []
    try:
        entries = function(handle)
    except Exception as error:  # NVML_ERROR_NOT_SUPPORTED: not under MPS, or an older driver
        if "NotSupported" in type(error).__name__ or "Not Supported" in str(error):
            return []
        raise
    return [(p.pid, None if p.usedGpuMemory is None else p.usedGpuMemory // MIB) for p in entries]


def read_gpus(nvml: Any) -> list[GpuSample]:
    """Every GPU's memory, utilization and processes from NVML (``pynvml``, or a fake in tests): the compute
    processes and the MPS clients (``nvmlDeviceGetMPSComputeRunningProcesses``), each process once."""
    out = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        utilization = nvml.nvmlDeviceGetUtilizationRates(handle)
        processes = merge_processes(
            _processes(nvml, "nvmlDeviceGetComputeRunningProcesses", handle),
            _processes(nvml, "nvmlDeviceGetMPSComputeRunningProcesses", handle),
        )
        out.append(GpuSample(index, memory.used // MIB, memory.total // MIB, int(utilization.gpu), processes))
    return out


MPS_CONTROL = "nvidia-cuda-mps-control"
COMM_LENGTH = 15  # the kernel keeps a task's name in TASK_COMM_LEN (16) bytes with its NUL: 15 characters


def mps_up(proc: Path) -> bool:
    """Whether the host's MPS control daemon runs: a process of the host's /proc whose name the kernel truncated from
    ``nvidia-cuda-mps-control`` (``comm`` holds 15 characters, ``nvidia-cuda-mps``, which the MPS server's name shares)
    and whose command line names the control daemon (its pipe folder is not mounted: see ``GpuTelemetry``). Raises
    ``OSError`` when /proc cannot be listed."""
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            if (Path(entry.path) / "comm").read_text().strip() != MPS_CONTROL[:COMM_LENGTH]:
                continue
        except OSError:
            continue  # the process ended, or hides its comm
        try:
            argv0 = (Path(entry.path) / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            return True  # the name matches and the command line is hidden: the server runs only under the daemon
        if os.path.basename(argv0) == MPS_CONTROL:
            return True
    return False


def stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Health:
    """Failures by source: counted for the window, logged once when a source starts failing and once when it ends."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log
        self.counts: Counter[str] = Counter()
        self.failing: set[str] = set()

    def fail(self, source: str, error: BaseException) -> None:
        self.counts[source] += 1
        if source not in self.failing:
            self.failing.add(source)
            message = f"{type(error).__name__}: {error}"
            self._log(json.dumps({"level": "error", "source": source, "message": message[:1000]}))

    def ok(self, source: str) -> None:
        if source in self.failing:
            self.failing.discard(source)
            self._log(json.dumps({"level": "info", "source": source, "message": "recovered"}))

    def figures(self, nvml_available: bool) -> dict[str, float]:
        """The window's health metrics, and a new window."""
        out: dict[str, float] = {f"{source}Errors": self.counts[source] for source in (NVML, PROC, ECS, PUBLISH)}
        out["NvmlAvailable"] = 1 if nvml_available else 0
        self.counts = Counter()
        return out


class TaskDirectory:
    """Container runtime id -> owner, from ECS's record of the tasks on this host (refreshed on a miss)."""

    def __init__(self, ecs: Any, cluster: str, container_instance: str | None) -> None:
        self._ecs = ecs
        self._cluster = cluster
        self._instance = container_instance
        self._owners: dict[str, Owner] = {}
        self._refreshed = float("-inf")

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
        """The owner of a container; ECS is asked again on a miss, at most every ``min_interval`` seconds (errors
        from ECS are raised; the last record stays in use)."""
        if container_id not in self._owners and now - self._refreshed >= min_interval:
            self._refreshed = now
            self.refresh()
        return self._owners.get(container_id)


def owners_of(
    pids: Iterable[int], proc: Path, directory: TaskDirectory, now: float, health: Health | None = None
) -> dict[int, Owner | None]:
    out: dict[int, Owner | None] = {}
    ecs_failed = False
    for pid in pids:
        try:
            cid = container_id_from_cgroup((proc / str(pid) / "cgroup").read_text())
        except OSError:
            cid = None  # the process ended between NVML's answer and this read
        owner = None
        if cid and not ecs_failed:
            try:
                owner = directory.owner(cid, now)
            except Exception as error:  # throttled, refused, unreachable: this sample goes without ECS's record
                ecs_failed = True
                if health is not None:
                    health.fail(ECS, error)
        out[pid] = owner
    if not ecs_failed and health is not None:
        health.ok(ECS)
    return out


class Daemon:
    """Samples every ``sample_s`` seconds and hands one window of records to ``sink`` every ``publish_s``.

    ``nvml`` is ``None`` until ``connect`` (``nvmlInit`` and the module, or a fake) succeeds; it is retried every
    minute. ``sink`` takes a batch of JSON lines (the evidence log group's writer); a batch it refuses is kept,
    up to ``MAX_PENDING_LINES``, and offered again with the next window.
    """

    def __init__(
        self,
        *,
        nvml: Any,
        directory: TaskDirectory,
        cluster: str,
        instance: str,
        proc: Path,
        sink: Callable[[list[str]], None],
        log: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        connect: Callable[[], Any] | None = None,
        namespace: str,
    ) -> None:
        self.nvml, self.directory, self.cluster, self.instance = nvml, directory, cluster, instance
        self.namespace = namespace  # CloudWatch's, for the metrics: the construct sets it (METRIC_NAMESPACE)
        self.proc, self.sink, self.clock, self.connect = proc, sink, clock, connect
        self.health = Health(log or stderr_line)
        self.windows: dict[Owner, Window] = {}
        self.last: list[GpuSample] = []
        self.pending: list[str] = []
        self.dropped = 0
        self._next_connect = float("-inf")

    def _nvml(self) -> Any:
        if self.nvml is None and self.connect is not None and self.clock() >= self._next_connect:
            self._next_connect = self.clock() + NVML_RETRY_SECONDS
            try:
                self.nvml = self.connect()
                self.health.ok(NVML)
            except Exception as error:  # no library, no device, a driver mismatch: try again in a minute
                self.health.fail(NVML, error)
        return self.nvml

    def sample(self) -> None:
        nvml = self._nvml()
        if nvml is None:
            return
        try:
            gpus = read_gpus(nvml)
        except Exception as error:  # a GPU reset, a driver restart: the next sample tries again
            self.health.fail(NVML, error)
            return
        self.health.ok(NVML)
        pids = {pid for g in gpus for pid, _ in g.processes}
        owners = owners_of(pids, self.proc, self.directory, self.clock(), self.health)
        for owner, (memory, util) in attribute(gpus, owners).items():
            window = self.windows.setdefault(owner, Window())
            window.memory_mib.append(memory)
            window.utilization.append(util)
        self.last = gpus

    def _mps(self) -> bool | None:
        try:
            up = mps_up(self.proc)
        except OSError as error:
            self.health.fail(PROC, error)
            return None
        self.health.ok(PROC)
        return up

    def publish(self) -> None:
        """Hands the window's records to the sink; nothing here ends the daemon."""
        try:
            records = window_records(
                int(self.clock() * 1000),
                self.cluster,
                self.instance,
                self.windows,
                self.last,
                self._mps(),
                self.health.figures(self.nvml is not None),
                namespace=self.namespace,
            )
            self.pending.extend(json.dumps(r, separators=(",", ":")) for r in records)
            if len(self.pending) > MAX_PENDING_LINES:
                self.dropped += len(self.pending) - MAX_PENDING_LINES
                self.pending = self.pending[-MAX_PENDING_LINES:]
            self.sink(self.pending)
            self.pending = []
            self.health.ok(PUBLISH)
        except Exception as error:  # throttled, refused, unreachable: kept for the next window
            self.health.fail(PUBLISH, error)
        finally:
            self.windows = {}


class LogSink:
    """Writes batches of records to the evidence log group with the daemon's own task role (PutLogEvents: at most
    10,000 events and 1,048,576 bytes a call, each event counted with 26 bytes more)."""

    def __init__(self, logs: Any, group: str, stream: str, clock: Callable[[], float] = time.time) -> None:
        self.logs, self.group, self.stream, self.clock = logs, group, stream, clock
        self._stream_ready = False

    def __call__(self, lines: list[str]) -> None:
        if not self._stream_ready:
            with contextlib.suppress(self.logs.exceptions.ResourceAlreadyExistsException):
                self.logs.create_log_stream(logGroupName=self.group, logStreamName=self.stream)
            self._stream_ready = True
        now = int(self.clock() * 1000)
        batch: list[dict[str, Any]] = []
        size = 0
        for line in lines:
            cost = len(line.encode()) + 26
            if batch and (len(batch) == 10_000 or size + cost > 1_048_576):
                self.logs.put_log_events(logGroupName=self.group, logStreamName=self.stream, logEvents=batch)
                batch, size = [], 0
            batch.append({"timestamp": now, "message": line})
            size += cost
        if batch:
            self.logs.put_log_events(logGroupName=self.group, logStreamName=self.stream, logEvents=batch)


def _own_task() -> tuple[str, str]:
    """This task's cluster and ARN, from ECS's task metadata endpoint (v4)."""
    with urllib.request.urlopen(os.environ["ECS_CONTAINER_METADATA_URI_V4"] + "/task", timeout=5) as response:
        meta = json.load(response)
    return meta["Cluster"], meta["TaskARN"]


def _connect_nvml() -> Any:
    import pynvml  # type: ignore[import-not-found]  # in the daemon image only (requirements.txt)

    pynvml.nvmlInit()
    return pynvml


def main() -> int:  # pragma: no cover - runs on a GPU host; its parts are tested on their own
    import boto3
    from botocore.config import Config

    log = stderr_line
    config = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 3, "mode": "standard"})
    sample_s = float(os.environ.get("SAMPLE_SECONDS", "5"))
    publish_s = float(os.environ.get("PUBLISH_SECONDS", "60"))
    while True:  # the metadata endpoint answers once the task runs; wait for it rather than restart
        try:
            cluster, task_arn = _own_task()
            break
        except Exception as error:
            log(json.dumps({"level": "error", "source": "Metadata", "message": str(error)[:1000]}))
            time.sleep(10)
    # No region given: the agent puts AWS_REGION and AWS_DEFAULT_REGION in a task's containers since 1.104.0
    # (amazon-ecs-agent #4946, agent/api/task/task.go ApplyRegionToContainer); the pinned AMIs carry 1.107 or later.
    ecs = boto3.client("ecs", config=config)
    instance, ec2_id = "", task_arn.rsplit("/", 1)[-1]
    try:
        (own,) = ecs.describe_tasks(cluster=cluster, tasks=[task_arn])["tasks"]
        instance = own.get("containerInstanceArn", "")
        described = ecs.describe_container_instances(cluster=cluster, containerInstances=[instance])
        ec2_id = described["containerInstances"][0].get("ec2InstanceId", ec2_id)
    except Exception as error:  # the records then name the host by the daemon's task id
        log(json.dumps({"level": "error", "source": ECS, "message": str(error)[:1000]}))
    daemon = Daemon(
        nvml=None,
        connect=_connect_nvml,
        directory=TaskDirectory(ecs, cluster, instance),
        cluster=os.environ.get("CLUSTER", cluster.rsplit("/", 1)[-1]),
        namespace=os.environ["METRIC_NAMESPACE"],
        instance=ec2_id,
        proc=Path(os.environ.get("HOST_PROC", "/host/proc")),
        sink=LogSink(
            boto3.client("logs", config=config),
            os.environ["EVIDENCE_LOG_GROUP"],
            f"{ec2_id}/{task_arn.rsplit('/', 1)[-1]}",
        ),
    )
    stop = False

    def _stop(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    next_publish = time.time() + publish_s
    while not stop:
        daemon.sample()
        if time.time() >= next_publish:
            daemon.publish()
            next_publish += publish_s
        time.sleep(sample_s)
    daemon.publish()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
