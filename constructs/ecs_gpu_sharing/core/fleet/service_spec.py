"""A service's table and what it holds: sidecars, a scaling metric, task role statements; each key declared on its
field. Pure Python."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..allocation import AllocationNote, Evidence
from ..file_key import key
from ..mps import MpsShare
from ..placement_strategies import DEFAULT_PRESET, PRESETS
from ..quotas import MAX_TASKS_PER_SERVICE
from ..shape import (
    HEALTH_CHECK_RANGES,
    SERVICE_CONNECT_PROXY_MEMORY_MIB,
    ContainerFacts,
    TaskShape,
    task_shape,
)
from .values import (
    ABSOLUTE_PATH,
    AWSVPC,
    BRIDGE,
    CONTAINER_NAME,
    IMAGE,
    KMS_KEY_ARN,
    NAME,
)

MAX_CONTAINER_START_PERIOD = HEALTH_CHECK_RANGES["startPeriod"][1]
"""ECS's most for a container health check's ``startPeriod``."""
DEFAULT_STARTUP_SECONDS = MAX_CONTAINER_START_PERIOD
"""How long a service's tasks get to load their model before failed health checks count, unless the fleet file says:
the longest start period a container check can have. aws-ecs's own grace period for a load-balanced service (60 s)
restarts a model server still loading its weights, over and over."""


@dataclass(frozen=True, kw_only=True)
class SidecarSpec:
    """An extra container in a service's task, on the task's one GPU when it has a budget."""

    name: str = key(str, True, "the container's name in the task", pattern=NAME, example="metrics")
    image: str = key(str, True, "the container image", pattern=IMAGE, example="my-registry/exporter:2.0")
    cpu_units: int = key(int, True, "CPU units of the container", low=0, high=196608)
    memory_mib: int = key(int, True, "host memory, the container's hard limit", low=6, high=4194304)
    gpu_budget_mib: int | None = key(
        int, False, "an MPS budget on the task's one GPU; none: no GPU", low=1, high=1048576
    )
    max_compute_percent: int | None = key(int, False, "with gpu_budget_mib: an MPS compute ceiling", low=1, high=100)
    command: tuple[str, ...] = key(list, False, "the container's command (the image's by default)", items=str)
    environment: Mapping[str, str] = key(
        dict, False, "environment variables (strings); not NVIDIA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_*"
    )
    essential: bool = key(bool, False, "the task stops when this container stops", default=False)

    @property
    def share(self) -> MpsShare | None:
        return None if self.gpu_budget_mib is None else MpsShare(self.gpu_budget_mib, self.max_compute_percent)


@dataclass(frozen=True, kw_only=True)
class MetricTarget:
    """Target tracking on a CloudWatch metric of the team's own (a queue depth, say)."""

    namespace: str = key(
        str, True, "the metric's CloudWatch namespace", pattern=re.compile(r"^[^:].{0,254}$", re.ASCII)
    )
    metric_name: str = key(str, True, "the metric's name", pattern=re.compile(r"^.{1,255}$", re.ASCII))
    target: int = key(int, True, "the value per task that scaling keeps the metric at", low=1)
    statistic: str = key(
        str,
        False,
        "Average, Sum, Maximum, Minimum or SampleCount",
        pattern=re.compile("^(Average|Sum|Maximum|Minimum|SampleCount)$", re.ASCII),
        example="Average",
        default="Average",
    )
    dimensions: Mapping[str, str] = key(dict, False, "the metric's dimensions (strings)")


