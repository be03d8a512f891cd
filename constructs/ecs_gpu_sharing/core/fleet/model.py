"""The fleet file's model: the specs the parser builds, and what the app derives from them. Pure Python."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..allocation import AllocationNote, Evidence
from ..capacity_facts import HostFacts
from ..mps import MpsShare
from ..placement import PRESETS
from ..planner import MANAGED_INSTANCES
from ..shape import (
    SERVICE_CONNECT_PROXY_MEMORY_MIB,
    ContainerFacts,
    TaskShape,
    service_connect_proxy_memory_mib,
    task_shape,
)

MAX_FLEET_FILE_BYTES = 8 * 2**20  # far above any fleet ECS can hold (5,000 services per cluster)
"""Tag on each deployed ECS service naming its fleet-file service; `cluster status --fleet` matches by it."""

CONTAINER_NAME = "model"
"""The name of each fleet service's container in its task definition."""


@dataclass(frozen=True, kw_only=True)
class CapacitySpec:
    """A ``[capacity.<name>]`` table, checked. Each attribute but ``name`` and ``facts`` is a key of ``keys.CAPACITY``
    (its meaning, type, range and default are there, the one declaration)."""

    name: str
    instance_types: tuple[str, ...]
    facts: HostFacts  # from the catalog, with the fleet's gpu_margin_mib and ecs_gpu_memory_mib
    kind: str  # or MANAGED_INSTANCES
    ami_release: str
    ami_release_verified: bool
    min_instances: int
    max_instances: int | None
    gpu_margin_mib: int
    ecs_gpu_memory_mib: int | None  # measured on the fleet's cluster, in place of the per-model figure
    acknowledge: Mapping[str, str]  # capacity warning id -> why it is accepted


APPLICATION = "application"
NETWORK = "network"
BRIDGE = "bridge"
AWSVPC = "awsvpc"


@dataclass(frozen=True, kw_only=True)
class LoadBalancerSpec:
    """A load balancer several services can share: an ALB routes by path or host, an NLB by listener port."""

    name: str
    type: str  # or NETWORK
    internet_facing: bool
    certificate_arn: str | None  # ALB: HTTPS on 443 (and 80 redirects); without it, HTTP on 80
    plaintext_reason: str | None  # why an internet-facing balancer may serve without TLS (required then)

    @property
    def plaintext_from_internet(self) -> bool:
        """Whether anyone on the internet reaches it without TLS: an internet-facing NLB (TCP passes through) or an
        internet-facing ALB without a certificate (HTTP on 80)."""
        return self.internet_facing and (self.type == NETWORK or not self.certificate_arn)

    @property
    def listener_port(self) -> int:
        return 443 if self.certificate_arn else 80


@dataclass(frozen=True, kw_only=True)
class SidecarSpec:
    """An extra container in a service's task, on the task's one GPU when it has a budget."""

    name: str
    image: str
    cpu_units: int
    memory_mib: int
    gpu_budget_mib: int | None
    max_compute_percent: int | None
    command: tuple[str, ...]
    environment: Mapping[str, str]
    essential: bool

    @property
    def share(self) -> MpsShare | None:
        return None if self.gpu_budget_mib is None else MpsShare(self.gpu_budget_mib, self.max_compute_percent)


