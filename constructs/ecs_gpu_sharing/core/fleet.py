"""The fleet file (``fleet.toml``): capacities and services, read with the standard library. Pure Python.

Its keys are one table (:data:`TOP`, :data:`CAPACITY`, :data:`SERVICE`) from which the parser checks and the
JSON Schema editors use (:func:`json_schema`) is generated, so the two cannot drift. Every problem of a file is
reported at once, one line each, naming the file and the key, the value seen, the limit and what to do.
"""

from __future__ import annotations

import datetime
import re
import stat
import tomllib
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import quotas
from .allocation import EVIDENCE_SOURCES, AllocationNote, Evidence
from .ami_release import DEFAULT_AMI_RELEASE, check_release
from .capacity_facts import HostFacts, host_facts
from .errors import FleetSpecError, GpuSharingError
from .gpu_memory import DEFAULT_GPU_MARGIN_MIB
from .hardening import HARDENING_WARNINGS, escalating_policy, escalating_statement
from .mps import GPU_ENVIRONMENT, GPU_ENVIRONMENT_REASON, MpsShare
from .planner import EC2, KINDS, MANAGED_INSTANCES, TASK_RULES, CapacityInput, ServiceInput
from .quotas import MAX_INSTANCES_PER_CLUSTER, MAX_TASKS_PER_SERVICE
from .rules import RULES, Level, assess
from .shape import ContainerFacts, TaskShape, task_shape
from .telemetry import DAEMON_CPU_UNITS, DAEMON_MEMORY_MIB, DAEMON_NAME

SERVICE_TAG = "ecs-gpu-sharing:service"
MAX_FLEET_FILE_BYTES = 8 * 2**20  # far above any fleet ECS can hold (5,000 services per cluster)
"""Tag on each deployed ECS service naming its fleet-file service; `cluster status --fleet` matches by it."""

CONTAINER_NAME = "model"
"""The name of each fleet service's container in its task definition."""

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$", re.ASCII)

ACKNOWLEDGEABLE = frozenset((*HARDENING_WARNINGS, *(rule.rule_id for rule in RULES if rule.level is Level.WARNING)))
"""Warning ids a fleet-file service may acknowledge, with a reason."""


@dataclass(frozen=True)
class CapacitySpec:
    name: str
    instance_types: tuple[str, ...]
    facts: HostFacts  # from the catalog, with the fleet's gpu_margin_mib and ecs_gpu_memory_mib
    kind: str = EC2  # or MANAGED_INSTANCES
    ami_release: str = DEFAULT_AMI_RELEASE
    ami_release_verified: bool = False
    min_instances: int = 0
    max_instances: int | None = None
    ecs_gpu_memory_mib: int | None = None  # measured on the fleet's cluster, in place of the per-model figure


APPLICATION = "application"
NETWORK = "network"
BRIDGE = "bridge"
AWSVPC = "awsvpc"


@dataclass(frozen=True)
class LoadBalancerSpec:
    """A load balancer several services can share: an ALB routes by path or host, an NLB by listener port."""

    name: str
    type: str = APPLICATION  # or NETWORK
    internet_facing: bool = False
    certificate_arn: str | None = None  # ALB: HTTPS on 443 (and 80 redirects); without it, HTTP on 80
    plaintext_reason: str | None = None  # why an internet-facing balancer may serve without TLS (required then)

    @property
    def plaintext_from_internet(self) -> bool:
        """Whether anyone on the internet reaches it without TLS: an internet-facing NLB (TCP passes through) or an
        internet-facing ALB without a certificate (HTTP on 80)."""
        return self.internet_facing and (self.type == NETWORK or not self.certificate_arn)

    @property
    def listener_port(self) -> int:
        return 443 if self.certificate_arn else 80


@dataclass(frozen=True)
class SidecarSpec:
    """An extra container in a service's task, on the task's one GPU when it has a budget."""

    name: str
    image: str
    cpu_units: int
    memory_mib: int
    gpu_budget_mib: int | None = None
    max_compute_percent: int | None = None
    command: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    essential: bool = False

    @property
    def share(self) -> MpsShare | None:
        return None if self.gpu_budget_mib is None else MpsShare(self.gpu_budget_mib, self.max_compute_percent)


@dataclass(frozen=True)
class MetricTarget:
    """Target tracking on a CloudWatch metric of the team's own (a queue depth, say)."""

    namespace: str
    metric_name: str
    target: int
    statistic: str = "Average"
    dimensions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Statement:
    """An extra statement of the task role's policy."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    capacity: str
    image: str
    desired_count: int
    cpu_units: int
    memory_mib: int  # host memory, the container's hard limit
    gpu_budget_mib: int
    max_compute_percent: int | None = None
    port: int | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    health_check: tuple[str, ...] = ()
    shm_size_mib: int | None = None
    stop_timeout_seconds: int | None = None
    secrets: Mapping[str, str] = field(default_factory=dict)  # variable name -> ssm:NAME or secretsmanager:NAME
    model_bucket: str | None = None
    max_tasks: int | None = None  # task auto scaling maximum; desired_count is the minimum
    scale_on_cpu_percent: int | None = None
    scale_on_requests_per_target: int | None = None
    scale_on_metric: MetricTarget | None = None
    load_balancer: str | None = None
    paths: tuple[str, ...] = ()
    host: str | None = None
    health_check_path: str = "/"
    listener_port: int | None = None
    network_mode: str = BRIDGE
    sidecars: tuple[SidecarSpec, ...] = ()
    model_cache_path: str | None = None
    user: str | None = None
    read_only_root_filesystem: bool = True
    writable_paths: tuple[str, ...] = ()
    task_role_managed_policies: tuple[str, ...] = ()
    task_role_statements: tuple[Statement, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    acknowledge: Mapping[str, str] = field(default_factory=dict)  # warning id -> reason
    note: AllocationNote | None = None

    @property
    def largest_count(self) -> tuple[int, str]:
        """The count the plan counts, and where it comes from (as the synth-time plan reads the service)."""
        if self.max_tasks is not None and self.max_tasks > self.desired_count:
            return self.max_tasks, "auto scaling maximum"
        return self.desired_count, "desired count"

    @property
    def share(self) -> MpsShare:
        return MpsShare(self.gpu_budget_mib, self.max_compute_percent)

    def shape(self, source: str, *, service_connect: bool = False) -> TaskShape:
        """The task's shape, through the same road as a CDK task definition's; with ``service_connect`` (the fleet
        names a namespace), the proxy ECS adds to each task is counted."""
        containers = [
            ContainerFacts(name=c_name, cpu_units=cpu, memory_mib=memory, gpu_budget_mib=budget)
            for c_name, cpu, memory, budget in [
                (CONTAINER_NAME, self.cpu_units, self.memory_mib, self.gpu_budget_mib),
                *((c.name, c.cpu_units, c.memory_mib, c.gpu_budget_mib) for c in self.sidecars),
            ]
        ]
        return task_shape(containers, owner=f"{source}: service.{self.name}", service_connect=service_connect)


@dataclass(frozen=True)
class FleetSpec:
    name: str
    capacities: Mapping[str, CapacitySpec]
    services: Mapping[str, ServiceSpec]
    source: str = "<fleet>"
    account: str | None = None  # with region: an environment-bound app (lookups need credentials)
    region: str | None = None
    vpc_id: str | None = None  # deploy into this existing VPC instead of a new one
    load_balancers: Mapping[str, LoadBalancerSpec] = field(default_factory=dict)
    service_connect_namespace: str | None = None
    telemetry: bool = True
    prices: str | None = None  # a prices file, relative to the fleet file

    @property
    def prices_path(self) -> Path | None:
        """The prices file, found beside the fleet file when its path is relative."""
        if self.prices is None:
            return None
        given = Path(self.prices)
        return given if given.is_absolute() else Path(self.source).parent / given

    def ecs_service_name(self, service: str) -> str:
        """The ECS service name the app gives a service that placement expressions must name."""
        return f"{self.name}-{service}"

    def host_isolation(self) -> dict[str, str]:
        """ECS placement expressions (``memberOf``) that keep isolation groups off each other's hosts, by service.

        Groups on one capacity are kept to separate hosts when either asks for it (``isolate_host``), or when the
        capacity's hosts have one GPU each (separate GPUs are then separate hosts). ECS selects hosts by the task
        groups running there (``task:group``, ``service:<name>``); it cannot choose the GPU within a host."""
        out: dict[str, str] = {}
        for cap in self.capacities.values():
            if cap.kind == MANAGED_INSTANCES:
                continue  # no placement expressions there: the IsolationNotEnforceable warning says so
            on = [s for s in self.services.values() if s.capacity == cap.name]
            for s in on:
                apart = [
                    o
                    for o in on
                    if _group(o) != _group(s) and (_isolates(s) or _isolates(o) or cap.facts.gpus_per_instance == 1)
                ]
                if apart:
                    out[s.name] = " and ".join(
                        f"not(task:group == service:{self.ecs_service_name(o.name)})" for o in apart
                    )
        return out

    def capacity_inputs(self) -> list[CapacityInput]:
        out = []
        for cap in self.capacities.values():
            given = CapacityInput.from_facts(cap.name, cap.facts, cap.max_instances, cap.min_instances, kind=cap.kind)
            if self.telemetry and cap.kind == EC2:
                # The app runs the telemetry daemon on every EC2 GPU host: its task is not there for the plan.
                given = replace(
                    given,
                    host_cpu_units=given.host_cpu_units - DAEMON_CPU_UNITS,
                    host_memory_mib=given.host_memory_mib - DAEMON_MEMORY_MIB,
                    daemons=(DAEMON_NAME,),
                )
            out.append(given)
        return out

    def service_inputs(self) -> list[ServiceInput]:
        apart = self.host_isolation()
        return [
            ServiceInput(
                name=s.name,
                capacity=s.capacity,
                shape=s.shape(self.source, service_connect=self.service_connect_namespace is not None),
                tasks=s.largest_count[0],
                count_source=s.largest_count[1],
                note=s.note,
                image=s.image,
                acknowledged=tuple(sorted(s.acknowledge.items())),
                placement=(apart[s.name],) if s.name in apart else (),
            )
            for s in self.services.values()
        ]


def _group(s: ServiceSpec) -> str:
    return s.note.isolation_group if s.note is not None else ""


def _isolates(s: ServiceSpec) -> bool:
    return s.note is not None and s.note.isolate_host


MAX_PLACEMENT_EXPRESSION = 2000  # characters, ECS's limit for a placement constraint's expression

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$", re.ASCII)
_ACCOUNT = re.compile(r"^\d{12}$", re.ASCII)
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$", re.ASCII)
_VPC_ID = re.compile(r"^vpc-[0-9a-f]{8}([0-9a-f]{9})?$", re.ASCII)
# An image reference as Docker parses it (distribution/reference): an optional registry (with a dot or a port, or
# localhost), lowercase path components, an optional tag, an optional sha256 digest of 64 hex digits; at most 255
# characters (ECS's image field).
_REGISTRY = r"(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|[A-Za-z0-9-]+(?=:[0-9]))(?::[0-9]+)?/"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(?=.{{1,255}}\Z)(?:{_REGISTRY})?{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@sha256:[0-9a-f]{64})?",
    re.ASCII | re.S,
)
_DNS_NAME = re.compile(  # labels of 1..63 characters, 253 characters in all (Cloud Map's namespace name)
    r"(?=.{1,253}\Z)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*", re.ASCII | re.S
)
_ACM_ARN = re.compile(r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/[0-9a-f-]{36}$", re.ASCII)
_ABSOLUTE_PATH = re.compile(r"^/[A-Za-z0-9_./-]*$", re.ASCII)
_ECR_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?P<cn>\.cn)?/"
    r"(?P<repository>[a-z0-9._/-]+?)(?:@(?P<digest>sha256:[0-9a-f]{64})|:(?P<tag>[A-Za-z0-9_.-]+))?$",
    re.ASCII,
)


@dataclass(frozen=True)
class EcrImage:
    """A private ECR image: the app grants the task's execution role pulls from exactly this repository."""

    account: str
    region: str
    partition: str
    repository: str
    reference: str  # a tag, or a digest (sha256:...)

    @property
    def repository_arn(self) -> str:
        return f"arn:{self.partition}:ecr:{self.region}:{self.account}:repository/{self.repository}"