@dataclass(frozen=True, kw_only=True)
class Statement:
    """An extra statement of the task role's policy."""

    actions: tuple[str, ...] = key(
        list,
        True,
        "IAM actions, such as s3:GetObject; a wildcard here or in resources, which the deployable app's cdk-nag "
        "check refuses (AwsSolutions-IAM5), needs the service to acknowledge ecs-gpu-sharing:TaskRoleWildcard with a "
        "reason (model_bucket grants a bucket of weights, acknowledged)",
        items=str,
        pattern=re.compile(r"^[a-z0-9-]+:[A-Za-z0-9*]+$", re.ASCII),
        example="s3:GetObject",
    )
    resources: tuple[str, ...] = key(
        list,
        True,
        "resource ARNs (a wildcard: see actions)",
        items=str,
        pattern=re.compile(r"^arn:[^*\s].*$", re.ASCII),
        example="arn:aws:s3:::bucket/config.json",
    )


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """A ``[service.<name>]`` table, checked. Each attribute but ``name`` is a key of the file, declared on the field
    (its meaning, type, range and default: the one declaration; ``keys.SERVICE`` is read off them)."""

    name: str
    capacity: str = key(str, True, "a [capacity.<name>] of this file")
    image: str = key(str, True, "the container image", pattern=IMAGE, example="my-registry/embedder:1.4")
    desired_count: int = key(
        int, True, "tasks to run", low=0, high=MAX_TASKS_PER_SERVICE, high_why='the ECS quota "tasks per service"'
    )
    cpu_units: int = key(
        int,
        True,
        "CPU units of the container (1024 = 1 vCPU)",
        low=128,
        high=196608,
        high_why="192 vCPUs, the most of any GPU instance",
    )
    memory_mib: int = key(
        int,
        True,
        "host memory, the container's hard limit",
        low=6,
        high=4194304,
        high_why="4 TiB, more than any GPU instance has",
    )
    gpu_budget_mib: int = key(
        int, True, "the container's MPS GPU memory budget", low=1, high=1048576, high_why="1 TiB, more than any GPU has"
    )
    max_tasks: int | None = key(
        int,
        False,
        "task auto scaling: the most tasks (desired_count is the least); the plan counts this many",
        low=1,
        high=MAX_TASKS_PER_SERVICE,
        high_why='the ECS quota "tasks per service"',
    )
    scale_on_cpu_percent: int | None = key(
        int, False, "with max_tasks: target tracking on the service's CPU", low=1, high=100
    )
    scale_on_requests_per_target: int | None = key(
        int, False, "with max_tasks and an application load balancer: target tracking on requests per task", low=1
    )
    scale_on_metric: MetricTarget | None = key(
        dict,
        False,
        "with max_tasks: target tracking on a CloudWatch metric of yours, such as a queue depth",
        table=MetricTarget,
    )
    max_compute_percent: int | None = key(int, False, "an MPS compute ceiling, not a reservation", low=1, high=100)
    port: int | None = key(int, False, "container port", low=1, high=65535)
    environment: Mapping[str, str] = key(
        dict, False, "environment variables (strings); not NVIDIA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_*"
    )
    command: tuple[str, ...] = key(list, False, "the container's command, a list of strings (the image's by default)")
    health_check: tuple[str, ...] = key(
        list, False, 'a container health check command, such as ["CMD-SHELL", "curl -f localhost:8080/health"]'
    )
    startup_seconds: int = key(
        int,
        False,
        "seconds a task may take to load its model before failed health checks count: the service's health check "
        "grace period (load balancer and container checks) and the container check's start period (at most 300)",
        low=0,
        high=2147483647,
        high_why="ECS's most for healthCheckGracePeriodSeconds",
        default=DEFAULT_STARTUP_SECONDS,
        example=900,
    )
    drain_seconds: int = key(
        int,
        False,
        "with load_balancer: seconds a leaving task keeps serving the requests it has (its target group's "
        "deregistration delay: ECS stops the task after it); a long generation cut short ends in a 502",
        low=0,
        high=3600,
        high_why="Elastic Load Balancing's most for deregistration_delay.timeout_seconds",
        default=30,
        example=600,
    )
    request_timeout_seconds: int | None = key(
        int,
        False,
        "the longest a request to this service may take through Service Connect (its proxy's per-request timeout, "
        "15 s when left out; 0: none); a model that answers a long generation whole needs more",
        low=0,
        high=2147483647,
        high_why="ECS's most for perRequestTimeoutSeconds",
        example=600,
    )
    shm_size_mib: int | None = key(
        int,
        False,
        "shared memory (/dev/shm) for the container, as vLLM and PyTorch data loaders need",
        low=1,
        high=4194304,
        high_why="4 TiB, more than any GPU instance has",
    )
    stop_timeout_seconds: int | None = key(
        int,
        False,
        "seconds a container gets to stop before it is killed",
        low=2,
        high=120,
        high_why="ECS's most for stopTimeout",
    )
    secrets: Mapping[str, str] = key(
        dict, False, "variable name -> 'ssm:/parameter/name' or 'secretsmanager:secret-name'"
    )
    model_bucket: str | None = key(
        str,
        False,
        "an S3 bucket of model weights the task may read",
        pattern=re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", re.ASCII),
        example="team-model-weights",
    )
    kms_key_arn: str | None = key(
        str,
        False,
        "the customer managed KMS key its secrets, SecureString parameters or model bucket are encrypted with: the "
        "execution role may decrypt its secrets with it, the task role its bucket's objects, each through that "
        "service only (kms:ViaService)",
        pattern=KMS_KEY_ARN,
        example="arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    )
    task_role_managed_policies: tuple[str, ...] = key(
        list,
        False,
        "AWS managed policies for the task role, by name; one not read-only needs TaskRoleEscalation acknowledged",
        items=str,
        pattern=re.compile(r"^[A-Za-z0-9+=,.@_/-]{1,128}$", re.ASCII),
        example="AmazonBedrockReadOnly",
    )
    task_role_statements: tuple[Statement, ...] = key(
        list, False, "extra allow statements for the task role", table=Statement
    )
    load_balancer: str | None = key(str, False, "a [load_balancer.<name>] of this file; needs port")
    paths: tuple[str, ...] = key(
        list,
        False,
        "an application load balancer's path patterns for this service (at most 5 conditions with host)",
        name="path",
        items=str,
        pattern=re.compile(r"^/[A-Za-z0-9_.$/~@:+*?&-]*$", re.ASCII),
        example="/embed/*",
    )
    host: str | None = key(
        str,
        False,
        "an application load balancer's host header for this service",
        pattern=re.compile(r"^[A-Za-z0-9*?.-]{1,128}$", re.ASCII),
        example="embed.models.example.com",
    )
    health_check_path: str = key(
        str,
        False,
        "the application load balancer's health check path",
        pattern=re.compile(r"^/\S*$", re.ASCII),
        example="/health",
        default="/",
    )
    listener_port: int | None = key(
        int, False, "with a network load balancer: the port it listens on for this service", low=1, high=65535
    )
    network_mode: str = key(
        str,
        False,
        "bridge (EC2's default) or awsvpc (a network interface per task; always on Managed Instances)",
        pattern=re.compile(f"^({BRIDGE}|{AWSVPC})$", re.ASCII),
        example=AWSVPC,
    )
    placement: str = key(
        str,
        False,
        "how ECS picks the host for each task (EC2 capacities): spread-zones-binpack-memory (spread over Availability "
        "Zones, then the host with the least memory left: the density the plan counts on), binpack-memory, "
        "spread-zones-binpack-cpu, spread-instances, ecs-default (no strategy: zones, then fewest tasks) or random",
        pattern=re.compile(f"^({'|'.join(PRESETS)})$", re.ASCII),
        default=DEFAULT_PRESET,
        example="binpack-memory",
    )
    sidecars: tuple[SidecarSpec, ...] = key(
        list, False, "extra containers in the task ([[service.<name>.sidecar]])", name="sidecar", table=SidecarSpec
    )
    allocation: AllocationNote | None = key(
        dict,
        False,
        "the allocation note: why the budget is what it is ([service.<name>.allocation])",
        table=AllocationNote,
    )
    evidence: Evidence | None = key(
        dict,
        False,
        "what was measured, for a service without an allocation note ([service.<name>.evidence], written by "
        "evaluate --write; with a note, the evidence goes in the allocation table)",
        table=Evidence,
    )
    model_cache_path: str | None = key(
        str,
        False,
        "a Docker volume shared by the service's tasks on a host, mounted here, so models download once per host",
        pattern=ABSOLUTE_PATH,
        example="/models",
    )
    user: str | None = key(
        str,
        False,
        "the user (uid[:gid] or name) the container runs as; the image's by default",
        pattern=re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$", re.ASCII),
        example="1000:1000",
    )
    read_only_root_filesystem: bool = key(
        bool,
        False,
        "the container's root filesystem is read-only; write under writable_paths or model_cache_path",
        default=True,
    )
    writable_paths: tuple[str, ...] = key(
        list,
        False,
        "writable scratch folders of the container (an empty volume each), as a read-only root filesystem needs",
        items=str,
        pattern=ABSOLUTE_PATH,
        example="/tmp",
    )
    tags: Mapping[str, str] = key(
        dict, False, "tags on the service's resources: letters, digits, spaces and _ . : / = + - @ in names and values"
    )
    acknowledge: Mapping[str, str] = key(
        dict,
        False,
        "warning id -> the reason it is accepted for this service, such as ecs-gpu-sharing:MutableImageTag; also "
        "ecs-gpu-sharing:TaskRoleEscalation, which lets task_role_statements grant what core.escalation refuses",
    )

    @property
    def largest_count(self) -> tuple[int, str]:
        """The count the plan counts, and where it comes from (as the synth-time plan reads the service)."""
        if self.max_tasks is not None and self.max_tasks > self.desired_count:
            return self.max_tasks, "auto scaling maximum"
        return self.desired_count, "desired count"

    @property
    def placement_strategy(self) -> tuple[str, ...]:
        """The ECS placement strategies its ``placement`` names, in order (empty: ECS's default)."""
        return PRESETS[self.placement]

    @property
    def share(self) -> MpsShare:
        return MpsShare(self.gpu_budget_mib, self.max_compute_percent)

    def shape(
        self, source: str, *, service_connect: bool = False, proxy_memory_mib: int = SERVICE_CONNECT_PROXY_MEMORY_MIB
    ) -> TaskShape:
        """The task's shape, through the same road as a CDK task definition's; with ``service_connect`` (the fleet
        names a namespace), the proxy ECS adds to each task is counted (``FleetSpec.proxy_memory_mib``)."""
        containers = [
            ContainerFacts(name=c_name, cpu_units=cpu, memory_mib=memory, gpu_budget_mib=budget, command=list(command))
            for c_name, cpu, memory, budget, command in [
                (CONTAINER_NAME, self.cpu_units, self.memory_mib, self.gpu_budget_mib, self.command),
                *((c.name, c.cpu_units, c.memory_mib, c.gpu_budget_mib, c.command) for c in self.sidecars),
            ]
        ]
        return task_shape(
            containers,
            owner=f"{source}: service.{self.name}",
            service_connect=service_connect,
            proxy_memory_mib=proxy_memory_mib,
            awsvpc=self.network_mode == AWSVPC,
        )
