"""What the GPU telemetry daemon takes of a host, where its evidence lives, and how a stopped task is read. Pure
Python: the constructs, the daemon and ``evaluate`` share these facts.

Evidence no tenant can forge: the daemon writes its figures with its own task role into the cluster's evidence log
group (``evidence_log_group``), which no other role of the library may write (the hosts' role is denied it), and
``evaluate`` reads that group, never the metric namespace (CloudWatch extracts embedded-metric-format lines from any
log group, so any container could publish into the namespace). Stopped tasks reach their own log group only
through the cluster's EventBridge rule (its resource policy names the rule as ``aws:SourceArn``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

DAEMON_CPU_UNITS = 128
DAEMON_MEMORY_MIB = 192
DAEMON_NAME = "Telemetry"  # its name in plans: the GpuTelemetry construct's id in the app
METRIC_NAMESPACE = "EcsGpuSharing"
# The period of the dashboard's budget metrics and alarms: the daemon publishes a window at least this often, so
# each period has one.
METRIC_PERIOD_SECONDS = 300
"""The CloudWatch namespace of the daemon's metrics: the construct gives it to the daemon (``METRIC_NAMESPACE`` in its
environment; the daemon's image holds its own folder only, not this package) and draws the dashboard from it."""

SERVICE_TAG = "ecs-gpu-sharing:service"
"""The tag on each planned ECS service naming it in the plan: ``evaluate`` and ``cluster status`` find services by
it, so only the library sets it (``core.tenancy`` refuses a second claim; ``core.escalation``, ecs:TagResource)."""

EVIDENCE_LOG_GROUP_PREFIX = "/ecs-gpu-sharing/evidence/"
STOPPED_TASKS_LOG_GROUP_PREFIX = "/aws/events/ecs-gpu-sharing/"  # EventBridge writes only under /aws/events/
EVIDENCE_MARKER = "GpuMemoryPeakMiB"  # a term in every per-service evidence record (FilterLogEvents' pattern)

NVML_LIBRARY = "/usr/lib64/libnvidia-ml.so.1"
"""Where the ECS-optimized AL2023 GPU AMI's NVIDIA driver installs NVML (the driver's own path on RPM-based
systems); bind-mounted read-only into the daemon, which runs under runc (see ``GpuTelemetry``)."""
NVML_MOUNT_DIR = "/opt/nvml"


def evidence_log_group(cluster_name: str) -> str:
    """The log group the daemon writes its figures to, for a cluster named ``cluster_name``."""
    return f"{EVIDENCE_LOG_GROUP_PREFIX}{cluster_name}"


def stopped_tasks_log_group(cluster_name: str) -> str:
    """The log group the cluster's EventBridge rule writes stopped tasks to."""
    return f"{STOPPED_TASKS_LOG_GROUP_PREFIX}{cluster_name}/stopped-tasks"


def gpu_device_paths(gpus: int) -> list[str]:
    """The device files NVML opens on a host with ``gpus`` GPUs: the control device and one per GPU."""
    return ["/dev/nvidiactl", *(f"/dev/nvidia{i}" for i in range(gpus))]


# --- stopped tasks ---------------------------------------------------------------------------------------------

HOST_MEMORY = "host_memory"  # a container killed at its memory limit (the kernel's OOM killer): raise memory_mib
MPS = "mps"  # the MPS control daemon did not answer
CRASH = "crash"  # an essential container exited (a CUDA out-of-memory error the process does not handle, or any)
STOP_KINDS = (HOST_MEMORY, MPS, CRASH)
FILTERED_CONTAINERS = 4  # a metric filter pattern cannot iterate: it reads the first four containers' reasons


@dataclass(frozen=True)
class StopRule:
    """One cause of stop, read from ECS's "Task State Change" event: ``evaluate`` reads it in Python
    (``stop_causes``), the dashboard counts it with a CloudWatch Logs metric filter (``filter_pattern``)."""

    cause: str
    metric: str  # the dashboard's metric name
    field: str  # a field of the event's detail; "containers[].reason" reads each container's reason
    value: str
    contains: bool  # the field contains the value (else equals it)

    def matches(self, detail: Mapping[str, Any]) -> bool:
        if self.field == "containers[].reason":
            seen = [str(c.get("reason", "")) for c in detail.get("containers", []) if isinstance(c, Mapping)]
        else:
            seen = [str(detail.get(self.field, ""))]
        return any(self.value in v if self.contains else v == self.value for v in seen)

    def filter_pattern(self) -> str:
        value = f'"*{self.value}*"' if self.contains else f'"{self.value}"'
        if self.field == "containers[].reason":
            return " || ".join(f"($.detail.containers[{i}].reason = {value})" for i in range(FILTERED_CONTAINERS))
        return f"($.detail.{self.field} = {value})"