def ecr_image(image: str) -> EcrImage | None:
    """The ECR repository and tag or digest of ``image``; ``None`` for an image of another registry."""
    match = _ECR_IMAGE.fullmatch(image)
    if match is None:
        return None
    return EcrImage(
        account=match["account"],
        region=match["region"],
        partition="aws-cn" if match["cn"] else "aws",
        repository=match["repository"],
        reference=match["digest"] or match["tag"] or "latest",
    )


@dataclass(frozen=True)
class Key:
    """One key of the fleet file: its type, whether it is required, its range or pattern, and what it means."""

    name: str
    kind: type
    required: bool
    doc: str
    low: int | None = None
    high: int | None = None
    high_why: str = ""  # the quota or fact behind ``high``
    pattern: re.Pattern[str] | None = None
    example: str = ""
    default: Any = None
    table: tuple[Key, ...] | None = None  # a table's keys (kind dict), or each item's (kind list of tables)
    items: type | None = None  # the kind of each item of a list, when not a table


TOP = (
    Key("name", str, True, "prefixes the stacks", pattern=_NAME, example="models"),
    Key("account", str, False, "with region: an environment-bound app", pattern=_ACCOUNT, example="123456789012"),
    Key("region", str, False, "with account: an environment-bound app", pattern=_REGION, example="us-east-1"),
    Key("vpc_id", str, False, "an existing VPC instead of a new one", pattern=_VPC_ID, example="vpc-0123456789abcdef0"),
    Key(
        "service_connect_namespace",
        str,
        False,
        "a Cloud Map namespace: services with a port call each other as http://<service>:<port> (Service Connect)",
        pattern=_DNS_NAME,
        example="models.internal",
    ),
    Key(
        "telemetry",
        bool,
        False,
        "the GPU telemetry daemon on every EC2 GPU host, a dashboard and budget alarms",
        default=True,
    ),
    Key(
        "prices",
        str,
        False,
        "a prices file (ecs-gpu-sharing prices refresh), relative to this file: plans show their cost",
        pattern=re.compile(r"[^\x00-\x1f]{1,1024}", re.ASCII),
        example="prices.json",
    ),
    Key("capacity", dict, True, "the GPU capacities, one table each"),
    Key("service", dict, True, "the services, one table each"),
    Key("load_balancer", dict, False, "load balancers services share, one table each"),
)
LOAD_BALANCER = (
    Key(
        "type",
        str,
        False,
        "application (routes by path or host) or network (a listener port per service)",
        pattern=re.compile(f"^({APPLICATION}|{NETWORK})$", re.ASCII),
        example=NETWORK,
        default=APPLICATION,
    ),
    Key("internet_facing", bool, False, "reachable from the internet; internal to the VPC by default", default=False),
    Key(
        "certificate_arn",
        str,
        False,
        "an ACM certificate: the ALB listens with HTTPS on 443 and redirects 80; HTTP on 80 without one",
        pattern=_ACM_ARN,
        example="arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
    ),
    Key(
        "plaintext_reason",
        str,
        False,
        "why an internet-facing balancer may serve without TLS (an NLB, or an ALB without certificate_arn); "
        "required then, refused otherwise",
        pattern=re.compile(r"\A\S.{9,499}\Z", re.S | re.ASCII),
        example="a public demo of an open model; no user data",
    ),
)
CAPACITY = (
    Key(
        "kind",
        str,
        False,
        "ec2 (an Auto Scaling group on a pinned AMI) or managed-instances (ECS Managed Instances)",
        pattern=re.compile("^(" + "|".join(KINDS) + ")$", re.ASCII),
        example=MANAGED_INSTANCES,
        default=EC2,
    ),
    Key("instance_types", list, True, "GPU instance types of one GPU model"),
    Key("ami_release", str, False, "the AL2023 GPU AMI release (YYYYMMDD)", default=DEFAULT_AMI_RELEASE),
    Key(
        "ami_release_verified",
        bool,
        False,
        "true when `ecs-gpu-sharing ami verify` found a release the library does not list",
        default=False,
    ),
    Key(
        "min_instances",
        int,
        False,
        "instances kept running",
        low=0,
        high=MAX_INSTANCES_PER_CLUSTER,
        high_why='the ECS quota "container instances per cluster"',
        default=0,
    ),
    Key(
        "max_instances",
        int,
        False,
        "the most instances; derived from the plan when left out",
        low=1,
        high=MAX_INSTANCES_PER_CLUSTER,
        high_why='the ECS quota "container instances per cluster"',
    ),
    Key(
        "gpu_margin_mib",
        int,
        False,
        "per-GPU memory kept free below what ECS registers",
        low=0,
        default=DEFAULT_GPU_MARGIN_MIB,
    ),
    Key("ecs_gpu_memory_mib", int, False, "one GPU as your cluster's ECS registers it (measured)", low=1),
)
METRIC = (
    Key("namespace", str, True, "the metric's CloudWatch namespace", pattern=re.compile(r"^[^:].{0,254}$", re.ASCII)),
    Key("metric_name", str, True, "the metric's name", pattern=re.compile(r"^.{1,255}$", re.ASCII)),
    Key("target", int, True, "the value per task that scaling keeps the metric at", low=1),
    Key(
        "statistic",
        str,
        False,
        "Average, Sum, Maximum, Minimum or SampleCount",
        pattern=re.compile("^(Average|Sum|Maximum|Minimum|SampleCount)$", re.ASCII),
        example="Average",
        default="Average",
    ),
    Key("dimensions", dict, False, "the metric's dimensions (strings)"),
)
STATEMENT = (
    Key(
        "actions",
        list,
        True,
        "IAM actions, such as s3:GetObject",
        items=str,
        pattern=re.compile(r"^[a-z0-9-]+:[A-Za-z0-9*]+$", re.ASCII),
        example="s3:GetObject",
    ),
    Key(
        "resources",
        list,
        True,
        "resource ARNs",
        items=str,
        pattern=re.compile(r"^arn:[^*\s].*$", re.ASCII),
        example="arn:aws:s3:::bucket/*",
    ),
)
SIDECAR = (
    Key("name", str, True, "the container's name in the task", pattern=_NAME, example="metrics"),
    Key("image", str, True, "the container image", pattern=_IMAGE, example="my-registry/exporter:2.0"),
    Key("cpu_units", int, True, "CPU units of the container", low=0, high=196608),
    Key("memory_mib", int, True, "host memory, the container's hard limit", low=6, high=4194304),
    Key("gpu_budget_mib", int, False, "an MPS budget on the task's one GPU; none: no GPU", low=1, high=1048576),
    Key("max_compute_percent", int, False, "with gpu_budget_mib: an MPS compute ceiling", low=1, high=100),
    Key("command", list, False, "the container's command (the image's by default)", items=str),
    Key("environment", dict, False, "environment variables (strings); not NVIDIA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_*"),
    Key("essential", bool, False, "the task stops when this container stops", default=False),
)
ALLOCATION = (
    Key("residency_mib", int, True, "GPU memory the model keeps resident (weights, state)", low=0, high=1048576),
    Key(
        "peak_working_mib",
        int,
        True,
        "peak working GPU memory over the request mix (KV cache, batches, activations)",
        low=0,
        high=1048576,
    ),
    Key(
        "shared_failure",
        str,
        True,
        "what happens to the service when the MPS server or the host restarts, and what it does then (at most "
        "1,000 characters)",
        pattern=re.compile(r"\s*\S.{0,999}", re.S),
        example="requests fail until ECS restarts the task; callers retry",
    ),
    Key("compute_percent", int, False, "the compute share it needs to meet its latency target", low=1, high=100),
    Key(
        "isolation_group",
        str,
        False,
        "services of different groups never share a GPU; none: the common group",
        pattern=_NAME,
        example="tenant-a",
    ),
    Key("isolate_host", bool, False, "with isolation_group: nor a host", default=False),
    Key("measured_peak_mib", int, False, "evidence: the highest GPU memory measured", low=0, high=1048576),
    Key("measured_p99_mib", int, False, "evidence: the 99th percentile of GPU memory measured", low=0, high=1048576),
    Key("measured_on", datetime.date, False, "evidence: the day it was measured (a TOML date)"),
    Key(
        "measured_image",
        str,
        False,
        "evidence: the image it was measured on, name@sha256:digest",
        pattern=re.compile(r"^\S+@sha256:[0-9a-f]{64}$", re.ASCII),
        example="my-registry/embedder@sha256:<64 hex digits>",
    ),
    Key(
        "evidence_source",
        str,
        False,
        "evidence: " + ", ".join(EVIDENCE_SOURCES),
        pattern=re.compile("^(" + "|".join(EVIDENCE_SOURCES) + ")$", re.ASCII),
        example="load-test",
        default="evaluate",
    ),
)
SERVICE = (
    Key("capacity", str, True, "a [capacity.<name>] of this file"),
    Key("image", str, True, "the container image", pattern=_IMAGE, example="my-registry/embedder:1.4"),
    Key(
        "desired_count",
        int,
        True,
        "tasks to run",
        low=0,
        high=MAX_TASKS_PER_SERVICE,
        high_why='the ECS quota "tasks per service"',
    ),
    Key(
        "cpu_units",
        int,
        True,
        "CPU units of the container (1024 = 1 vCPU)",
        low=128,
        high=196608,
        high_why="192 vCPUs, the most of any GPU instance",
    ),
    Key(
        "memory_mib",
        int,
        True,
        "host memory, the container's hard limit",
        low=6,
        high=4194304,
        high_why="4 TiB, more than any GPU instance has",
    ),
    Key(
        "gpu_budget_mib",
        int,
        True,
        "the container's MPS GPU memory budget",
        low=1,
        high=1048576,
        high_why="1 TiB, more than any GPU has",
    ),
    Key(
        "max_tasks",
        int,
        False,
        "task auto scaling: the most tasks (desired_count is the least); the plan counts this many",
        low=1,
        high=MAX_TASKS_PER_SERVICE,
        high_why='the ECS quota "tasks per service"',
    ),
    Key("scale_on_cpu_percent", int, False, "with max_tasks: target tracking on the service's CPU", low=1, high=100),
    Key(
        "scale_on_requests_per_target",
        int,
        False,
        "with max_tasks and an application load balancer: target tracking on requests per task",
        low=1,
    ),
    Key(
        "scale_on_metric",
        dict,
        False,
        "with max_tasks: target tracking on a CloudWatch metric of yours, such as a queue depth",
        table=METRIC,
    ),
    Key("max_compute_percent", int, False, "an MPS compute ceiling, not a reservation", low=1, high=100),
    Key("port", int, False, "container port", low=1, high=65535),
    Key("environment", dict, False, "environment variables (strings); not NVIDIA_*, CUDA_VISIBLE_DEVICES, CUDA_MPS_*"),
    Key("command", list, False, "the container's command, a list of strings (the image's by default)"),
    Key(
        "health_check",
        list,
        False,
        'a container health check command, such as ["CMD-SHELL", "curl -f localhost:8080/health"]',
    ),
    Key(
        "shm_size_mib",
        int,
        False,
        "shared memory (/dev/shm) for the container, as vLLM and PyTorch data loaders need",
        low=1,
        high=4194304,
        high_why="4 TiB, more than any GPU instance has",
    ),
    Key(
        "stop_timeout_seconds",
        int,
        False,
        "seconds a container gets to stop before it is killed",
        low=2,
        high=120,
        high_why="ECS's most for stopTimeout",
    ),
    Key("secrets", dict, False, "variable name -> 'ssm:/parameter/name' or 'secretsmanager:secret-name'"),
    Key(
        "model_bucket",
        str,
        False,
        "an S3 bucket of model weights the task may read",
        pattern=re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", re.ASCII),
        example="team-model-weights",
    ),
    Key(
        "task_role_managed_policies",
        list,
        False,
        "AWS managed policies for the task role, by name",
        items=str,
        pattern=re.compile(r"^[A-Za-z0-9+=,.@_/-]{1,128}$", re.ASCII),
        example="AmazonBedrockReadOnly",
    ),
    Key("task_role_statements", list, False, "extra allow statements for the task role", table=STATEMENT),
    Key("load_balancer", str, False, "a [load_balancer.<name>] of this file; needs port"),
    Key(
        "path",
        list,
        False,
        "an application load balancer's path patterns for this service (at most 5 conditions with host)",
        items=str,
        pattern=re.compile(r"^/[A-Za-z0-9_.$/~@:+*?&-]*$", re.ASCII),
        example="/embed/*",
    ),
    Key(
        "host",
        str,
        False,
        "an application load balancer's host header for this service",
        pattern=re.compile(r"^[A-Za-z0-9*?.-]{1,128}$", re.ASCII),
        example="embed.models.example.com",
    ),
    Key(
        "health_check_path",
        str,
        False,
        "the application load balancer's health check path",
        pattern=re.compile(r"^/\S*$", re.ASCII),
        example="/health",
        default="/",
    ),
    Key(
        "listener_port",
        int,
        False,
        "with a network load balancer: the port it listens on for this service",
        low=1,
        high=65535,
    ),
    Key(
        "network_mode",
        str,
        False,
        "bridge (EC2's default) or awsvpc (a network interface per task; always on Managed Instances)",
        pattern=re.compile(f"^({BRIDGE}|{AWSVPC})$", re.ASCII),
        example=AWSVPC,
    ),
    Key("sidecar", list, False, "extra containers in the task ([[service.<name>.sidecar]])", table=SIDECAR),
    Key(
        "allocation",
        dict,
        False,
        "the allocation note: why the budget is what it is ([service.<name>.allocation])",
        table=ALLOCATION,
    ),
    Key(
        "model_cache_path",
        str,
        False,
        "a Docker volume shared by the service's tasks on a host, mounted here, so models download once per host",
        pattern=_ABSOLUTE_PATH,
        example="/models",
    ),
    Key(
        "user",
        str,
        False,
        "the user (uid[:gid] or name) the container runs as; the image's by default",
        pattern=re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$", re.ASCII),
        example="1000:1000",
    ),
    Key(
        "read_only_root_filesystem",
        bool,
        False,
        "the container's root filesystem is read-only; write under writable_paths or model_cache_path",
        default=True,
    ),
    Key(
        "writable_paths",
        list,
        False,
        "writable scratch folders of the container (an empty volume each), as a read-only root filesystem needs",
        items=str,
        pattern=_ABSOLUTE_PATH,
        example="/tmp",
    ),
    Key("tags", dict, False, "tags on the service's resources (strings)"),
    Key(
        "acknowledge",
        dict,
        False,
        "warning id -> the reason it is accepted for this service, such as ecs-gpu-sharing:MutableImageTag",
    ),
)
_TYPE_NAMES = {
    str: "a string",
    int: "an integer",
    list: "a list",
    dict: "a table",
    bool: "true or false",
    datetime.date: "a date (2026-11-30)",
}
_JSON_TYPES = {str: "string", int: "integer", list: "array", dict: "object", bool: "boolean", datetime.date: "string"}


