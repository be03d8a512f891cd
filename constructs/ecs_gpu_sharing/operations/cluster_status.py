"""``cluster status``: what a live cluster's GPU hosts and services report, and what is wrong with them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..core import ami_release
from ..core.capacity_facts import AMI_LOG_DRIVERS, LOG_DRIVER_ATTRIBUTE
from ..core.errors import AwsOperationError
from ..core.fleet import SERVICE_TAG, FleetSpec
from ..core.mps import MPS_CAPABILITY_ATTRIBUTE
from .aws import aws_errors

MPS_CAPABILITY = MPS_CAPABILITY_ATTRIBUTE


@dataclass
class GpuStatus:
    gpu_id: str
    sharing_mode: str
    total_mib: int
    remaining_mib: int
    containers: int
    plan_ecs_mib: int | None = None  # with --fleet: what the plan takes ECS to register for this GPU
    plan_usable_mib: int | None = None  # with --fleet: what the plan fills on this GPU

    @property
    def allocated_mib(self) -> int:
        return self.total_mib - self.remaining_mib


@dataclass
class InstanceStatus:
    arn: str
    ec2_instance_id: str
    instance_type: str
    agent_version: str
    mps_capability: bool
    accelerated_compute: str  # OK, IMPAIRED, INSUFFICIENT_DATA, INITIALIZING, or "unknown"
    accelerated_compute_reason: str = ""  # ECS's statusReason for it, when it gives one
    ami_id: str = ""  # the instance attribute ecs.ami-id
    ami_release: str | None = None  # with --fleet: the AL2023 GPU AMI release that AMI is, from its name
    gpus: list[GpuStatus] = field(default_factory=list)
    log_drivers: list[str] = field(default_factory=list)  # those its agent registers (LOG_DRIVER_ATTRIBUTE...)


@dataclass
class ServiceStatus:
    name: str
    desired: int
    running: int
    fleet_service: str | None


@dataclass
class ClusterStatus:
    cluster: str
    instances: list[InstanceStatus]
    services: list[ServiceStatus]
    problems: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _instance(raw: dict[str, Any]) -> InstanceStatus:
    attributes = {a["name"]: a.get("value") for a in raw.get("attributes", [])}
    health, reason = "unknown", ""
    for detail in raw.get("healthStatus", {}).get("details", []):
        if detail.get("type") == "ACCELERATED_COMPUTE":
            health = detail.get("status", "unknown")
            reason = detail.get("statusReason", "")
    return InstanceStatus(
        arn=raw["containerInstanceArn"],
        ec2_instance_id=raw.get("ec2InstanceId", ""),
        instance_type=attributes.get("ecs.instance-type") or "",
        agent_version=raw.get("versionInfo", {}).get("agentVersion", ""),
        mps_capability=MPS_CAPABILITY in attributes,
        accelerated_compute=health,
        accelerated_compute_reason=reason,
        ami_id=attributes.get("ecs.ami-id") or "",
        log_drivers=sorted(
            n.removeprefix(LOG_DRIVER_ATTRIBUTE) for n in attributes if n.startswith(LOG_DRIVER_ATTRIBUTE)
        ),
        gpus=[
            GpuStatus(
                gpu_id=g.get("gpuId", ""),
                sharing_mode=g.get("sharingMode", ""),
                total_mib=int(g.get("totalMemoryInMiB", 0)),
                remaining_mib=int(g.get("remainingMemoryInMiB", 0)),
                containers=int(g.get("containerCount", 0)),
            )
            for g in raw.get("gpuDevices", [])
        ],
    )


def read(ecs: Any, cluster: str) -> tuple[list[InstanceStatus], list[ServiceStatus]]:
    """Container instances (paginated, described in batches of 100) and services (batches of 10)."""
    instances: list[InstanceStatus] = []
    with aws_errors(f"reading the container instances of cluster {cluster}"):
        arns = [
            arn
            for page in ecs.get_paginator("list_container_instances").paginate(cluster=cluster)
            for arn in page["containerInstanceArns"]
        ]
        for start in range(0, len(arns), 100):
            described = ecs.describe_container_instances(
                cluster=cluster, containerInstances=arns[start : start + 100], include=["CONTAINER_INSTANCE_HEALTH"]
            )
            instances.extend(_instance(raw) for raw in described["containerInstances"])
    services: list[ServiceStatus] = []
    with aws_errors(f"reading the services of cluster {cluster}"):
        service_arns = [
            arn for page in ecs.get_paginator("list_services").paginate(cluster=cluster) for arn in page["serviceArns"]
        ]
        for start in range(0, len(service_arns), 10):
            described = ecs.describe_services(
                cluster=cluster, services=service_arns[start : start + 10], include=["TAGS"]
            )
            for raw in described["services"]:
                tags = {t["key"]: t.get("value") for t in raw.get("tags", [])}
                services.append(
                    ServiceStatus(
                        name=raw["serviceName"],
                        desired=int(raw.get("desiredCount", 0)),
                        running=int(raw.get("runningCount", 0)),
                        fleet_service=tags.get(SERVICE_TAG),
                    )
                )
    return instances, services


def problems_of(
    instances: list[InstanceStatus], services: list[ServiceStatus], fleet: FleetSpec | None = None
) -> list[str]:
    """What is wrong, one line each: old agents, missing capability, impaired GPUs, short services, plan drift."""
    problems = []
    floor = ami_release.format_version(ami_release.ECS_AGENT_FLOOR)
    for inst in instances:
        who = f"instance {inst.ec2_instance_id or inst.arn}"
        version = ami_release.parse_version(inst.agent_version)
        if version is None or version < ami_release.ECS_AGENT_FLOOR:
            problems.append(
                f"{who}: ECS agent {inst.agent_version or 'unknown'} is older than {floor}; "
                f"use an AMI release >= {ami_release.AMI_RELEASE_FLOOR}"
            )
        if not inst.mps_capability:
            problems.append(
                f"{who}: no {MPS_CAPABILITY} attribute: MPS tasks will not be placed here; the agent's setup check "
                "failed (it needs a GPU, the MPS control binary, the nvidia-mps systemd unit enabled, and not a vGPU "
                "slice): use the AL2023 GPU AMI, and see the agent's log for which"
            )
        if inst.accelerated_compute == "IMPAIRED":
            # This health check predates MPS: its reason says what failed (an MPS daemon probe is one cause).
            reason = inst.accelerated_compute_reason or "ECS gave no reason"
            problems.append(f"{who}: ACCELERATED_COMPUTE health is IMPAIRED: {reason}")
    for svc in services:
        if svc.running < svc.desired:
            problems.append(f"service {svc.name}: {svc.running} of {svc.desired} tasks running")
    if fleet is not None:
        figures = {t: (cap.name, cap.facts.gpu_memory) for cap in fleet.capacities.values() for t in cap.instance_types}
        for inst in instances:
            if inst.instance_type not in figures:
                continue
            capacity, memory = figures[inst.instance_type]
            for gpu in inst.gpus:
                gpu.plan_ecs_mib, gpu.plan_usable_mib = memory.ecs_mib, memory.usable_mib
                where = f"instance {inst.ec2_instance_id}: GPU {gpu.gpu_id}"
                if gpu.total_mib and gpu.total_mib < memory.ecs_mib:
                    problems.append(
                        f"{where}: ECS registers {gpu.total_mib} MiB, less than the {memory.ecs_mib} MiB the plan "
                        f"takes for it ({memory.basis}); set ecs_gpu_memory_mib = {gpu.total_mib} "
                        f"on capacity {capacity}"
                    )
                if gpu.sharing_mode == "NVIDIA_MPS" and gpu.allocated_mib > memory.usable_mib:
                    problems.append(
                        f"{where}: {gpu.allocated_mib} MiB allocated, past the plan's {memory.usable_mib} MiB usable "
                        f"per GPU (its {memory.margin_mib} MiB margin is taken): lower budgets, or raise gpu_margin_mib"
                    )
        claims: dict[str, list[ServiceStatus]] = {}
        for s in services:
            if s.fleet_service:
                claims.setdefault(s.fleet_service, []).append(s)
        by_tag = {name: found[0] for name, found in claims.items()}
        for spec in fleet.services.values():
            found = by_tag.get(spec.name)
            if len(claims.get(spec.name, [])) > 1:
                problems.append(
                    f"fleet service {spec.name}: claimed by {len(claims[spec.name])} services ("
                    + ", ".join(s.name for s in claims[spec.name])
                    + f") tagged {SERVICE_TAG}={spec.name}; only the platform's may carry it: find who tagged the rest"
                )
            elif found is None:
                problems.append(
                    f"fleet service {spec.name}: not found in the cluster (no service tagged {SERVICE_TAG}={spec.name})"
                )
            elif found.desired != spec.desired_count:
                problems.append(
                    f"fleet service {spec.name}: desired count is {found.desired} in the cluster, "
                    f"{spec.desired_count} in the fleet file"
                )
    return problems


def read_releases(ec2: Any, instances: list[InstanceStatus]) -> None:
    """Sets each instance's AMI release from its AMI's name (DescribeImages, in batches of 100)."""
    ids = sorted({i.ami_id for i in instances if i.ami_id})
    names: dict[str, str] = {}
    with aws_errors("describing the instances' AMIs"):
        for start in range(0, len(ids), 100):
            for image in ec2.describe_images(ImageIds=ids[start : start + 100])["Images"]:
                names[image["ImageId"]] = image.get("Name", "")
    for inst in instances:
        inst.ami_release = ami_release.release_of(names.get(inst.ami_id, ""))


def log_driver_gaps(instances: list[InstanceStatus]) -> list[str]:
    """Hosts on the AL2023 GPU AMI (their release read) whose agent registers fewer log drivers than the plan takes
    such a host to (``AMI_LOG_DRIVERS``, TaskLogDriverNotOnHosts): the fact the plan rests on, checked on live hosts.
    A host that lists none is not judged (an emulator's report, not an agent's)."""
    problems = []
    for inst in instances:
        missing = sorted(set(AMI_LOG_DRIVERS) - set(inst.log_drivers))
        if inst.ami_release and inst.log_drivers and missing:
            problems.append(
                f"instance {inst.ec2_instance_id or inst.arn}: its agent registers the log drivers "
                f"{', '.join(inst.log_drivers)}, not {', '.join(missing)}, which the plan takes every EC2 GPU host to "
                "register (TaskLogDriverNotOnHosts): a task logging with one of them waits for another host; register "
                "them (ECS_AVAILABLE_LOGGING_DRIVERS in the hosts' user data) or log with another driver"
            )
    return problems


def drift(instances: list[InstanceStatus], fleet: FleetSpec) -> list[str]:
    """Hosts whose AMI is not the release their capacity pins: they run the old AMI until the group rolls them."""
    pinned = {t: cap for cap in fleet.capacities.values() for t in cap.instance_types}
    problems = []
    for inst in instances:
        cap = pinned.get(inst.instance_type)
        if cap is None or not inst.ami_id:
            continue
        if inst.ami_release != cap.ami_release:
            runs = f"release {inst.ami_release}" if inst.ami_release else f"{inst.ami_id}, not an AL2023 GPU AMI"
            problems.append(
                f"instance {inst.ec2_instance_id or inst.arn}: runs {runs}, but capacity {cap.name} pins "
                f"{cap.ami_release}; deploy the stack to roll the hosts onto it"
            )
    return problems


def status(ecs: Any, cluster: str, fleet: FleetSpec | None = None, ec2: Any = None) -> ClusterStatus:
    """The cluster's hosts, GPUs and services, and their problems; with ``fleet`` (and an EC2 client, to name the
    hosts' AMIs) also the comparison with the plan and the pinned AMI release."""
    with aws_errors(f"describing cluster {cluster}"):
        found = ecs.describe_clusters(clusters=[cluster])
    if not [c for c in found.get("clusters", []) if c.get("status") != "INACTIVE"]:
        raise AwsOperationError(f"cluster {cluster!r} not found in {ecs.meta.region_name}; check the name and --region")
    instances, services = read(ecs, cluster)
    problems = problems_of(instances, services, fleet)
    if fleet is not None and ec2 is not None:
        read_releases(ec2, instances)
        problems += drift(instances, fleet) + log_driver_gaps(instances)
    return ClusterStatus(cluster, instances, services, problems)


