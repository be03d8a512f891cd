"""The fleet file's keys, as one table: the parser, the JSON Schema and the reference docs are generated from it.
Pure Python."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

from ..allocation import EVIDENCE_SOURCES
from ..ami_release import DEFAULT_AMI_RELEASE
from ..gpu_memory import DEFAULT_GPU_MARGIN_MIB
from ..placement import DEFAULT_PRESET, PRESETS
from ..planner import EC2, KINDS, MANAGED_INSTANCES
from ..quotas import MAX_INSTANCES_PER_CLUSTER, MAX_TASKS_PER_SERVICE
from .model import APPLICATION, AWSVPC, BRIDGE, NETWORK

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,39}$", re.ASCII)
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


@dataclass(frozen=True)
class Key:
    """One key of the fleet file: its type, whether it is required, its range or pattern, and what it means."""

    name: str
    value_type: type  # str, int, bool, list, dict, datetime.date
    required: bool
    doc: str
    low: int | None = None
    high: int | None = None
    high_why: str = ""  # the quota or fact behind ``high``
    pattern: re.Pattern[str] | None = None
    example: str = ""
    default: Any = None
    table: tuple[Key, ...] | None = None  # a table's keys (a dict), or each item's (a list of tables)
    items: type | None = None  # the type of each item of a list, when not a table
    field: str = ""  # the spec attribute the key fills, when not its own name

    @property
    def attribute(self) -> str:
        """The attribute of the spec (``model``) that holds this key's value."""
        return self.field or self.name

    @property
    def empty(self) -> Any:
        """The value of a key left out: its default, else nothing of its kind (an empty list or table, or None)."""
        if self.default is not None:
            return self.default
        return () if self.value_type is list else {} if self.value_type is dict else None


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
    Key("capacity", dict, True, "the GPU capacities, one table each", field="capacities"),
    Key("service", dict, True, "the services, one table each", field="services"),
    Key("load_balancer", dict, False, "load balancers services share, one table each", field="load_balancers"),
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
    Key(
        "acknowledge",
        dict,
        False,
        "capacity warning id -> the reason it is accepted, such as ecs-gpu-sharing:SurgeDoesNotFit",
    ),
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
EVIDENCE = (
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
"""What was measured: in an allocation table beside the note, or as a service's own [service.<name>.evidence]
table (what evaluate --write creates where there is no note). Declared once, used in both."""
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
    *EVIDENCE,
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
        "AWS managed policies for the task role, by name; one not read-only needs TaskRoleEscalation acknowledged",
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
        field="paths",
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
    Key(
        "placement",
        str,
        False,
        "how ECS picks the host for each task (EC2 capacities): spread-zones-binpack-memory (spread over Availability "
        "Zones, then the host with the least memory left: the density the plan counts on), binpack-memory, "
        "spread-zones-binpack-cpu, spread-instances, ecs-default (no strategy: zones, then fewest tasks) or random",
        pattern=re.compile(f"^({'|'.join(PRESETS)})$", re.ASCII),
        default=DEFAULT_PRESET,
        example="binpack-memory",
    ),
    Key(
        "sidecar",
        list,
        False,
        "extra containers in the task ([[service.<name>.sidecar]])",
        table=SIDECAR,
        field="sidecars",
    ),
    Key(
        "allocation",
        dict,
        False,
        "the allocation note: why the budget is what it is ([service.<name>.allocation])",
        table=ALLOCATION,
    ),
    Key(
        "evidence",
        dict,
        False,
        "what was measured, for a service without an allocation note ([service.<name>.evidence], written by "
        "evaluate --write; with a note, the evidence goes in the allocation table)",
        table=EVIDENCE,
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
        "warning id -> the reason it is accepted for this service, such as ecs-gpu-sharing:MutableImageTag; also "
        "ecs-gpu-sharing:TaskRoleEscalation, which lets task_role_statements grant what core.escalation refuses",
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
