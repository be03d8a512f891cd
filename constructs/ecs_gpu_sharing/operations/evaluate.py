"""``ecs-gpu-sharing evaluate``: what each service used, from the telemetry daemon's evidence and ECS, judged
against its budget.

Reads, over the window, only what no tenant can forge: the daemon's per-service records in the cluster's evidence
log group (``core.telemetry.evidence_log_group``: written by the daemon's task role alone; never the metric
namespace, which any log group's embedded-metric-format lines can write to), and the stopped tasks in the cluster's
stopped-task log group (written by its EventBridge rule alone), both with paginated ``FilterLogEvents``. From ECS:
the services (by their ``ecs-gpu-sharing:service`` tag, or every service when judging task definitions), the
running image's digest and the reasons of tasks stopped in the last hour (ECS keeps stopped tasks about that long).

What is judged comes from one source: a fleet file (``--fleet``), a synth plan (``--plan cdk.out/gpu-fleet-plan.json``:
constructs tag each planned service with its plan name), or, with neither, the MPS budgets in the task definitions
of the cluster's services.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from ..core.errors import GpuSharingError
from ..core.fleet import CONTAINER_NAME, SERVICE_TAG
from ..core.fleet_edit import Change
from ..core.plan_document import PlanDocument
from ..core.right_size import LIMIT_BROKEN, Measured, Subject, Verdict
from ..core.shape import containers_from_cloudformation
from ..core.telemetry import (
    EVIDENCE_MARKER,
    StopCounts,
    count_stops,
    evidence_log_group,
    service_figures,
    stopped_tasks_log_group,
)
from .aws import aws_errors
from .cluster_status import read


def window_seconds(since: str) -> int:
    """``7d``, ``12h`` or ``90m`` as seconds; refused when malformed or under an hour or over 63 days (the
    evidence's default retention is a month; longer windows need a longer ``log_retention``)."""
    units = {"d": 86400, "h": 3600, "m": 60}
    if len(since) < 2 or since[-1] not in units or not since[:-1].isdigit():
        raise GpuSharingError(f"--since {since!r}: write a number and a unit, such as 7d, 12h or 90m")
    seconds = int(since[:-1]) * units[since[-1]]
    if not 3600 <= seconds <= 63 * 86400:
        raise GpuSharingError(f"--since {since}: give a window from 1h to 63d")
    return seconds


def _messages(logs: Any, group: str, start: datetime.datetime, end: datetime.datetime, pattern: str) -> list[str]:
    kwargs: dict[str, Any] = {
        "logGroupName": group,
        "startTime": int(start.timestamp() * 1000),
        "endTime": int(end.timestamp() * 1000),
    }
    if pattern:
        kwargs["filterPattern"] = pattern
    return [
        event["message"]
        for page in logs.get_paginator("filter_log_events").paginate(**kwargs)
        for event in page.get("events", [])
    ]


def _cluster_name(cluster: str) -> str:
    return cluster.rsplit("/", 1)[-1]


def _cluster_arn(ecs: Any, cluster: str) -> str:
    """The cluster's ARN, which ECS's own stopped-task events carry (``detail.clusterArn``)."""
    if cluster.startswith("arn:"):
        return cluster
    with aws_errors(f"reading cluster {cluster}"):
        found = ecs.describe_clusters(clusters=[cluster]).get("clusters") or []
    if not found:
        raise GpuSharingError(f"cluster {cluster}: not found in this account and region; check --cluster and --region")
    return str(found[0]["clusterArn"])


def service_names(ecs: Any, cluster: str) -> dict[str, str]:
    """Tag (plan or fleet name) -> ECS service name, for the cluster's services that carry the service tag. Two
    services that claim one name are refused: a budget judged, or written, against the wrong one would be worse than
    none (synth refuses a second tag, ServiceNameClaimedTwice, but a tag can be added outside the app)."""
    with aws_errors(f"reading the services of cluster {cluster}"):
        _, services = read(ecs, cluster)
    out: dict[str, str] = {}
    for s in services:
        if not s.fleet_service:
            continue
        if s.fleet_service in out:
            raise GpuSharingError(
                f"cluster {cluster}: services {out[s.fleet_service]} and {s.name} both carry {SERVICE_TAG}="
                f"{s.fleet_service}; evaluate cannot tell which is the plan's. Remove the tag from the one the "
                "platform did not deploy (and find out who could tag it: ecs:TagResource is refused on task roles)"
            )
        out[s.fleet_service] = s.name
    return out


def deployed_names(cloudformation: Any, plan: PlanDocument, tagged: Mapping[str, str]) -> dict[str, str]:
    """Plan name -> ECS service name, from what each service's stack records (``services[].deployed_as`` of a synth
    plan): CloudFormation's physical id of an ``AWS::ECS::Service`` is its ARN, which no tenant can claim the way a tag
    can be copied. A service tagged with a plan name but not the one its stack deployed is refused; a plan without
    the field (an older one) falls back to the tags."""
    out = dict(tagged)
    for item in plan.services:
        if item.deployed_as is None:
            continue
        name, stack, logical = item.name, item.deployed_as.stack, item.deployed_as.logical_id
        with aws_errors(f"reading service {name} from stack {stack} ({logical})"):
            for nested in item.deployed_as.nested_stacks:  # each nested stack's physical id is its ARN
                held = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId=nested)
                stack = str(held["StackResourceDetail"].get("PhysicalResourceId") or "")
            found = cloudformation.describe_stack_resource(StackName=stack, LogicalResourceId=logical)
        # The physical id of an AWS::ECS::Service is its ARN (Ref returns it; the resource schema's primary identifier
        # is ServiceArn with Cluster), arn:aws:ecs:REGION:ACCOUNT:service/CLUSTER/NAME; a compound id is read the same.
        physical = str(found["StackResourceDetail"].get("PhysicalResourceId") or "")
        arn = next((part for part in physical.split("|") if ":service/" in part), physical)
        deployed = arn.rsplit("/", 1)[-1]
        if not deployed:
            raise GpuSharingError(f"stack {stack} holds no deployed service {logical} for {name}; deploy it first")
        if name in tagged and tagged[name] != deployed:
            raise GpuSharingError(
                f"service {tagged[name]} carries {SERVICE_TAG}={name}, but stack {stack} deployed {name} as "
                f"{deployed}: another service claims its name; remove the tag from {tagged[name]}"
            )
        out[name] = deployed
    return out