def to_table(result: ClusterStatus) -> str:
    rows = [f"cluster {result.cluster}: {len(result.instances)} instances, {len(result.services)} services"]
    for inst in result.instances:
        rows.append(
            f"  {inst.ec2_instance_id} {inst.instance_type} agent {inst.agent_version or '?'} "
            f"mps {'yes' if inst.mps_capability else 'NO'} accelerated-compute {inst.accelerated_compute}"
            + (f" ami {inst.ami_release or inst.ami_id}" if inst.ami_id else "")
        )
        for gpu in inst.gpus:
            plan = (
                f"; plan: ECS {gpu.plan_ecs_mib} MiB, usable {gpu.plan_usable_mib} MiB"
                if gpu.plan_usable_mib is not None
                else ""
            )
            rows.append(
                f"    GPU {gpu.gpu_id} {gpu.sharing_mode}: {gpu.allocated_mib} of {gpu.total_mib} MiB allocated, "
                f"{gpu.remaining_mib} remaining, {gpu.containers} containers{plan}"
            )
    for svc in result.services:
        rows.append(f"  service {svc.name}: {svc.running}/{svc.desired} running")
    rows.extend(f"problem: {p}" for p in result.problems)
    if not result.problems:
        rows.append("no problems found")
    return "\n".join(rows)