STOP_RULES = (
    StopRule(HOST_MEMORY, "OomStops", "stoppedReason", "OutOfMemory", contains=True),
    StopRule(HOST_MEMORY, "OomStops", "containers[].reason", "OutOfMemory", contains=True),
    StopRule(MPS, "MpsStops", "stoppedReason", "MPS", contains=True),
    StopRule(CRASH, "CrashStops", "stopCode", "EssentialContainerExited", contains=False),
)


def stop_metric_filters() -> dict[str, str]:
    """Metric name -> the CloudWatch Logs filter pattern that counts its stops (the rules of one cause or'ed)."""
    out: dict[str, list[str]] = {}
    for rule in STOP_RULES:
        out.setdefault(rule.metric, []).append(rule.filter_pattern())
    return {metric: " || ".join(patterns) for metric, patterns in out.items()}


def stop_causes(detail: Mapping[str, Any]) -> set[str]:
    """What an ECS "Task State Change" event of a stopped task says about why it stopped (none, or several)."""
    return {rule.cause for rule in STOP_RULES if rule.matches(detail)}


@dataclass
class StopCounts:
    host_memory: int = 0
    mps: int = 0
    crash: int = 0
    reasons: tuple[str, ...] = ()


def count_stops(messages: Iterable[str], cluster_arn: str | None = None) -> dict[str, StopCounts]:
    """Stopped tasks per ECS service name, from the stopped-task log group's events (EventBridge's JSON). Only ECS's
    own events count (``source`` ``aws.ecs``) and, given ``cluster_arn``, only the cluster's: a line that anything else
    managed to write there is not evidence."""
    out: dict[str, StopCounts] = {}
    for message in messages:
        try:
            event = json.loads(message)
            detail = event["detail"]
            group = str(detail.get("group", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if event.get("source") != "aws.ecs" or (cluster_arn is not None and detail.get("clusterArn") != cluster_arn):
            continue
        if not group.startswith("service:"):
            continue
        counts = out.setdefault(group.split(":", 1)[1], StopCounts())
        causes = stop_causes(detail)
        counts.host_memory += HOST_MEMORY in causes
        counts.mps += MPS in causes
        counts.crash += CRASH in causes
        if detail.get("stoppedReason"):
            counts.reasons = (*counts.reasons, str(detail["stoppedReason"]))
    return out


# --- the daemon's evidence records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ServiceFigures:
    """What the evidence log group says of one ECS service over a window (MiB, percent)."""

    peak_mib: int
    p99_mib: int
    utilization_percent: float
    containers: tuple[tuple[str, int], ...] = ()  # each GPU container's own peak (MiB), by container name


def service_figures(messages: Iterable[str], cluster_name: str) -> dict[str, ServiceFigures]:
    """Per ECS service, from the daemon's per-service records of ``cluster_name`` (others, and malformed ones, are
    skipped): each container's highest peak and highest p99 over hosts and windows, summed over the task's GPU
    containers (for one GPU container, its own figures; for several, an upper bound, as their peaks may not
    coincide), the mean utilization of their GPUs, and each container's own peak (what ``evaluate --write`` splits a
    task's suggestion by)."""
    peaks: dict[tuple[str, str], int] = {}
    p99s: dict[tuple[str, str], int] = {}
    utils: dict[str, list[float]] = {}
    for message in messages:
        try:
            record = json.loads(message)
            service, container = record.get("Service"), record.get("Container", "")
            if record.get("Cluster") != cluster_name or not isinstance(service, str) or not isinstance(container, str):
                continue
            peak, p99, util = (record[k] for k in ("GpuMemoryPeakMiB", "GpuMemoryP99MiB", "GpuUtilizationPercent"))
            if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in (peak, p99, util)):
                continue
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        key = (service, container)
        peaks[key] = max(peaks.get(key, 0), int(peak))
        p99s[key] = max(p99s.get(key, 0), int(p99))
        utils.setdefault(service, []).append(float(util))
    out = {}
    for service in sorted(utils):
        keys = [k for k in peaks if k[0] == service]
        out[service] = ServiceFigures(
            sum(peaks[k] for k in keys),
            sum(p99s[k] for k in keys),
            round(sum(utils[service]) / len(utils[service]), 1),
            tuple(sorted((k[1], peaks[k]) for k in keys)),
        )
    return out