def task_definition_subjects(ecs: Any, cluster: str) -> tuple[dict[str, Subject], dict[str, str]]:
    """Every service of the cluster whose task definition has MPS budgets, as a subject named by its tag (or its
    ECS name without one), with that name -> ECS service name."""
    subjects: dict[str, Subject] = {}
    names: dict[str, str] = {}
    with aws_errors(f"reading the services of cluster {cluster}"):
        arns = [a for page in ecs.get_paginator("list_services").paginate(cluster=cluster) for a in page["serviceArns"]]
        for first in range(0, len(arns), 10):
            described = ecs.describe_services(cluster=cluster, services=arns[first : first + 10], include=["TAGS"])
            for raw in described["services"]:
                tags = {t["key"]: t.get("value") for t in raw.get("tags", [])}
                name = tags.get(SERVICE_TAG) or raw["serviceName"]
                task = ecs.describe_task_definition(taskDefinition=raw["taskDefinition"])["taskDefinition"]
                containers = containers_from_cloudformation(task.get("containerDefinitions", []), owner=name)
                budgets = [int(c.gpu_budget_mib) for c in containers if isinstance(c.gpu_budget_mib, int)]
                if not budgets:
                    continue  # no MPS budget to judge
                memory = task.get("memory")
                subjects[name] = Subject(name, sum(budgets), 0, int(memory) if str(memory).isdigit() else None)
                # The task's budget is the sum of its MPS containers' (the daemon measures the task); which one is the
                # model is not known here, and --write needs a fleet file, so no split is recorded.
                names[name] = raw["serviceName"]
    return subjects, names


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
    ecs: Any,
    logs: Any,
    cluster: str,
    names: Mapping[str, str],
    *,
    seconds: int,
    now: datetime.datetime,
) -> dict[str, Measured]:
    """What each service (name -> ECS service name) used over the last ``seconds``, from the evidence log group and
    the stopped-task log group; a service without records has no data."""
    start = now - datetime.timedelta(seconds=seconds)
    short = _cluster_name(cluster)
    group = evidence_log_group(short)
    with aws_errors(f"reading the telemetry daemon's evidence ({group})"):
        try:
            evidence = _messages(logs, group, start, now, f'"{EVIDENCE_MARKER}"')
        except logs.exceptions.ResourceNotFoundException:
            raise GpuSharingError(
                f"cluster {short} has no evidence log group {group}: deploy GpuTelemetry on it (the fleet app does "
                "unless telemetry = false), let it run, then evaluate"
            ) from None
    stopped_group = stopped_tasks_log_group(short)
    with aws_errors(f"reading the stopped tasks ({stopped_group})"):
        try:
            stops = count_stops(_messages(logs, stopped_group, start, now, ""), _cluster_arn(ecs, cluster))
        except logs.exceptions.ResourceNotFoundException:
            stops = {}
    figures = service_figures(evidence, short)
    out: dict[str, Measured] = {}
    for name, ecs_name in sorted(names.items()):
        got = figures.get(ecs_name)
        counts = stops.get(ecs_name) or StopCounts()
        with aws_errors(f"reading the tasks of service {ecs_name}"):
            running = _tasks(ecs, cluster, ecs_name, "RUNNING")
            stopped = _tasks(ecs, cluster, ecs_name, "STOPPED")
        out[name] = Measured(
            service=name,
            ecs_service=ecs_name,
            peak_mib=got.peak_mib if got else None,
            p99_mib=got.p99_mib if got else None,
            utilization_percent=got.utilization_percent if got else None,
            containers=got.containers if got else (),
            host_memory_stops=counts.host_memory,
            mps_stops=counts.mps,
            crash_stops=counts.crash,
            recent_stop_reasons=tuple(t.get("stoppedReason", "") for t in stopped if t.get("stoppedReason")),
            image=_running_image(running),
        )
    return out


def changes(verdicts: list[Verdict], today: datetime.date) -> dict[str, Change]:
    """What ``--write`` records: every measured service's model-container budget (the task's suggestion less its GPU
    sidecars' budgets) and its evidence. A broken limit (a peak above the budget) writes nothing: it is reported, not
    taken as a measure of what the service needs; nor does a task with GPU sidecars whose suggestion cannot be split
    by container (``Verdict.refusal``)."""
    out = {}
    for v in verdicts:
        m = v.measured
        if m.peak_mib is None or v.verdict == LIMIT_BROKEN or v.write_mib is None:
            continue  # no figure, a broken limit, or a task whose suggestion cannot be split (v.refusal says why)
        out[v.service] = Change(
            gpu_budget_mib=v.write_mib,
            evidence={
                "measured_peak_mib": m.peak_mib,
                "measured_p99_mib": m.p99_mib,
                "measured_on": today,
                "measured_image": m.image,
                "evidence_source": "evaluate",
            },
        )
    return out
