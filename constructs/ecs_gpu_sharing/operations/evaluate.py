"""``ecs-gpu-sharing evaluate``: what each fleet service used, from CloudWatch and ECS, judged against its budget.

Reads, over the window: the telemetry daemon's ``GpuMemoryPeakMiB`` (Maximum), ``GpuMemoryP99MiB`` (Maximum over
hosts) and ``GpuUtilizationPercent`` (Average) per ECS service, and the stopped-task counts (``OomStops``,
``MpsStops``, ``CrashStops``, Sum) per task group, with one paginated ``GetMetricData``; from ECS, the services'
fleet tags, the running image's digest and the reasons of tasks stopped in the last hour (ECS keeps stopped tasks
about that long).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from ..core.errors import GpuSharingError
from ..core.fleet import CONTAINER_NAME, FleetSpec
from ..core.fleet_edit import Change
from ..core.right_size import Measured, Verdict
from .aws import aws_errors
from .cluster_status import read
from .telemetry.sampling import NAMESPACE

_SERVICE_METRICS = (
    ("peak", "GpuMemoryPeakMiB", "Maximum"),
    ("p99", "GpuMemoryP99MiB", "Maximum"),
    ("util", "GpuUtilizationPercent", "Average"),
)
_STOP_METRICS = (("oom", "OomStops"), ("mps", "MpsStops"), ("crash", "CrashStops"))


def window_seconds(since: str) -> int:
    """``7d``, ``12h`` or ``90m`` as seconds; refused when malformed or under an hour or over 63 days (the
    metrics' one-hour resolution is kept 63 days)."""
    units = {"d": 86400, "h": 3600, "m": 60}
    if len(since) < 2 or since[-1] not in units or not since[:-1].isdigit():
        raise GpuSharingError(f"--since {since!r}: write a number and a unit, such as 7d, 12h or 90m")
    seconds = int(since[:-1]) * units[since[-1]]
    if not 3600 <= seconds <= 63 * 86400:
        raise GpuSharingError(f"--since {since}: give a window from 1h to 63d")
    return seconds


def _queries(ecs_names: Mapping[str, str], cluster: str, period: int) -> list[dict[str, Any]]:
    queries = []
    for i, (_, ecs_name) in enumerate(sorted(ecs_names.items())):
        dims = [{"Name": "Cluster", "Value": cluster}, {"Name": "Service", "Value": ecs_name}]
        for key, metric, stat in _SERVICE_METRICS:
            queries.append(_query(f"{key}{i}", metric, dims, stat, period))
        group = [{"Name": "Group", "Value": f"service:{ecs_name}"}]
        for key, metric in _STOP_METRICS:
            queries.append(_query(f"{key}{i}", metric, group, "Sum", period))
    return queries


def _query(qid: str, metric: str, dims: list[dict[str, str]], stat: str, period: int) -> dict[str, Any]:
    return {
        "Id": qid,
        "MetricStat": {
            "Metric": {"Namespace": NAMESPACE, "MetricName": metric, "Dimensions": dims},
            "Period": period,
            "Stat": stat,
        },
        "ReturnData": True,
    }


def _metric_values(
    cloudwatch: Any, queries: list[dict[str, Any]], start: datetime.datetime, end: datetime.datetime
) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {}
    for first in range(0, len(queries), 500):  # GetMetricData takes at most 500 queries
        kwargs: dict[str, Any] = {"MetricDataQueries": queries[first : first + 500], "StartTime": start, "EndTime": end}
        while True:
            page = cloudwatch.get_metric_data(**kwargs)
            for result in page["MetricDataResults"]:
                values.setdefault(result["Id"], []).extend(result.get("Values", []))
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    return values


def _tasks(ecs: Any, cluster: str, service: str, status: str) -> list[dict[str, Any]]:
    arns = [
        arn
        for page in ecs.get_paginator("list_tasks").paginate(cluster=cluster, serviceName=service, desiredStatus=status)
        for arn in page["taskArns"]
    ]
    tasks: list[dict[str, Any]] = []
    for first in range(0, len(arns), 100):
        tasks.extend(ecs.describe_tasks(cluster=cluster, tasks=arns[first : first + 100])["tasks"])
    return tasks


def _running_image(tasks: list[dict[str, Any]]) -> str | None:
    for task in tasks:
        for c in task.get("containers", []):
            if c.get("name") == CONTAINER_NAME and c.get("imageDigest") and c.get("image"):
                name = c["image"].split("@", 1)[0]
                if ":" in name.rsplit("/", 1)[-1]:
                    name = name.rsplit(":", 1)[0]
                return f"{name}@{c['imageDigest']}"
    return None


def measure(
    ecs: Any, cloudwatch: Any, cluster: str, spec: FleetSpec, *, seconds: int, now: datetime.datetime
) -> dict[str, Measured]:
    """What each fleet service used over the last ``seconds``; a service not found in the cluster has no data."""
    with aws_errors(f"reading the services of cluster {cluster}"):
        _, services = read(ecs, cluster)
    ecs_names = {s.fleet_service: s.name for s in services if s.fleet_service and s.fleet_service in spec.services}
    period = max(3600, seconds // 3600 * 3600)  # one datapoint for the window (hourly resolution past 15 days)
    start = now - datetime.timedelta(seconds=seconds)
    with aws_errors("reading the GPU metrics from CloudWatch"):
        values = _metric_values(cloudwatch, _queries(ecs_names, cluster.rsplit("/", 1)[-1], period), start, now)
    out: dict[str, Measured] = {}
    for i, (fleet_name, ecs_name) in enumerate(sorted(ecs_names.items())):
        got = {key: values.get(f"{key}{i}", []) for key, _, _ in _SERVICE_METRICS}
        stops = {key: int(sum(values.get(f"{key}{i}", []))) for key, _ in _STOP_METRICS}
        with aws_errors(f"reading the tasks of service {ecs_name}"):
            running = _tasks(ecs, cluster, ecs_name, "RUNNING")
            stopped = _tasks(ecs, cluster, ecs_name, "STOPPED")
        out[fleet_name] = Measured(
            service=fleet_name,
            ecs_service=ecs_name,
            peak_mib=int(max(got["peak"])) if got["peak"] else None,
            p99_mib=int(max(got["p99"])) if got["p99"] else None,
            utilization_percent=round(sum(got["util"]) / len(got["util"]), 1) if got["util"] else None,
            oom_stops=stops["oom"],
            mps_stops=stops["mps"],
            crash_stops=stops["crash"],
            recent_stop_reasons=tuple(t.get("stoppedReason", "") for t in stopped if t.get("stoppedReason")),
            image=_running_image(running),
        )
    for name in spec.services:
        out.setdefault(name, Measured(name, None))
    return out


def changes(verdicts: list[Verdict], today: datetime.date) -> dict[str, Change]:
    """What ``--write`` records: every measured service's suggested budget and its evidence."""
    out = {}
    for v in verdicts:
        m = v.measured
        if m.peak_mib is None:
            continue
        out[v.service] = Change(
            gpu_budget_mib=v.suggested_mib,
            evidence={
                "measured_peak_mib": m.peak_mib,
                "measured_p99_mib": m.p99_mib,
                "measured_on": today,
                "measured_image": m.image,
                "evidence_source": "evaluate",
            },
        )
    return out