@dataclass(frozen=True, kw_only=True)
class MetricTarget:
    """Target tracking on a CloudWatch metric of the team's own (a queue depth, say)."""

    namespace: str
    metric_name: str
    target: int
    statistic: str
    dimensions: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class Statement:
    """An extra statement of the task role's policy."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """A ``[service.<name>]`` table, checked. Each attribute but ``name`` is a key of ``keys.SERVICE`` (its meaning,
    type, range and default are there, the one declaration)."""

    name: str
    capacity: str
    image: str
    desired_count: int
    cpu_units: int
    memory_mib: int  # host memory, the container's hard limit
    gpu_budget_mib: int
    max_compute_percent: int | None
    port: int | None
    environment: Mapping[str, str]
    command: tuple[str, ...]
    health_check: tuple[str, ...]
    shm_size_mib: int | None
    stop_timeout_seconds: int | None
    secrets: Mapping[str, str]  # variable name -> ssm:NAME or secretsmanager:NAME
    model_bucket: str | None
    max_tasks: int | None  # task auto scaling maximum; desired_count is the minimum
    scale_on_cpu_percent: int | None
    scale_on_requests_per_target: int | None
    scale_on_metric: MetricTarget | None
    load_balancer: str | None
    paths: tuple[str, ...]
    host: str | None
    health_check_path: str
    listener_port: int | None
    network_mode: str
    placement: str  # a name of core.placement.PRESETS
    sidecars: tuple[SidecarSpec, ...]
    model_cache_path: str | None
    user: str | None
    read_only_root_filesystem: bool
    writable_paths: tuple[str, ...]
    task_role_managed_policies: tuple[str, ...]
    task_role_statements: tuple[Statement, ...]
    tags: Mapping[str, str]
    acknowledge: Mapping[str, str]  # warning id -> reason
    allocation: AllocationNote | None
    evidence: Evidence | None  # what was measured, for a service without a note ([service.<name>.evidence])

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
            ContainerFacts(name=c_name, cpu_units=cpu, memory_mib=memory, gpu_budget_mib=budget)
            for c_name, cpu, memory, budget in [
                (CONTAINER_NAME, self.cpu_units, self.memory_mib, self.gpu_budget_mib),
                *((c.name, c.cpu_units, c.memory_mib, c.gpu_budget_mib) for c in self.sidecars),
            ]
        ]
        return task_shape(
            containers,
            owner=f"{source}: service.{self.name}",
            service_connect=service_connect,
            proxy_memory_mib=proxy_memory_mib,
            awsvpc=self.network_mode == AWSVPC,
        )


@dataclass(frozen=True, kw_only=True)
class FleetSpec:
    """A fleet file, checked. Each attribute but ``source`` is a key of ``keys.TOP`` (its doc is there)."""

    name: str
    capacities: Mapping[str, CapacitySpec]
    services: Mapping[str, ServiceSpec]
    source: str
    account: str | None  # with region: an environment-bound app (lookups need credentials)
    region: str | None
    vpc_id: str | None  # deploy into this existing VPC instead of a new one
    load_balancers: Mapping[str, LoadBalancerSpec]
    service_connect_namespace: str | None
    telemetry: bool
    prices: str | None  # a prices file, relative to the fleet file

    @property
    def prices_path(self) -> Path | None:
        """The prices file, found beside the fleet file when its path is relative."""
        if self.prices is None:
            return None
        given = Path(self.prices)
        return given if given.is_absolute() else Path(self.source).parent / given

    @property
    def proxy_memory_mib(self) -> int:
        """The Service Connect proxy's memory in each task: every service of a fleet with a namespace is in it, at its
        largest count."""
        return service_connect_proxy_memory_mib(
            len(self.services), sum(s.largest_count[0] for s in self.services.values())
        )

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
            if len({_group(s) for s in on}) < 2:
                continue  # one group: nothing to keep apart (and no pairwise look at thousands of services)
            for s in on:
                apart = [
                    o
                    for o in on
                    if _group(o) != _group(s) and (_isolates(s) or _isolates(o) or cap.facts.gpus_per_instance == 1)
                ]
                if apart:
                    out[s.name] = _JOIN.join(_term(self.ecs_service_name(o.name)) for o in apart)
        return out

    def host_isolation_lengths(self) -> dict[str, int]:
        """The length of each expression ``host_isolation`` would write, without writing any: linear in the services
        (a fleet of thousands of groups is checked in time; the expressions themselves grow with the square)."""
        out: dict[str, int] = {}
        for cap in self.capacities.values():
            if cap.kind == MANAGED_INSTANCES:
                continue
            on = [s for s in self.services.values() if s.capacity == cap.name]
            if len({_group(s) for s in on}) < 2:
                continue
            size = {s.name: len(_term(self.ecs_service_name(s.name))) for s in on}
            every: dict[str, list[int]] = {}  # group -> [count, length] of all its services
            isolating: dict[str, list[int]] = {}  # group -> [count, length] of those that ask for separate hosts
            for s in on:
                for table, wanted in ((every, True), (isolating, _isolates(s))):
                    if wanted:
                        entry = table.setdefault(_group(s), [0, 0])
                        entry[0] += 1
                        entry[1] += size[s.name]
            totals = {
                name: [sum(v[0] for v in t.values()), sum(v[1] for v in t.values())]
                for name, t in (("every", every), ("isolating", isolating))
            }
            for s in on:
                table, total = (
                    (every, totals["every"])
                    if _isolates(s) or cap.facts.gpus_per_instance == 1
                    else (isolating, totals["isolating"])
                )
                own = table.get(_group(s), [0, 0])
                count, length = total[0] - own[0], total[1] - own[1]
                if count:
                    out[s.name] = length + len(_JOIN) * (count - 1)
        return out


_JOIN = " and "


def _term(ecs_name: str) -> str:
    return f"not(task:group == service:{ecs_name})"


def _group(s: ServiceSpec) -> str:
    return s.allocation.isolation_group if s.allocation is not None else ""


def _isolates(s: ServiceSpec) -> bool:
    return s.allocation is not None and s.allocation.isolate_host


MAX_PLACEMENT_EXPRESSION = 2000  # characters, ECS's limit for a placement constraint's expression

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


def scratch_volume_name(path: str) -> str:
    """The task volume the app mounts at a writable path."""
    return "scratch" + path.replace("/", "-").replace(".", "-").replace("_", "-")
