"""The fleet file's model: the specs the parser builds, and what the app derives from them. Pure Python."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..ami_release import DEFAULT_AMI_RELEASE
from ..capacity_facts import ROOT_VOLUME_DEFAULT_GIB, ROOT_VOLUME_MAX_GIB, ROOT_VOLUME_MIN_GIB, HostFacts
from ..constraints import ISOLATION_JOIN, isolation_term
from ..file_key import key
from ..gpu_memory import DEFAULT_GPU_MARGIN_MIB
from ..planner import EC2, KINDS, MANAGED_INSTANCES
from ..quotas import MAX_INSTANCES_PER_CLUSTER
from ..shape import (
    service_connect_proxy_memory_mib,
)
from .service_spec import ServiceSpec
from .values import (
    ACCOUNT,
    ACM_ARN,
    APPLICATION,
    DNS_NAME,
    NAME,
    NETWORK,
    REGION,
    VPC_ID,
)

VPC_ZONES = 2
"""Availability Zones of the VPC the app makes when the fleet names no vpc_id (the network stack's max_azs)."""
NAT_GATEWAYS = 1
"""NAT gateways of that VPC (the network stack's nat_gateways): one, in its first zone, each with an Elastic IP."""
GATEWAY_ENDPOINTS = 1
"""Gateway endpoints of that VPC: one, to Amazon S3, so image layers (ECR keeps them in S3) and model weights reach the
private subnets without the NAT gateway's per-gigabyte processing charge (gateway endpoints cost nothing)."""
MAX_FLEET_FILE_BYTES = 8 * 2**20  # far above any fleet ECS can hold (5,000 services per cluster)


@dataclass(frozen=True, kw_only=True)
class CapacitySpec:
    """A ``[capacity.<name>]`` table, checked. Each attribute but ``name`` and ``facts`` is a key of the file, declared
    on the field (its meaning, type, range and default: the one declaration; ``keys.CAPACITY`` is read off them)."""

    name: str
    facts: HostFacts  # from the catalog, with the fleet's gpu_margin_mib and ecs_gpu_memory_mib
    kind: str = key(
        str,
        False,
        "ec2 (an Auto Scaling group on a pinned AMI) or managed-instances (ECS Managed Instances)",
        pattern=re.compile("^(" + "|".join(KINDS) + ")$", re.ASCII),
        example=MANAGED_INSTANCES,
        default=EC2,
    )
    instance_types: tuple[str, ...] = key(list, True, "GPU instance types of one GPU model")
    ami_release: str = key(str, False, "the AL2023 GPU AMI release (YYYYMMDD)", default=DEFAULT_AMI_RELEASE)
    ami_release_verified: bool = key(
        bool, False, "true when `ecs-gpu-sharing ami verify` found a release the library does not list", default=False
    )
    min_instances: int = key(
        int,
        False,
        "instances kept running",
        low=0,
        high=MAX_INSTANCES_PER_CLUSTER,
        high_why='the ECS quota "container instances per cluster"',
        default=0,
    )
    max_instances: int | None = key(
        int,
        False,
        "the most instances; derived from the plan when left out",
        low=1,
        high=MAX_INSTANCES_PER_CLUSTER,
        high_why='the ECS quota "container instances per cluster"',
    )
    gpu_margin_mib: int = key(
        int, False, "per-GPU memory kept free below what ECS registers", low=0, default=DEFAULT_GPU_MARGIN_MIB
    )
    ecs_gpu_memory_mib: int | None = key(int, False, "one GPU as your cluster's ECS registers it (measured)", low=1)
    root_volume_gib: int = key(
        int,
        False,
        "the hosts' root volume (gp3, GiB): the images and the services' model caches (model_cache_path) on a host "
        "fill it; ec2 only",
        low=ROOT_VOLUME_MIN_GIB,
        high=ROOT_VOLUME_MAX_GIB,
        high_why="gp3's largest volume",
        example=1000,
        default=ROOT_VOLUME_DEFAULT_GIB,
    )
    task_volume_gib: int | None = key(
        int,
        False,
        "managed-instances only: the hosts' data volume (GiB) for images, logs and the services' model caches "
        "(storageConfiguration.storageSizeGiB); ECS's default, 80 GiB, unless given",
        low=ROOT_VOLUME_MIN_GIB,
        high=ROOT_VOLUME_MAX_GIB,
        high_why="gp3's largest volume",
        example=400,
    )
    acknowledge: Mapping[str, str] = key(
        dict, False, "capacity warning id -> the reason it is accepted, such as ecs-gpu-sharing:SurgeDoesNotFit"
    )


@dataclass(frozen=True, kw_only=True)
class LoadBalancerSpec:
    """A load balancer several services can share: an ALB routes by path or host, an NLB by listener port."""

    name: str
    type: str = key(
        str,
        False,
        "application (routes by path or host) or network (a listener port per service)",
        pattern=re.compile(f"^({APPLICATION}|{NETWORK})$", re.ASCII),
        example=NETWORK,
        default=APPLICATION,
    )
    internet_facing: bool = key(
        bool, False, "reachable from the internet; internal to the VPC by default", default=False
    )
    certificate_arn: str | None = key(
        str,
        False,
        "an ACM certificate: the ALB listens with HTTPS on 443 and redirects 80; HTTP on 80 without one",
        pattern=ACM_ARN,
        example="arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
    )
    idle_timeout_seconds: int | None = key(
        int,
        False,
        "an application load balancer's connection idle timeout: a model that sends a long answer whole sends nothing "
        "until done, and past this the balancer answers 504; AWS's 60 s when left out",
        low=1,
        high=4000,
        high_why="Elastic Load Balancing's most for idle_timeout.timeout_seconds",
        example=600,
    )
    plaintext_reason: str | None = key(
        str,
        False,
        "why an internet-facing balancer may serve without TLS (an NLB, or an ALB without certificate_arn); "
        "required then, refused otherwise",
        pattern=re.compile(r"\A\S.{9,499}\Z", re.S | re.ASCII),
        example="a public demo of an open model; no user data",
    )

    @property
    def plaintext_from_internet(self) -> bool:
        """Whether anyone on the internet reaches it without TLS: an internet-facing NLB (TCP passes through) or an
        internet-facing ALB without a certificate (HTTP on 80)."""
        return self.internet_facing and (self.type == NETWORK or not self.certificate_arn)

    @property
    def listener_port(self) -> int:
        return 443 if self.certificate_arn else 80


@dataclass(frozen=True, kw_only=True)
class FleetSpec:
    """A fleet file, checked. Each attribute but ``source`` is a key of the file, declared on the field."""

    source: str
    name: str = key(str, True, "prefixes the stacks", pattern=NAME, example="models")
    account: str | None = key(
        str, False, "with region: an environment-bound app", pattern=ACCOUNT, example="123456789012"
    )
    region: str | None = key(str, False, "with account: an environment-bound app", pattern=REGION, example="us-east-1")
    vpc_id: str | None = key(
        str, False, "an existing VPC instead of a new one", pattern=VPC_ID, example="vpc-0123456789abcdef0"
    )
    service_connect_namespace: str | None = key(
        str,
        False,
        "a Cloud Map namespace: services with a port call each other as http://<service>:<port> (Service Connect)",
        pattern=DNS_NAME,
        example="models.internal",
    )
    telemetry: bool = key(
        bool, False, "the GPU telemetry daemon on every EC2 GPU host, a dashboard and budget alarms", default=True
    )
    prices: str | None = key(
        str,
        False,
        "a prices file (ecs-gpu-sharing prices refresh), relative to this file: plans show their cost",
        pattern=re.compile(r"[^\x00-\x1f]{1,1024}", re.ASCII),
        example="prices.json",
    )
    capacities: Mapping[str, CapacitySpec] = key(dict, True, "the GPU capacities, one table each", name="capacity")
    services: Mapping[str, ServiceSpec] = key(dict, True, "the services, one table each", name="service")
    load_balancers: Mapping[str, LoadBalancerSpec] = key(
        dict, False, "load balancers services share, one table each", name="load_balancer"
    )

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

    def stack_name(self, part: str) -> str:
        """The name of one of the app's stacks: ``network``, ``cluster``, ``services-<n>``, ``observability-<n>``."""
        return f"{self.name}-{part}"

    @property
    def runs_telemetry(self) -> bool:
        """Whether the cluster stack has the GPU telemetry daemon: asked for, and an EC2 capacity to run it on
        (daemon services do not run on Managed Instances)."""
        return self.telemetry and any(c.kind != MANAGED_INSTANCES for c in self.capacities.values())

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
                    out[s.name] = ISOLATION_JOIN.join(isolation_term(self.ecs_service_name(o.name)) for o in apart)
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
            size = {s.name: len(isolation_term(self.ecs_service_name(s.name))) for s in on}
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
                    out[s.name] = length + len(ISOLATION_JOIN) * (count - 1)
        return out


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