class _Problems:
    """Every problem of one file, collected so they are reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, message: str) -> None:
        self.lines.append(f"{self.source}: {message}")

    def raise_if_any(self) -> None:
        if self.lines:
            raise FleetSpecError("\n".join(dict.fromkeys(self.lines)))


def _check_table(problems: _Problems, where: str, table: Mapping[str, Any], keys: tuple[Key, ...]) -> dict[str, Any]:
    """The table's well-typed, in-range values; every problem is added to ``problems``."""
    known = {k.name: k for k in keys}
    good: dict[str, Any] = {}
    for name in table:
        if name not in known:
            shown = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else repr(name)
            problems.add(f"unknown key {where}{shown}; the keys here are: {', '.join(known)}")
    for key in keys:
        if key.name not in table:
            if key.required:
                problems.add(f"missing key {where}{key.name} ({_TYPE_NAMES[key.kind]}): {key.doc}")
            continue
        value: Any = table[key.name]
        if (
            (isinstance(value, bool) and key.kind is not bool)
            or not isinstance(value, key.kind)
            or (key.kind is datetime.date and isinstance(value, datetime.datetime))
        ):
            problems.add(f"{where}{key.name} must be {_TYPE_NAMES[key.kind]}, got {value!r} ({type(value).__name__})")
            continue
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and ((key.low is not None and value < key.low) or (key.high is not None and value > key.high))
        ):
            span = f"from {key.low} to {key.high}" if key.high is not None else f">= {key.low}"
            why = f" ({key.high_why})" if key.high is not None and value > key.high and key.high_why else ""
            problems.add(f"{where}{key.name} must be {span}{why}, got {value}")
            continue
        if key.pattern is not None and isinstance(value, str) and not key.pattern.fullmatch(value):
            problems.add(f"{where}{key.name} {value!r} is malformed; write it like {key.example!r}")
            continue
        if key.table is not None and isinstance(value, dict):
            value = _check_table(problems, f"{where}{key.name}.", value, key.table)
        elif key.table is not None and isinstance(value, list):
            if not all(isinstance(item, dict) for item in value):
                problems.add(f"{where}{key.name} must be a list of tables, got {value!r}")
                continue
            value = [
                _check_table(problems, f"{where}{key.name}[{i}].", item, key.table) for i, item in enumerate(value)
            ]
        elif (
            key.items is not None
            and isinstance(value, list)
            and not _check_items(problems, f"{where}{key.name}", value, key)
        ):
            continue
        good[key.name] = value
    return good


def _check_items(problems: _Problems, where: str, values: list[Any], key: Key) -> bool:
    """Whether every item of a list key has its type and pattern; adds a problem for the first that has not."""
    for value in values:
        if not isinstance(value, key.items or object) or isinstance(value, bool):
            problems.add(f"{where} must hold only {_TYPE_NAMES[key.items or str]}s, got {value!r}")
            return False
        if key.pattern is not None and isinstance(value, str) and not key.pattern.fullmatch(value):
            problems.add(f"{where} item {value!r} is malformed; write it like {key.example!r}")
            return False
    if key.pattern is not None and len(set(values)) != len(values):
        problems.add(f"{where} names an item twice: {values!r}")
        return False
    return True


def _check_name(problems: _Problems, kind: str, name: str) -> bool:
    if _NAME.fullmatch(name):
        return True
    problems.add(
        f"{kind}.{name!r} is not a usable name; use letters, digits and '-', starting with a letter, at most 40 "
        "characters"
    )
    return False


def _named_tables(problems: _Problems, kind: str, tables: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``[kind.<name>]`` tables whose name is usable and that are tables; a problem for each other one."""
    for name, table in tables.items():
        if not _check_name(problems, kind, name):
            continue
        if not isinstance(table, dict):
            problems.add(f"{kind}.{name} must be a table")
            continue
        yield name, table


def _capacities(problems: _Problems, tables: Mapping[str, Any]) -> dict[str, CapacitySpec]:
    capacities: dict[str, CapacitySpec] = {}
    for name, table in _named_tables(problems, "capacity", tables):
        where = f"capacity.{name}."
        before = len(problems.lines)
        good = _check_table(problems, where, table, CAPACITY)
        types = good.get("instance_types")
        if types is not None and (not types or not all(isinstance(t, str) for t in types)):
            problems.add(f"{where}instance_types must be a non-empty list of strings, got {types!r}")
            types = None
        elif types is not None and len(set(types)) < len(types):
            twice = sorted({t for t in types if types.count(t) > 1})
            problems.add(f"{where}instance_types names {', '.join(twice)} more than once; give each type once")
            types = None
        kind = good.get("kind", EC2)
        release = good.get("ami_release", DEFAULT_AMI_RELEASE)
        if kind == MANAGED_INSTANCES:
            for key in ("ami_release", "ami_release_verified", "min_instances"):
                if key in table:
                    why = (
                        "AWS owns and patches the host image there: there is no AMI to pin"
                        if key.startswith("ami")
                        else "Managed Instances keeps no minimum of hosts"
                    )
                    problems.add(f'{where}{key} does not apply to kind = "managed-instances": {why}; remove it')
        else:
            try:
                check_release(release, verified=good.get("ami_release_verified", False))
            except GpuSharingError as error:
                problems.add(f"{where}ami_release: {error}")
        min_i, max_i = good.get("min_instances", 0), good.get("max_instances")
        if max_i is not None and max_i < min_i:
            problems.add(
                f"{where}max_instances {max_i} is below min_instances {min_i}; raise it or lower min_instances"
            )
        if types is None or len(problems.lines) > before:
            continue
        try:
            facts = host_facts(
                types,
                gpu_margin_mib=good.get("gpu_margin_mib", DEFAULT_GPU_MARGIN_MIB),
                ecs_gpu_memory_mib=good.get("ecs_gpu_memory_mib"),
                owner=f"capacity.{name}",
            )
        except GpuSharingError as error:
            problems.add(str(error))
            continue
        capacities[name] = CapacitySpec(
            name=name,
            instance_types=tuple(types),
            kind=kind,
            ami_release=release,
            ami_release_verified=good.get("ami_release_verified", False),
            min_instances=min_i,
            max_instances=max_i,
            ecs_gpu_memory_mib=good.get("ecs_gpu_memory_mib"),
            facts=facts,
        )
    return capacities


def _environment(problems: _Problems, where: str, env: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in env.items():
        if not _ENV_NAME.fullmatch(key):
            problems.add(
                f"{where}environment key {key!r} is not a usable variable name; use letters, digits and '_', not "
                "starting with a digit"
            )
        elif GPU_ENVIRONMENT.match(key):
            problems.add(f"{where}environment.{key} would steer the GPU: {GPU_ENVIRONMENT_REASON}")
        elif not isinstance(value, str):
            problems.add(f"{where}environment.{key} must be a string, got {value!r}")
        else:
            out[key] = value
    return out


def _services(
    problems: _Problems,
    tables: Mapping[str, Any],
    capacities: Mapping[str, CapacitySpec],
    declared: Sequence[str],
    load_balancers: Mapping[str, LoadBalancerSpec],
) -> dict[str, ServiceSpec]:
    """The services; one on a capacity that is declared but broken is left out (its capacity's problem says why)."""
    services: dict[str, ServiceSpec] = {}
    for name, table in _named_tables(problems, "service", tables):
        where = f"service.{name}."
        before = len(problems.lines)
        good = _check_table(problems, where, table, SERVICE)
        capacity = good.get("capacity")
        if capacity is not None and capacity not in declared:
            problems.add(
                f"{where}capacity names {capacity!r}, which is not defined; defined capacities: "
                f"{', '.join(declared) or '(none)'}"
            )
        env = _environment(problems, where, good.get("environment", {}))
        if "max_tasks" in good and "desired_count" in good and good["max_tasks"] < good["desired_count"]:
            problems.add(
                f"{where}max_tasks {good['max_tasks']} is below desired_count {good['desired_count']} (the least); "
                "raise max_tasks"
            )
        for scaling in ("scale_on_cpu_percent", "scale_on_requests_per_target", "scale_on_metric"):
            if scaling in good and "max_tasks" not in good:
                problems.add(f"{where}{scaling} needs max_tasks (the most tasks scaling may reach)")
        if len(problems.lines) > before or capacity is None or capacity not in capacities:
            continue
        kind = capacities[capacity].kind
        network_mode = good.get("network_mode", AWSVPC if kind == MANAGED_INSTANCES else BRIDGE)
        if kind == MANAGED_INSTANCES and network_mode != AWSVPC:
            # Managed Instances runs awsvpc and host (botocore's ECS model also lists none); host would share the
            # host's network and its instance credentials between tenants, so this app runs awsvpc only there.
            problems.add(
                f'{where}network_mode must be "awsvpc" on Managed Instances: of its modes (awsvpc, host), host would '
                "share the host's network and instance credentials between tenants"
            )
        if kind == MANAGED_INSTANCES and "shm_size_mib" in good:
            # AWS lists sharedMemorySize (with tmpfs and dockerVolumeConfiguration) as not valid on Managed Instances.
            problems.add(
                f"{where}shm_size_mib sets the container's sharedMemorySize, which ECS does not accept on Managed "
                "Instances; remove it, or run the service on an EC2 capacity"
            )
        if kind == MANAGED_INSTANCES and "model_cache_path" in good:
            problems.add(
                f"{where}model_cache_path is a Docker volume, which ECS supports only on EC2 instances, not on Managed "
                "Instances; remove it (writable_paths gives per-task scratch space)"
            )
        _check_exposure(problems, where, good, load_balancers)
        sidecars = _sidecars(problems, where, good.get("sidecar", []))
        _check_paths(problems, where, good)
        _check_task_role(problems, where, good)
        acknowledge = _acknowledgments(problems, where, good.get("acknowledge", {}))
        note = _note(problems, f"{where}allocation.", good.get("allocation"))
        _check_service_values(problems, where, good, note)
        tags = _tags(problems, where, good.get("tags", {}))
        if len(problems.lines) > before:
            continue
        services[name] = ServiceSpec(
            name=name,
            capacity=good["capacity"],
            image=good["image"],
            desired_count=good["desired_count"],
            cpu_units=good["cpu_units"],
            memory_mib=good["memory_mib"],
            gpu_budget_mib=good["gpu_budget_mib"],
            max_compute_percent=good.get("max_compute_percent"),
            port=good.get("port"),
            environment=env,
            command=_strings(problems, f"{where}command", good.get("command", [])),
            health_check=_strings(problems, f"{where}health_check", good.get("health_check", [])),
            shm_size_mib=good.get("shm_size_mib"),
            stop_timeout_seconds=good.get("stop_timeout_seconds"),
            secrets=_secrets(problems, where, good.get("secrets", {}), env),
            model_bucket=good.get("model_bucket"),
            max_tasks=good.get("max_tasks"),
            scale_on_cpu_percent=good.get("scale_on_cpu_percent"),
            scale_on_requests_per_target=good.get("scale_on_requests_per_target"),
            scale_on_metric=_metric(good.get("scale_on_metric")),
            load_balancer=good.get("load_balancer"),
            paths=tuple(good.get("path", ())),
            host=good.get("host"),
            health_check_path=good.get("health_check_path", "/"),
            listener_port=good.get("listener_port"),
            network_mode=network_mode,
            sidecars=sidecars,
            model_cache_path=good.get("model_cache_path"),
            user=good.get("user"),
            read_only_root_filesystem=good.get("read_only_root_filesystem", True),
            writable_paths=tuple(good.get("writable_paths", ())),
            task_role_managed_policies=tuple(good.get("task_role_managed_policies", ())),
            task_role_statements=tuple(
                Statement(actions=tuple(t["actions"]), resources=tuple(t["resources"]))
                for t in good.get("task_role_statements", ())
            ),
            tags=tags,
            acknowledge=acknowledge,
            note=note,
        )
    return services


def _check_exposure(
    problems: _Problems, where: str, good: Mapping[str, Any], load_balancers: Mapping[str, LoadBalancerSpec]
) -> None:
    """How a service is reached: its load balancer exists, and its keys fit that balancer's type."""
    name = good.get("load_balancer")
    routing = [
        k for k in ("path", "host", "health_check_path", "listener_port", "scale_on_requests_per_target") if k in good
    ]
    if name is None:
        for key in routing:
            problems.add(f"{where}{key} needs load_balancer (the [load_balancer.<name>] that routes to the service)")
        return
    if name not in load_balancers:
        problems.add(
            f"{where}load_balancer names {name!r}, which is not defined; defined load balancers: "
            f"{', '.join(load_balancers) or '(none)'}"
        )
        return
    if "port" not in good:
        problems.add(f"{where}load_balancer needs port (the container port the balancer sends traffic to)")
    if load_balancers[name].type == APPLICATION:
        if "listener_port" in good:
            problems.add(f"{where}listener_port is for a network load balancer; {name!r} routes by path or host")
        conditions = len(good.get("path", ())) + ("host" in good)
        if conditions > 5:
            problems.add(f"{where}path and host give {conditions} conditions; an ALB rule takes at most 5")
    else:
        for key in ("path", "host", "health_check_path", "scale_on_requests_per_target"):
            if key in good:
                problems.add(f"{where}{key} is for an application load balancer; {name!r} is a network load balancer")
        if "listener_port" not in good:
            problems.add(
                f"{where}listener_port is needed on the network load balancer {name!r} (its port for this service)"
            )


def _check_shared_balancers(
    problems: _Problems,
    raw: Mapping[str, Any],
    services: Mapping[str, ServiceSpec],
    lbs: Mapping[str, LoadBalancerSpec],
) -> None:
    """Services sharing a balancer must be told apart: by path or host on an ALB, by listener port on an NLB."""
    for lb in lbs.values():
        users = [s for s in services.values() if s.load_balancer == lb.name]
        if not any(isinstance(t, dict) and t.get("load_balancer") == lb.name for t in raw.values()):
            problems.add(f"load_balancer.{lb.name} is used by no service; remove it or set load_balancer on a service")
            continue
        seen: dict[Any, str] = {}
        for svc in users:
            if lb.type == APPLICATION:
                if len(users) > 1 and not svc.paths and svc.host is None:
                    problems.add(
                        f"service.{svc.name}: shares load_balancer {lb.name!r} with "
                        f"{', '.join(u.name for u in users if u is not svc)}; give it path or host to route by"
                    )
                    continue
                route: Any = (svc.host, frozenset(svc.paths))
            else:
                route = svc.listener_port
            if route in seen:
                problems.add(
                    f"service.{svc.name}: routes on load_balancer {lb.name!r} exactly as service.{seen[route]} does; "
                    "give each service its own path, host or listener_port"
                )
            seen.setdefault(route, svc.name)


def _check_across(
    problems: _Problems,
    top: Mapping[str, Any],
    services: Mapping[str, ServiceSpec],
    lbs: Mapping[str, LoadBalancerSpec],
) -> None:
    """What only the whole file shows: names Service Connect would merge, routes that swallow others', and a
    certificate that is not in the fleet's account and region."""
    if top.get("service_connect_namespace"):
        seen: dict[str, str] = {}
        for name in services:
            other = seen.setdefault(name.lower(), name)
            if other != name:
                problems.add(
                    f"service.{name} and service.{other} are one DNS name to Service Connect (names are not case "
                    "sensitive there); rename one"
                )
    for lb in lbs.values():
        users = [svc for svc in services.values() if svc.load_balancer == lb.name]
        if lb.type != APPLICATION or len(users) < 2:
            continue
        for svc in users:
            catch_all = [p for p in svc.paths if p in ("*", "/*")] + ([svc.host] if svc.host == "*" else [])
            if catch_all:
                problems.add(
                    f"service.{svc.name}: {'host' if catch_all[0] == svc.host else 'path'} {catch_all[0]!r} on "
                    f"load_balancer {lb.name!r} matches every request, so the services sharing it would get none "
                    "(or it none, by rule order); give it a path or host of its own"
                )
    account, region = top.get("account"), top.get("region")
    for lb in lbs.values():
        if lb.certificate_arn and account and region:
            parts = lb.certificate_arn.split(":")
            if parts[3] != region or parts[4] != account:
                problems.add(
                    f"load_balancer.{lb.name}.certificate_arn is in region {parts[3]}, account {parts[4]}; a load "
                    f"balancer takes a certificate of its own account and region ({account}, {region})"
                )


def _note(problems: _Problems, where: str, table: Mapping[str, Any] | None) -> AllocationNote | None:
    """The allocation note; evidence needs its peak and its day together."""
    if table is None or not {"residency_mib", "peak_working_mib", "shared_failure"} <= set(table):
        return None  # a missing key is a problem already
    evidence = None
    if ("measured_peak_mib" in table) != ("measured_on" in table):
        problems.add(f"{where}measured_peak_mib and measured_on go together: evidence is a peak and the day of it")
    elif "measured_peak_mib" in table:
        evidence = Evidence(
            peak_mib=table["measured_peak_mib"],
            measured_on=table["measured_on"],
            source=table.get("evidence_source", "evaluate"),
            p99_mib=table.get("measured_p99_mib"),
            image=table.get("measured_image"),
        )
    if table.get("isolate_host") and "isolation_group" not in table:
        problems.add(f"{where}isolate_host needs isolation_group (the group to keep on hosts of its own)")
        return None
    return AllocationNote(
        residency_mib=table["residency_mib"],
        peak_working_mib=table["peak_working_mib"],
        shared_failure=table["shared_failure"],
        compute_percent=table.get("compute_percent"),
        isolation_group=table.get("isolation_group", ""),
        isolate_host=table.get("isolate_host", False),
        evidence=evidence,
    )


def _metric(table: Mapping[str, Any] | None) -> MetricTarget | None:
    if table is None:
        return None
    return MetricTarget(
        namespace=table["namespace"],
        metric_name=table["metric_name"],
        target=table["target"],
        statistic=table.get("statistic", "Average"),
        dimensions=dict(table.get("dimensions", {})),
    )


def _sidecars(problems: _Problems, where: str, tables: list[Mapping[str, Any]]) -> tuple[SidecarSpec, ...]:
    out = []
    names = {CONTAINER_NAME}
    for i, t in enumerate(tables):
        at = f"{where}sidecar[{i}]."
        if "name" not in t or "image" not in t or "cpu_units" not in t or "memory_mib" not in t:
            continue  # the missing key is a problem already
        if t["name"] in names:
            problems.add(
                f"{at}name {t['name']!r} is taken ({CONTAINER_NAME!r} is the model's); give each container its own"
            )
            continue
        names.add(t["name"])
        if "max_compute_percent" in t and "gpu_budget_mib" not in t:
            problems.add(f"{at}max_compute_percent needs gpu_budget_mib (a container without a budget has no GPU)")
        out.append(
            SidecarSpec(
                name=t["name"],
                image=t["image"],
                cpu_units=t["cpu_units"],
                memory_mib=t["memory_mib"],
                gpu_budget_mib=t.get("gpu_budget_mib"),
                max_compute_percent=t.get("max_compute_percent"),
                command=_strings(problems, f"{at}command", t.get("command", [])),
                environment=_environment(problems, at, t.get("environment", {})),
                essential=t.get("essential", False),
            )
        )
    return tuple(out)


def _check_paths(problems: _Problems, where: str, good: Mapping[str, Any]) -> None:
    cache = good.get("model_cache_path")
    for path in good.get("writable_paths", ()):
        if cache is not None and (path == cache or path.startswith(cache.rstrip("/") + "/")):
            problems.add(
                f"{where}writable_paths {path!r} is under model_cache_path {cache!r}, which is writable already"
            )
    if good.get("read_only_root_filesystem") is False and good.get("writable_paths"):
        problems.add(
            f"{where}writable_paths is for a read-only root filesystem; with it writable, remove writable_paths"
        )


def _acknowledgments(problems: _Problems, where: str, table: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for rule_id, reason in table.items():
        if rule_id not in ACKNOWLEDGEABLE:
            problems.add(
                f"{where}acknowledge {rule_id!r} is not a warning that can be acknowledged; these can: "
                f"{', '.join(sorted(ACKNOWLEDGEABLE))}"
            )
        elif not isinstance(reason, str) or not reason.strip():
            problems.add(f"{where}acknowledge.{rule_id!r} needs a reason (a non-empty string)")
        else:
            out[rule_id] = reason
    return out


def _tags(problems: _Problems, where: str, table: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in table.items():
        if not isinstance(value, str) or not 1 <= len(key) <= 128 or len(value) > 256 or key.startswith("aws:"):
            problems.add(
                f"{where}tags.{key!r}: a tag is a name of 1..128 characters (not starting aws:) and a string value "
                f"of at most 256, got {value!r}"
            )
        else:
            out[key] = value
    return out


def _check_aws_limits(
    problems: _Problems,
    capacities: Mapping[str, CapacitySpec],
    services: Mapping[str, ServiceSpec],
    load_balancers: Mapping[str, LoadBalancerSpec],
) -> None:
    """AWS's limits (``core.quotas``) that the fleet file alone can break, each refused naming its key."""

    def over(limit: quotas.Limit, key: str, seen: int, fix: str) -> None:
        if seen > limit.number:
            problems.add(limit.message(key, seen, fix))

    over(quotas.CAPACITY_PROVIDERS_PER_CLUSTER, "capacity", len(capacities), "merge capacities or split the fleet")
    for name, capacity in capacities.items():
        over(
            quotas.INSTANCE_TYPES_PER_GROUP,
            f"capacity.{name}.instance_types",
            len(capacity.instance_types),
            "list fewer instance types",
        )
    for name, balancer in load_balancers.items():
        users = [s for s in services.values() if s.load_balancer == name]
        if balancer.type == APPLICATION:
            # One listener rule and one target group a service.
            over(quotas.RULES_PER_ALB, f"load_balancer.{name}", len(users), "spread the services over more balancers")
            over(
                quotas.TARGET_GROUPS_PER_ALB,
                f"load_balancer.{name}",
                len(users),
                "spread the services over more balancers",
            )
        else:
            over(
                quotas.LISTENERS_PER_NLB, f"load_balancer.{name}", len(users), "spread the services over more balancers"
            )
    for name, service in services.items():
        over(
            quotas.CONTAINERS_PER_TASK_DEFINITION,
            f"service.{name}.sidecar",
            1 + len(service.sidecars),
            "run some sidecars as services of their own",
        )
        for path in service.paths:
            over(quotas.PATH_PATTERN_CHARACTERS, f"service.{name}.path {path[:20]!r}...", len(path), "shorten it")
        over(quotas.TAGS_PER_RESOURCE, f"service.{name}.tags", len(service.tags), "drop tags")
        if service.scale_on_metric is not None:
            over(
                quotas.DIMENSIONS_PER_METRIC,
                f"service.{name}.scale_on_metric.dimensions",
                len(service.scale_on_metric.dimensions),
                "use fewer dimensions",
            )


def _load_balancers(problems: _Problems, tables: Mapping[str, Any]) -> dict[str, LoadBalancerSpec]:
    out = {}
    for name, table in _named_tables(problems, "load_balancer", tables):
        before = len(problems.lines)
        good = _check_table(problems, f"load_balancer.{name}.", table, LOAD_BALANCER)
        if good.get("type") == NETWORK and "certificate_arn" in good:
            problems.add(f"load_balancer.{name}.certificate_arn is for an application load balancer (HTTPS)")
        if len(problems.lines) > before:
            continue
        spec = LoadBalancerSpec(
            name=name,
            type=good.get("type", APPLICATION),
            internet_facing=good.get("internet_facing", False),
            certificate_arn=good.get("certificate_arn"),
            plaintext_reason=good.get("plaintext_reason"),
        )
        if spec.plaintext_from_internet and spec.plaintext_reason is None:
            what = (
                "a network load balancer passes TCP through without TLS"
                if spec.type == NETWORK
                else "without certificate_arn it serves plain HTTP on port 80"
            )
            problems.add(
                f"load_balancer.{name}: internet_facing = true, and {what} to 0.0.0.0/0, in front of model servers "
                "with no authentication of their own; give certificate_arn (an application load balancer), or "
                'internet_facing = false, or state why it is acceptable with plaintext_reason = "..."'
            )
            continue
        if spec.plaintext_reason is not None and not spec.plaintext_from_internet:
            problems.add(
                f"load_balancer.{name}.plaintext_reason: this balancer "
                + ("is internal to the VPC" if not spec.internet_facing else "serves HTTPS")
                + ", so nothing plain reaches it from the internet; remove plaintext_reason"
            )
            continue
        out[name] = spec
    return out


def scratch_volume_name(path: str) -> str:
    """The task volume the app mounts at a writable path."""
    return "scratch" + path.replace("/", "-").replace(".", "-").replace("_", "-")


_SYSTEM_PATHS = ("/proc", "/sys", "/dev")
_HEALTH_CHECK_FIRST = ("CMD", "CMD-SHELL", "NONE")  # what ECS's healthCheck.command takes first


def _check_service_values(
    problems: _Problems, where: str, good: Mapping[str, Any], note: AllocationNote | None
) -> None:
    """Values each well-formed on its own that ECS, Docker or the note's own figures contradict."""
    shm, memory = good.get("shm_size_mib"), good.get("memory_mib")
    if isinstance(shm, int) and isinstance(memory, int) and shm > memory:
        problems.add(
            f"{where}shm_size_mib {shm} is more than the container's memory_mib {memory}: /dev/shm is counted in "
            "the container's memory, so the container would be killed before using it; lower shm_size_mib"
        )
    cap = good.get("max_compute_percent")
    if note is not None and note.compute_percent is not None and isinstance(cap, int) and cap < note.compute_percent:
        problems.add(
            f"{where}max_compute_percent {cap} caps the service below the {note.compute_percent}% its allocation "
            "note says its latency target needs; raise max_compute_percent or the note's compute_percent"
        )
    check = good.get("health_check")
    if isinstance(check, list) and check and check[0] not in _HEALTH_CHECK_FIRST:
        problems.add(
            f"{where}health_check starts with {check[0]!r}; ECS takes CMD (a command and its arguments), CMD-SHELL "
            '(one shell line) or NONE first, such as ["CMD-SHELL", "curl -f http://localhost:8080/health"]'
        )
    paths = [p for p in good.get("writable_paths", ()) if isinstance(p, str)]
    names: dict[str, str] = {}
    for path in paths:
        if path == "/" or path.rstrip("/") in _SYSTEM_PATHS or path.startswith(tuple(f"{p}/" for p in _SYSTEM_PATHS)):
            problems.add(f"{where}writable_paths {path!r} is the root or a system folder; name a folder of the server")
        elif ".." in path.split("/"):
            problems.add(f"{where}writable_paths {path!r} climbs with '..'; write the folder's own path")
        volume = scratch_volume_name(path)
        if volume in names and names[volume] != path:
            problems.add(f"{where}writable_paths {path!r} and {names[volume]!r} would get one volume name; rename one")
        elif path in names.values():
            problems.add(f"{where}writable_paths {path!r} is given twice")
        names.setdefault(volume, path)
    bucket = good.get("model_bucket")
    if isinstance(bucket, str):
        why = _bucket_problem(bucket)
        if why:
            problems.add(f"{where}model_bucket {bucket!r} is not an S3 bucket name: {why}")
    metric = good.get("scale_on_metric")
    if isinstance(metric, Mapping):
        for key, value in (metric.get("dimensions") or {}).items():
            if not isinstance(value, str) or not value:
                problems.add(f"{where}scale_on_metric.dimensions.{key} must be a non-empty string, got {value!r}")
    evidence = note.evidence if note is not None else None
    if evidence is not None:
        at = f"{where}allocation."
        if evidence.measured_on > datetime.date.today() + datetime.timedelta(days=1):
            problems.add(f"{at}measured_on {evidence.measured_on} is in the future; give the day it was measured")
        if evidence.p99_mib is not None and evidence.p99_mib > evidence.peak_mib:
            problems.add(f"{at}measured_p99_mib {evidence.p99_mib} is above measured_peak_mib {evidence.peak_mib}")
        budget = good.get("gpu_budget_mib")
        if isinstance(budget, int) and evidence.peak_mib > budget:
            problems.add(
                f"{at}measured_peak_mib {evidence.peak_mib} is above the service's gpu_budget_mib {budget}, which "
                "MPS enforces: the figure cannot come from this budget; measure again, or raise the budget"
            )


def _bucket_problem(name: str) -> str | None:
    """Why ``name`` breaks S3's bucket naming rules beyond the key's pattern, or ``None``."""
    if re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", name, re.ASCII):
        return "it is formatted as an IP address"
    if ".." in name or ".-" in name or "-." in name:
        return "a period may not be next to another period or a hyphen"
    for prefix in ("xn--", "sthree-", "amzn-s3-demo-"):
        if name.startswith(prefix):
            return f"the prefix {prefix} is reserved"
    for suffix in ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"):
        if name.endswith(suffix):
            return f"the suffix {suffix} is reserved"
    return None


def _check_task_role(problems: _Problems, where: str, good: Mapping[str, Any]) -> None:
    """A model's task role may not reach the account or IAM: no escalating managed policy, no statement that lets
    the task change its own permissions, no empty statement."""
    for name in good.get("task_role_managed_policies", ()):
        why = escalating_policy(name)
        if why is not None:
            problems.add(f"{where}task_role_managed_policies {name} is refused: {why}")
    for i, statement in enumerate(good.get("task_role_statements", ())):
        at = f"{where}task_role_statements[{i}]"
        actions, resources = statement.get("actions", []), statement.get("resources", [])
        if not actions or not resources:
            problems.add(f"{at}: actions and resources must each name at least one; an empty list grants nothing")
            continue
        why = escalating_statement(actions, resources)
        if why is not None:
            problems.add(f"{at} is refused: {why}; name the actions and resources the model needs")


def _strings(problems: _Problems, where: str, values: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v for v in values):
        problems.add(f"{where} must be a list of non-empty strings, got {values!r}")
        return ()
    return tuple(values)


_SECRET = re.compile(r"^(ssm:/[A-Za-z0-9_.\-/]+|secretsmanager:[A-Za-z0-9/_+=.@\-]+)$", re.ASCII)


def _secrets(problems: _Problems, where: str, secrets: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for name, ref in secrets.items():
        if not _ENV_NAME.fullmatch(name) or GPU_ENVIRONMENT.match(name):
            problems.add(f"{where}secrets key {name!r} is not a usable variable name (or would steer the GPU)")
        elif name in env:
            problems.add(f"{where}secrets.{name} is also in environment; give each variable once")
        elif not isinstance(ref, str) or not _SECRET.fullmatch(ref):
            problems.add(
                f"{where}secrets.{name} must be 'ssm:/parameter/name' or 'secretsmanager:secret-name', got {ref!r}"
            )
        elif ref.startswith("ssm:") and (".." in ref or len(ref) - len("ssm:") > 2048):
            # SSM Parameter Store: a name is at most 2048 characters (with its path) and has no '..' path part.
            problems.add(f"{where}secrets.{name}: an SSM parameter name has no '..' and at most 2048 characters")
        else:
            out[name] = ref
    return out


# Which fleet-file key a fit rule's finding is about, so the message names what to edit.
_RULE_KEYS = {
    "ecs-gpu-sharing:TaskExceedsGpuMemory": "gpu_budget_mib",
    "ecs-gpu-sharing:TaskExceedsHostCpu": "cpu_units",
    "ecs-gpu-sharing:TaskExceedsHostMemory": "memory_mib",
    "ecs-gpu-sharing:BudgetBelowNeed": "gpu_budget_mib",
}


def parse(doc: Mapping[str, Any], *, source: str = "<fleet>") -> FleetSpec:
    """A fleet spec from a parsed TOML document; refuses anything malformed, every problem at once, each naming
    ``source`` and the key. A task that can never fit its capacity is refused here too, naming the key to edit."""
    problems = _Problems(source)
    if not isinstance(doc, Mapping):
        raise FleetSpecError(f"{source}: not a TOML table of keys")
    top = _check_table(problems, "", doc, TOP)
    if ("account" in doc) != ("region" in doc):
        problems.add("account and region go together; give both, or neither for an offline synth")
    if "vpc_id" in doc and "account" not in doc:
        problems.add("vpc_id needs account and region (the VPC is looked up in that account at synth)")
    name = top.get("name")
    if isinstance(name, str) and name.lower().startswith(("aws", "ecs", "fargate")):
        problems.add(
            f"name {name!r}: the stacks, and so the ECS capacity providers CloudFormation names after them, would "
            "start with aws, ecs or fargate, which ECS refuses for a capacity provider; choose another name"
        )
    services_table = top.get("service", {})
    if isinstance(services_table, Mapping) and len(services_table) > quotas.SERVICES_PER_CLUSTER.number:
        # Refused before anything else is checked: the checks of 10,000 services take minutes, and ECS holds 5,000.
        raise FleetSpecError(
            f"{source}: {len(services_table)} [service.<name>] tables, more than one ECS cluster holds "
            f"({quotas.SERVICES_PER_CLUSTER.number}: {quotas.SERVICES_PER_CLUSTER.source}); split the fleet into "
            "several fleet files, one cluster each"
        )
    capacities = _capacities(problems, top.get("capacity", {}))
    if "capacity" in top and not top["capacity"]:
        problems.add("no [capacity.<name>] table; a fleet needs at least one capacity")
    declared = [name for name in top.get("capacity", {}) if isinstance(name, str) and _NAME.fullmatch(name)]
    load_balancers = _load_balancers(problems, top.get("load_balancer", {}))
    services = _services(problems, top.get("service", {}), capacities, declared, load_balancers)
    _check_shared_balancers(problems, top.get("service", {}), services, load_balancers)
    _check_across(problems, top, services, load_balancers)
    _check_aws_limits(problems, capacities, services, load_balancers)
    if "service" in top and not top["service"]:
        problems.add("no [service.<name>] table; a fleet needs at least one service to plan")
    problems.raise_if_any()
    spec = FleetSpec(
        name=top["name"],
        capacities=capacities,
        services=services,
        source=source,
        account=top.get("account"),
        region=top.get("region"),
        vpc_id=top.get("vpc_id"),
        load_balancers=load_balancers,
        service_connect_namespace=top.get("service_connect_namespace"),
        prices=top.get("prices"),
        telemetry=top.get("telemetry", True),
    )
    for name, expression in spec.host_isolation().items():
        if len(expression) > MAX_PLACEMENT_EXPRESSION:
            problems.add(
                f"service.{name}.allocation.isolation_group: keeping it off the hosts of other groups' services "
                f"takes a placement expression of {len(expression)} characters, more than ECS's "
                f"{MAX_PLACEMENT_EXPRESSION}; put fewer services in other groups on its capacity, or give the groups "
                "capacities of their own"
            )
    task_rules = {rule.rule_id for rule in TASK_RULES} | {"ecs-gpu-sharing:BudgetBelowNeed"}
    for finding in assess(spec.capacity_inputs(), spec.service_inputs()).errors:
        if finding.rule_id not in task_rules:
            continue  # counts against max_instances: the plan shows them, with the plan
        key = _RULE_KEYS.get(finding.rule_id, "")
        where = f"{finding.kind}.{finding.subject}" + (f".{key}" if key else "")
        problems.add(f"{where}: {finding.message} [{finding.rule_id}]")
    problems.raise_if_any()
    return spec


def check_region(spec: FleetSpec, known: Collection[str]) -> None:
    """Refuses a fleet's region that is not among ``known`` (botocore's endpoint data, which the caller reads: this
    module makes no AWS call and imports no AWS SDK). The synth and ``plan`` both call it."""
    if spec.region is not None and spec.region not in known:
        raise FleetSpecError(
            f"{spec.source}: region {spec.region!r} is not an AWS region botocore knows; give one such as us-east-1"
        )


def load(path: str | Path) -> FleetSpec:
    """Reads and checks a fleet file."""
    p = Path(path)
    try:
        status = p.stat()  # follows a link: a link to a fleet file is a fleet file
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(status.st_mode):
            # A FIFO would block the read forever, a device such as /dev/zero would fill the memory.
            raise FleetSpecError(
                f"{p}: not a regular file (a pipe, socket or device); give the path of a .toml file"
            ) from None
        if status.st_size > MAX_FLEET_FILE_BYTES:
            raise FleetSpecError(
                f"{p}: {status.st_size} bytes, more than a fleet file may hold ({MAX_FLEET_FILE_BYTES // 2**20} MiB); "
                "split the fleet into several files (one app each)"
            )
        text = p.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise FleetSpecError(f"{p}: is a folder, not a fleet file; give the path of a .toml file") from None
    except OSError as error:
        raise FleetSpecError(f"{p}: cannot read the fleet file ({error.strerror}); check the path") from None
    except UnicodeDecodeError as error:
        raise FleetSpecError(f"{p}: not UTF-8 text (byte {error.start}); save the fleet file as UTF-8") from None
    try:
        doc = tomllib.loads(text.removeprefix("\ufeff"))  # a byte-order mark some editors write
    except tomllib.TOMLDecodeError as error:
        raise FleetSpecError(f"{p}: not valid TOML ({error})") from None
    except RecursionError:
        raise FleetSpecError(
            f"{p}: values nested too deeply for a fleet file (arrays or tables within each other hundreds deep)"
        ) from None
    return parse(doc, source=str(p))


def json_schema() -> dict[str, Any]:
    """The fleet file's JSON Schema (draft 2020-12), generated from the key table: for editors (taplo, Even Better
    TOML) that complete and check keys. ``fleet.schema.json`` at the repository root is this, committed."""

    def one(k: Key) -> dict[str, Any]:
        p: dict[str, Any] = {"type": _JSON_TYPES[k.kind], "description": k.doc}
        if k.kind is datetime.date:
            p = {"description": k.doc, "format": "date"}  # a TOML date: a string to some editors, a date to others
        if k.low is not None:
            p["minimum"] = k.low
        if k.high is not None:
            p["maximum"] = k.high
        if k.pattern is not None and k.kind is str:
            p["pattern"] = k.pattern.pattern
        if k.default is not None:
            p["default"] = k.default
        if k.items is not None:
            p["items"] = {"type": _JSON_TYPES[k.items]}
            if k.pattern is not None:
                p["items"]["pattern"] = k.pattern.pattern
                p["uniqueItems"] = True
        if k.table is not None:
            if k.kind is dict:
                p.update(table(k.table))
            else:
                p["items"] = table(k.table)
        if k.name == "instance_types":
            p["items"] = {"type": "string"}
            p["minItems"] = 1
        if k.name == "environment":
            p["additionalProperties"] = {"type": "string"}
            p["propertyNames"] = {"pattern": _ENV_NAME.pattern, "not": {"pattern": GPU_ENVIRONMENT.pattern}}
        if k.name in ("tags", "dimensions", "acknowledge", "secrets"):
            p["additionalProperties"] = {"type": "string"}
        return p

    def table(keys: tuple[Key, ...]) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": [k.name for k in keys if k.required],
            "properties": {k.name: one(k) for k in keys},
        }

    def named(doc: str, keys: tuple[Key, ...], least: int) -> dict[str, Any]:
        return {
            "type": "object",
            "description": doc,
            "minProperties": least,
            "propertyNames": {"pattern": _NAME.pattern},
            "additionalProperties": table(keys),
        }

    root = table(TOP)
    root["properties"]["capacity"] = named("the GPU capacities, one table each", CAPACITY, 1)
    root["properties"]["service"] = named("the services, one table each", SERVICE, 1)
    root["properties"]["load_balancer"] = named("load balancers services share, one table each", LOAD_BALANCER, 0)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ecs-gpu-sharing fleet file",
        "description": "Generated by `ecs-gpu-sharing fleet schema`; do not edit.",
        **root,
    }
